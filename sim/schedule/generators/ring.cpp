#include "schedule/generators/ring.h"

#include <algorithm>

namespace collsim {
namespace {

// Room for `passes` passes over groups of `ranks`; each op waits on at most three others.
ScheduleBuilder ring_builder(const CollectiveShape& shape, int passes) {
  auto b = ScheduleBuilder::uniform(shape, "ring", {shape.count});
  const std::size_t ops = static_cast<std::size_t>(shape.ranks) * (shape.ranks - 1) * passes;
  b.reserve(ops, 3 * ops);
  return b;
}

template <class Body>
Schedule whole_ring(const CollectiveShape& shape, int passes, Body&& body) {
  auto b = ring_builder(shape, passes);
  const Group g = whole_group(shape);
  body(b, std::span<const Group>(&g, 1));
  return b.finish();
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
        const int c = g.chunk_of(rotate(m + shift - i, 0, K));
        const std::int64_t at = g.chunk_begin(K, c);
        b.add(kind, g.at(m, at), g.at((m + 1) % K, at), g.chunk_size(K, c), g.channel);
      }
    }
  }
}

// Reduce-scatter leaving member m with chunk m+1, then all-gather from there:
// the textbook order that the step-by-step trace in docs/models.md shows.
void ring_all_reduce(ScheduleBuilder& b, std::span<const Group> groups) {
  ring_pass(b, groups, OpKind::Reduce, 0);
  ring_pass(b, groups, OpKind::Copy, 1);
}

namespace {

// A ring entry: `passes` passes of `body` over the whole group, or over each
// channel's lane of every chunk.
template <void (*Body)(ScheduleBuilder&, std::span<const Group>)>
AlgorithmEntry ring_entry(CollectiveOp op, int passes) {
  return with_channels(
      {.op = op,
       .algorithm = "ring",
       .generate = [passes](const CollectiveShape& s,
                            const AlgorithmOptions&) { return whole_ring(s, passes, Body); },
       .on_groups = [](ScheduleBuilder& b, std::span<const Group> g,
                       const AlgorithmOptions&) { Body(b, g); },
       .channel_split = ChannelSplit::Lanes});
}

}  // namespace

void register_ring(std::vector<AlgorithmEntry>& c) {
  c.push_back(ring_entry<ring_all_reduce>(CollectiveOp::AllReduce, 2));
  c.push_back(ring_entry<ring_reduce_scatter>(CollectiveOp::ReduceScatter, 1));
  c.push_back(ring_entry<ring_all_gather>(CollectiveOp::AllGather, 1));
}

}  // namespace collsim
