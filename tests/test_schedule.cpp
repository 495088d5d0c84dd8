// The Schedule IR: its validity check, the builder's dependencies, ring traffic.
#include <catch2/catch.hpp>

#include "helpers.h"
#include "schedule/builder.h"

using namespace collsim;
using namespace collsim::test;

namespace {

std::vector<std::int64_t> bytes_sent_per_rank(const Schedule& s) {
  std::vector<std::int64_t> sent(s.shape.ranks, 0);
  for (const Op& op : s.ops)
    if (!op.is_local()) sent[op.src_rank] += s.bytes(op);
  return sent;
}

Schedule two_rank_copy() {
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 2, 8), "test", {8});
  b.copy({0, 0, 0}, {1, 0, 0}, 4);
  b.next_step();
  b.copy({1, 0, 4}, {0, 0, 4}, 4);
  return b.finish();
}

}  // namespace

TEST_CASE("partition: exact split, chunk sizes differ by at most one") {
  for (std::int64_t count : {0, 1, 5, 7, 64, 1000003}) {
    for (int parts : {1, 2, 3, 7, 64, 128}) {
      const Partition p{count, parts};
      std::int64_t total = 0, lo = count, hi = 0;
      for (int i = 0; i < parts; ++i) {
        CHECK(p.begin(i) == total);
        total += p.size(i);
        lo = std::min(lo, p.size(i));
        hi = std::max(hi, p.size(i));
      }
      CHECK(total == count);
      CHECK(hi - lo <= 1);
      CHECK(p.max_size() == hi);
    }
  }
}

TEST_CASE("ring schedules pass the validity check for many K and sizes") {
  for (int K : {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64}) {
    for (std::int64_t count : {std::int64_t{1}, std::int64_t{K - 1 > 0 ? K - 1 : 1},
                               std::int64_t{K} * 3 + 1, std::int64_t{1000}}) {
      for (CollectiveOp op :
           {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather}) {
        const Schedule s = generate(op, "ring", shape_of(op, K, count));
        INFO("K=" << K << " count=" << count << " op=" << name_of(op));
        CHECK(check_schedule(s).empty());
        const int passes = op == CollectiveOp::AllReduce ? 2 : 1;
        CHECK(s.num_steps == passes * (K - 1));  // every step moves some non-empty chunk
      }
    }
  }
}

TEST_CASE("ring dependencies: each op waits on the op that delivered its chunk") {
  const int K = 5;
  const Schedule s =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, K, 50));
  for (OpId id = 0; id < s.size(); ++id) {
    const Op& op = s.ops[id];
    if (op.step == 0) {
      CHECK(s.deps_of(id).empty());
      continue;
    }
    // Some dependency wrote exactly the range this op reads, on this op's source rank.
    bool found = false;
    for (OpId d : s.deps_of(id)) {
      const Op& dep = s.ops[d];
      found |= dep.dst_rank == op.src_rank && dep.dst_offset == op.src_offset &&
               dep.count == op.count && dep.step == op.step - 1;
    }
    CHECK(found);
    CHECK(s.deps_of(id).size() <= 3);
  }
}

TEST_CASE("ring traffic per rank is exact, even with uneven chunks") {
  for (int K : {2, 3, 7, 8, 13}) {
    for (std::int64_t count :
         {std::int64_t{K} * 100, std::int64_t{K} * 100 + 3, std::int64_t{K} * 100 + K - 1}) {
      const Partition c{count, K};
      const std::int64_t N = count * 4;
      const auto ar = bytes_sent_per_rank(
          generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, K, count)));
      const auto rs = bytes_sent_per_rank(generate(
          CollectiveOp::ReduceScatter, "ring", shape_of(CollectiveOp::ReduceScatter, K, count)));
      const auto ag = bytes_sent_per_rank(
          generate(CollectiveOp::AllGather, "ring", shape_of(CollectiveOp::AllGather, K, count)));
      std::int64_t total = 0;
      for (int r = 0; r < K; ++r) {
        INFO("K=" << K << " count=" << count << " rank=" << r);
        // All-reduce sends every chunk but (r+1) in reduce-scatter and every chunk but (r+2) in
        // all-gather.
        CHECK(ar[r] == 2 * N - 4 * (c.size((r + 1) % K) + c.size((r + 2) % K)));
        CHECK(rs[r] == N - 4 * c.size(r));
        CHECK(ag[r] == N - 4 * c.size((r + 1) % K));
        total += ar[r];
      }
      CHECK(total == 2 * (K - 1) * N);  // 2(K-1)/K * N per rank on average, exactly
      if (count % K == 0)
        for (int r = 0; r < K; ++r) CHECK(ar[r] == 2 * (K - 1) * N / K);
    }
  }
}

