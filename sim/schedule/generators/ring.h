#pragma once
// Ring algorithms (Patarasuk & Yuan): K-1 steps per pass, each member sending
// one chunk of N/K to its successor per step, so every link carries the same load.
#include <span>

#include "schedule/algorithms.h"
#include "schedule/group.h"

namespace collsim {

// One pass around each group's ring, all groups in lock-step: in step i member m
// sends chunk (m + shift - i) mod K of the group's region to member m + 1, which
// copies or reduces it in. After a reducing pass member m owns the full
// reduction of chunk (m + 1 + shift); a copying pass spreads chunk (m + shift).
void ring_pass(ScheduleBuilder& b, std::span<const Group> groups, OpKind kind, int shift);

// One pass as a collective runs it: copying or reducing, from which chunk.
struct RingPass {
  OpKind kind;
  int shift;
};
// All-reduce: reduce-scatter leaving member m with chunk m+1, then all-gather from there
// (the textbook order that the step-by-step trace in docs/models.md shows).
inline constexpr RingPass kRingAllReduce[] = {{OpKind::Reduce, 0}, {OpKind::Copy, 1}};
inline constexpr RingPass kRingReduceScatter[] = {{OpKind::Reduce, -1}};  // m keeps chunk m
inline constexpr RingPass kRingAllGather[] = {{OpKind::Copy, 0}};         // m spreads chunk m

// The passes one after another.
void ring_passes(ScheduleBuilder& b, std::span<const Group> groups,
                 std::span<const RingPass> passes);

// The collective-level building blocks, on any group.
inline void ring_reduce_scatter(ScheduleBuilder& b, std::span<const Group> g) {
  ring_passes(b, g, kRingReduceScatter);
}
inline void ring_all_gather(ScheduleBuilder& b, std::span<const Group> g) {
  ring_passes(b, g, kRingAllGather);
}
inline void ring_all_reduce(ScheduleBuilder& b, std::span<const Group> g) {
  ring_passes(b, g, kRingAllReduce);
}

void register_ring(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
