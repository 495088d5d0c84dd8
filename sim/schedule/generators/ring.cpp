#include "schedule/generators/ring.h"

#include <algorithm>
#include <array>

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

// A group's chunk bounds, computed once: a ring step's K sends then take no division
// (three 64-bit ones per send were a third of a large ring's generation).
class RingChunks {
 public:
  explicit RingChunks(const Group& g) : g_(g), K_(g.size()) {
    spans_.reserve(K_);
    for (int c = 0; c < K_; ++c) spans_.push_back({g.chunk_begin(K_, c), g.chunk_size(K_, c)});
  }
  // The ring position member 0 sends from in step i (member m sends position + m, mod K).
  int first_position(int i, int shift) const { return rotate(shift - i, 0, K_); }
  RingSend send(int m, int position) const {
    const Span& c = spans_[g_.chunk_of(position)];
    return {g_.at(m, c.begin), g_.at(m + 1 == K_ ? 0 : m + 1, c.begin), c.count};
  }
  RingSend send_in_step(int m, int i, int shift) const {
    return send(m, rotate(m + shift - i, 0, K_));
  }

 private:
  struct Span {
    std::int64_t begin, count;
  };
  const Group& g_;
  int K_;
  std::vector<Span> spans_;
};

}  // namespace

void ring_pass(ScheduleBuilder& b, std::span<const Group> groups, OpKind kind, int shift) {
  int steps = 0;
  for (const Group& g : groups) steps = std::max(steps, g.size() - 1);
  std::vector<RingChunks> chunks(groups.begin(), groups.end());
  for (int i = 0; i < steps; ++i) {
    b.next_step();
    for (std::size_t n = 0; n < groups.size(); ++n) {
      const Group& g = groups[n];
      const int K = g.size();
      if (i >= K - 1) continue;
      for (int m = 0, position = chunks[n].first_position(i, shift); m < K; ++m) {
        const RingSend s = chunks[n].send(m, position);
        b.add(kind, s.from, s.to, s.count, g.channel);
        if (++position == K) position = 0;
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
Op ring_op(const Group& g, const RingChunks& chunks, RingPass pass, int m, int i, int step) {
  const RingSend s = chunks.send_in_step(m, i, pass.shift);
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

// The least turn (in ranks, dividing K) that maps every order onto itself: some shift of
// positions d with order[m + d] = order[m] + turn for every member m; 0 if none below K.
int orders_turn(const std::vector<Group>& groups, int K) {
  if (K == 1) return 1;
  for (int turn = 1; turn < K; ++turn) {
    if (K % turn != 0) continue;
    bool all = true;
    for (const Group& g : groups) {
      const std::vector<int>& order = g.ranks;
      const int d = static_cast<int>(std::find(order.begin(), order.end(), (order[0] + turn) % K) -
                                     order.begin());
      for (int m = 0; all && m < K; ++m) all = order[(m + d) % K] == (order[m] + turn) % K;
      if (!all) break;
    }
    if (all) return turn;
  }
  return 0;
}

// A ring in equal chunks whose channels visit the ranks in orders a turn maps onto itself
// (in order or in reverse: a turn of one rank; rail orders across hosts: of two hosts) is
// the same turned by that turn, `period` (a multiple of it; 0: the least). The fold keeps
// the ops run by ranks below the period, each step's in the full schedule's order
// (channel by channel, member by member); each waits, as the builder has it, on its
// channel's sends of the step before by members m - 1, m and m + 1, each the
// representative run by the same rank modulo the period, turned by the rest.
std::optional<QuotientSchedule> ring_quotient(const CollectiveShape& shape,
                                              const AlgorithmOptions& o,
                                              std::span<const RingPass> passes, int period = 0) {
  const int K = shape.ranks, C = std::max(1, o.channels);
  if (shape.count <= 0 || shape.count % K != 0) return std::nullopt;
  if (shape.count / K < C) return std::nullopt;  // empty lanes: channels without ops
  const std::vector<Group> groups =
      C > 1 || !o.orders.empty() ? channel_groups(whole_group(shape), o, ChannelSplit::Lanes, 1)
                                 : std::vector<Group>{whole_group(shape)};
  const int least = orders_turn(groups, K);
  if (least == 0) return std::nullopt;
  if (period == 0) period = least;
  if (period % least != 0 || K % period != 0)
    throw std::invalid_argument("a ring's fold widened to a turn not of its orders'");
  // Per channel, the members whose sends ranks below the period run: a copy is run by its
  // sender (member m), a reduction by its receiver (member m + 1).
  std::vector<std::vector<int>> runs_copy(C), runs_reduce(C);
  for (int c = 0; c < C; ++c) {
    std::vector<int> position(K);
    for (int m = 0; m < K; ++m) position[groups[c].ranks[m]] = m;
    for (int r = 0; r < period; ++r) {
      runs_copy[c].push_back(position[r]);
      runs_reduce[c].push_back(rotate(position[r] - 1, 0, K));
    }
    std::sort(runs_copy[c].begin(), runs_copy[c].end());
    std::sort(runs_reduce[c].begin(), runs_reduce[c].end());
  }
  const std::vector<RingChunks> chunks(groups.begin(), groups.end());
  QuotientSchedule q;
  q.shape = shape;
  q.period = period;
  // Sized once: at K = 4096 the fold holds millions of ops, and growing by doubling copied
  // them into fresh pages that the kernel zeroes first (half of a folded run's time).
  const auto ops = static_cast<std::size_t>(passes.size()) * static_cast<std::size_t>(K - 1) *
                   static_cast<std::size_t>(C) * static_cast<std::size_t>(period);
  q.ops.reserve(ops);
  q.dep_begin.reserve(ops + 1);
  q.deps.reserve(3 * ops);  // an op waits on at most its three members' ops of the step before
  // Per channel: the representative each rank below the period ran in the step before.
  std::vector<std::vector<OpId>> before(C, std::vector<OpId>(period)), now = before;
  int step = 0;
  for (std::size_t p = 0; p < passes.size(); ++p) {
    for (int i = 0; i < K - 1; ++i, ++step) {
      for (int c = 0; c < C; ++c) {
        const Group& g = groups[c];
        for (int m : passes[p].kind == OpKind::Reduce ? runs_reduce[c] : runs_copy[c]) {
          const Op op = ring_op(g, chunks[c], passes[p], m, i, step);
          if (step > 0) {
            const RingPass pass = i > 0 ? passes[p] : passes[p - 1];
            const int at = i > 0 ? i - 1 : K - 2;
            std::array<int, 3> members{rotate(m - 1, 0, K), m, (m + 1) % K};
            std::sort(members.begin(), members.end());
            const auto last = std::unique(members.begin(), members.end());
            for (auto x_at = members.begin(); x_at != last; ++x_at) {
              const int x = *x_at;
              const Op dep = ring_op(g, chunks[c], pass, x, at, step - 1);
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
                         int period) { return *ring_quotient(s, o, Passes, period); }});
}

}  // namespace

void register_ring(std::vector<AlgorithmEntry>& c) {
  c.push_back(ring_entry<kRingAllReduce>(CollectiveOp::AllReduce));
  c.push_back(ring_entry<kRingReduceScatter>(CollectiveOp::ReduceScatter));
  c.push_back(ring_entry<kRingAllGather>(CollectiveOp::AllGather));
}

}  // namespace collsim