TEST_CASE("simulator counts the same traffic the schedule describes") {
  const int K = 6;
  const Schedule s =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, K, 6007));
  const Topology topo = make_switch_topology(K, 100e9, 0);
  const auto r = simulate(s, topo, 1e-6);
  const auto sent = bytes_sent_per_rank(s);
  std::int64_t link_bytes = 0;
  for (auto b : r.links.bytes_per_link()) link_bytes += b;
  for (int rank = 0; rank < K; ++rank) CHECK(r.node_sent[topo.gpu_of_rank(rank)] == sent[rank]);
  CHECK(link_bytes == 2 * 2 * (K - 1) * 6007 * 4);  // every byte crosses two links
  CHECK(r.transfers == s.size());
}

TEST_CASE("validity check rejects broken schedules") {
  REQUIRE(check_schedule(two_rank_copy()).empty());

  SECTION("rank out of range") {
    Schedule s = two_rank_copy();
    s.ops[1].dst_rank = 2;
    CHECK_THAT(check_schedule(s), Catch::Contains("rank out of range"));
  }
  SECTION("range outside the buffer") {
    Schedule s = two_rank_copy();
    s.ops[1].dst_offset = 5;
    CHECK_THAT(check_schedule(s), Catch::Contains("destination range outside"));
  }
  SECTION("a cycle, or any dependency on a later step") {
    Schedule s = two_rank_copy();
    s.deps = {1, 0};
    s.dep_begin = {0, 1, 2};
    CHECK(check_schedule(s) == "op 0 of step 0 depends on op 1 of step 1");
  }
  SECTION("two writers of one range in one step") {
    auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 3, 8), "test", {8});
    b.copy({0, 0, 0}, {2, 0, 0}, 4);
    b.copy({1, 0, 2}, {2, 0, 2}, 4);
    CHECK_THAT(check_schedule(b.finish()), Catch::Contains("write overlapping"));
  }
  SECTION("a read racing a write in one step") {
    auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 3, 8), "test", {8});
    b.copy({0, 0, 0}, {1, 0, 0}, 4);
    b.copy({1, 0, 2}, {2, 0, 2}, 2);
    CHECK_THAT(check_schedule(b.finish()), Catch::Contains("reads elements of rank 1"));
  }
  SECTION("an empty transfer outside a barrier, data inside one") {
    auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 2, 8), "test", {8});
    b.signal(0, 1);
    CHECK(check_schedule(b.finish()) == "op 0: empty transfer");
    auto barrier = ScheduleBuilder::uniform(shape_of(CollectiveOp::Barrier, 2, 8), "test", {8});
    barrier.copy({0, 0, 0}, {1, 0, 0}, 1);
    CHECK(check_schedule(barrier.finish()) == "op 0: a barrier message carrying data");
  }
}

TEST_CASE("builder: ops wait for the previous step of both their ranks, per channel") {
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 4, 16), "test", {16}, 2);
  b.copy({0, 0, 0}, {1, 0, 0}, 1, 0);  // op 0
  b.copy({2, 0, 0}, {3, 0, 0}, 1, 1);  // op 1, other channel
  b.next_step();
  b.copy({1, 0, 0}, {2, 0, 1}, 1, 0);  // op 2: rank 1 took part in op 0 on channel 0
  b.copy({3, 0, 0}, {0, 0, 1}, 1, 1);  // op 3: rank 3 took part in op 1 on channel 1
  b.copy({3, 0, 2}, {2, 0, 2}, 1, 0);  // op 4: on channel 0 ranks 2, 3 have no history
  const Schedule s = b.finish();
  CHECK(std::vector<OpId>(s.deps_of(2).begin(), s.deps_of(2).end()) == std::vector<OpId>{0});
  CHECK(std::vector<OpId>(s.deps_of(3).begin(), s.deps_of(3).end()) == std::vector<OpId>{1});
  CHECK(s.deps_of(4).empty());
  CHECK(s.num_steps == 2);
}

TEST_CASE(
    "needs_only_sent: a second reduction into the same elements waits for the first's "
    "bytes to leave and a copy or a read of them for them to land") {
  auto op = [](OpKind kind, int src, int dst, std::int64_t offset) {
    Op o{};
    o.kind = kind;
    o.src_rank = src;
    o.dst_rank = dst;
    o.src_offset = o.dst_offset = offset;
    o.count = 8;
    return o;
  };
  const Op first = op(OpKind::Reduce, 0, 1, 0);
  CHECK(needs_only_sent(first, op(OpKind::Reduce, 2, 1, 4)));   // the other child, overlapping
  CHECK(!needs_only_sent(first, op(OpKind::Copy, 2, 1, 4)));    // overwrites the sum
  CHECK(!needs_only_sent(first, op(OpKind::Reduce, 1, 3, 0)));  // reads it (to the parent)
  CHECK(needs_only_sent(first, op(OpKind::Reduce, 2, 1, 8)));   // other elements
  CHECK(!needs_only_sent(op(OpKind::Copy, 0, 1, 0), op(OpKind::Reduce, 2, 1, 0)));
}

