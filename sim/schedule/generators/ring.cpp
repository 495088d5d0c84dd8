#include "schedule/generators/ring.h"

#include <algorithm>

#include "schedule/generators/channels.h"

namespace collsim {
namespace {

// Room for `passes` passes over groups of `ranks`; each op waits on at most three others.
ScheduleBuilder ring_builder(const CollectiveShape& shape, int passes) {
  auto b = ScheduleBuilder::uniform(shape, "ring", {shape.count});
  const std::size_t ops = static_cast<std::size_t>(shape.ranks) * (shape.ranks - 1) * passes;
  b.reserve(ops, 3 * ops);
  return b;
}

// Member m's send in step i of a pass: chunk (m + shift - i) to member m + 1.
struct RingSend {
  BufferRef from, to;
  std::int64_t count;
};

RingSend ring_send(const Group& g, int m, int i, int shift) {
  const int K = g.size();
  const int c = g.chunk_of(rotate(m + shift - i, 0, K));
  const std::int64_t at = g.chunk_begin(K, c);
  return {g.at(m, at), g.at((m + 1) % K, at), g.chunk_size(K, c)};
}

}  // namespace

void ring_pass(ScheduleBuilder& b, std::span<const Group> groups, OpKind kind, int shift) {
  int steps = 0;
  for (const Group& g : groups) steps = std::max(steps, g.size() - 1);
  for (int i = 0; i < steps; ++i) {
    b.next_step();
    for (const Group& g : groups) {
      const int K = g.size();
      if (i >= K - 1) continue;
      for (int m = 0; m < K; ++m) {
        const RingSend s = ring_send(g, m, i, shift);
        b.add(kind, s.from, s.to, s.count, g.channel);
      }
    }
  }
}

void ring_passes(ScheduleBuilder& b, std::span<const Group> groups,
                 std::span<const RingPass> passes) {
  for (const RingPass& p : passes) ring_pass(b, groups, p.kind, p.shift);
}

namespace {

// Member m's op in step i of `pass`, numbered `step` in the schedule.
Op ring_op(const Group& g, RingPass pass, int m, int i, int step) {
  const RingSend s = ring_send(g, m, i, pass.shift);
  return Op{s.from.offset,
            s.to.offset,
            s.count,
            s.from.rank,
            s.to.rank,
            step,
            pass.kind,
            static_cast<std::uint8_t>(s.from.buffer),
            static_cast<std::uint8_t>(s.to.buffer),
            static_cast<std::uint8_t>(g.channel)};
}

// A ring over the whole collective in equal chunks is the same for every rank turned by
// one, in each channel (each its lane of every chunk, the ranks in order). A step's
// representatives are the sends rank 0 runs (it receives a reduction, or pushes a copy),
// one per channel; each waits, as the builder has it, on its channel's sends of the step
// before that touched its two ranks (members m - 1, m, m + 1), each that step's
// representative turned to the rank running it.
std::optional<QuotientSchedule> ordered_ring_quotient(const CollectiveShape& shape,
                                                      const AlgorithmOptions& o,
                                                      std::span<const RingPass> passes,
                                                      int period = 0);

std::optional<QuotientSchedule> ring_quotient(const CollectiveShape& shape,
                                              const AlgorithmOptions& o,
                                              std::span<const RingPass> passes) {
  const int K = shape.ranks, C = std::max(1, o.channels);
  if (shape.count <= 0 || shape.count % K != 0) return std::nullopt;
  if (shape.count / K < C) return std::nullopt;  // empty lanes: channels without ops
  if (!o.orders.empty()) return ordered_ring_quotient(shape, o, passes);
  const std::vector<Group> groups =
      C > 1 ? channel_groups(whole_group(shape), o, ChannelSplit::Lanes, 1)
            : std::vector<Group>{whole_group(shape)};
  QuotientSchedule q;
  q.shape = shape;
  const auto representative = [K](OpKind k) { return k == OpKind::Reduce ? K - 1 : 0; };
  int step = 0;
  for (std::size_t p = 0; p < passes.size(); ++p) {
    for (int i = 0; i < K - 1; ++i, ++step) {
      const OpId before_first = q.ops.size() - (step > 0 ? C : 0);
      for (int c = 0; c < C; ++c) {
        const Group& g = groups[c];
        const int m = representative(passes[p].kind);
        std::vector<Op> before;
        if (step > 0) {
          const RingPass pass = i > 0 ? passes[p] : passes[p - 1];
          const int at = i > 0 ? i - 1 : K - 2;
          for (int x : {rotate(m - 1, 0, K), m, (m + 1) % K})
            before.push_back(ring_op(g, pass, x, at, step - 1));
        }
        q.add(ring_op(g, passes[p], m, i, step), before_first + c, std::move(before));
      }
    }
  }
  q.num_steps = step;
  return q;
}

// The least turn (in ranks, dividing K, below K) that maps every order onto itself: some
// shift of positions d with order[m + d] = order[m] + turn for every member m; 0 if none.
int orders_turn(const std::vector<std::vector<int>>& orders, int K) {
  for (int turn = 1; turn < K; ++turn) {
    if (K % turn != 0) continue;
    bool all = true;
    for (const std::vector<int>& order : orders) {
      const int d = static_cast<int>(std::find(order.begin(), order.end(), (order[0] + turn) % K) -
                                     order.begin());
      for (int m = 0; all && m < K; ++m) all = order[(m + d) % K] == (order[m] + turn) % K;
      if (!all) break;
    }
    if (all) return turn;
  }
  return 0;
}

// Channels in their own rank orders (rail orders across hosts) are the same turned by a
// whole number of hosts: a fold by that turn (or `period`, a multiple of it; 0: the least)
// keeps the ops whose rank runs them is below it, each step's in the full schedule's order (channel
// by channel, member by member), each waiting on its channel's sends of the step before by members
// m - 1, m, m + 1 (the builder's rule), each of those the representative run by the same rank
// modulo the turn, turned by the rest.
std::optional<QuotientSchedule> ordered_ring_quotient(const CollectiveShape& shape,
                                                      const AlgorithmOptions& o,
                                                      std::span<const RingPass> passes,
                                                      int period) {
  const int K = shape.ranks, C = std::max(1, o.channels);
  const int least = orders_turn(o.orders, K);
  if (least == 0) return std::nullopt;
  if (period == 0) period = least;
  if (period % least != 0 || K % period != 0)
    throw std::invalid_argument("a ring's fold widened to a turn not of its orders'");
  const std::vector<Group> groups = channel_groups(whole_group(shape), o, ChannelSplit::Lanes, 1);
  QuotientSchedule q;
  q.shape = shape;
  q.period = period;
  // Per channel: the representative each rank below the turn ran in the step before.
  std::vector<std::vector<OpId>> before(C, std::vector<OpId>(period)), now = before;
  int step = 0;
  for (std::size_t p = 0; p < passes.size(); ++p) {
    for (int i = 0; i < K - 1; ++i, ++step) {
      for (int c = 0; c < C; ++c) {
        const Group& g = groups[c];
        for (int m = 0; m < K; ++m) {
          const Op op = ring_op(g, passes[p], m, i, step);
          if (op.executor() >= period) continue;
          if (step > 0) {
            const RingPass pass = i > 0 ? passes[p] : passes[p - 1];
            const int at = i > 0 ? i - 1 : K - 2;
            std::vector<int> members{rotate(m - 1, 0, K), m, (m + 1) % K};
            std::sort(members.begin(), members.end());
            members.erase(std::unique(members.begin(), members.end()), members.end());
            for (int x : members) {
              const Op dep = ring_op(g, pass, x, at, step - 1);
              const int e = dep.executor();
              q.deps.push_back({before[c][e % period], e - e % period, needs_only_sent(dep, op)});
            }
          }
          now[c][op.executor()] = q.ops.size();
          q.ops.push_back(op);
          q.dep_begin.push_back(q.deps.size());
        }
      }
      std::swap(before, now);
    }
  }
  q.num_steps = step;
  return q;
}

// A ring entry: its passes over the whole group, or over each channel's lane of every
// chunk; the same passes make its fold.
template <const auto& Passes>
AlgorithmEntry ring_entry(CollectiveOp op) {
  return with_channels(
      {.op = op,
       .algorithm = "ring",
       .summary = "K−1 steps per pass (all-reduce: a reduce-scatter pass, then an all-gather "
                  "pass), N/K per step; `channels` C: C rings, each on a lane of every chunk "
                  "and in its own rank order (across nodes, one rail each).",
       .generate =
           [](const CollectiveShape& s, const AlgorithmOptions&) {
             auto b = ring_builder(s, static_cast<int>(std::size(Passes)));
             const Group g = whole_group(s);
             ring_passes(b, std::span<const Group>(&g, 1), Passes);
             return b.finish();
           },
       .on_groups = [](ScheduleBuilder& b, std::span<const Group> g,
                       const AlgorithmOptions&) { ring_passes(b, g, Passes); },
       .channel_split = ChannelSplit::Lanes,
       .quotient = [](const CollectiveShape& s, const AlgorithmOptions& o)
           -> std::optional<QuotientSchedule> { return ring_quotient(s, o, Passes); },
       // Channels in rail orders list a step's ops member by member, not rank by rank:
       // widened by building the wider fold directly.
       .quotient_at = [](const CollectiveShape& s, const AlgorithmOptions& o,
                         int period) -> QuotientSchedule {
         if (o.orders.empty()) return widen(*ring_quotient(s, o, Passes), period);
         return *ordered_ring_quotient(s, o, Passes, period);
       }});
}

}  // namespace

void register_ring(std::vector<AlgorithmEntry>& c) {
  c.push_back(ring_entry<kRingAllReduce>(CollectiveOp::AllReduce));
  c.push_back(ring_entry<kRingReduceScatter>(CollectiveOp::ReduceScatter));
  c.push_back(ring_entry<kRingAllGather>(CollectiveOp::AllGather));
}

}  // namespace collsim
