// Every generator, proven on real buffers: for many rank counts, sizes, roots
// and segment counts, replaying its schedule must compute the collective's
// definition exactly (random 64-bit inputs, in step order and in random
// dependency orders) and symbolically (each contribution exactly once).
#include <catch2/catch.hpp>

#include "core/interrupt.h"
#include "helpers.h"
#include "replay/replayer.h"
#include "replay/verify.h"
#include "schedule/builder.h"

using namespace collsim;
using namespace collsim::test;

namespace {

// Under the sanitizers up to 32 (odd, prime, power-of-two and non-power-of-two rank
// counts are all there); 64 and 128 only add size, and the Release run proves them.
std::vector<int> rank_counts() {
  std::vector<int> k{1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 32};
  if (!kSanitized) k.insert(k.end(), {64, 128});
  return k;
}

std::vector<std::int64_t> counts_for(int K) {
  // One element, fewer elements than ranks, just over K, and an uneven 3K + 1.
  std::vector<std::int64_t> c{1, K + 1, 3 * std::int64_t{K} + 1};
  if (K > 2) c.push_back(K - 1);
  return c;
}

// Ring levels whose sizes multiply to K: innermost the smallest factor, e.g. 64 -> {2, 32}.
std::vector<LevelSpec> two_levels(int K) {
  for (int f = 2; f * f <= K; ++f)
    if (K % f == 0) return {{f, "ring", {}}, {K / f, "ring", {}}};
  return {{K, "ring", {}}};
}

void prove(const AlgorithmEntry& e, const CollectiveShape& shape, const AlgorithmOptions& opt) {
  const Schedule s = e.generate(shape, opt);
  INFO(name_of(shape.op) << " / " << e.algorithm << " K=" << shape.ranks << " count=" << shape.count
                         << " root=" << shape.root << " segments=" << opt.segments);
  REQUIRE(check_schedule(s) == "");
  const Verdict exact = verify_exact(s, 1234 + shape.ranks);
  INFO(exact.first_problem);
  CHECK(exact.ok());
  if (shape.ranks <= 13 && shape.count <= 64) {
    const Verdict sym = verify_symbolic(s);
    INFO(sym.first_problem);
    CHECK(sym.ok());
  }
}

}  // namespace

TEST_CASE("every generator computes its collective for K in {1..128} and uneven sizes") {
  int proven_generators = 0;
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    ++proven_generators;
    for (int K : rank_counts()) {
      for (std::int64_t count : counts_for(K)) {
        CollectiveShape shape = shape_of(e.op, K, count);
        std::vector<int> roots{0};
        if (is_rooted(e.op) && K > 2) roots = {0, K - 1, K / 2};
        for (int root : roots) {
          shape.root = root;
          AlgorithmOptions opt;
          if (e.takes("levels")) opt.levels = two_levels(K);
          prove(e, shape, opt);
          // Segments that do not divide the count either; 19 is more than a pipeline's
          // lanes (builder.h), so segments share them.
          for (int segments : {3, 19}) {
            if (!e.takes("segments")) break;
            opt.segments = segments;
            if (e.takes("levels")) {  // a hierarchy pipelines its outermost level
              opt.levels.back().algorithm = "double_binary_tree";
              opt.levels.back().options.segments = segments;
            }
            prove(e, shape, opt);
          }
        }
      }
    }
  }
  CHECK(proven_generators >= 10);  // an empty catalogue proves nothing
}

TEST_CASE("reduction ops other than sum, and other element types") {
  for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod, ReduceOp::Avg}) {
    for (const char* algorithm :
         {"ring", "binomial_tree", "double_binary_tree", "halving_doubling", "naive"}) {
      CollectiveShape shape = shape_of(CollectiveOp::AllReduce, 7, 50);
      shape.reduce_op = op;
      const Schedule s = generate(CollectiveOp::AllReduce, algorithm, shape);
      INFO(algorithm << " " << name_of(op));
      CHECK(verify_exact(s, 99).ok());
    }
  }
}

TEST_CASE("hierarchical with three levels and a tree at the top") {
  for (const char* top : {"ring", "binomial_tree", "double_binary_tree", "halving_doubling"}) {
    AlgorithmOptions opt;
    opt.levels = {{4, "ring", {}}, {2, "ring", {}}, {3, top, {}}};
    const Schedule s = generate(CollectiveOp::AllReduce, "hierarchical",
                                shape_of(CollectiveOp::AllReduce, 24, 1001), opt);
    INFO(top);
    REQUIRE(check_schedule(s) == "");
    CHECK(verify_exact(s, 5).ok());
    CHECK(verify_symbolic(s).ok());
  }
}

