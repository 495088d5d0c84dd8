#pragma once
// Point-to-point patterns: all-to-all (direct: every pair at once; pairwise:
// K-1 rounds of shifted exchanges), all-to-allv by the same generators, and the
// one-step scatter, gather and send/recv.
#include "schedule/algorithms.h"

namespace collsim {

void register_direct(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
