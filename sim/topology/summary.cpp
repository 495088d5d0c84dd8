#include "topology/summary.h"

#include <boost/graph/adjacency_list.hpp>
// Boost's Graphviz writer trips GCC 12's -Wmaybe-uninitialized on its own edge
// iterators (a false positive); silence it for that header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/graphviz.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <fmt/format.h>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <map>

#include "core/units.h"

namespace collsim {
namespace {

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, long long,
        boost::property<boost::edge_residual_capacity_t, long long,
                        boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

void add_flow_edge(FlowGraph& g, std::size_t a, std::size_t b, long long capacity) {
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  const auto e = boost::add_edge(a, b, g).first;
  const auto r = boost::add_edge(b, a, g).first;
  cap[e] = capacity;
  cap[r] = 0;
  rev[e] = r;
  rev[r] = e;
}

}  // namespace

double bisection_bandwidth(const Topology& t) {
  const int K = t.num_ranks();
  if (K < 2) return 0;
  const std::size_t n = t.nodes().size();
  FlowGraph g(n + 2);
  const std::size_t source = n, sink = n + 1;
  // Capacities in kB/s; "unbounded" is more than all links together, and no more (sums must not
  // overflow).
  long long unbounded = 1;
  for (const Link& l : t.links()) {
    const auto cap = static_cast<long long>(l.bandwidth / 1e3);
    add_flow_edge(g, l.src, l.dst, cap);
    unbounded += cap;
  }
  for (int r = 0; r < K; ++r) {
    if (r < K / 2)
      add_flow_edge(g, source, t.gpu_of_rank(r), unbounded);
    else
      add_flow_edge(g, t.gpu_of_rank(r), sink, unbounded);
  }
  return static_cast<double>(boost::push_relabel_max_flow(g, source, sink)) * 1e3;
}

std::string topology_summary(const Topology& t) {
  std::map<std::string, int> nodes;
  std::map<std::string, std::pair<int, double>> links;  // kind -> count, total bandwidth
  for (const auto& n : t.nodes()) ++nodes[std::string(name_of(n.kind))];
  for (const auto& l : t.links()) {
    auto& [count, total] = links[std::string(name_of(l.kind))];
    ++count;
    total += l.bandwidth;
  }
  std::string out = fmt::format("topology {}: {} GPUs, {} nodes, {} directed links\n", t.name,
                                t.num_ranks(), t.nodes().size(), t.links().size());
  out += "nodes:";
  for (const auto& [kind, count] : nodes) out += fmt::format(" {} {}", count, kind);
  out += "\nlinks (directed):";
  for (const auto& [kind, v] : links) out += fmt::format(" {} {}", v.first, kind);
  out += "\n";
  if (t.num_ranks() > 0) {
    // Injection: what GPU 0 can send at once, per link kind leaving it.
    std::map<std::string, double> inject;
    for (const auto& l : t.links())
      if (l.src == t.gpu_of_rank(0)) inject[std::string(name_of(l.kind))] += l.bandwidth;
    out += "per-GPU injection bandwidth (rank 0):";
    for (const auto& [kind, bw] : inject) out += fmt::format(" {} {}", kind, format_bandwidth(bw));
    out += "\n";
  }
  out += fmt::format("bisection bandwidth (ranks 0..{} to the rest, one direction): {}\n",
                     t.num_ranks() / 2 - 1, format_bandwidth(bisection_bandwidth(t)));
  return out;
}

void write_graphviz(std::ostream& out, const Topology& t) {
  // Edge label as the bundled property, so the writer finds it whatever order it walks in.
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  std::string>;
  G g(t.nodes().size());
  std::map<std::pair<NodeId, NodeId>, bool> drawn;
  for (const auto& l : t.links()) {
    const auto key = std::minmax(l.src, l.dst);
    if (drawn[{key.first, key.second}]) continue;  // the other direction of a cable
    drawn[{key.first, key.second}] = true;
    boost::add_edge(l.src, l.dst, fmt::format("{} {:.4g} GB/s", name_of(l.kind), l.bandwidth / 1e9),
                    g);
  }
  auto vertex_writer = [&](std::ostream& o, std::size_t v) {
    const Node& n = t.node(static_cast<NodeId>(v));
    o << fmt::format("[label=\"{}\" shape={}]", n.name,
                     n.kind == NodeKind::Gpu ? "box" : "ellipse");
  };
  auto edge_writer = [&](std::ostream& o, const G::edge_descriptor& e) {
    o << fmt::format("[label=\"{}\" dir=none]", g[e]);
  };
  boost::write_graphviz(out, g, vertex_writer, edge_writer);
}

}  // namespace collsim
