#pragma once
// The topology as a picture, in SVG (no Graphviz needed). A few servers are drawn node by
// node: every GPU, NIC and switch, every cable. A cluster is drawn grouped: servers that
// hang from the same switches form one box (a cell per server), switches with the same
// neighbours are one box once a tier has too many to draw, and the cables between two
// boxes are one line. With a run's load, widths are bytes and colours utilisation;
// without, widths are capacity.
#include <ostream>
#include <vector>

#include "report/traffic.h"
#include "topology/topology.h"

namespace collsim {

// For an HTML page (report.html): a legend paragraph, then the drawing (id "topology").
// `loads`: per directed link, as a run's traffic report gives them; empty: unloaded.
void topology_figure(std::ostream& out, const Topology& t, const std::vector<LinkTraffic>& loads);

// The unloaded drawing as a standalone SVG file (`collsim topo --svg`).
void write_topology_svg(std::ostream& out, const Topology& t);

}  // namespace collsim