TEST_CASE(
    "builder: a reduction into the same elements keeps the earlier one among the rank's "
    "latest ops") {
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllReduce, 4, 8), "test", {8});
  b.reduce({0, 0, 0}, {1, 0, 0}, 8);  // op 0
  b.reduce({3, 0, 0}, {2, 0, 0}, 4);  // op 1
  b.next_step();
  b.reduce({2, 0, 0}, {1, 0, 0}, 8);  // op 2: commutes with op 0, may start once it is sent
  b.reduce({0, 0, 4}, {2, 0, 4}, 4);  // op 3: other elements than op 1's
  b.next_step();
  b.copy({1, 0, 0}, {3, 0, 0}, 8);  // op 4: reads rank 1's sum: ops 0 and 2 (and rank 3's 1)
  b.copy({2, 0, 0}, {0, 0, 0}, 8);  // op 5: op 3 reduced into other elements than op 1
  const Schedule s = b.finish();
  auto deps = [&](OpId id) {
    return std::vector<OpId>(s.deps_of(id).begin(), s.deps_of(id).end());
  };
  CHECK(deps(2) == std::vector<OpId>{0, 1});
  CHECK(deps(4) == std::vector<OpId>{0, 1, 2});
  CHECK(deps(5) == std::vector<OpId>{2, 3});
}

TEST_CASE("builder lanes: an op orders after its lane, its connection and what came before") {
  auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 3, 16), "test", {16});
  b.copy({0, 0, 0}, {1, 0, 0}, 1);  // op 0, before the lanes
  REQUIRE(b.begin_lanes(2) == 2);
  using B = ScheduleBuilder;
  const OpId a = b.add_in_lane(OpKind::Copy, {1, 0, 1}, {2, 0, 1}, 1, 0, 0, B::kNoOp);  // op 1
  const OpId c = b.add_in_lane(OpKind::Copy, {0, 0, 2}, {1, 0, 2}, 1, 0, 1, B::kNoOp);  // op 2
  b.next_step();
  // Lane 0 again on rank 1: after op 1 (its lane), not op 2 (the other lane); a connection's
  // previous op comes in through `after`.
  const OpId d = b.add_in_lane(OpKind::Copy, {0, 0, 3}, {1, 0, 3}, 1, 0, 0, c);  // op 3
  // Lane 1 first touches rank 2: it reads what came before the lanes there (nothing).
  const OpId e = b.add_in_lane(OpKind::Copy, {2, 0, 4}, {2, 0, 5}, 1, 0, 1, B::kNoOp);  // op 4
  CHECK(b.add_in_lane(OpKind::Copy, {0, 0, 6}, {1, 0, 6}, 0, 0, 1, B::kNoOp) == B::kNoOp);
  CHECK_THROWS_AS(b.copy({0, 0, 7}, {1, 0, 7}, 1), std::logic_error);  // a plain op inside
  CHECK_THROWS_AS(b.begin_lanes(2), std::logic_error);                // lanes inside lanes
  b.end_lanes();
  b.copy({1, 0, 8}, {2, 0, 8}, 1);  // op 5: after every lane's latest on ranks 1 and 2
  const Schedule s = b.finish();
  auto deps = [&](OpId id) { return std::vector<OpId>(s.deps_of(id).begin(), s.deps_of(id).end()); };
  CHECK(deps(a) == std::vector<OpId>{0});  // lane 0 starts after op 0 on ranks 0, 1
  CHECK(deps(c) == std::vector<OpId>{0});  // so does lane 1
  CHECK(deps(d) == std::vector<OpId>{0, 1, 2});  // rank 0 untouched in lane 0: op 0
  CHECK(deps(e).empty());
  // Rank 1: op 3 (lane 0), op 2 (lane 1); rank 2: op 1 (lane 0), op 4 (lane 1).
  CHECK(deps(5) == std::vector<OpId>{1, 2, 3, 4});
}

TEST_CASE("builder lanes: past kMaxLaneSlots lists, fewer lanes, at least one") {
  // Lanes x channels x ranks past kMaxLaneSlots: fewer lanes, at least one.
  auto big = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 1 << 18, 1 << 18), "test",
                                      {1 << 18}, 2);
  CHECK(big.begin_lanes(64) == static_cast<int>(ScheduleBuilder::kMaxLaneSlots / (2 << 18)));
  big.end_lanes();
  const int ranks = (1 << 18) + 1;  // x 4 channels: just past 2^20 lists
  auto huge = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, ranks, ranks), "test",
                                       {1}, 4);
  CHECK(huge.begin_lanes(64) == 1);
}
