#pragma once
// What `collsim topo` prints: counts, per-GPU injection by link kind (NICs included),
// the switch tiers with their oversubscription and capacity, bisection bandwidth,
// and a Graphviz drawing.
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace collsim {

// The maximum flow (bytes/s) from the first half of the ranks to the second —
// the capacity of the tightest cut between them.
double bisection_bandwidth(const Topology& t);

// One tier of a fat tree (leaf, spine or core switches). Capacities are one direction.
struct TierSummary {
  std::string kind;  // "leaf", "spine", "core"
  int switches = 0;
  double from_below = 0;  // what the tier below can send into these switches
  double to_above = 0;    // their links up to the next tier (0 at the top)
  int uplinks = 0;        // directed links up to the next tier, from all these switches
  // from_below : to_above, 2 meaning 2:1; 0 at the top tier.
  double oversubscription() const { return to_above > 0 ? from_below / to_above : 0; }
};

// What one GPU (rank 0's) can send at once.
struct InjectionSummary {
  std::string gpu;                        // its node name
  std::map<std::string, double> by_kind;  // links leaving the GPU, summed per kind
  // Through its NICs into the fabric: per NIC the lesser of the GPU's link to it and
  // the NIC's own links onward, summed; `nic_kinds` is those onward links by kind.
  int nics = 0;
  std::map<std::string, double> nic_kinds;
  double scale_out = 0;
  // Where the GPU's own link to a NIC (PCIe) is slower than the NIC's links onward, it
  // caps what leaves the host: `nic_onward` is what the NICs could send, scale_out what
  // the GPU's links let through; `capping_kind` the kind of the GPU's link ("" when
  // nothing is capped).
  double nic_onward = 0;
  std::string capping_kind;
};

// Switches of one kind that reduce in the switch (NVLink SHARP on an NVSwitch, InfiniBand
// SHARP on a network switch) at one efficiency: what NVLS and CollNet can use.
struct ReducingSwitches {
  std::string kind;  // "nvswitch", "leaf", ...
  int switches = 0;
  double efficiency = 1;  // the share of the link rate their reductions and multicasts reach
};

struct TopologySummary {
  std::string name;
  int gpus = 0;
  int hosts = 0;  // distinct host indices of GPUs (servers), 0 when unknown
  std::size_t nodes = 0, links = 0;
  std::map<std::string, int> nodes_by_kind, links_by_kind;  // links directed
  std::map<std::string, double> bandwidth_by_kind;          // total over directed links of a kind
  InjectionSummary injection;                               // empty gpu when there are no GPUs
  std::vector<TierSummary> tiers;  // bottom up; empty without leaf/spine/core switches
  std::vector<ReducingSwitches> reducing;  // by kind, then efficiency; empty: none reduces
  double bisection = 0;
  // Where a GPU cannot reach another over the directed links ("rank 0 (g0) cannot reach
  // rank 4 (g4)"): a collective across them fails. Empty: every GPU reaches every other.
  std::string unreachable;
};

TopologySummary summarise_topology(const Topology& t);
std::string topology_summary(const Topology& t);  // the text `collsim topo` prints
// The same figures in bytes/s (`collsim topo --summary-json`, Python's collsim.topology).
nlohmann::json topology_summary_json(const Topology& t);

// Graphviz, left to right from the top switch tier down to the GPUs: each host's
// GPUs (labelled with their rank, in rank order), NICs and NVSwitch in a box of their
// own, leaves rail after rail, links coloured by kind with a legend of the rates.
void write_graphviz(std::ostream& out, const Topology& t);

}  // namespace collsim
