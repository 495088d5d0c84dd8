#include "schedule/generators/ring.h"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <numeric>

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
  // m + shift - i lies in (-K, K] (a step i < K, a shift of at most one): one wrap, where a
  // modulo was a third of a large fold's making.
  RingSend send_in_step(int m, int i, int shift) const {
    int position = m + shift - i;
    if (position < 0)
      position += K_;
    else if (position >= K_)
      position -= K_;
    return send(m, position);
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

// The least turn (in ranks, dividing K) that maps every chunk onto one of its size. Chunk
// i starts at floor(i count / K) (Partition), so chunk i + p has chunk i's size for every i
// exactly when p count / K is whole: when K / gcd(count, K) divides p. A lane of a chunk
// (channels) has a size that its chunk's size alone sets.
int chunks_turn(std::int64_t count, int K) {
  return K / static_cast<int>(std::gcd(count, std::int64_t{K}));
}

// A ring whose chunks a turn maps onto chunks of their sizes and whose channels visit the
// ranks in orders the turn maps onto itself (in order or in reverse: a turn of one rank;
// rail orders across hosts: of two hosts) is the same turned by that turn, `period` (a
// multiple of it), if that is fewer than all the ranks. The fold keeps the ops run by ranks
// below the period, each step's in the full schedule's order (channel by channel, member by
// member); each waits, as the builder has it, on its channel's sends of the step before by
// members m - 1, m and m + 1, each the representative run by the same rank modulo the
// period, turned by the rest. Made a step at a time (emit), to be stored or streamed.
class RingFold {
 public:
  // The fold by `period` ranks (0: the least), or nullopt where there is none.
  static std::optional<RingFold> make(const CollectiveShape& shape, const AlgorithmOptions& o,
                                      std::span<const RingPass> passes, int period) {
    const int K = shape.ranks, C = std::max(1, o.channels);
    if (shape.count <= 0) return std::nullopt;
    if (shape.count / K < C) return std::nullopt;  // empty lanes: channels without ops
    std::vector<Group> groups = C > 1 || !o.orders.empty()
                                    ? channel_groups(whole_group(shape), o, ChannelSplit::Lanes, 1)
                                    : std::vector<Group>{whole_group(shape)};
    const int orders = orders_turn(groups, K);
    if (orders == 0) return std::nullopt;
    const int least = std::lcm(orders, chunks_turn(shape.count, K));
    if (least == K && K > 1) return std::nullopt;  // no turn below all the ranks
    if (period == 0) period = least;
    if (period % least != 0 || K % period != 0)
      throw std::invalid_argument(
          "a ring's fold widened to a turn not of its orders' and its chunks'");
    return RingFold(shape, passes, std::move(groups), period);
  }

  int period() const { return period_; }
  int channels() const { return static_cast<int>(groups_.size()); }
  int steps() const { return static_cast<int>(passes_.size()) * (shape_.ranks - 1); }
  std::uint64_t size() const {
    return static_cast<std::uint64_t>(steps()) * groups_.size() * static_cast<unsigned>(period_);
  }

  // The (source, destination) ranks of its transfers: every step's are the same.
  std::vector<std::pair<int, int>> pairs() const {
    std::vector<std::pair<int, int>> out;
    const int K = shape_.ranks;
    for (std::size_t c = 0; c < groups_.size(); ++c)
      for (const RingPass& pass : passes_)
        for (int m : pass.kind == OpKind::Reduce ? runs_reduce_[c] : runs_copy_[c])
          out.emplace_back(groups_[c].ranks[m], groups_[c].ranks[(m + 1) % K]);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Hands each step's representatives, numbered from 0 in order, to `take`.
  void emit(const std::function<void(const QuotientStepView&)>& take) const {
    const int K = shape_.ranks, C = channels();
    std::vector<Op> ops;
    std::vector<DepIndex> dep_begin;
    std::vector<QuotientSchedule::Dep> deps;
    // Per channel: the representative each rank below the period ran in the step before.
    std::vector<std::vector<OpId>> before(C, std::vector<OpId>(period_)), now = before;
    OpId next = 0;
    int step = 0;
    for (std::size_t p = 0; p < passes_.size(); ++p) {
      for (int i = 0; i < K - 1; ++i, ++step) {
        ops.clear();
        deps.clear();
        dep_begin.assign(1, 0);
        for (int c = 0; c < C; ++c) {
          const Group& g = groups_[c];
          for (int m : passes_[p].kind == OpKind::Reduce ? runs_reduce_[c] : runs_copy_[c]) {
            const Op op = ring_op(g, chunks_[c], passes_[p], m, i, step);
            if (step > 0) {
              const RingPass pass = i > 0 ? passes_[p] : passes_[p - 1];
              const int at = i > 0 ? i - 1 : K - 2;
              std::array<int, 3> members{m == 0 ? K - 1 : m - 1, m, m + 1 == K ? 0 : m + 1};
              std::sort(members.begin(), members.end());
              const auto last = std::unique(members.begin(), members.end());
              for (auto x_at = members.begin(); x_at != last; ++x_at) {
                const Op dep = ring_op(g, chunks_[c], pass, *x_at, at, step - 1);
                const int e = dep.executor(), below = below_period_[e];
                deps.push_back({before[c][below], e - below, needs_only_sent(dep, op)});
              }
            }
            now[c][op.executor()] = next + ops.size();
            ops.push_back(op);
            dep_begin.push_back(deps.size());
          }
        }
        std::swap(before, now);
        take({next, ops, dep_begin, deps});
        next += ops.size();
      }
    }
  }

  // Its RingChunks refer to its groups: moved, not copied.
  RingFold(RingFold&&) = default;
  RingFold(const RingFold&) = delete;
  RingFold& operator=(const RingFold&) = delete;

 private:
  RingFold(const CollectiveShape& shape, std::span<const RingPass> passes,
           std::vector<Group> groups, int period)
      : shape_(shape), passes_(passes), groups_(std::move(groups)), period_(period) {
    const int K = shape.ranks, C = channels();
    // Per channel, the members whose sends ranks below the period run: a copy is run by its
    // sender (member m), a reduction by its receiver (member m + 1).
    runs_copy_.resize(C);
    runs_reduce_.resize(C);
    for (int c = 0; c < C; ++c) {
      std::vector<int> position(K);
      for (int m = 0; m < K; ++m) position[groups_[c].ranks[m]] = m;
      for (int r = 0; r < period; ++r) {
        runs_copy_[c].push_back(position[r]);
        runs_reduce_[c].push_back(rotate(position[r] - 1, 0, K));
      }
      std::sort(runs_copy_[c].begin(), runs_copy_[c].end());
      std::sort(runs_reduce_[c].begin(), runs_reduce_[c].end());
    }
    chunks_.reserve(groups_.size());
    for (const Group& g : groups_) chunks_.emplace_back(g);
    below_period_.resize(K);
    for (int r = 0; r < K; ++r) below_period_[r] = r % period;
  }

  CollectiveShape shape_;
  std::span<const RingPass> passes_;  // static: an entry's own
  std::vector<Group> groups_;         // per channel
  int period_;
  std::vector<std::vector<int>> runs_copy_, runs_reduce_;
  std::vector<RingChunks> chunks_;  // refer to groups_: made once they are in place
  // Per rank, rank mod period: a division per dependency was a fifth of a large fold's making.
  std::vector<int> below_period_;
};

// The fold, stored.
QuotientSchedule stored(const CollectiveShape& shape, const RingFold& fold) {
  QuotientSchedule q;
  q.shape = shape;
  q.period = fold.period();
  q.num_steps = fold.steps();
  // Sized once: at K = 4096 the fold holds millions of ops, and growing by doubling copied
  // them into fresh pages that the kernel zeroes first (half of a folded run's time).
  q.ops.reserve(fold.size());
  q.dep_begin.reserve(fold.size() + 1);
  q.deps.reserve(3 * fold.size());  // an op waits on at most its three members' ops before
  fold.emit([&](const QuotientStepView& step) {
    q.ops.insert(q.ops.end(), step.ops.begin(), step.ops.end());
    q.deps.insert(q.deps.end(), step.deps.begin(), step.deps.end());
    const DepIndex base = q.dep_begin.back();
    for (std::size_t i = 1; i < step.dep_begin.size(); ++i)
      q.dep_begin.push_back(base + step.dep_begin[i]);
  });
  return q;
}

// Its own fold (by the least turn), stored where it holds at most kMostRepresentatives ops.
std::optional<QuotientSchedule> ring_quotient(const CollectiveShape& shape,
                                              const AlgorithmOptions& o,
                                              std::span<const RingPass> passes) {
  const std::optional<RingFold> fold = RingFold::make(shape, o, passes, 0);
  if (!fold || fold->size() > kMostRepresentatives) return std::nullopt;
  return stored(shape, *fold);
}

// The fold played as it is made, however many representatives it has.
std::optional<StreamedQuotient> ring_quotient_stream(const CollectiveShape& shape,
                                                     const AlgorithmOptions& o,
                                                     std::span<const RingPass> passes, int period) {
  std::optional<RingFold> fold = RingFold::make(shape, o, passes, period);
  if (!fold) return std::nullopt;
  StreamedQuotient q;
  q.shape = shape;
  q.period = fold->period();
  q.channels = fold->channels();
  q.num_steps = fold->steps();
  q.size = fold->size();
  q.pairs = fold->pairs();
  q.emit = [fold = std::make_shared<const RingFold>(std::move(*fold))](
               const std::function<void(const QuotientStepView&)>& take) { fold->emit(take); };
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
       .fold_condition =
           "where a turn of fewer than all its ranks maps its chunks onto chunks of their sizes "
           "(a turn of p ranks does where K / gcd(elements, K) divides p) and each channel's "
           "order of the ranks onto itself",
       // Channels in rail orders list a step's ops member by member, not rank by rank:
       // widened by building the wider fold directly.
       .quotient_at =
           [](const CollectiveShape& s, const AlgorithmOptions& o, int period) {
             return stored(s, RingFold::make(s, o, Passes, period).value());
           },
       .quotient_stream = [](const CollectiveShape& s, const AlgorithmOptions& o,
                             int period) { return ring_quotient_stream(s, o, Passes, period); }});
}

}  // namespace

void register_ring(std::vector<AlgorithmEntry>& c) {
  c.push_back(ring_entry<kRingAllReduce>(CollectiveOp::AllReduce));
  c.push_back(ring_entry<kRingReduceScatter>(CollectiveOp::ReduceScatter));
  c.push_back(ring_entry<kRingAllGather>(CollectiveOp::AllGather));
}

}  // namespace collsim
