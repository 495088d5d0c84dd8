#include "topology/summary.h"

#include <fmt/format.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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

namespace {

// A fat tree's switch tiers, bottom up; other kinds are not tiers.
int tier_of(NodeKind k) {
  switch (k) {
    case NodeKind::Leaf:
      return 1;
    case NodeKind::Spine:
      return 2;
    case NodeKind::Core:
      return 3;
    default:
      return 0;
  }
}

InjectionSummary injection_of(const Topology& t) {
  InjectionSummary in;
  if (t.num_ranks() == 0) return in;
  const NodeId gpu = t.gpu_of_rank(0);
  in.gpu = t.node(gpu).name;
  for (const Link& l : t.links()) {
    if (l.src != gpu) continue;
    in.by_kind[std::string(name_of(l.kind))] += l.bandwidth;
    if (t.node(l.dst).kind != NodeKind::Nic) continue;
    double onward = 0;  // what the NIC sends on, not counting the way back to the GPU
    for (const Link& m : t.links())
      if (m.src == l.dst && m.dst != gpu) {
        onward += m.bandwidth;
        in.nic_kinds[std::string(name_of(m.kind))] += m.bandwidth;
      }
    ++in.nics;
    in.scale_out += std::min(l.bandwidth, onward);
    in.nic_onward += onward;
    if (l.bandwidth < onward) in.capping_kind = name_of(l.kind);
  }
  return in;
}

std::vector<TierSummary> tiers_of(const Topology& t) {
  std::map<int, TierSummary> tiers;
  for (const Node& n : t.nodes())
    if (const int k = tier_of(n.kind)) {
      tiers[k].kind = name_of(n.kind);
      ++tiers[k].switches;
    }
  for (const Link& l : t.links()) {
    const int from = tier_of(t.node(l.src).kind), to = tier_of(t.node(l.dst).kind);
    if (to > from) {
      tiers[to].from_below += l.bandwidth;
      if (from) {
        tiers[from].to_above += l.bandwidth;
        ++tiers[from].uplinks;
      }
    }
  }
  std::vector<TierSummary> out;
  for (auto& [_, tier] : tiers) out.push_back(tier);
  return out;
}

std::string plural_of(const std::string& kind) {
  if (kind == "leaf") return "leaves";
  return kind + (kind.ends_with("h") ? "es" : "s");
}

std::vector<ReducingSwitches> reducing_of(const Topology& t) {
  std::map<std::pair<std::string, double>, int> count;
  for (const Node& n : t.nodes())
    if (n.sharp) ++count[{std::string(name_of(n.kind)), n.sharp_efficiency}];
  std::vector<ReducingSwitches> out;
  for (const auto& [key, switches] : count) out.push_back({key.first, switches, key.second});
  return out;
}

std::string join_kinds(const std::map<std::string, double>& by_kind) {
  std::string out;
  for (const auto& [kind, bw] : by_kind)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", kind, format_bandwidth(bw));
  return out;
}

std::string ratio(double r) {
  return format_significant(r, 3) + ":1";
}

}  // namespace

namespace {

// Every GPU reaches every other exactly when all reach rank 0's GPU and it reaches all: one
// search each way over the directed links, linear in the topology.
std::string unreachable_pair(const Topology& t) {
  if (t.num_ranks() < 2) return "";
  const std::size_t n = t.nodes().size();
  const auto reached = [&](bool forward) {
    std::vector<std::vector<NodeId>> next(n);
    for (const Link& l : t.links())
      (forward ? next[l.src] : next[l.dst]).push_back(forward ? l.dst : l.src);
    std::vector<char> seen(n, 0);
    std::vector<NodeId> todo{t.gpu_of_rank(0)};
    seen[todo.front()] = 1;
    while (!todo.empty()) {
      const NodeId at = todo.back();
      todo.pop_back();
      for (NodeId to : next[at])
        if (!seen[to]) seen[to] = 1, todo.push_back(to);
    }
    return seen;
  };
  const auto label = [&](int rank) {
    return fmt::format("rank {} ({})", rank, t.node(t.gpu_of_rank(rank)).name);
  };
  const auto from = reached(true), to = reached(false);
  for (int r = 1; r < t.num_ranks(); ++r) {
    if (!from[t.gpu_of_rank(r)]) return fmt::format("{} cannot reach {}", label(0), label(r));
    if (!to[t.gpu_of_rank(r)]) return fmt::format("{} cannot reach {}", label(r), label(0));
  }
  return "";
}

}  // namespace

