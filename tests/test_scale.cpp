// Scale: counts past 2^32 are held, not wrapped, and refused where a type is too small;
// the validity check is linear (bucketed by rank and step) yet finds what it found;
// GPUs on the same switches share a route search.
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "core/checked.h"
#include "helpers.h"
#include "schedule/builder.h"
#include "simulate/transfer_ids.h"

using namespace collsim;
using namespace collsim::test;

namespace scale_test {

constexpr std::uint64_t k2to32 = std::uint64_t{1} << 32;

// Three ranks, two steps; op 2 (rank 1 -> 2, step 0) is listed after a step-1 op.
Schedule out_of_step_order() {
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 3, 8), "test", {8});
  b.copy({0, 0, 0}, {1, 0, 0}, 2);
  b.next_step();
  b.copy({1, 0, 0}, {2, 0, 0}, 2);
  Schedule s = b.finish();
  s.ops.push_back(s.ops[0]);  // op 2: rank 0 -> 1 again, elements 4..6, in step 0
  s.ops[2].src_offset = s.ops[2].dst_offset = 4;
  s.dep_begin.push_back(s.dep_begin.back());
  return s;
}

}  // namespace scale_test

using scale_test::k2to32;

TEST_CASE("checked_count refuses a count its type cannot hold", "[scale]") {
  CHECK(checked_count<std::uint32_t>(k2to32 - 1, "ops") == 0xffffffffu);
  CHECK_THROWS_WITH(checked_count<std::uint32_t>(k2to32, "ops"),
                    "ops: 4294967296 does not fit in 32 bits");
  CHECK(checked_count<std::int32_t>(std::uint64_t{0x7fffffff}, "routes") == 0x7fffffff);
  CHECK_THROWS_AS(checked_count<std::int32_t>(std::uint64_t{0x80000000}, "routes"),
                  std::length_error);
  CHECK_THROWS_AS(checked_count<std::uint32_t>(-1, "count"), std::length_error);
}

TEST_CASE("schedule indices are 64-bit", "[scale]") {
  STATIC_REQUIRE(sizeof(OpId) == 8);
  STATIC_REQUIRE(sizeof(DepIndex) == 8);
  STATIC_REQUIRE(sizeof(decltype(ScheduleGraph::succ_begin)::value_type) == 8);
  STATIC_REQUIRE(sizeof(decltype(RouteTable::first)::value_type) == 8);
  STATIC_REQUIRE(sizeof(PathInfo::first) == 8);
  // A dependency past 2^32 is named as it is, not as the op it would wrap to (op 1).
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 2, 8), "test", {8});
  b.copy({0, 0, 0}, {1, 0, 0}, 4);
  b.next_step();
  b.copy({1, 0, 4}, {0, 0, 4}, 4);
  Schedule s = b.finish();
  s.deps = {k2to32 + 1};
  s.dep_begin = {0, 0, 1};
  CHECK(check_schedule(s) == "op 1: dependency 4294967297 does not exist");
}

TEST_CASE("transfer ids carry op ids past 2^32 and every leg", "[scale]") {
  TransferIds ids;
  // Task 1 has no ops (a compute task, say); task 2 has 2^33.
  const std::vector<std::size_t> ops{5, 0, std::size_t{2} * k2to32, 7};
  ids.assign(ops);
  struct Case {
    std::size_t task;
    OpId op;
    int leg;
  };
  for (const Case c : {Case{0, 0, 0}, Case{0, 4, 3}, Case{2, 0, 0}, Case{2, k2to32 + 3, 255},
                       Case{2, 2 * k2to32 - 1, 7}, Case{3, 0, 1}, Case{3, 6, 0}}) {
    const auto d = ids.decode(ids.id(c.task, c.op, c.leg));
    CHECK(d.task == c.task);
    CHECK(d.op == c.op);
    CHECK(d.leg == c.leg);
  }
  // Ids order as (leg, task, op) do, whatever a model sorts by them.
  CHECK(ids.id(2, 2 * k2to32 - 1) < ids.id(3, 0));
  CHECK(ids.id(3, 6) < ids.id(0, 0, 1));
  // A task of 2^50 ops beside 200 others leaves too few bits for a split of its own:
  // the ids are then global indices, decoded by a search, ordered the same.
  std::vector<std::size_t> wide(200, 3);
  wide[1] = std::size_t{1} << 50;
  ids.assign(wide);
  for (const Case c :
       {Case{0, 2, 0}, Case{1, (std::size_t{1} << 50) - 1, 9}, Case{2, 0, 0}, Case{199, 2, 255}}) {
    const auto d = ids.decode(ids.id(c.task, c.op, c.leg));
    CHECK(d.task == c.task);
    CHECK(d.op == c.op);
    CHECK(d.leg == c.leg);
  }
  CHECK(ids.id(1, (std::size_t{1} << 50) - 1) < ids.id(2, 0));
  CHECK(ids.id(199, 2) < ids.id(0, 0, 1));
  // 2^56 ops in all is the most the ids hold.
  const std::vector<std::size_t> fits{TransferIds::kOpMask};
  CHECK_NOTHROW(ids.assign(fits));
  const std::vector<std::size_t> too_many{TransferIds::kOpMask / 2 + 1,
                                          TransferIds::kOpMask / 2 + 1};
  CHECK_THROWS_AS(ids.assign(too_many), std::length_error);
}

