#include "topology/topology.h"

#include "core/name_table.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace collsim {
namespace {

constexpr std::array<std::pair<NodeKind, std::string_view>, 9> kNodeKinds{{
    {NodeKind::Gpu, "gpu"},
    {NodeKind::NvSwitch, "nvswitch"},
    {NodeKind::PcieSwitch, "pcie_switch"},
    {NodeKind::Nic, "nic"},
    {NodeKind::Switch, "switch"},
    {NodeKind::Leaf, "leaf"},
    {NodeKind::Spine, "spine"},
    {NodeKind::Core, "core"},
    {NodeKind::Cpu, "cpu"},
}};
constexpr std::array<std::pair<LinkKind, std::string_view>, 6> kLinkKinds{{
    {LinkKind::NvLink, "nvlink"},
    {LinkKind::NvSwitch, "nvswitch"},
    {LinkKind::Pcie, "pcie"},
    {LinkKind::Ib, "ib"},
    {LinkKind::Roce, "roce"},
    {LinkKind::Ethernet, "ethernet"},
}};

}  // namespace

std::string_view name_of(NodeKind k) {
  return name_in(kNodeKinds, k);
}
std::string_view name_of(LinkKind k) {
  return name_in(kLinkKinds, k);
}
std::optional<NodeKind> node_kind_from_name(std::string_view n) {
  return key_in(kNodeKinds, n);
}
std::optional<LinkKind> link_kind_from_name(std::string_view n) {
  return key_in(kLinkKinds, n);
}
std::vector<std::string> all_node_kind_names() {
  return names_in(kNodeKinds);
}
std::vector<std::string> all_link_kind_names() {
  return names_in(kLinkKinds);
}

NodeId Topology::add_node(Node node) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  if (!by_name_.emplace(node.name, id).second)
    throw std::invalid_argument("duplicate node name \"" + node.name + "\"");
  nodes_.push_back(std::move(node));
  return id;
}

void Topology::reserve_nodes(std::size_t more) {
  nodes_.reserve(nodes_.size() + more);
  by_name_.reserve(nodes_.size() + more);
}

LinkId Topology::add_link(Link link) {
  links_.push_back(link);
  return static_cast<LinkId>(links_.size() - 1);
}

void Topology::add_duplex(NodeId a, NodeId b, double bandwidth, Time latency, LinkKind kind) {
  add_link({a, b, bandwidth, latency, kind});
  add_link({b, a, bandwidth, latency, kind});
}

void Topology::assign_ranks() {
  std::vector<NodeId> gpus;
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id)
    if (nodes_[id].kind == NodeKind::Gpu) gpus.push_back(id);
  const bool explicit_ranks =
      std::any_of(gpus.begin(), gpus.end(), [&](NodeId g) { return nodes_[g].rank >= 0; });
  if (!explicit_ranks) {
    for (std::size_t r = 0; r < gpus.size(); ++r) nodes_[gpus[r]].rank = static_cast<int>(r);
  }
  gpu_of_rank_.assign(gpus.size(), -1);
  for (NodeId g : gpus) {
    const int r = nodes_[g].rank;
    if (r < 0 || r >= static_cast<int>(gpus.size()) || gpu_of_rank_[r] != -1)
      throw std::invalid_argument(
          "GPU ranks must be a permutation of 0..number of GPUs - 1 (node \"" + nodes_[g].name +
          "\")");
    gpu_of_rank_[r] = g;
  }
}

void Topology::place_ranks(const std::vector<NodeId>& gpus) {
  if (gpus.size() != gpu_of_rank_.size())
    throw std::invalid_argument("a placement must list every GPU once");
  std::vector<bool> seen(nodes_.size());
  for (NodeId g : gpus) {
    if (g < 0 || g >= static_cast<NodeId>(nodes_.size()) || nodes_[g].kind != NodeKind::Gpu ||
        seen[g])
      throw std::invalid_argument("a placement must list every GPU once");
    seen[g] = true;
  }
  gpu_of_rank_ = gpus;
  for (std::size_t r = 0; r < gpus.size(); ++r) nodes_[gpus[r]].rank = static_cast<int>(r);
}

std::optional<NodeId> Topology::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::string Topology::link_label(LinkId id) const {
  const Link& l = links_[id];
  return nodes_[l.src].name + "->" + nodes_[l.dst].name;
}

