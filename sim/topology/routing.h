#pragma once
// Shortest-path routing (fewest hops) over a Topology, with paths cached.
// GPUs do not forward other GPUs' traffic unless no other path exists. Among
// equal-length paths, ECMP picks by a fixed hash of (source, destination, hop),
// "single" always takes the lowest-numbered link, D-mod-k the (d mod k)-th lowest of
// the k equal-cost links into a node, d the port the route leaves that node by towards
// the destination (its index among the node's links out; at the destination, its rank):
// a leaf's servers spread over its spines by their port, as InfiniBand's fat-tree
// routing spreads destinations. All are deterministic. Under D-mod-k, the servers of one
// leaf and of the next route alike, which lets a cluster with several spines fold
// (simulate/symmetric.h), where ECMP's hash does not.
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "topology/topology.h"

namespace collsim {

using PathId = std::int32_t;

struct PathInfo {
  std::uint64_t first = 0;   // into the router's flat link array
  std::uint32_t length = 0;  // number of links; 0 for a node to itself
  Time latency = 0;          // sum of the links' latencies
  double bottleneck = 0;     // slowest link's bandwidth (bytes/s); +inf when empty
};

// How a route picks among equal-cost links: Ethernet's hash (ECMP), the lowest-numbered,
// InfiniBand's D-mod-k, or by the links' kind (D-mod-k among InfiniBand links, as a subnet
// manager programs a fat tree; ECMP among any other).
enum class RoutingPolicy { Ecmp, Single, DestinationModK, ByFabric };

class Router {
 public:
  struct Graph;
  // How far a search for a route goes: as far as the destination's level (the routes are
  // the same, tests/test_topology.cpp checks it), or the whole graph, as a reference.
  enum class Search { UpToDestination, Whole };
  explicit Router(const Topology& topology, RoutingPolicy policy = RoutingPolicy::ByFabric,
                  Search search = Search::UpToDestination);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Computes many routes at once, one graph search per distinct source.
  void prepare(std::span<const std::pair<NodeId, NodeId>> pairs);
  // The path from src to dst; throws std::runtime_error when dst is unreachable.
  PathId route(NodeId src, NodeId dst);
  // A path given link by link, not searched for: `route` must be a chain of links; not
  // cached by its ends.
  PathId add_path(std::span<const LinkId> route);
  // A folded run's stand-in for a route (simulate/symmetric.h): per link of the route, the
  // link its class is played on, in the route's order. They need not follow each other
  // (each class's link is one of its turns, not necessarily the one the route crosses):
  // the network models read a path's links and their order, never where they meet.
  PathId add_stand_in(std::span<const LinkId> links);
  // The path if it was routed already, else -1 (no search).
  PathId cached(NodeId src, NodeId dst) const;
  const PathInfo& info(PathId id) const { return paths_[id]; }
  std::span<const LinkId> links(PathId id) const {
    return {links_.data() + paths_[id].first, paths_[id].length};
  }
  // Link `hop` of a path given by its PathInfo::first: the packet model's per-hop read, one
  // load where links() takes the path's record first.
  LinkId link_at(std::uint64_t first, std::uint32_t hop) const { return links_[first + hop]; }

  // A pair of the given nodes that cannot reach each other, if any. What the first node
  // reaches, and is reached from, is searched once and kept (a scenario's many collectives
  // on the same GPUs cost one search, not one each).
  std::optional<std::pair<NodeId, NodeId>> find_unreachable(std::span<const NodeId> nodes);

 private:
  PathId add_path_from_tree(NodeId src, NodeId dst);
  // Registers links_[first, end) as a path.
  PathId add_path_at(std::uint64_t first);
  // The shortest paths from src, searched at least as far as dst (`whole`: everywhere).
  void search_from(NodeId src, NodeId dst, bool whole = false);
  // Whether the search reached dst (a search stopped early has final paths to every node
  // it reached, see routing.cpp).
  bool tree_holds(NodeId dst) const { return dist_[dst] >= 0; }

  const Topology& topology_;
  RoutingPolicy policy_;
  Search search_;
  std::unique_ptr<Graph> graph_;
  std::vector<PathInfo> paths_;
  std::vector<LinkId> links_;
  std::vector<std::uint32_t> out_port_;  // D-mod-k: per link, its index among its source's
  std::unordered_map<std::uint64_t, PathId> cache_;
  NodeId tree_source_ = -1;  // whose shortest paths dist_/preds_ hold
  bool direct_only_ = true;  // whether they avoid forwarding through other GPUs
  std::vector<int> dist_;
  std::vector<std::vector<LinkId>> preds_;  // per node: links into it on a shortest path
  // When dist_/preds_ are a search seeded with these nodes (a GPU's attachments, see
  // search_from), shared by the GPUs attached to them; empty otherwise.
  std::vector<NodeId> tree_seeds_;
  std::vector<NodeId> attachments_;  // scratch
  struct Reach {
    std::vector<bool> forward, backward;  // per node: reached from the source, reaches it
  };
  std::unordered_map<NodeId, Reach> reach_;  // find_unreachable's, by source
};

// Where each of `gpus`' legs of an InfiniBand SHARP all-reduce at `root` ends. SHARP
// reduces on the way up its aggregation tree, at every switch with "sharp" below the root
// (a rail's leaf, a pod's spine where the root is a core): what meets there is reduced into
// one stream, which goes on up with the first GPU to reach it; the others' legs end at that
// switch. The results come back down the same way.
std::vector<NodeId> sharp_leg_ends(const Topology& t, Router& router,
                                   const std::vector<NodeId>& gpus, NodeId root);

// A switch group's SHARP switch (sharp_switch_of, `reach` and `spread` as there) and where
// each GPU's legs end: sharp_leg_ends in the network, the switch itself on an NVSwitch.
// None where the group has no such switch.
struct SharpGroup {
  NodeId root;
  std::vector<NodeId> ends;
};
std::optional<SharpGroup> sharp_group(const Topology& t, Router& router,
                                      const std::vector<NodeId>& gpus, SharpReach reach,
                                      int spread);

}  // namespace collsim