TopologySummary summarise_topology(const Topology& t) {
  TopologySummary s;
  s.name = t.name;
  s.gpus = t.num_ranks();
  s.nodes = t.nodes().size();
  s.links = t.links().size();
  std::set<int> hosts;
  for (const auto& n : t.nodes()) {
    ++s.nodes_by_kind[std::string(name_of(n.kind))];
    if (n.kind == NodeKind::Gpu && n.host >= 0) hosts.insert(n.host);
  }
  s.hosts = static_cast<int>(hosts.size());
  for (const auto& l : t.links()) {
    ++s.links_by_kind[std::string(name_of(l.kind))];
    s.bandwidth_by_kind[std::string(name_of(l.kind))] += l.bandwidth;
  }
  s.injection = injection_of(t);
  s.tiers = tiers_of(t);
  s.reducing = reducing_of(t);
  s.bisection = bisection_bandwidth(t);
  s.unreachable = unreachable_pair(t);
  return s;
}

std::string topology_summary(const Topology& t) {
  const TopologySummary s = summarise_topology(t);
  std::string out =
      fmt::format("topology {}: {} GPUs{}, {} nodes, {} directed links\n", s.name, s.gpus,
                  s.hosts > 1 ? fmt::format(" on {} hosts", s.hosts) : "", s.nodes, s.links);
  out += "nodes:";
  for (const auto& [kind, count] : s.nodes_by_kind) out += fmt::format(" {} {}", count, kind);
  out += "\nlinks (directed):";
  for (const auto& [kind, count] : s.links_by_kind) out += fmt::format(" {} {}", count, kind);
  out += s.links_by_kind.empty() ? " none\n" : "\n";
  if (!s.injection.gpu.empty()) {
    const InjectionSummary& in = s.injection;
    out += fmt::format("per-GPU injection (rank 0, {}): {}\n", in.gpu,
                       in.by_kind.empty() ? "none (no links)" : join_kinds(in.by_kind));
    const std::string nics = in.nics > 1 ? fmt::format("{} NICs", in.nics) : "NIC";
    if (in.nics > 0 && in.nic_kinds.empty())
      out += fmt::format("  through its {}: nothing beyond (no network in this topology)\n", nics);
    else if (in.nics > 0)
      out += fmt::format("  through its {} ({} onward): {} out of the host{}\n", nics,
                         join_kinds(in.nic_kinds), format_bandwidth(in.scale_out),
                         in.capping_kind.empty()
                             ? ""
                             : fmt::format(" (its {} link caps the NICs' {})", in.capping_kind,
                                           format_bandwidth(in.nic_onward)));
  }
  if (!s.tiers.empty()) out += "switch tiers (capacity one direction):\n";
  for (const TierSummary& tier : s.tiers) {
    out += fmt::format("  {:<5} {:>5} switch{}: {} in from below", tier.kind, tier.switches,
                       tier.switches > 1 ? "es" : "  ", format_bandwidth(tier.from_below));
    if (tier.to_above > 0)
      out += fmt::format(", {} up in {} uplink{} each ({} apiece): oversubscription {}",
                         format_bandwidth(tier.to_above), tier.uplinks / tier.switches,
                         tier.uplinks > tier.switches ? "s" : "",
                         format_bandwidth(tier.to_above / tier.uplinks),
                         ratio(tier.oversubscription()));
    out += "\n";
  }
  if (!s.reducing.empty()) {
    out += "switches that reduce (NVLS on an NVSwitch, SHARP on a network switch):";
    for (const ReducingSwitches& r : s.reducing)
      out += fmt::format("{} {} {} at {}% of the link rate", &r == &s.reducing.front() ? "" : ",",
                         r.switches, r.switches > 1 ? plural_of(r.kind) : r.kind,
                         format_significant(100 * r.efficiency, 3));
    out += "\n";
  }
  if (s.gpus >= 2)  // one GPU has no halves to cut between
    out += fmt::format("bisection bandwidth (ranks 0..{} to the rest, one direction): {}\n",
                       s.gpus / 2 - 1, format_bandwidth(s.bisection));
  if (!s.unreachable.empty())
    out += fmt::format("warning: {}: a collective across them fails\n", s.unreachable);
  return out;
}

