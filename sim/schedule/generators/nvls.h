#pragma once
// NVLS (NVLink SHARP) all-reduce. The buffer is cut into one slice per GPU of an
// NVSwitch; each GPU issues its slice: the switch reads the slice from every GPU and
// reduces it (multimem.ld_reduce, the result back to the issuer), then the issuer
// stores it once and the switch multicasts it to every GPU (multimem.st). Per GPU and
// direction that is S (K+1)/K bytes, against a ring's 2 S (K-1)/K.
//   nvls:      every rank on one sharp NVSwitch.
//   nvls_tree: one sharp NVSwitch per host; between the switch reduce and the
//              multicast, the issuers of a slice (one per host) all-reduce it over a
//              binary tree across hosts (NCCL's NVLSTree).
// Both are pipelined with "segments" and split into independent "channels".
#include <vector>

#include "schedule/algorithms.h"

namespace collsim {

void register_nvls(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
