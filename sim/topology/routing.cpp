#include "topology/routing.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <limits>
#include <stdexcept>
#include <unordered_set>

namespace collsim {

struct Router::Graph {
  using Type = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                     boost::no_property, boost::property<boost::edge_index_t, LinkId>>;
  Type g;
};

namespace {

std::uint64_t pair_key(NodeId a, NodeId b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

// Records, for every node the search reaches, the link it was first reached by.
template <class G>
class ParentRecorder : public boost::default_bfs_visitor {
 public:
  explicit ParentRecorder(std::vector<LinkId>& parent) : parent_(&parent) {}
  template <class Edge>
  void tree_edge(Edge e, const G& g) const {
    (*parent_)[boost::target(e, g)] = boost::get(boost::edge_index, g, e);
  }

 private:
  std::vector<LinkId>* parent_;
};

template <class G>
std::vector<bool> reached_from(const G& g, NodeId source, std::size_t n) {
  std::vector<LinkId> parent(n, -1);
  boost::breadth_first_search(g, static_cast<typename boost::graph_traits<G>::vertex_descriptor>(source),
                              boost::visitor(ParentRecorder<G>(parent)));
  std::vector<bool> reached(n);
  for (std::size_t v = 0; v < n; ++v) reached[v] = parent[v] != -1 || v == static_cast<std::size_t>(source);
  return reached;
}

}  // namespace

Router::Router(const Topology& topology) : topology_(topology), graph_(std::make_unique<Graph>()) {
  graph_->g = Graph::Type(topology.nodes().size());
  for (LinkId id = 0; id < static_cast<LinkId>(topology.links().size()); ++id) {
    const Link& l = topology.link(id);
    boost::add_edge(l.src, l.dst, id, graph_->g);
  }
}

Router::~Router() = default;

void Router::search_from(NodeId src) {
  if (tree_source_ == src) return;
  tree_parent_link_.assign(topology_.nodes().size(), -1);
  boost::breadth_first_search(graph_->g, static_cast<std::size_t>(src),
                              boost::visitor(ParentRecorder<Graph::Type>(tree_parent_link_)));
  tree_source_ = src;
}

PathId Router::add_path_from_tree(NodeId src, NodeId dst) {
  PathInfo info;
  info.first = static_cast<std::uint32_t>(links_.size());
  info.bottleneck = std::numeric_limits<double>::infinity();
  for (NodeId at = dst; at != src;) {
    const LinkId l = tree_parent_link_[at];
    if (l < 0) {
      links_.resize(info.first);
      throw std::runtime_error(topology_.node(src).name + " cannot reach " + topology_.node(dst).name);
    }
    links_.push_back(l);
    info.latency += topology_.link(l).latency;
    info.bottleneck = std::min(info.bottleneck, topology_.link(l).bandwidth);
    at = topology_.link(l).src;
  }
  std::reverse(links_.begin() + info.first, links_.end());
  info.length = static_cast<std::uint32_t>(links_.size() - info.first);
  paths_.push_back(info);
  return static_cast<PathId>(paths_.size() - 1);
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
  for (std::uint64_t key : todo) route(static_cast<NodeId>(key >> 32), static_cast<NodeId>(key & 0xffffffffu));
}

PathId Router::cached(NodeId src, NodeId dst) const {
  auto it = cache_.find(pair_key(src, dst));
  return it == cache_.end() ? -1 : it->second;
}

PathId Router::route(NodeId src, NodeId dst) {
  const auto key = pair_key(src, dst);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  search_from(src);
  const PathId id = add_path_from_tree(src, dst);
  cache_.emplace(key, id);
  return id;
}

std::optional<std::pair<NodeId, NodeId>> Router::find_unreachable(std::span<const NodeId> nodes) const {
  if (nodes.size() < 2) return std::nullopt;
  // Every node reaches nodes[0] and nodes[0] reaches every node, or some pair fails.
  const std::size_t n = topology_.nodes().size();
  const auto forward = reached_from(graph_->g, nodes[0], n);
  const auto backward = reached_from(boost::make_reverse_graph(graph_->g), nodes[0], n);
  for (NodeId v : nodes) {
    if (!forward[v]) return std::make_pair(nodes[0], v);
    if (!backward[v]) return std::make_pair(v, nodes[0]);
  }
  return std::nullopt;
}

}  // namespace collsim
