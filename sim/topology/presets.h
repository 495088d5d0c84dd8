#pragma once
// Parametrised topologies, built in code and also reachable from JSON as
// {"preset": "cluster", ...}.
#include <vector>

#include "topology/topology.h"

namespace collsim {

// K GPUs, each with one full-duplex link to a single non-blocking switch.
Topology make_switch_topology(int gpus, double bandwidth, Time latency,
                              LinkKind kind = LinkKind::NvLink);
// K GPUs in a ring of neighbour links (both directions unless `bidirectional` is false).
Topology make_ring_topology(int gpus, double bandwidth, Time latency, bool bidirectional = true,
                            LinkKind kind = LinkKind::NvLink);

struct ServerParams {
  const GpuModel* gpu = nullptr;  // named by the scenario: its defaults and generation
  std::optional<HostCpu> cpu = std::nullopt;  // named by the scenario ("cpu")
  int gpus = 8;
  double nvlink = 450e9;  // per GPU per direction, through the NVSwitch fabric
  Time nvlink_latency = 0;
  double pcie = 64e9;  // GPU to its NIC (PCIe Gen5 x16)
  double nic = 50e9;   // 400 Gb/s InfiniBand NDR per GPU
  Time nic_latency = 0;
};

// A DGX H100-like server: GPUs on one NVSwitch fabric, one NIC per GPU on PCIe.
Topology make_dgx_topology(const ServerParams& server);

struct ClusterParams {
  int nodes = 2;
  ServerParams server;
  int radix = 64;                 // leaf switch ports
  double oversubscription = 1.0;  // leaf downlink : uplink capacity
  int spines = 1;                 // each leaf reaches every spine (of its pod); routing spreads
  LinkKind fabric = LinkKind::Ib;
  // Three tiers when pod_nodes > 0: servers in pods of pod_nodes, each pod with its own
  // leaves and `spines`, and every pod spine linked to every one of `cores` core
  // switches, whose links carry 1/core_oversubscription of what the pod spine takes in.
  int pod_nodes = 0;
  int cores = 1;
  double core_oversubscription = 1.0;
  // The network switches reduce (InfiniBand SHARP): NCCL's CollNet algorithms apply.
  bool sharp = false;
};

// Rail-optimized fat tree: GPU i of every server hangs (through its NIC) on a leaf of
// rail i, so same-rail traffic crosses one leaf; other traffic crosses a spine (and,
// with three tiers, traffic between pods a core switch). A leaf takes
// radix * o / (o + 1) servers; its uplinks carry 1/o of what its servers can send.
Topology make_cluster_topology(const ClusterParams& p);

// One NVLink domain: 72 GPUs (by default) on one NVSwitch fabric.
Topology make_nvl72_topology(int gpus, double bandwidth, Time latency);

// ASTRA-sim-style dimensions: GPUs sit on a grid; along each dimension the GPUs
// that differ only in that coordinate are joined as a ring, through a switch,
// or all-to-all. The first dimension is innermost (a server); a 2D/3D torus is
// every dimension a ring.
struct Dimension {
  enum class Shape { Ring, Switch, FullyConnected } shape = Shape::Ring;
  int size = 2;
  double bandwidth = 100e9;
  Time latency = 0;
  LinkKind kind = LinkKind::NvLink;
};
Topology make_multidim_topology(const std::vector<Dimension>& dims,
                                const std::string& name = "multidim");

}  // namespace collsim