TEST_CASE("validity check on ops listed out of step order", "[scale]") {
  Schedule s = scale_test::out_of_step_order();
  REQUIRE(check_schedule(s).empty());
  // Op 2 now writes what op 0 writes in the same step, though it is listed after step 1.
  s.ops[2].dst_offset = 1;
  CHECK(check_schedule(s) == "ops 0 and 2 of step 0 write overlapping elements of rank 1");
  // Op 1 of step 1 reads rank 1's elements 0..2; a step-1 write there races it.
  s = scale_test::out_of_step_order();
  s.ops[2].step = 1;
  s.ops[2].src_offset = 6;
  s.ops[2].dst_offset = 1;
  s.ops[2].src_rank = 2;
  s.dep_begin.back() = s.dep_begin[2];
  CHECK(check_schedule(s) == "op 1 of step 1 reads elements of rank 1 that op 2 writes");
}

TEST_CASE("validity check groups one step's accesses by rank", "[scale]") {
  // Rank 3 receives from every other rank in one step, into disjoint ranges: valid.
  // Then rank 5 also writes rank 0's element 0, which rank 0 sends in that step.
  const int K = 6;
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, K, 64), "test", {64});
  for (int r = 0; r < K; ++r)
    if (r != 3) b.copy({r, 0, 8 * r}, {3, 0, 8 * r}, 8);
  REQUIRE(check_schedule(b.finish()).empty());
  auto c = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, K, 64), "test", {64});
  for (int r = 0; r < K; ++r)
    if (r != 3) c.copy({r, 0, 8 * r}, {3, 0, 8 * r}, 8);
  c.copy({5, 0, 48}, {0, 0, 0}, 1);  // op 5 writes rank 0's element 0, which op 0 reads
  CHECK(check_schedule(c.finish()) == "op 0 of step 0 reads elements of rank 0 that op 5 writes");
}

TEST_CASE("GPUs on the same switches share one route search, each with its own first hop",
          "[scale]") {
  // Eight GPUs, each on two switches (two rails): every pair has two equal routes.
  Topology t;
  std::vector<NodeId> gpus;
  for (int r = 0; r < 8; ++r)
    gpus.push_back(t.add_node({"gpu" + std::to_string(r), NodeKind::Gpu, r, r}));
  const NodeId a = t.add_node({"railA", NodeKind::Switch});
  const NodeId b = t.add_node({"railB", NodeKind::Switch});
  for (NodeId g : gpus) {
    t.add_duplex(g, a, 100e9, 0, LinkKind::Ib);
    t.add_duplex(g, b, 100e9, 0, LinkKind::Ib);
  }
  t.assign_ranks();
  // The same routes whatever order they are asked in (a reused search must not keep
  // the previous source's first hop), each a two-hop path from src to dst.
  Router forward(t), backward(t);
  std::map<std::pair<NodeId, NodeId>, std::vector<LinkId>> first;
  for (NodeId s : gpus)
    for (NodeId d : gpus)
      if (s != d) {
        const auto links = forward.links(forward.route(s, d));
        first[{s, d}].assign(links.begin(), links.end());
      }
  std::set<NodeId> middles;
  for (auto s = gpus.rbegin(); s != gpus.rend(); ++s)
    for (auto d = gpus.rbegin(); d != gpus.rend(); ++d)
      if (*s != *d) {
        const auto links = backward.links(backward.route(*s, *d));
        CHECK(std::vector<LinkId>(links.begin(), links.end()) == first[{*s, *d}]);
        REQUIRE(links.size() == 2);
        CHECK(t.link(links[0]).src == *s);
        CHECK(t.link(links[1]).dst == *d);
        middles.insert(t.link(links[0]).dst);
      }
  CHECK(middles == std::set<NodeId>{a, b});  // D-mod-k (InfiniBand links) uses both rails
}
