#include "topology/routing.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/pending/queue.hpp>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include "core/checked.h"

namespace collsim {

struct Router::Graph {
  using Type =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property,
                            boost::property<boost::edge_index_t, LinkId>>;
  Type g;
};

namespace {

std::uint64_t pair_key(NodeId a, NodeId b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

// Records every node's distance from the source and each link that reaches it
// on a shortest path (tree edges and equal-length alternatives): the ECMP choices.
// With a target it stops the search once the target's level is complete (the first
// node popped at the target's distance: every node before it has been examined, so
// every shortest link into the target and the nodes before it is found). A node is
// reached only from an examined one, so every node it reached is final.
struct SearchDone {};

template <class G>
class ShortestPathRecorder : public boost::default_bfs_visitor {
 public:
  ShortestPathRecorder(std::vector<int>& dist, std::vector<std::vector<LinkId>>& preds,
                       NodeId target, int& level)
      : dist_(&dist), preds_(&preds), target_(target), level_(&level) {}
  template <class Vertex>
  void examine_vertex(Vertex u, const G&) const {
    if ((*dist_)[u] >= *level_) throw SearchDone{};
  }
  template <class Edge>
  void tree_edge(Edge e, const G& g) const {
    const auto u = boost::source(e, g), v = boost::target(e, g);
    (*dist_)[v] = (*dist_)[u] + 1;
    (*preds_)[v].push_back(boost::get(boost::edge_index, g, e));
    if (static_cast<NodeId>(v) == target_) *level_ = (*dist_)[v];
  }
  template <class Edge>
  void non_tree_edge(Edge e, const G& g) const {
    const auto u = boost::source(e, g), v = boost::target(e, g);
    if ((*dist_)[v] == (*dist_)[u] + 1) (*preds_)[v].push_back(boost::get(boost::edge_index, g, e));
  }

 private:
  std::vector<int>* dist_;
  std::vector<std::vector<LinkId>>* preds_;
  NodeId target_;
  int* level_;
};

constexpr int kWholeSearch = std::numeric_limits<int>::max();

// Breadth-first from `source`, as far as `target` (-1: everywhere).
template <class G>
void shortest_paths(const G& g, NodeId source, std::vector<int>& dist,
                    std::vector<std::vector<LinkId>>& preds, NodeId target = -1) {
  dist.assign(dist.size(), -1);
  for (auto& p : preds) p.clear();
  dist[source] = 0;
  int level = source == target ? 0 : kWholeSearch;
  try {
    boost::breadth_first_search(
        g, static_cast<typename boost::graph_traits<G>::vertex_descriptor>(source),
        boost::visitor(ShortestPathRecorder<G>(dist, preds, target, level)));
  } catch (const SearchDone&) {
  }
}

// The same, seeded with several nodes at distance 1 (in order) and no source: a GPU's
// tree, with the GPU itself left out (see Router::search_from).
template <class G>
void shortest_paths_from_seeds(const G& g, std::span<const NodeId> seeds, std::vector<int>& dist,
                               std::vector<std::vector<LinkId>>& preds, NodeId target) {
  using Vertex = typename boost::graph_traits<G>::vertex_descriptor;
  dist.assign(dist.size(), -1);
  for (auto& p : preds) p.clear();
  std::vector<Vertex> sources;
  int level = kWholeSearch;
  for (NodeId s : seeds) {
    dist[s] = 1;
    sources.push_back(static_cast<Vertex>(s));
    if (s == target) level = 1;
  }
  boost::queue<Vertex> queue;
  std::vector<boost::default_color_type> color(dist.size(), boost::white_color);
  try {
    boost::breadth_first_search(
        g, sources.begin(), sources.end(), queue,
        ShortestPathRecorder<G>(dist, preds, target, level),
        boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g)));
  } catch (const SearchDone&) {
  }
}

template <class G>
std::vector<bool> reached_from(const G& g, NodeId source, std::size_t n) {
  std::vector<int> dist(n, -1);
  std::vector<std::vector<LinkId>> preds(n);
  shortest_paths(g, source, dist, preds);
  std::vector<bool> reached(n);
  for (std::size_t v = 0; v < n; ++v) reached[v] = dist[v] >= 0;
  return reached;
}

// GPUs do not forward traffic between other GPUs while any path avoids them:
// only links leaving the source GPU (none when source is -1), or leaving a non-GPU
// node, are kept.
struct NotThroughOtherGpus {
  const Topology* topology = nullptr;
  const Router::Graph* graph = nullptr;
  NodeId source = -1;
  template <class Edge>
  bool operator()(const Edge& e) const;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64: a fixed, well-spread hash
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The k-th lowest link id among equal-cost choices (a handful: the spines above a leaf).
LinkId nth_lowest(const std::vector<LinkId>& choices, std::size_t k) {
  std::vector<LinkId> sorted = choices;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return sorted[k];
}

// How one hop picks among its equal-cost links. By fabric settles, hop by hop, on
// D-mod-k where every choice is an InfiniBand link and on ECMP's hash elsewhere.
enum class HopPick { Hash, Lowest, DestinationModK };

HopPick hop_pick(RoutingPolicy policy, const Topology& t, const std::vector<LinkId>& choices) {
  switch (policy) {
    case RoutingPolicy::Ecmp:
      return HopPick::Hash;
    case RoutingPolicy::Single:
      return HopPick::Lowest;
    case RoutingPolicy::DestinationModK:
      return HopPick::DestinationModK;
    case RoutingPolicy::ByFabric:
      break;
  }
  return std::all_of(choices.begin(), choices.end(),
                     [&](LinkId c) { return t.link(c).kind == LinkKind::Ib; })
             ? HopPick::DestinationModK
             : HopPick::Hash;
}

}  // namespace

Router::Router(const Topology& topology, RoutingPolicy policy, Search search)
    : topology_(topology), policy_(policy), search_(search), graph_(std::make_unique<Graph>()) {
  graph_->g = Graph::Type(topology.nodes().size());
  for (LinkId id = 0; id < static_cast<LinkId>(topology.links().size()); ++id) {
    const Link& l = topology.link(id);
    boost::add_edge(l.src, l.dst, id, graph_->g);
  }
  if (policy == RoutingPolicy::DestinationModK || policy == RoutingPolicy::ByFabric) {
    std::vector<std::uint32_t> ports(topology.nodes().size(), 0);
    out_port_.reserve(topology.links().size());
    for (const Link& l : topology.links()) out_port_.push_back(ports[l.src]++);
  }
}

Router::~Router() = default;

template <class Edge>
bool NotThroughOtherGpus::operator()(const Edge& e) const {
  const auto from = static_cast<NodeId>(boost::source(e, graph->g));
  return from == source || topology->node(from).kind != NodeKind::Gpu;
}

// A GPU whose links all lead to switches (or NICs) has the same shortest-path tree as
// every GPU attached to the same nodes in the same order, but for the GPU itself and
// its first hop: a breadth-first search from it discovers its attachments, then goes
// on from them exactly as a search seeded with them would. So such GPUs share one
// seeded search (one per switch on a regular topology: O(K) routing, not O(K^2)), and
// each takes its own links to the attachments: the routes, ECMP picks included, are
// those of a search per GPU. A search goes only as far as dst's level (a ring's
// neighbour is two hops away where the whole cluster is six): the tree is kept, and a
// later destination beyond it searches again (prepare searches the whole graph at once
// for a source with several destinations).
void Router::search_from(NodeId src, NodeId dst, bool whole) {
  if (tree_source_ == src && tree_holds(dst)) return;
  const NodeId target = whole || search_ == Search::Whole ? -1 : dst;
  const std::size_t n = topology_.nodes().size();
  dist_.resize(n);
  preds_.resize(n);
  direct_only_ = true;
  tree_source_ = src;
  attachments_.clear();
  bool shared = topology_.node(src).kind == NodeKind::Gpu;
  for (auto e : boost::make_iterator_range(boost::out_edges(src, graph_->g))) {
    const auto to = static_cast<NodeId>(boost::target(e, graph_->g));
    shared = shared && topology_.node(to).kind != NodeKind::Gpu;
    if (std::find(attachments_.begin(), attachments_.end(), to) == attachments_.end())
      attachments_.push_back(to);
  }
  if (shared && !attachments_.empty()) {
    if (attachments_ != tree_seeds_ || !tree_holds(dst)) {
      const NotThroughOtherGpus keep{&topology_, graph_.get(), -1};
      shortest_paths_from_seeds(boost::make_filtered_graph(graph_->g, keep), attachments_, dist_,
                                preds_, target);
      tree_seeds_ = attachments_;
    }
    // The first hops are the source's own links.
    for (NodeId a : tree_seeds_) preds_[a].clear();
    for (auto e : boost::make_iterator_range(boost::out_edges(src, graph_->g)))
      preds_[boost::target(e, graph_->g)].push_back(boost::get(boost::edge_index, graph_->g, e));
    return;
  }
  tree_seeds_.clear();
  const NotThroughOtherGpus keep{&topology_, graph_.get(), src};
  shortest_paths(boost::make_filtered_graph(graph_->g, keep), src, dist_, preds_, target);
}

PathId Router::add_path_from_tree(NodeId src, NodeId dst) {
  if (dist_[dst] < 0 && direct_only_) {
    // No path avoids forwarding through other GPUs (a ring of GPUs, say): allow it.
    shortest_paths(graph_->g, src, dist_, preds_);
    direct_only_ = false;
    tree_seeds_.clear();
  }
  if (dist_[dst] < 0)
    throw std::runtime_error(topology_.node(src).name + " cannot reach " +
                             topology_.node(dst).name);
  const std::uint64_t first = links_.size();
  const std::uint64_t pair_hash = mix(pair_key(src, dst));
  // D-mod-k: the port the route leaves `at` by, towards the destination (its index
  // among the node's links out), picks at each hop; at the destination itself its rank.
  const int dst_rank = topology_.node(dst).rank;
  std::uint64_t key = static_cast<std::uint64_t>(dst_rank >= 0 ? dst_rank : dst);
  for (NodeId at = dst; at != src;) {
    const auto& choices = preds_[at];
    LinkId l = 0;
    switch (hop_pick(policy_, topology_, choices)) {
      case HopPick::Hash:  // a hash of (source, destination, hop) picks
        l = choices[mix(pair_hash ^ static_cast<std::uint64_t>(at)) % choices.size()];
        break;
      case HopPick::Lowest:
        l = *std::min_element(choices.begin(), choices.end());
        break;
      case HopPick::DestinationModK:
        l = nth_lowest(choices, key % choices.size());
        break;
    }
    if (!out_port_.empty()) key = out_port_[l];  // D-mod-k's d at the next switch up
    links_.push_back(l);
    at = topology_.link(l).src;
  }
  std::reverse(links_.begin() + first, links_.end());
  if (!direct_only_) tree_source_ = -1;  // the unfiltered search is not the cached one
  return add_path_at(first);
}

PathId Router::add_path_at(std::uint64_t first) {
  PathInfo info;
  info.first = first;
  info.bottleneck = std::numeric_limits<double>::infinity();
  for (std::uint64_t i = first; i < links_.size(); ++i) {
    const Link& l = topology_.link(links_[i]);
    info.latency = add_time(info.latency, l.latency);
    info.bottleneck = std::min(info.bottleneck, l.bandwidth);
  }
  info.length = static_cast<std::uint32_t>(links_.size() - first);
  const PathId id = checked_count<PathId>(paths_.size(), "distinct routes");
  paths_.push_back(info);
  return id;
}

PathId Router::add_path(std::span<const LinkId> route) {
  for (std::size_t i = 1; i < route.size(); ++i)
    if (topology_.link(route[i - 1]).dst != topology_.link(route[i]).src)
      throw std::logic_error("a path's links must follow each other");
  return add_stand_in(route);
}

PathId Router::add_stand_in(std::span<const LinkId> links) {
  const std::uint64_t first = links_.size();
  links_.insert(links_.end(), links.begin(), links.end());
  return add_path_at(first);
}

void Router::prepare(std::span<const std::pair<NodeId, NodeId>> pairs) {
  // Only pairs not yet routed, each once, grouped by source: one search per source.
  std::vector<std::uint64_t> todo;
  std::unordered_set<std::uint64_t> seen;
  for (auto [src, dst] : pairs) {
    const auto key = pair_key(src, dst);
    if (!cache_.contains(key) && seen.insert(key).second) todo.push_back(key);
  }
  std::sort(todo.begin(), todo.end());
  const auto source = [](std::uint64_t key) { return static_cast<NodeId>(key >> 32); };
  const auto destination = [](std::uint64_t key) { return static_cast<NodeId>(key & 0xffffffffu); };
  for (std::size_t first = 0, end = 0; first < todo.size(); first = end) {
    const NodeId src = source(todo[first]);
    while (end < todo.size() && source(todo[end]) == src) ++end;
    // Several destinations from one source: the whole graph at once. Searched up to each in
    // turn, a destination beyond the last search's reach starts it again from the source
    // (a training step's GPUs route to a handful of peers each: about a tenth of its CPU
    // at 4,096 GPUs).
    if (end - first > 1) search_from(src, destination(todo[first]), true);
    for (std::size_t k = first; k < end; ++k) route(src, destination(todo[k]));
  }
}

PathId Router::cached(NodeId src, NodeId dst) const {
  auto it = cache_.find(pair_key(src, dst));
  return it == cache_.end() ? -1 : it->second;
}

PathId Router::route(NodeId src, NodeId dst) {
  const auto key = pair_key(src, dst);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  search_from(src, dst);
  const PathId id = add_path_from_tree(src, dst);
  cache_.emplace(key, id);
  return id;
}

std::optional<std::pair<NodeId, NodeId>> Router::find_unreachable(std::span<const NodeId> nodes) {
  if (nodes.size() < 2) return std::nullopt;
  // Every node reaches nodes[0] and nodes[0] reaches every node, or some pair fails.
  const std::size_t n = topology_.nodes().size();
  Reach& reach = reach_[nodes[0]];
  if (reach.forward.empty()) {
    reach.forward = reached_from(graph_->g, nodes[0], n);
    reach.backward = reached_from(boost::make_reverse_graph(graph_->g), nodes[0], n);
  }
  for (NodeId v : nodes) {
    if (!reach.forward[v]) return std::make_pair(nodes[0], v);
    if (!reach.backward[v]) return std::make_pair(v, nodes[0]);
  }
  return std::nullopt;
}

std::vector<NodeId> sharp_leg_ends(const Topology& t, Router& router,
                                   const std::vector<NodeId>& gpus, NodeId root) {
  std::vector<NodeId> ends;
  std::vector<NodeId> streams_on;  // the switches below the root already sending a stream up
  for (NodeId g : gpus) {
    NodeId end = root;
    for (LinkId l : router.links(router.route(g, root))) {
      const NodeId n = t.link(l).dst;
      if (n == root || !t.node(n).sharp || t.node(n).kind == NodeKind::NvSwitch) continue;
      if (std::find(streams_on.begin(), streams_on.end(), n) != streams_on.end()) {
        end = n;  // reduced here into the stream another GPU carries on up
        break;
      }
      streams_on.push_back(n);  // this GPU's leg carries the switch's stream on up
    }
    ends.push_back(end);
  }
  return ends;
}

std::optional<SharpGroup> sharp_group(const Topology& t, Router& router,
                                      const std::vector<NodeId>& gpus, SharpReach reach,
                                      int spread) {
  const auto root = sharp_switch_of(t, gpus, reach, spread);
  if (!root) return std::nullopt;
  return SharpGroup{*root, reach == SharpReach::Network ? sharp_leg_ends(t, router, gpus, *root)
                                                        : std::vector<NodeId>(gpus.size(), *root)};
}

}  // namespace collsim
