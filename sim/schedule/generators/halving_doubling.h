#pragma once
// Recursive halving-doubling (Rabenseifner): reduce-scatter by recursive
// halving, all-gather by recursive doubling; 2 log2 K steps moving 2(K-1)/K N.
// For K not a power of two, the first 2r members (r = K - 2^floor(log2 K)) pair
// up: odd ones fold their data into their even neighbour first and get the
// result back at the end.
#include "schedule/algorithms.h"
#include "schedule/group.h"

namespace collsim {

void halving_doubling_all_reduce(ScheduleBuilder& b, const Group& g);

void register_halving_doubling(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
