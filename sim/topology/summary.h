#pragma once
// What `collsim topo` prints: counts, per-GPU bandwidth, bisection bandwidth,
// and a Graphviz drawing.
#include <ostream>
#include <string>

#include "topology/topology.h"

namespace collsim {

// The maximum flow (bytes/s) from the first half of the ranks to the second —
// the capacity of the tightest cut between them.
double bisection_bandwidth(const Topology& t);

std::string topology_summary(const Topology& t);

// Graphviz, through Boost.Graph's writer: GPUs as boxes, links labelled with
// kind and bandwidth (a full-duplex pair drawn once).
void write_graphviz(std::ostream& out, const Topology& t);

}  // namespace collsim