TEST_CASE("parameter server with sharded servers") {
  for (std::vector<int> servers :
       {std::vector<int>{0}, std::vector<int>{1, 4}, std::vector<int>{0, 2, 5, 6}}) {
    AlgorithmOptions opt;
    opt.servers = servers;
    const Schedule s = generate(CollectiveOp::AllReduce, "parameter_server",
                                shape_of(CollectiveOp::AllReduce, 7, 103), opt);
    REQUIRE(check_schedule(s) == "");
    CHECK(verify_exact(s, 3).ok());
    CHECK(verify_symbolic(s).ok());
  }
}

TEST_CASE("all-to-allv with a skewed byte matrix, including empty pairs") {
  const int K = 5;
  auto matrix = std::make_shared<std::vector<std::int64_t>>(K * K);
  for (int s = 0; s < K; ++s)
    for (int d = 0; d < K; ++d)
      (*matrix)[s * K + d] = (d == 2 ? 40 : (s + d) % 3) + (s == d ? 1 : 0);
  CollectiveShape shape = shape_of(CollectiveOp::AllToAll, K, 0);
  shape.matrix = matrix;
  for (const char* algorithm : {"direct", "pairwise"}) {
    const Schedule s = generate(CollectiveOp::AllToAll, algorithm, shape);
    INFO(algorithm);
    REQUIRE(check_schedule(s) == "");
    CHECK(verify_exact(s, 11).ok());
    CHECK(verify_symbolic(s).ok());
  }
}

TEST_CASE("a barrier that lets a rank leave early is caught") {
  auto partial = [](int K, int rounds, bool one_step) {
    auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::Barrier, K, 0), "broken", {0});
    for (int k = 0, distance = 1; k < rounds; ++k, distance *= 2) {
      if (!one_step || k == 0) b.next_step();
      for (int r = 0; r < K; ++r) b.signal(r, (r + distance) % K);
    }
    return b.finish();
  };
  CHECK(verify_barrier(partial(5, 3, false)).ok());  // ceil(log2 5) rounds: right
  const Verdict short_of_a_round = verify_barrier(partial(5, 2, false));
  CHECK(short_of_a_round.wrong == 5);
  CHECK_THAT(short_of_a_round.first_problem, Catch::Contains("heard from 4 of 5 ranks"));
  // All rounds at once: nobody passes on what it heard, so each rank hears from 4.
  CHECK(verify_barrier(partial(5, 3, true)).wrong == 5);
  CHECK(check_schedule(partial(5, 3, false)) == "");
}

TEST_CASE("a wrong schedule is caught by the replayer") {
  // Drop one op of a correct ring all-reduce: some element must come out wrong.
  Schedule s = generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 4, 4));
  s.ops[3].kind = OpKind::Copy;  // a reduction turned into an overwrite loses contributions
  CHECK_FALSE(verify_exact(s, 1).ok());
  CHECK_FALSE(verify_symbolic(s).ok());
  // A missing dependency: the step-order replay is still right, a random order is not.
  Schedule racy =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 8, 64));
  std::fill(racy.deps.begin(), racy.deps.end(), 0);  // everything waits on op 0 only
  bool caught = false;
  for (int seed = 0; seed < 5 && !caught; ++seed) caught = !verify_exact(racy, seed, 3).ok();
  CHECK(caught);
}

TEST_CASE("avg: the sum divided by K once, exactly what a sequential average gives for integers") {
  CollectiveShape shape = shape_of(CollectiveOp::AllReduce, 4, 8, DType::I64);
  shape.reduce_op = ReduceOp::Avg;
  const Schedule s = generate(CollectiveOp::AllReduce, "ring", shape);
  Buffers<std::int64_t> b(s);
  fill_inputs(s, b, [](int rank, std::int64_t i) { return std::int64_t{10} * (rank + 1) + i; });
  replay_by_step(s, b);
  for (int r = 0; r < 4; ++r)
    for (std::int64_t i = 0; i < 8; ++i)
      CHECK(b.at(r, 0)[i] == (100 + 4 * i) / 4);  // (10+20+30+40 + 4i) / 4
}

TEST_CASE("a replay stops at a stop request, in step order and in a dependency order") {
  // trace and the proofs replay millions of ops: Ctrl-C must reach them, not wait them out.
  const Schedule s =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 8, 64));
  Buffers<std::int64_t> by_step(s), in_order(s);
  request_interrupt();
  CHECK_THROWS_AS(replay_by_step(s, by_step), Interrupted);
  CHECK_THROWS_AS(replay_in_order(s, in_order, random_dependency_order(s, 1)), Interrupted);
  clear_interrupt();
  CHECK(verify_exact(s, 7, 1).ok());
}