namespace {

// NVLink SHARP: a sharp switch every GPU links to and from directly.
std::optional<NodeId> linked_sharp_switch(const Topology& t, const std::vector<NodeId>& gpus,
                                          bool nvswitch_only) {
  // Per switch: how many of the GPUs link up to it and down from it.
  std::vector<int> up(t.nodes().size()), down(t.nodes().size());
  std::vector<char> wanted(t.nodes().size());
  for (NodeId g : gpus) wanted[g] = 1;
  for (const Link& l : t.links()) {
    if (wanted[l.src] && t.node(l.dst).sharp) ++up[l.dst];
    if (wanted[l.dst] && t.node(l.src).sharp) ++down[l.src];
  }
  const int n = static_cast<int>(gpus.size());
  for (NodeId sw = 0; sw < static_cast<NodeId>(t.nodes().size()); ++sw)
    if (t.node(sw).sharp && up[sw] == n && down[sw] == n &&
        (!nvswitch_only || t.node(sw).kind == NodeKind::NvSwitch))
      return sw;
  return std::nullopt;
}

// Each node's neighbours one way: out (links from it) or in (links to it).
std::vector<std::vector<NodeId>> neighbours(const Topology& t, bool out) {
  std::vector<std::vector<NodeId>> next(t.nodes().size());
  for (const Link& l : t.links()) next[out ? l.src : l.dst].push_back(out ? l.dst : l.src);
  return next;
}

// Hops from `gpu` to every node (over `out` neighbours) or from every node to it (over `in`
// ones), through anything but other GPUs; -1 where none.
std::vector<int> hops_from(const Topology& t, NodeId gpu,
                           const std::vector<std::vector<NodeId>>& next) {
  std::vector<int> hops(t.nodes().size(), -1);
  std::vector<NodeId> queue{gpu};
  hops[gpu] = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const NodeId from = queue[i];
    if (from != gpu && t.node(from).kind == NodeKind::Gpu) continue;
    for (NodeId to : next[from])
      if (hops[to] < 0) {
        hops[to] = hops[from] + 1;
        queue.push_back(to);
      }
  }
  return hops;
}

// InfiniBand SHARP: the nearest network sharp switch every GPU reaches and is reached from;
// among several as near, the `spread`-th (modulo their count).
std::optional<NodeId> network_sharp_switch(const Topology& t, const std::vector<NodeId>& gpus,
                                           int spread) {
  bool any = false;
  for (const Node& n : t.nodes()) any = any || (n.sharp && n.kind != NodeKind::NvSwitch);
  if (!any) return std::nullopt;
  const auto out = neighbours(t, true), in = neighbours(t, false);
  std::vector<int> worst(t.nodes().size(), 0);
  for (NodeId g : gpus)
    for (const auto* next : {&out, &in}) {
      const std::vector<int> hops = hops_from(t, g, *next);
      for (std::size_t n = 0; n < hops.size(); ++n)
        worst[n] = hops[n] < 0 || worst[n] < 0 ? -1 : std::max(worst[n], hops[n]);
    }
  std::vector<NodeId> nearest;
  for (NodeId sw = 0; sw < static_cast<NodeId>(t.nodes().size()); ++sw) {
    const Node& n = t.node(sw);
    if (!n.sharp || n.kind == NodeKind::NvSwitch || worst[sw] < 0) continue;
    if (!nearest.empty() && worst[sw] > worst[nearest.front()]) continue;
    if (!nearest.empty() && worst[sw] < worst[nearest.front()]) nearest.clear();
    nearest.push_back(sw);
  }
  if (nearest.empty()) return std::nullopt;
  return nearest[static_cast<std::size_t>(std::max(0, spread)) % nearest.size()];
}

}  // namespace

std::optional<NodeId> sharp_switch_of(const Topology& t, const std::vector<NodeId>& gpus,
                                      SharpReach reach, int spread) {
  if (reach != SharpReach::Network)
    if (auto sw = linked_sharp_switch(t, gpus, reach == SharpReach::NvLink)) return sw;
  if (reach == SharpReach::NvLink) return std::nullopt;
  return network_sharp_switch(t, gpus, spread);
}

}  // namespace collsim
