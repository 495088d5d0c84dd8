#pragma once
// NVLS (NVLink SHARP) all-reduce on one NVSwitch fabric: the buffer is cut into
// K x segments pieces; for each, the switch reads the piece from every GPU and
// reduces it (multimem.ld_reduce), then multicasts the result back to every GPU
// (multimem.st). Each byte crosses each GPU's link once up and once down.
#include <vector>

#include "schedule/algorithms.h"

namespace collsim {

void register_nvls(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
