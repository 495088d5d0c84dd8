#include "topology/presets.h"

#include <fmt/format.h>
#include <cmath>

namespace collsim {
namespace {

std::vector<NodeId> add_gpus(Topology& t, int gpus, int host = 0) {
  std::vector<NodeId> ids;
  ids.reserve(gpus);
  t.reserve_nodes(gpus);
  for (int r = 0; r < gpus; ++r)
    ids.push_back(t.add_node({fmt::format("gpu{}", r), NodeKind::Gpu, r, host}));
  return ids;
}

// A server's GPUs on their NVSwitch, each with a NIC on PCIe; returns the NICs.
std::vector<NodeId> add_server(Topology& t, const ServerParams& p, int host, int first_rank,
                               bool named_by_host) {
  const std::string prefix = named_by_host ? fmt::format("n{}.", host) : "";
  // Hopper's NVSwitches and later ones reduce and multicast (NVLink SHARP), at the
  // efficiency NCCL's tuning model assumes for the generation; without a named model the
  // switch is Hopper's.
  const bool reduces = p.gpu ? p.gpu->switch_reduces : true;
  const double efficiency = p.gpu ? sharp_efficiency_for(p.gpu->arch) : kDefaultSharpEfficiency;
  const NodeId sw =
      t.add_node({prefix + "nvswitch", NodeKind::NvSwitch, -1, host, reduces, efficiency});
  std::vector<NodeId> nics;
  for (int i = 0; i < p.gpus; ++i) {
    const NodeId gpu =
        t.add_node({fmt::format("{}gpu{}", prefix, i), NodeKind::Gpu, first_rank + i, host});
    const NodeId nic = t.add_node({fmt::format("{}nic{}", prefix, i), NodeKind::Nic, -1, host});
    t.add_duplex(gpu, sw, p.nvlink, p.nvlink_latency, LinkKind::NvLink);
    t.add_duplex(gpu, nic, p.pcie, 0, LinkKind::Pcie);
    nics.push_back(nic);
  }
  return nics;
}

}  // namespace

Topology make_switch_topology(int gpus, double bandwidth, Time latency, LinkKind kind) {
  Topology t;
  t.name = fmt::format("switch-{}", gpus);
  const auto ids = add_gpus(t, gpus);
  const NodeId sw =
      t.add_node({"switch", kind == LinkKind::NvLink ? NodeKind::NvSwitch : NodeKind::Switch});
  for (NodeId g : ids) t.add_duplex(g, sw, bandwidth, latency, kind);
  t.assign_ranks();
  return t;
}

Topology make_ring_topology(int gpus, double bandwidth, Time latency, bool bidirectional,
                            LinkKind kind) {
  Topology t;
  t.name = fmt::format("ring-{}", gpus);
  const auto ids = add_gpus(t, gpus);
  for (int r = 0; r < gpus && gpus > 1; ++r) {
    const NodeId a = ids[r], b = ids[(r + 1) % gpus];
    if (gpus == 2 && r == 1) {  // two GPUs share one cable, not two
      if (!bidirectional) t.add_link({b, a, bandwidth, latency, kind});
      break;
    }
    if (bidirectional)
      t.add_duplex(a, b, bandwidth, latency, kind);
    else
      t.add_link({a, b, bandwidth, latency, kind});
  }
  t.assign_ranks();
  return t;
}

Topology make_dgx_topology(const ServerParams& p) {
  Topology t;
  t.name = p.gpu ? fmt::format("dgx-{}", p.gpu->name) : "dgx-h100";
  t.gpu = p.gpu;
  t.host_cpu = p.cpu;
  add_server(t, p, 0, 0, false);
  t.assign_ranks();
  return t;
}

namespace {

// A leaf, spine or core switch of the cluster's network, reducing where it has SHARP.
Node network_switch(const ClusterParams& p, std::string name, NodeKind kind) {
  Node n{std::move(name), kind};
  n.sharp = p.sharp;
  n.sharp_efficiency = kNetworkSharpEfficiency;
  return n;
}

// Servers [first, last) with their rail leaves and spines: a two-tier fat tree, or one
// pod of a three-tier one (`prefix` names its switches). Returns the spines.
std::vector<NodeId> add_leaf_spine(Topology& t, const ClusterParams& p,
                                   const std::vector<std::vector<NodeId>>& nics, int first,
                                   int last, const std::string& prefix) {
  const int per_leaf = std::max(
      1, static_cast<int>(std::floor(p.radix * p.oversubscription / (p.oversubscription + 1))));
  const int servers = last - first;
  const int leaves_per_rail = (servers + per_leaf - 1) / per_leaf;
  std::vector<NodeId> spines;
  for (int s = 0; s < p.spines; ++s)
    spines.push_back(
        t.add_node(network_switch(p, fmt::format("{}spine{}", prefix, s), NodeKind::Spine)));
  for (int rail = 0; rail < p.server.gpus; ++rail) {
    for (int j = 0; j < leaves_per_rail; ++j) {
      const NodeId leaf = t.add_node(
          network_switch(p, fmt::format("{}leaf{}.{}", prefix, rail, j), NodeKind::Leaf));
      const int from = first + j * per_leaf, to = std::min(last, from + per_leaf);
      for (int n = from; n < to; ++n)
        t.add_duplex(nics[n][rail], leaf, p.server.nic, p.server.nic_latency, p.fabric);
      // Uplinks carry 1/o of what the leaf's servers can send, split over the spines.
      const double up = (to - from) * p.server.nic / p.oversubscription / p.spines;
      // Spines join the rails, a rail's leaves and the pods (through the cores): none only
      // for one server, or for one leaf of one-GPU servers that is the whole cluster.
      if (p.nodes > 1 && (p.server.gpus > 1 || leaves_per_rail > 1 || servers < p.nodes))
        for (NodeId spine : spines) t.add_duplex(leaf, spine, up, p.server.nic_latency, p.fabric);
    }
  }
  return spines;
}

// Names that differ where the fabrics do: the shape, then whatever is not the default
// ("cluster-8x8-2to1", "cluster-512x8-8spines-pods32-16cores"). Bandwidths are left to
// the summary, which prints them.
std::string cluster_name(const ClusterParams& p) {
  const ClusterParams d;
  std::string name = fmt::format("cluster-{}x{}", p.nodes, p.server.gpus);
  if (p.oversubscription != d.oversubscription) name += fmt::format("-{:g}to1", p.oversubscription);
  if (p.spines != d.spines) name += fmt::format("-{}spines", p.spines);
  if (p.fabric != d.fabric) name += fmt::format("-{}", name_of(p.fabric));
  if (p.sharp) name += "-sharp";
  if (p.server.gpu && p.server.gpu->name != "h100") name += fmt::format("-{}", p.server.gpu->name);
  if (p.pod_nodes <= 0 || p.pod_nodes >= p.nodes) return name;
  name += fmt::format("-pods{}", p.pod_nodes);
  if (p.cores != d.cores) name += fmt::format("-{}cores", p.cores);
  if (p.core_oversubscription != d.core_oversubscription)
    name += fmt::format("-core{:g}to1", p.core_oversubscription);
  return name;
}

}  // namespace

Topology make_cluster_topology(const ClusterParams& p) {
  Topology t;
  t.name = cluster_name(p);
  t.gpu = p.server.gpu;
  t.host_cpu = p.server.cpu;
  std::vector<std::vector<NodeId>> nics;  // [node][rail]
  for (int n = 0; n < p.nodes; ++n)
    nics.push_back(add_server(t, p.server, n, n * p.server.gpus, true));
  if (p.pod_nodes <= 0 || p.pod_nodes >= p.nodes) {
    add_leaf_spine(t, p, nics, 0, p.nodes, "");
    t.assign_ranks();
    return t;
  }
  std::vector<NodeId> cores;
  for (int c = 0; c < p.cores; ++c)
    cores.push_back(t.add_node(network_switch(p, fmt::format("core{}", c), NodeKind::Core)));
  for (int first = 0, pod = 0; first < p.nodes; first += p.pod_nodes, ++pod) {
    const int last = std::min(p.nodes, first + p.pod_nodes);
    const auto spines = add_leaf_spine(t, p, nics, first, last, fmt::format("pod{}.", pod));
    // What a pod spine takes in from its leaves, over core_o, split over the cores.
    const double in = (last - first) * p.server.gpus * p.server.nic / p.oversubscription / p.spines;
    const double up = in / p.core_oversubscription / p.cores;
    for (NodeId spine : spines)
      for (NodeId core : cores) t.add_duplex(spine, core, up, p.server.nic_latency, p.fabric);
  }
  t.assign_ranks();
  return t;
}

Topology make_nvl72_topology(int gpus, double bandwidth, Time latency) {
  Topology t = make_switch_topology(gpus, bandwidth, latency, LinkKind::NvLink);
  t.name = fmt::format("nvl{}", gpus);
  // NVLink Switch trays reduce and multicast (NVLS), at the efficiency NCCL's tuning
  // model assumes for this generation (it rates the NVLS it picks by the same figure).
  t.set_sharp(*t.find("switch"), sharp_efficiency_for(bandwidth));
  return t;
}

Topology make_multidim_topology(const std::vector<Dimension>& dims, const std::string& name) {
  Topology t;
  t.name = name;
  int total = 1;
  for (const auto& d : dims) total *= d.size;
  std::vector<int> stride;
  for (int s = 1; const auto& d : dims) {
    stride.push_back(s);
    s *= d.size;
  }
  // A GPU's host is its position beyond the first dimension (the first is the server).
  std::vector<NodeId> gpus;
  for (int r = 0; r < total; ++r)
    gpus.push_back(t.add_node(
        {fmt::format("gpu{}", r), NodeKind::Gpu, r, dims.empty() ? 0 : r / dims[0].size}));
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const Dimension& d = dims[k];
    for (int r = 0; r < total; ++r) {
      const int coord = (r / stride[k]) % d.size;
      if (coord != 0) continue;  // r leads its line along dimension k
      std::vector<NodeId> line;
      for (int i = 0; i < d.size; ++i) line.push_back(gpus[r + i * stride[k]]);
      if (d.shape == Dimension::Shape::Switch) {
        const NodeId sw = t.add_node({fmt::format("sw{}.{}", k, r), NodeKind::Switch});
        for (NodeId g : line) t.add_duplex(g, sw, d.bandwidth, d.latency, d.kind);
      } else if (d.shape == Dimension::Shape::Ring) {
        for (int i = 0; i < d.size && d.size > 1; ++i) {
          if (d.size == 2 && i == 1) break;
          t.add_duplex(line[i], line[(i + 1) % d.size], d.bandwidth, d.latency, d.kind);
        }
      } else {
        for (int i = 0; i < d.size; ++i)
          for (int j = i + 1; j < d.size; ++j)
            t.add_duplex(line[i], line[j], d.bandwidth, d.latency, d.kind);
      }
    }
  }
  t.assign_ranks();
  return t;
}

}  // namespace collsim
