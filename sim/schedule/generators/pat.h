#pragma once
// PAT, after NCCL's "Parallel Aggregated Trees" for all-gather and reduce-scatter
// (used there with one GPU per node): ceil(log2 K) steps instead of the ring's K-1,
// still moving (K-1)/K of the data per rank.
//
// All-gather is Bruck's algorithm done in place. Before step d (distance 2^d) member m
// holds the chunks of members [m, m + 2^d) (mod K); it sends them to member m - 2^d and
// receives [m + 2^d, m + 2^d + n) from member m + 2^d, with n = min(2^d, K - 2^d), so
// the last step of a K that is not a power of two sends only what is still missing.
// Chunks stay at their own offsets in buffer 0, so there is neither a final rotation
// nor a scratch buffer; the price is that a range wrapping past the last chunk goes as
// two transfers (and a lane of every chunk, with channels, as one per chunk).
// Reduce-scatter is the same schedule transposed: steps in reverse order, each transfer
// reversed and reducing, so every chunk's broadcast tree becomes its reduction tree.
#include <span>

#include "schedule/algorithms.h"
#include "schedule/group.h"

namespace collsim {

// All groups in lock-step; member m ends with (reduce-scatter) or spreads from
// (all-gather) its chunk g.chunk_of(m), on the group's lane.
void pat_all_gather(ScheduleBuilder& b, std::span<const Group> groups);
void pat_reduce_scatter(ScheduleBuilder& b, std::span<const Group> groups);

void register_pat(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
