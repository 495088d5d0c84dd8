// The ring closed forms of docs/models.md, reproduced by simulation.
#include <catch2/catch.hpp>

#include "helpers.h"

using namespace collsim;
using namespace collsim::test;

namespace {

constexpr double kAlpha = 5e-6;
constexpr double kBeta = 450e9;
constexpr double kPicosecond =
    0.5e-12 + 1e-18;  // rounding to the nearest picosecond, plus float slack

// docs/models.md gives these figures to 3 significant digits.
double three_digits(double x) {
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(std::fabs(x))));
  return std::round(x * scale) / scale;
}

}  // namespace

TEST_CASE("ring all-reduce, reduce-scatter, all-gather equal the closed forms for K = 1..64") {
  for (int K : rank_counts_up_to(64)) {  // a subset under the sanitizers (helpers.h)
    const Topology topo = make_switch_topology(K, kBeta, 0);
    // One divisible and two uneven element counts (remainders 1 and K-1), plus fewer elements than
    // ranks.
    for (std::int64_t count : {std::int64_t{K} * 4096, std::int64_t{K} * 4096 + 1,
                               std::int64_t{K} * 4095 + K - 1, std::int64_t{K > 1 ? K - 1 : 1}}) {
      const Partition chunks{count, K};
      // Every step moves at most one largest chunk per rank, and all steps hold one of them.
      const double per_step = kAlpha + static_cast<double>(chunks.max_size()) * 4 / kBeta;
      INFO("K=" << K << " count=" << count);
      const double ar = simulated_seconds(
          generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, K, count)),
          topo, kAlpha);
      const double rs = simulated_seconds(generate(CollectiveOp::ReduceScatter, "ring",
                                                   shape_of(CollectiveOp::ReduceScatter, K, count)),
                                          topo, kAlpha);
      const double ag = simulated_seconds(
          generate(CollectiveOp::AllGather, "ring", shape_of(CollectiveOp::AllGather, K, count)),
          topo, kAlpha);
      // Exact up to the picosecond each transfer's duration is rounded to.
      const double steps = K - 1;
      CHECK(std::fabs(ar - 2.0 * steps * per_step) <= 2 * steps * kPicosecond);
      CHECK(std::fabs(rs - steps * per_step) <= steps * kPicosecond);
      CHECK(std::fabs(ag - steps * per_step) <= steps * kPicosecond);
      if (count % K == 0) {  // the textbook form, with N/K exactly
        const double N = static_cast<double>(count) * 4;
        CHECK(std::fabs(ar - 2.0 * steps * (kAlpha + N / (K * kBeta))) <= 2 * steps * kPicosecond);
      }
    }
  }
}

TEST_CASE("docs/models.md: ring all-reduce of 16 MiB on 4 GPUs takes 85.9 us") {
  const Topology topo = make_switch_topology(4, kBeta, 0);
  const auto s = generate(CollectiveOp::AllReduce, "ring",
                          shape_of(CollectiveOp::AllReduce, 4, (16 << 20) / 4));
  CHECK(three_digits(simulated_seconds(s, topo, kAlpha) * 1e6) == Approx(85.9));
}

TEST_CASE(
    "docs/models.md: ring all-reduce of 1 GiB over NVLink, K = 2 / 8 / 256: 2.40 / 4.25 / 7.30 "
    "ms") {
  const std::pair<int, double> cases[] = {{2, 2.40}, {8, 4.25}, {256, 7.30}};
  for (auto [K, expected_ms] : cases) {
    const Topology topo = make_switch_topology(K, kBeta, 0);
    const auto s = generate(CollectiveOp::AllReduce, "ring",
                            shape_of(CollectiveOp::AllReduce, K, (std::int64_t{1} << 30) / 4));
    INFO("K=" << K);
    CHECK(three_digits(simulated_seconds(s, topo, kAlpha) * 1e3) == Approx(expected_ms));
  }
}

TEST_CASE("ring on a ring topology equals ring on a switch when links match") {
  // On a ring of neighbour links each transfer is one hop; on a switch it is two
  // hops of the same bandwidth with no latency, so both give the closed form.
  for (int K : {2, 3, 5, 8}) {
    const auto s =
        generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, K, 1000003));
    CHECK(simulated_seconds(s, make_ring_topology(K, kBeta, 0), kAlpha) ==
          Approx(simulated_seconds(s, make_switch_topology(K, kBeta, 0), kAlpha)).epsilon(1e-12));
  }
}

TEST_CASE("link latency adds once per hop on the path") {
  const Time lat = from_seconds(1e-6);
  const auto s =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 4, 4096));
  const double base = simulated_seconds(s, make_switch_topology(4, kBeta, 0), kAlpha);
  const double with = simulated_seconds(s, make_switch_topology(4, kBeta, lat), kAlpha);
  // 6 steps, each crossing two links (GPU -> switch -> GPU).
  CHECK(with - base == Approx(6 * 2 * 1e-6).epsilon(1e-9));
}
