#include "schedule/generators/ring.h"

namespace collsim {
namespace {

int mod(int a, int k) { return ((a % k) + k) % k; }

// Room for `passes` ring passes; each op waits on at most three others.
ScheduleBuilder ring_builder(const CollectiveShape& shape, int passes) {
  auto b = ScheduleBuilder::uniform(shape, "ring", {shape.count});
  const std::size_t ops = static_cast<std::size_t>(shape.ranks) * (shape.ranks - 1) * passes;
  b.reserve(ops, 3 * ops);
  return b;
}

}  // namespace

void ring_pass(ScheduleBuilder& b, OpKind kind, int shift) {
  const int K = b.shape().ranks;

  const Partition chunks{b.shape().count, K};
  for (int i = 0; i < K - 1; ++i) {
    b.next_step();
    for (int r = 0; r < K; ++r) {
      const int c = mod(r + shift - i, K);
      const std::int64_t at = chunks.begin(c);
      b.add(kind, {r, 0, at}, {(r + 1) % K, 0, at}, chunks.size(c), 0);
    }
  }
}

// Reduce-scatter leaves rank r with chunk r (shift -1), as nccl-tests expects.
Schedule ring_reduce_scatter(const CollectiveShape& shape, const AlgorithmOptions&) {
  auto b = ring_builder(shape, 1);
  ring_pass(b, OpKind::Reduce, -1);
  return b.finish();
}

// All-gather starts with rank r holding chunk r.
Schedule ring_all_gather(const CollectiveShape& shape, const AlgorithmOptions&) {
  auto b = ring_builder(shape, 1);
  ring_pass(b, OpKind::Copy, 0);
  return b.finish();
}

// Reduce-scatter leaving rank r with chunk r+1, then all-gather from there:
// the textbook order that REFERENCE.md's step-by-step trace shows.
Schedule ring_all_reduce(const CollectiveShape& shape, const AlgorithmOptions&) {
  auto b = ring_builder(shape, 2);
  ring_pass(b, OpKind::Reduce, 0);
  ring_pass(b, OpKind::Copy, 1);
  return b.finish();
}

}  // namespace collsim
