#pragma once
// The cluster as a directed graph of nodes (GPUs, switches, NICs) and links.
// This header is light on purpose: the Boost.Graph view lives in routing.cpp and
// graphviz.cpp only, so widely included code does not pay for it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/nccl_published.h"
#include "core/time.h"
#include "topology/gpu_model.h"

namespace collsim {

using NodeId = std::int32_t;
using LinkId = std::int32_t;

enum class NodeKind : std::uint8_t {
  Gpu,
  NvSwitch,
  PcieSwitch,
  Nic,
  Switch,
  Leaf,
  Spine,
  Core,
  Cpu
};
enum class LinkKind : std::uint8_t { NvLink, NvSwitch, Pcie, Ib, Roce, Ethernet };

std::string_view name_of(NodeKind k);
std::string_view name_of(LinkKind k);
std::optional<NodeKind> node_kind_from_name(std::string_view name);
std::optional<LinkKind> link_kind_from_name(std::string_view name);
std::vector<std::string> all_node_kind_names();
std::vector<std::string> all_link_kind_names();

// NVLink SHARP's efficiency by the GPUs' generation (NCCL's nvlsEfficiency): the switch's
// default and what NCCL's tuning model reads are the one number.
inline constexpr double kDefaultSharpEfficiency =
    nccl_published::kNvlsEfficiency[nccl_published::index(nccl_published::Arch::Hopper)];
inline constexpr double sharp_efficiency_for(nccl_published::Arch arch) {
  return nccl_published::kNvlsEfficiency[nccl_published::index(arch)];
}
inline constexpr double sharp_efficiency_for(double gpu_nvlink_Bps) {
  return sharp_efficiency_for(nccl_published::arch_of_nvlink(gpu_nvlink_Bps));
}

// An InfiniBand SHARP switch's efficiency: streaming aggregation at the line rate (no
// published figure of NCCL's to take instead).
inline constexpr double kNetworkSharpEfficiency = 1.0;

// Node kinds that may reduce in the switch ("sharp").
inline constexpr bool can_reduce(NodeKind k) {
  return k == NodeKind::NvSwitch || k == NodeKind::Switch || k == NodeKind::Leaf ||
         k == NodeKind::Spine || k == NodeKind::Core;
}

struct Node {
  std::string name;
  NodeKind kind = NodeKind::Gpu;
  int rank = -1;  // GPUs only: the global rank it hosts
  int host = -1;  // which server (node) it sits in, when known
  // Switches only: reduces in the switch (NVLink SHARP on an NVSwitch, used by NVLS;
  // InfiniBand SHARP on a network switch, used by CollNet).
  bool sharp = false;
  // The fraction of a link's rate that transfers the switch executes (its reductions
  // and multicasts) reach: NCCL's nvlsEfficiency, 0.85 on Hopper (docs/models.md).
  double sharp_efficiency = kDefaultSharpEfficiency;
};

struct Link {
  NodeId src;
  NodeId dst;
  double bandwidth;  // bytes per second, one direction
  Time latency;
  LinkKind kind;
};

class Topology {
 public:
  std::string name;
  // The GPUs' model where the topology names it (kGpuModels; null: not named, and NCCL's
  // generation is guessed from the GPUs' NVLink bandwidth).
  const GpuModel* gpu = nullptr;
  // The hosts' CPUs where the topology says ("cpu"); else its GPU model's DGX's, else by the
  // GPUs' generation (nccl/nccl_model.cpp).
  std::optional<HostCpu> host_cpu;

  NodeId add_node(Node node);            // throws std::invalid_argument on a duplicate name
  void reserve_nodes(std::size_t more);  // a preset about to add a million GPUs
  LinkId add_link(Link link);
  // Two directed links, one each way.
  void add_duplex(NodeId a, NodeId b, double bandwidth, Time latency, LinkKind kind);
  // Ranks default to the order GPUs were added; call once all nodes exist.
  void assign_ranks();
  // Rank r runs on GPU gpus[r]; `gpus` must list every GPU once.
  void place_ranks(const std::vector<NodeId>& gpus);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  void set_sharp(NodeId id, double efficiency = kDefaultSharpEfficiency) {
    nodes_[id].sharp = true;
    nodes_[id].sharp_efficiency = efficiency;
  }
  void set_host(NodeId id, int host) { nodes_[id].host = host; }
  void set_bandwidth(LinkId id, double bytes_per_second) {
    links_[id].bandwidth = bytes_per_second;
  }
  std::optional<NodeId> find(std::string_view name) const;
  int num_ranks() const { return static_cast<int>(gpu_of_rank_.size()); }
  NodeId gpu_of_rank(int rank) const { return gpu_of_rank_[rank]; }
  std::string link_label(LinkId id) const;  // "gpu0->nvswitch"

 private:
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<NodeId> gpu_of_rank_;
  std::unordered_map<std::string, NodeId> by_name_;
};

// The SHARP switch where `gpus` reduce together, if there is one: one every GPU has a link
// to and from (NVLink SHARP; the lowest-numbered when several), else a network switch every
// GPU reaches and is reached from through switches and NICs, not through other GPUs
// (InfiniBand SHARP): the nearest, by the most hops any GPU needs, then the lowest-numbered.
// `reach` narrows it to one of the two (an algorithm asking for its own kind of switch).
// Among network switches as near as each other (the spines or cores over every rail),
// group `spread` takes the spread-th, so that the rails' groups share them out.
enum class SharpReach : std::uint8_t { Any, NvLink, Network };
std::optional<NodeId> sharp_switch_of(const Topology& t, const std::vector<NodeId>& gpus,
                                      SharpReach reach = SharpReach::Any, int spread = 0);

}  // namespace collsim
