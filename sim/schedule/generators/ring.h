#pragma once
// Ring algorithms (Patarasuk & Yuan): K-1 steps per pass, each rank sending one
// chunk of N/K to its successor per step, so every link carries the same load.
#include "schedule/algorithms.h"
#include "schedule/builder.h"

namespace collsim {

// One pass around the ring over the K chunks of buffer 0: in step i, rank r sends
// chunk (r + shift - i) mod K to rank r + 1, which copies or reduces it in.
// After a reducing pass rank r owns the full reduction of chunk (r + 1 + shift).
void ring_pass(ScheduleBuilder& b, OpKind kind, int shift);

Schedule ring_reduce_scatter(const CollectiveShape& shape, const AlgorithmOptions& opt);
Schedule ring_all_gather(const CollectiveShape& shape, const AlgorithmOptions& opt);
Schedule ring_all_reduce(const CollectiveShape& shape, const AlgorithmOptions& opt);

}  // namespace collsim
