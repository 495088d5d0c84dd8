#pragma once
// Star-shaped algorithms: everyone sends to a root (naive) or to sharded
// servers (parameter server), which reduce and send the result back.
#include "schedule/algorithms.h"

namespace collsim {

void register_star(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
