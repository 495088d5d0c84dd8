// PAT all-gather and reduce-scatter: proven by the replayer for every K up to 40,
// ceil(log2 K) steps, (K-1)/K of the data sent per rank, and the alpha-beta closed form.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.h"
#include "replay/verify.h"

using namespace collsim;
using namespace collsim::test;

namespace {

constexpr CollectiveOp kOps[] = {CollectiveOp::AllGather, CollectiveOp::ReduceScatter};

int ceil_log2(int k) {
  int l = 0;
  while ((1 << l) < k) ++l;
  return l;
}

// One element, fewer elements than ranks, just over K, uneven 3K + 1, and a larger uneven one.
std::vector<std::int64_t> counts_for(int K) {
  std::vector<std::int64_t> c{1, K + 1, 3 * std::int64_t{K} + 1, 1000};
  if (K > 2) c.push_back(K - 1);
  return c;
}

}  // namespace

TEST_CASE("pat all-gather and reduce-scatter compute their collective for K = 1..40") {
  for (CollectiveOp op : kOps) {
    for (int K = 1; K <= 40; ++K) {
      for (std::int64_t count : counts_for(K)) {
        const Schedule s = generate(op, "pat", shape_of(op, K, count));
        INFO(name_of(op) << " K=" << K << " count=" << count);
        REQUIRE(check_schedule(s) == "");
        const Verdict exact = verify_exact(s, 17 + K);
        INFO(exact.first_problem);
        CHECK(exact.ok());
        if (count <= 3 * K + 1) {
          const Verdict sym = verify_symbolic(s);
          INFO(sym.first_problem);
          CHECK(sym.ok());
        }
      }
    }
  }
}

TEST_CASE("pat takes ceil(log2 K) communication steps, one peer per rank and direction each") {
  for (CollectiveOp op : kOps) {
    for (int K = 1; K <= 130; ++K) {
      const Schedule s = generate(op, "pat", shape_of(op, K, 3 * K + 1));
      INFO(name_of(op) << " K=" << K);
      CHECK(s.num_steps == ceil_log2(K));
      // Each step sends to one peer and receives from one: latency is one alpha a step.
      for (const Op& o : s.ops) {
        CHECK_FALSE(o.is_local());
        const int distance =
            1 << (op == CollectiveOp::AllGather ? o.step : s.num_steps - 1 - o.step);
        const int peer =
            op == CollectiveOp::AllGather ? o.src_rank - distance : o.src_rank + distance;
        CHECK(o.dst_rank == (peer % K + K) % K);
      }
    }
  }
}

TEST_CASE("pat: every rank sends (K-1)/K N in all, within one element per step") {
  for (CollectiveOp op : kOps) {
    for (int K : {1, 2, 3, 5, 7, 8, 12, 16, 31, 33, 64}) {
      for (std::int64_t count : counts_for(K)) {
        const Schedule s = generate(op, "pat", shape_of(op, K, count));
        std::vector<std::int64_t> sent(K, 0);
        for (const Op& o : s.ops) sent[o.src_rank] += o.count;
        const double expected = static_cast<double>(K - 1) / K * static_cast<double>(count);
        for (int r = 0; r < K; ++r) {
          INFO(name_of(op) << " K=" << K << " count=" << count << " rank " << r);
          CHECK(std::fabs(static_cast<double>(sent[r]) - expected) <= s.num_steps);
          // Reduce-scatter sends every chunk but its own exactly once, each up its tree.
          if (op == CollectiveOp::ReduceScatter && K > 1)
            CHECK(sent[r] == count - Partition{count, K}.size(r));
        }
      }
    }
  }
}

// Exact for any K when K divides N: rank 0's chain sends and receives one whole range
// of min(2^d, K - 2^d) chunks every step (wrapped ranges elsewhere are no larger).
TEST_CASE("pat on a switch: ceil(log2 K) alpha + (K-1)/K N/beta exactly, K = 1..64") {
  constexpr double kAlpha = 5e-6, kBeta = 450e9;
  constexpr double kPicosecond = 0.5e-12 + 1e-18;  // each transfer rounds to the picosecond
  for (CollectiveOp op : kOps) {
    for (int K = 1; K <= 64; ++K) {
      const std::int64_t count = std::int64_t{K} * 4096;
      const double N = static_cast<double>(count) * 4;  // F32
      const int steps = ceil_log2(K);
      const double expected = steps * kAlpha + (K - 1) * N / (K * kBeta);
      const double t = simulated_seconds(generate(op, "pat", shape_of(op, K, count)),
                                         make_switch_topology(K, kBeta, 0), kAlpha);
      INFO(name_of(op) << " K=" << K);
      CHECK(std::fabs(t - expected) <= std::max(steps, 1) * kPicosecond);
    }
  }
}

TEST_CASE("pat composes: hierarchy inner levels and channels in any member order") {
  for (auto levels : {std::vector<LevelSpec>{{4, "pat", {}}, {3, "ring", {}}},
                      std::vector<LevelSpec>{{5, "pat", {}}, {2, "pat", {}}, {3, "ring", {}}},
                      std::vector<LevelSpec>{{3, "pat", {}}, {4, "halving_doubling", {}}}}) {
    AlgorithmOptions o;
    o.levels = levels;
    o.levels[0].options.channels = 2;
    int K = 1;
    for (const auto& l : levels) K *= l.size;
    const Schedule s = generate(CollectiveOp::AllReduce, "hierarchical",
                                shape_of(CollectiveOp::AllReduce, K, 1001), o);
    INFO("K=" << K << " levels=" << levels.size());
    REQUIRE(check_schedule(s) == "");
    CHECK(verify_exact(s, 3).ok());
    CHECK(verify_symbolic(s).ok());
  }
  for (CollectiveOp op : kOps) {
    AlgorithmOptions o;
    o.channels = 3;
    o.orders = {{4, 0, 3, 1, 2}, {2, 3, 4, 0, 1}, {0, 1, 2, 3, 4}};
    const Schedule s = generate(op, "pat", shape_of(op, 5, 97), o);
    REQUIRE(check_schedule(s) == "");
    CHECK(s.num_steps == ceil_log2(5));
    CHECK(verify_exact(s, 9).ok());
    CHECK(verify_symbolic(s).ok());
  }
}