namespace {

nlohmann::json reducing_json(const std::vector<ReducingSwitches>& reducing) {
  nlohmann::json out = nlohmann::json::array();
  for (const ReducingSwitches& r : reducing)
    out.push_back({{"kind", r.kind}, {"switches", r.switches}, {"efficiency", r.efficiency}});
  return out;
}

}  // namespace

nlohmann::json topology_summary_json(const Topology& t) {
  const TopologySummary s = summarise_topology(t);
  nlohmann::json tiers = nlohmann::json::array();
  for (const TierSummary& tier : s.tiers) {
    nlohmann::json j = {{"kind", tier.kind},
                        {"switches", tier.switches},
                        {"from_below_Bps", tier.from_below},
                        {"to_above_Bps", tier.to_above}};
    if (tier.to_above > 0) {
      j["oversubscription"] = tier.oversubscription();
      j["uplinks"] = tier.uplinks;
    }
    tiers.push_back(std::move(j));
  }
  return {{"name", s.name},
          {"gpus", s.gpus},
          {"hosts", s.hosts},
          {"nodes", s.nodes},
          {"links", s.links},
          {"nodes_by_kind", s.nodes_by_kind},
          {"links_by_kind", s.links_by_kind},
          {"link_bandwidth_by_kind_Bps", s.bandwidth_by_kind},
          {"injection",
           {{"gpu", s.injection.gpu},
            {"by_kind_Bps", s.injection.by_kind},
            {"nics", s.injection.nics},
            {"nic_onward_by_kind_Bps", s.injection.nic_kinds},
            {"scale_out_Bps", s.injection.scale_out},
            {"capped_by", s.injection.capping_kind.empty()
                              ? nlohmann::json(nullptr)
                              : nlohmann::json(s.injection.capping_kind)}}},
          {"tiers", tiers},
          {"reducing_switches", reducing_json(s.reducing)},
          {"bisection_Bps", s.bisection},
          {"unreachable",
           s.unreachable.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.unreachable)}};
}

namespace {

// Columns of the drawing, left to right: the top of the fabric first, GPUs' own
// switches last.
int column_of(NodeKind k) {
  switch (k) {
    case NodeKind::Core:
      return 0;
    case NodeKind::Spine:
      return 1;
    case NodeKind::Leaf:
    case NodeKind::Switch:
      return 2;
    case NodeKind::Nic:
    case NodeKind::PcieSwitch:
    case NodeKind::Cpu:
      return 3;
    case NodeKind::Gpu:
      return 4;
    case NodeKind::NvSwitch:
      return 5;
  }
  return 2;
}

std::string_view colour_of(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink:
      return "#2ca02c";
    case LinkKind::NvSwitch:
      return "#98df8a";
    case LinkKind::Pcie:
      return "#ff7f0e";
    case LinkKind::Ib:
      return "#1f77b4";
    case LinkKind::Roce:
      return "#9467bd";
    case LinkKind::Ethernet:
      return "#7f7f7f";
  }
  return "black";
}

