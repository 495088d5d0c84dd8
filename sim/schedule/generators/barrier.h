#pragma once
// Barriers: messages without data whose only effect is order. Dissemination
// (Hensgen, Finkel, Manber): in round k every rank signals the rank 2^k ahead, so
// after ceil(log2 K) rounds each rank has heard, directly or not, from every rank.
#include "schedule/algorithms.h"

namespace collsim {

void register_barrier(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
