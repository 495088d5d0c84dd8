#pragma once
// Parametrised topologies, built in code and also reachable from JSON as
// {"preset": "switch", ...}.
#include "topology/topology.h"

namespace collsim {

// K GPUs, each with one full-duplex link to a single non-blocking switch.
Topology make_switch_topology(int gpus, double bandwidth, Time latency, LinkKind kind = LinkKind::NvLink);
// K GPUs in a ring of neighbour links (both directions unless `bidirectional` is false).
Topology make_ring_topology(int gpus, double bandwidth, Time latency, bool bidirectional = true,
                            LinkKind kind = LinkKind::NvLink);

}  // namespace collsim