// A name inside a quoted DOT string.
std::string dot_escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// `note`: a second line under the name (a leaf's rail).
std::string node_line(const Topology& t, NodeId id, const std::string& note = "") {
  const Node& n = t.node(id);
  if (n.kind == NodeKind::Gpu)
    return fmt::format(
        "  n{} [label=\"{}\\nrank {}\" shape=box style=filled fillcolor=\"#e8f0fe\"];\n", id,
        dot_escape(n.name), n.rank);
  // A switch that reduces is drawn doubled and says so.
  const std::string reduces =
      n.sharp ? (n.kind == NodeKind::NvSwitch ? "\\nNVLS" : "\\nSHARP") : "";
  return fmt::format("  n{} [label=\"{}{}{}\" shape={}{}];\n", id, dot_escape(n.name),
                     note.empty() ? "" : "\\n" + note, reduces,
                     n.kind == NodeKind::Nic ? "box" : "ellipse", n.sharp ? " peripheries=2" : "");
}

// The GPU behind each NIC (the GPU with a link to it).
std::map<NodeId, NodeId> gpus_of_nics(const Topology& t) {
  std::map<NodeId, NodeId> out;
  for (const Link& l : t.links())
    if (t.node(l.src).kind == NodeKind::Gpu && t.node(l.dst).kind == NodeKind::Nic)
      out.emplace(l.dst, l.src);
  return out;
}

// A leaf's rail: the position, among its host's GPUs, of the GPU behind its first NIC.
std::map<NodeId, int> rails_of_leaves(const Topology& t,
                                      const std::map<NodeId, NodeId>& gpu_of_nic) {
  std::map<NodeId, int> local;  // GPU -> index within its host, by rank
  std::map<int, int> seen;
  for (int r = 0; r < t.num_ranks(); ++r)
    local[t.gpu_of_rank(r)] = seen[t.node(t.gpu_of_rank(r)).host]++;
  std::map<NodeId, int> rails;
  for (const Link& l : t.links())
    if (t.node(l.dst).kind == NodeKind::Leaf && gpu_of_nic.contains(l.src))
      rails.emplace(l.dst, local[gpu_of_nic.at(l.src)]);
  return rails;
}

// Invisible edges between nodes of one column in the order given: dot keeps the
// tail of a flat edge before its head, so GPUs stay in rank order and rails in turn.
void write_order(std::ostream& out, const std::vector<NodeId>& ids) {
  if (ids.size() < 2) return;
  out << "  { rank=same; edge [style=invis];";
  for (std::size_t i = 1; i < ids.size(); ++i)
    out << fmt::format(" n{} -- n{};", ids[i - 1], ids[i]);
  out << " }\n";
}

// Cables (both directions of a pair drawn once), with the bandwidths of each kind.
struct Cable {
  NodeId a, b;
  const Link* link;
};

std::vector<Cable> cables_of(const Topology& t) {
  std::vector<Cable> out;
  std::set<std::pair<NodeId, NodeId>> drawn;
  for (const Link& l : t.links()) {
    // Drawn from the left column to the right, so that dot lays the tiers out in order.
    const bool flip = column_of(t.node(l.src).kind) > column_of(t.node(l.dst).kind);
    const NodeId a = flip ? l.dst : l.src, b = flip ? l.src : l.dst;
    if (drawn.insert(std::minmax(a, b)).second) out.push_back({a, b, &l});
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '<')
      out += "&lt;";
    else if (ch == '>')
      out += "&gt;";
    else if (ch == '&')
      out += "&amp;";
    else if (ch == '"')
      out += "&quot;";
    else
      out += ch;
  }
  return out;
}

