// NVLS: switch-executed reduce and multicast ops, proven, timed and planned.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "plan/plan.h"
#include "replay/verify.h"
#include "scenario/scenario.h"

using namespace collsim;
using namespace collsim::test;

namespace {

constexpr double kAlpha = 5e-6;
constexpr double kBeta = 450e9;
constexpr double kPicosecond = 0.5e-12 + 1e-18;  // see test_ring_timing.cpp

Schedule nvls(int K, std::int64_t count, int segments = 1) {
  AlgorithmOptions o;
  o.segments = segments;
  return generate(CollectiveOp::AllReduce, "nvls", shape_of(CollectiveOp::AllReduce, K, count), o);
}

// Step t reduces piece t and multicasts piece t - 1, each on its own direction of every
// GPU's link: a step lasts alpha + its larger piece over one link.
double closed_form(int K, std::int64_t count, int segments, double alpha, double beta) {
  const int P = K * segments;
  const Partition part{count, P};
  double t = 0;
  for (int s = 0; s <= P; ++s) {
    const std::int64_t piece = std::max(s < P ? part.size(s) : 0, s > 0 ? part.size(s - 1) : 0);
    if (piece > 0) t += alpha + static_cast<double>(piece) * 4 / beta;
  }
  return t;
}

Scenario scenario_of(const std::string& text) {
  return parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios");
}

}  // namespace

TEST_CASE("nvls all-reduce is proven by the replayer for K up to 72 and uneven counts") {
  for (int K : {1, 2, 3, 4, 5, 7, 8, 16, 72}) {
    for (std::int64_t count : {std::int64_t{K} * 8, std::int64_t{K} * 8 + 1,
                               std::int64_t{K} * 7 + K - 1, std::int64_t{K > 1 ? K - 1 : 1}}) {
      for (int segments : {1, 3}) {
        INFO("K=" << K << " count=" << count << " segments=" << segments);
        const Schedule s = nvls(K, count, segments);
        REQUIRE(check_schedule(s).empty());
        CHECK(verify_exact(s, 7, 3).ok());
        CHECK(verify_symbolic(s).ok());
        // Two ops per non-empty piece, whatever K: the switch's fan-in and fan-out are one op.
        CHECK(s.size() <= 2 * static_cast<std::size_t>(K) * segments);
      }
    }
  }
}

TEST_CASE("check_schedule sees a multicast write every rank") {
  // Ops: R0 | R1 M0 | R2 M1 | R3 M2 | M3, one step each.
  Schedule s = nvls(4, 64);
  REQUIRE(s.size() == 8);
  Op& reduce = s.ops[5];
  const Op& multicast = s.ops[6];
  REQUIRE(reduce.kind == OpKind::SwitchReduce);
  REQUIRE(multicast.kind == OpKind::Multicast);
  REQUIRE(reduce.step == multicast.step);
  // The reduce now reads, on every rank, what the multicast of its step writes there.
  reduce.src_offset = multicast.dst_offset;
  CHECK_THAT(check_schedule(s), Catch::Contains("reads elements"));
}

TEST_CASE("nvls is refused without a sharp switch, and auto skips it") {
  const std::string op = R"({"op": "all_reduce", "bytes": "1MiB", "algorithm": )";
  auto plan_on = [&](const std::string& topology, const std::string& algorithm) {
    return make_plan(scenario_of(R"({"topology": )" + topology + R"(, "collectives": [)" + op +
                                 "\"" + algorithm + "\"}]}"));
  };
  const std::string plain = R"({"preset": "switch", "gpus": 8, "bandwidth": "450GB/s"})";
  try {
    plan_on(plain, "nvls");
    FAIL("nvls accepted on a switch without sharp");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("collectives[0]"));
    CHECK_THAT(e.what(),
               Catch::Contains("nvls needs its GPUs on one NVSwitch fabric with \"sharp\": true"));
  }
  CHECK(plan_on(plain, "auto").collectives[0].spec.algorithm != "nvls");
  // The same switch marked sharp in an explicit topology.
  std::string nodes = R"({"name": "sw", "kind": "nvswitch", "sharp": true})", links;
  for (int g = 0; g < 4; ++g) {
    nodes += fmt::format(R"(, {{"name": "g{}", "kind": "gpu"}})", g);
    links +=
        fmt::format(R"({}{{"src": "g{}", "dst": "sw", "bandwidth": "450GB/s"}})", g ? ", " : "", g);
  }
  const auto p = plan_on(R"({"nodes": [)" + nodes + R"(], "links": [)" + links + "]}", "nvls");
  CHECK(p.collectives[0].spec.algorithm == "nvls");
  CHECK(plan_on(R"({"preset": "nvl72", "gpus": 72})", "nvls").collectives[0].spec.algorithm ==
        "nvls");
}

TEST_CASE("nvls on dgx-h100 equals its closed form, ideal and flow") {
  const Topology topo = make_dgx_topology(ServerParams{});
  const std::int64_t count = (std::int64_t{1} << 30) / 4;
  for (int segments : {1, 4}) {
    const Schedule s = nvls(8, count, segments);
    const double expect = closed_form(8, count, segments, kAlpha, kBeta);
    const double steps = 8 * segments + 1;
    INFO("segments=" << segments);
    // The textbook form with N/P exactly: (P + 1)(alpha + N / (P beta)).
    CHECK(std::fabs(expect - steps * (kAlpha + 1073741824.0 / (8 * segments * kBeta))) < 1e-12);
    CHECK(std::fabs(simulated_seconds(s, topo, kAlpha, "ideal") - expect) <= steps * kPicosecond);
    CHECK(std::fabs(simulated_seconds(s, topo, kAlpha, "flow") - expect) <= steps * kPicosecond);
  }
  // Uneven pieces and other K, on a bare sharp switch.
  for (int K : {2, 3, 5, 8}) {
    Topology t = make_switch_topology(K, kBeta, 0);
    t.set_sharp(*t.find("switch"));
    for (std::int64_t count : {std::int64_t{K} * 4096 + 1, std::int64_t{K} * 4095 + K - 1}) {
      INFO("K=" << K << " count=" << count);
      const double expect = closed_form(K, count, 2, kAlpha, kBeta);
      CHECK(std::fabs(simulated_seconds(nvls(K, count, 2), t, kAlpha) - expect) <=
            (2 * K + 1) * kPicosecond);
    }
  }
}

TEST_CASE("auto picks nvls for 1 GiB on dgx-h100") {
  const Plan p = make_plan(scenario_of(R"({"topology": "dgx-h100",
      "network": {"model": "ideal", "alpha": "5us"},
      "collectives": [{"op": "all_reduce", "algorithm": "auto", "bytes": "1GiB"}]})"));
  CHECK(p.collectives[0].spec.algorithm == "nvls");
}