void write_legend(std::ostream& out, const Topology& t, const std::vector<Cable>& cables) {
  std::map<LinkKind, std::set<double>> rates;
  for (const Cable& c : cables) rates[c.link->kind].insert(c.link->bandwidth);
  out << "  legend [shape=none margin=0 label=<<table border=\"0\" cellborder=\"1\" "
         "cellspacing=\"0\"><tr><td colspan=\"2\"><b>"
      << html_escape(t.name) << "</b>: " << t.num_ranks() << " GPUs</td></tr>";
  for (const auto& [kind, set] : rates) {
    std::string list;
    for (double bw : set) list += (list.empty() ? "" : ", ") + format_bandwidth(bw);
    out << fmt::format("<tr><td bgcolor=\"{}\">{}</td><td>{} per direction</td></tr>",
                       colour_of(kind), name_of(kind), list);
  }
  out << "</table>>];\n";
}

}  // namespace

void write_graphviz(std::ostream& out, const Topology& t) {
  // Written by hand, not with boost::write_graphviz: its writer has no cluster
  // subgraphs, which the per-host and per-rail boxes need.
  out << "graph topology {\n  rankdir=LR; ranksep=1.2; nodesep=0.15;\n"
         "  node [fontname=\"Helvetica\" fontsize=10]; edge [penwidth=1.2];\n";
  std::map<int, std::vector<NodeId>> hosts;  // host -> its nodes (GPUs, NICs, NVSwitch)
  std::map<int, std::vector<NodeId>> rails;  // rail -> its leaves
  const auto gpu_of_nic = gpus_of_nics(t);
  const auto leaf_rail = rails_of_leaves(t, gpu_of_nic);
  std::map<int, std::vector<NodeId>> columns;  // the fabric's switches, per column
  for (NodeId id = 0; id < static_cast<NodeId>(t.nodes().size()); ++id) {
    const Node& n = t.node(id);
    if (n.host >= 0 && tier_of(n.kind) == 0)
      hosts[n.host].push_back(id);
    else if (leaf_rail.contains(id))
      rails[leaf_rail.at(id)].push_back(id);
    else
      columns[column_of(n.kind)].push_back(id);
  }
  const bool boxes = hosts.size() > 1;  // one host needs no box
  for (const auto& [h, ids] : hosts) {
    if (boxes)
      out << fmt::format("  subgraph cluster_host{} {{\n  label=\"host {}\"; style=rounded;\n", h,
                         h);
    for (NodeId id : ids) out << node_line(t, id);
    // GPUs in rank order, each NIC level with its GPU.
    std::map<int, NodeId> gpus, nics;
    for (NodeId id : ids) {
      if (t.node(id).kind == NodeKind::Gpu) gpus.emplace(t.node(id).rank, id);
      if (gpu_of_nic.contains(id)) nics.emplace(t.node(gpu_of_nic.at(id)).rank, id);
    }
    for (const auto* column : {&gpus, &nics}) {
      std::vector<NodeId> order;
      for (const auto& [_, id] : *column) order.push_back(id);
      write_order(out, order);
    }
    if (boxes) out << "  }\n";
  }
  // Leaves in one column, rail after rail, each labelled with its rail. (Boxes per rail
  // would cost the order: dot does not keep flat edges in order across clusters.)
  if (!rails.empty()) {
    std::vector<NodeId> order;
    out << "  { rank=same;\n";
    for (const auto& [rail, ids] : rails)
      for (NodeId id : ids) {
        out << node_line(t, id, fmt::format("rail {}", rail));
        order.push_back(id);
      }
    out << "  }\n";
    write_order(out, order);
  }
  for (const auto& [_, ids] : columns) {
    out << "  { rank=same;\n";
    for (NodeId id : ids) out << node_line(t, id);
    out << "  }\n";
  }
  const auto cables = cables_of(t);
  const bool labels = cables.size() <= 48;  // beyond, the legend gives the rates
  for (const Cable& c : cables) {
    out << fmt::format("  n{} -- n{} [color=\"{}\"", c.a, c.b, colour_of(c.link->kind));
    if (labels)
      out << fmt::format(" label=\"{} {}\" fontsize=8", name_of(c.link->kind),
                         format_bandwidth(c.link->bandwidth));
    out << "];\n";
  }
  write_legend(out, t, cables);
  out << "}\n";
}

}  // namespace collsim
