#include "report/topology_drawing.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "core/units.h"
#include "report/html_common.h"

namespace collsim {
namespace {

constexpr std::size_t kMaxDetailedNodes = 400;  // every node drawn, up to this many
constexpr std::size_t kMaxDetailedHosts = 8;    // beyond: the grouped drawing
constexpr std::size_t kMaxRowBoxes = 48;        // switches of a tier drawn one by one
constexpr std::size_t kMaxServerCells = 256;    // servers drawn as cells of their groups
constexpr int kWidth = 1180;                    // the drawing's usual width (it may scroll)
constexpr int kScaleHeight = 30;                // under the drawing: the colour scale

// A run's per-directed-link load, or none (an unloaded drawing).
struct Loads {
  const std::vector<LinkTraffic>& links;
  bool any() const { return !links.empty(); }
  std::int64_t bytes(LinkId l) const { return any() ? links[l].bytes : 0; }
  double utilisation(LinkId l) const { return any() ? links[l].utilisation : 0; }
};

// Cables drawn as one line: their links and capacity each way (`way` 0 or 1, as the
// caller orients the pair), bytes both ways, and the busiest direction's utilisation.
struct Bundle {
  std::array<int, 2> links{};
  std::array<double, 2> capacity{};
  std::int64_t bytes = 0;
  double utilisation = 0;
  void add(const Topology& t, LinkId l, const Loads& loads, int way) {
    ++links[way];
    capacity[way] += t.link(l).bandwidth;
    bytes += loads.bytes(l);
    utilisation = std::max(utilisation, loads.utilisation(l));
  }
  int cables() const { return std::max(links[0], links[1]); }  // a one-way link counts too
  double most_capacity() const { return std::max(capacity[0], capacity[1]); }
};

// What every line's width is relative to: the most bytes, or (unloaded) the most capacity.
struct LineScale {
  bool loaded = false;
  double most = 1;
  template <class Map>
  LineScale(const Map& bundles, bool with_loads) : loaded(with_loads) {
    for (const auto& [key, b] : bundles)
      most = std::max(most, loaded ? static_cast<double>(b.bytes) : b.most_capacity());
  }
  double width(const Bundle& b, double thickest) const {
    return 0.6 + thickest * (loaded ? static_cast<double>(b.bytes) : b.most_capacity()) / most;
  }
  std::string colour(const Bundle& b) const {
    if (!loaded) return "#89a";
    return b.bytes > 0 ? html::load_colour(b.utilisation) : "#ccc";
  }
  std::string describe(const Bundle& b) const {
    if (!loaded)
      return fmt::format("{} {}", html::gbps(b.most_capacity()),
                         b.links[0] > 0 && b.links[1] > 0 ? "each way" : "one way");
    return fmt::format("{}, {} utilised", format_bytes(b.bytes), html::percent(b.utilisation));
  }
};

// The picture before it is framed: SVG content, its size, and what its legend says.
struct Drawing {
  int width = 600;
  int height = 100;
  std::string body;
  std::string legend;  // HTML
};

int host_of(const Node& n) {
  if (n.host >= 0) return n.host;
  return n.kind == NodeKind::Gpu ? 0 : -1;
}

// ---- Node by node (a few servers) --------------------------------------------------

// Inside a server, bottom to top: GPUs, then NICs / PCIe switches / CPUs, then NVSwitches.
// Outside (the fabric), bottom to top: switches and leaves, spines, cores.
int inner_layer(NodeKind k) {
  switch (k) {
    case NodeKind::Gpu:
      return 0;
    case NodeKind::NvSwitch:
      return 2;
    default:
      return 1;
  }
}
int fabric_layer(NodeKind k) {
  switch (k) {
    case NodeKind::Spine:
      return 1;
    case NodeKind::Core:
      return 2;
    default:
      return 0;
  }
}

struct Placed {
  double x = 0, y = 0;
};

// A position for every node: each server a box with its GPUs at the bottom, fabric
// switches in rows above all servers. Returns the drawing's width and height.
std::pair<int, int> place_nodes(const Topology& t, std::vector<Placed>& pos,
                                std::map<int, std::pair<double, double>>& boxes) {
  std::map<int, std::array<std::vector<NodeId>, 3>> hosts;  // host -> inner layers
  std::map<int, std::vector<NodeId>> fabric;                // layer -> nodes
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const Node& node = t.node(n);
    if (host_of(node) >= 0)
      hosts[host_of(node)][inner_layer(node.kind)].push_back(n);
    else
      fabric[fabric_layer(node.kind)].push_back(n);
  }
  // Slots as wide as fits all servers side by side in about kWidth px (at least 15 px:
  // beyond that the drawing scrolls).
  const int pad = 8, gap = 10, inner_gap = 44;
  std::size_t slots = 0;
  for (const auto& [host, layers] : hosts) {
    std::size_t most = 1;
    for (const auto& l : layers) most = std::max(most, l.size());
    slots += most;
  }
  const int room = kWidth - static_cast<int>(hosts.size()) * (2 * pad + gap);
  const int slot = std::clamp(room / static_cast<int>(std::max<std::size_t>(1, slots)), 15, 30);
  int width = 10;
  for (const auto& [host, layers] : hosts) {
    std::size_t most = 1;
    for (const auto& l : layers) most = std::max(most, l.size());
    const int w = static_cast<int>(most) * slot + 2 * pad;
    boxes[host] = {width, width + w};
    width += w + gap;
  }
  width = std::max(width, 600);
  const int fabric_gap = 80;
  const int fabric_h = static_cast<int>(fabric.size()) * fabric_gap;
  const int box_top = 30 + fabric_h, box_bottom = box_top + 3 * inner_gap + 10;
  for (const auto& [host, layers] : hosts) {
    const auto [x0, x1] = boxes[host];
    for (int layer = 0; layer < 3; ++layer) {
      const auto& nodes = layers[layer];
      for (std::size_t i = 0; i < nodes.size(); ++i)
        pos[nodes[i]] = {x0 + pad + (i + 0.5) * (x1 - x0 - 2 * pad) / nodes.size(),
                         box_bottom - 22.0 - layer * inner_gap};
    }
  }
  int level = 0;
  for (const auto& [layer, nodes] : fabric) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      pos[nodes[i]] = {10 + (i + 0.5) * (width - 20) / nodes.size(),
                       box_top - 40.0 - level * fabric_gap};
    ++level;
  }
  return {width, box_bottom + 8};
}

std::string detailed_legend(const Topology& t, bool loaded) {
  std::set<NodeKind> kinds;
  for (const auto& n : t.nodes()) kinds.insert(n.kind);
  std::string out;
  out +=
      "<svg width=\"14\" height=\"12\"><circle cx=\"7\" cy=\"6\" r=\"5\" fill=\"#2a7\"/>"
      "</svg> GPU (its rank below) ";
  if (kinds.count(NodeKind::Nic))
    out +=
        "<svg width=\"14\" height=\"12\"><rect x=\"2\" y=\"1\" width=\"10\" height=\"10\" "
        "fill=\"#d90\"/></svg> NIC ";
  out +=
      "<svg width=\"22\" height=\"12\"><rect x=\"1\" y=\"1\" width=\"20\" height=\"10\" "
      "rx=\"2\" fill=\"#557\"/></svg> switch (NVSwitch, PCIe, leaf, spine, core) &middot; "
      "a grey box is one server &middot; a line is a cable, both directions: ";
  out += loaded ? "its width the bytes it carried, its colour the busier direction's "
                  "utilisation over the run (grey: unused)."
                : "its width its capacity.";
  bool leaves = false;
  for (const auto& n : t.nodes()) leaves |= n.kind == NodeKind::Leaf && n.name.find("leaf") == 0;
  if (leaves)
    out +=
        " Fabric names: <code>leafR.J</code> is leaf switch J of rail R (rail R joins NIC R "
        "of every server), <code>spineS</code> spine switch S.";
  return out;
}

void draw_server_boxes(std::ostream& out, const Topology& t, const std::vector<Placed>& pos,
                       const std::map<int, std::pair<double, double>>& boxes, int height) {
  for (const auto& [host, span] : boxes) {
    double top = 1e9;
    for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
      if (host_of(t.node(n)) == host) top = std::min(top, pos[n].y);
    out << fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#f4f4f4\" "
        "stroke=\"#ccc\" rx=\"6\"/><text x=\"{:.0f}\" y=\"{:.0f}\" class=\"tick\">server "
        "{}</text>\n",
        span.first, top - 22, span.second - span.first, height - top + 14, span.first + 4, top - 11,
        host);
  }
}

void draw_nodes(std::ostream& out, const Topology& t, const std::vector<Placed>& pos, int width) {
  // Switch names where they fit: fabric rows get a name each only while they are sparse.
  std::map<int, int> per_row;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    ++per_row[static_cast<int>(pos[n].y)];
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const Node& node = t.node(n);
    const auto [x, y] = pos[n];
    const std::string title =
        fmt::format("<title>{} ({}{})</title>", html::escape(node.name), name_of(node.kind),
                    node.rank >= 0 ? fmt::format(", rank {}", node.rank) : "");
    if (node.kind == NodeKind::Gpu) {
      out << fmt::format(
          "<g><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"#2a7\"/><text x=\"{:.1f}\" "
          "y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}</text>{}</g>\n",
          x, y, x, y + 17, node.rank, title);
    } else if (node.kind == NodeKind::Nic) {
      out << fmt::format(
          "<g><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"#d90\"/>{}</g>\n",
          x - 5, y - 5, title);
    } else {
      const bool named = width / per_row[static_cast<int>(y)] >= 64;
      const double w = named ? std::min(58.0, 7.0 * node.name.size() + 8) : 14;
      out << fmt::format(
          "<g><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"14\" rx=\"3\" "
          "fill=\"#557\"/>{}{}</g>\n",
          x - w / 2, y - 7, w,
          named ? fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"nodename\" "
                              "text-anchor=\"middle\">{}</text>",
                              x, y + 4, html::escape(node.name))
                : "",
          title);
    }
  }
}

Drawing detailed_drawing(const Topology& t, const Loads& loads) {
  std::vector<Placed> pos(t.nodes().size());
  std::map<int, std::pair<double, double>> boxes;
  Drawing d;
  std::tie(d.width, d.height) = place_nodes(t, pos, boxes);
  d.legend = detailed_legend(t, loads.any());
  std::map<std::pair<NodeId, NodeId>, Bundle> cables;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const auto [a, b] = std::minmax(t.link(l).src, t.link(l).dst);
    cables[{a, b}].add(t, l, loads, t.link(l).src == a ? 0 : 1);
  }
  std::ostringstream out;
  draw_server_boxes(out, t, pos, boxes, d.height);
  const LineScale scale(cables, loads.any());
  for (const auto& [ends, cable] : cables) {
    const auto [a, b] = ends;
    out << fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"{:.1f}\"><title>{} \u2014 {}: {}</title></line>\n",
        pos[a].x, pos[a].y, pos[b].x, pos[b].y, scale.colour(cable), scale.width(cable, 5.0),
        html::escape(t.node(a).name), html::escape(t.node(b).name), scale.describe(cable));
  }
  draw_nodes(out, t, pos, d.width);
  d.body = out.str();
  return d;
}

// ---- Grouped (a cluster) -------------------------------------------------------------

// One box of the grouped drawing: servers that hang from the same switches (row 0), or
// one switch or switches with the same neighbours below (rows above).
struct Box {
  int row = 0;
  std::vector<int> hosts;        // row 0
  std::vector<NodeId> switches;  // rows above
  double x = 0, y = 0, w = 0;    // centre and width
  double order = 0;              // left to right within its row
  Box(int in_row, double at) : row(in_row), order(at) {}
};

constexpr int kRowGap = 90;
constexpr int kBoxHeight = 16;
constexpr int kServerRowHeight = 34;

// The servers of each host and the fabric switch every node belongs to: a box index per
// node. Servers with the same set of fabric neighbours share a box (a pod, or every
// server of a small fat tree).
struct Grouping {
  std::vector<Box> boxes;
  std::vector<int> box_of;     // per node
  std::vector<int> server_of;  // per node: its server, or -1 (fabric)
  int rows = 1;
};

void group_servers(const Topology& t, Grouping& g) {
  std::map<int, std::set<NodeId>> fabric_of;  // host -> the switches its nodes cable to
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    if (g.server_of[n] >= 0) fabric_of[g.server_of[n]];
  for (const Link& l : t.links())
    if (g.server_of[l.src] >= 0 && g.server_of[l.dst] < 0)
      fabric_of[g.server_of[l.src]].insert(l.dst);
  std::map<std::set<NodeId>, int> box_of_key;
  std::map<int, int> box_of_host;
  for (const auto& [host, key] : fabric_of) {
    const auto [it, fresh] = box_of_key.try_emplace(key, static_cast<int>(g.boxes.size()));
    if (fresh) g.boxes.emplace_back(0, static_cast<double>(g.boxes.size()));
    g.boxes[it->second].hosts.push_back(host);
    box_of_host[host] = it->second;
  }
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    if (g.server_of[n] >= 0) g.box_of[n] = box_of_host[g.server_of[n]];
}

// Fabric switches tier by tier, bottom up: one box each while a tier is small, else one
// per set of neighbours below; each tier ordered by where its neighbours below sit.
void group_fabric(const Topology& t, Grouping& g) {
  std::map<int, std::vector<NodeId>> tiers;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    if (g.server_of[n] < 0) tiers[fabric_layer(t.node(n).kind)].push_back(n);
  std::vector<std::set<NodeId>> neighbours(t.nodes().size());
  for (const Link& l : t.links()) neighbours[l.src].insert(l.dst);
  for (const auto& [tier, switches] : tiers) {
    const int row = g.rows++;
    const auto below = [&](NodeId n) {
      std::set<int> boxes;
      for (NodeId m : neighbours[n])
        if (g.box_of[m] >= 0 && g.boxes[g.box_of[m]].row < row) boxes.insert(g.box_of[m]);
      return boxes;
    };
    std::map<std::set<int>, int> box_of_key;
    for (NodeId n : switches) {
      const std::set<int> key = below(n);
      int box = -1;
      if (switches.size() > kMaxRowBoxes) {
        const auto it = box_of_key.find(key);
        if (it != box_of_key.end()) box = it->second;
      }
      if (box < 0) {
        box = static_cast<int>(g.boxes.size());
        double sum = 0;
        for (int b : key) sum += g.boxes[b].order;
        g.boxes.emplace_back(row, key.empty() ? 1e9 : sum / static_cast<double>(key.size()));
        box_of_key[key] = box;
      }
      g.boxes[box].switches.push_back(n);
      g.box_of[n] = box;
    }
    // Renumber the tier's order left to right (ties: first seen), for the tier above.
    std::vector<int> in_row;
    for (std::size_t b = 0; b < g.boxes.size(); ++b)
      if (g.boxes[b].row == row) in_row.push_back(static_cast<int>(b));
    std::stable_sort(in_row.begin(), in_row.end(),
                     [&](int a, int b) { return g.boxes[a].order < g.boxes[b].order; });
    for (std::size_t i = 0; i < in_row.size(); ++i)
      g.boxes[in_row[i]].order = static_cast<double>(i);
  }
}

Grouping group_nodes(const Topology& t) {
  Grouping g;
  g.box_of.assign(t.nodes().size(), -1);
  g.server_of.resize(t.nodes().size());
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    g.server_of[n] = host_of(t.node(n));
  group_servers(t, g);
  group_fabric(t, g);
  return g;
}

// Server groups side by side, each as wide as its servers need (3 px a cell where cells
// are drawn, at least 12 px) plus a share of the rest by its server count; switch boxes
// evenly spread over their row in order. The drawing is kWidth wide, or wider (it then
// scrolls) where its groups or a row of switches need more. Returns the width.
int place_boxes(Grouping& g, bool cells) {
  constexpr double gap = 12, cell_px = 3, group_px = 12, switch_px = 14;
  const auto least = [&](const Box& b) {
    return std::max(group_px, cells ? cell_px * static_cast<double>(b.hosts.size()) + 4 : 0.0);
  };
  std::size_t hosts = 0, groups = 0;
  double needed = 0;
  std::vector<int> per_row(g.rows);
  for (const Box& b : g.boxes) {
    ++per_row[b.row];
    if (b.row != 0) continue;
    hosts += b.hosts.size(), ++groups, needed += least(b);
  }
  const double gaps = gap * static_cast<double>(groups - 1);
  double width = std::max<double>(kWidth, 20 + needed + gaps);
  for (int row = 1; row < g.rows; ++row) width = std::max(width, 20.0 + switch_px * per_row[row]);
  const double extra = width - 20 - gaps - needed;
  const double bottom = 40.0 + kRowGap * (g.rows - 1) + kServerRowHeight / 2.0;
  double x = 10;
  for (Box& b : g.boxes) {
    if (b.row != 0) continue;
    b.w = least(b) + extra * static_cast<double>(b.hosts.size()) / static_cast<double>(hosts);
    b.x = x + b.w / 2, b.y = bottom;
    x += b.w + gap;
  }
  for (Box& b : g.boxes) {
    if (b.row == 0) continue;
    const double slot = (width - 20.0) / per_row[b.row];
    b.x = 10 + (b.order + 0.5) * slot;
    b.y = bottom - kServerRowHeight / 2.0 - kRowGap * b.row + kBoxHeight / 2.0;
    b.w = std::clamp(slot - 6, 6.0, 96.0);
  }
  return static_cast<int>(std::ceil(width));
}

// Each server's first and last rank (first > last: a server without GPUs).
using RankSpans = std::map<int, std::pair<int, int>>;

int gpus_of(const RankSpans& ranks, const std::vector<int>& hosts) {
  int gpus = 0;
  for (int h : hosts) gpus += std::max(0, ranks.at(h).second - ranks.at(h).first + 1);
  return gpus;
}

// "servers 0-31" for a run of servers, else a count; GPUs that no server holds (a bare
// switch of GPUs) are "N GPUs".
std::string hosts_label(const std::vector<int>& hosts, bool hostless, int gpus) {
  if (hostless) return fmt::format("{} GPUs", gpus);
  if (hosts.size() == 1) return fmt::format("server {}", hosts.front());
  if (hosts.back() - hosts.front() + 1 == static_cast<int>(hosts.size()))
    return fmt::format("servers {}-{}", hosts.front(), hosts.back());
  return fmt::format("{} servers", hosts.size());
}

std::string switches_label(const Topology& t, const std::vector<NodeId>& switches) {
  if (switches.size() == 1) return t.node(switches.front()).name;
  return fmt::format("{} \u00d7 {}", switches.size(), name_of(t.node(switches.front()).kind));
}

// What is inside each server: its cables among its own nodes (NVLink, PCIe).
std::map<int, Bundle> server_insides(const Topology& t, const Grouping& g, const Loads& loads) {
  std::map<int, Bundle> inside;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const int h = g.server_of[t.link(l).src];
    if (h >= 0 && h == g.server_of[t.link(l).dst]) inside[h].add(t, l, loads, 0);
  }
  return inside;
}

// How a server group is drawn: with a cell per server while there are few servers.
struct GroupStyle {
  bool cells = true;
  bool hostless = false;
};

std::string server_title(int h, const RankSpans& ranks, const Bundle& inside, const Loads& loads) {
  const auto [first, last] = ranks.at(h);
  return fmt::format(
      "server {} ({}){}", h,
      first <= last ? fmt::format("ranks {}-{}", first, last) : std::string("no GPUs"),
      loads.any() ? fmt::format(": inside {}, busiest link {} utilised", format_bytes(inside.bytes),
                                html::percent(inside.utilisation))
                  : "");
}

std::string inside_fill(const Bundle& inside, const Loads& loads, const char* unloaded) {
  if (!loads.any()) return unloaded;
  return inside.bytes > 0 ? html::load_colour(inside.utilisation) : "#ddd";
}

void draw_server_group(std::ostream& out, const Box& b, const std::string& name,
                       const std::map<int, Bundle>& inside, const Loads& loads,
                       const RankSpans& ranks, const GroupStyle& style) {
  const double left = b.x - b.w / 2, top = b.y - kServerRowHeight / 2.0;
  const Bundle none;
  const auto inside_of = [&](int h) -> const Bundle& {
    const auto it = inside.find(h);
    return it == inside.end() ? none : it->second;
  };
  // Without cells the box itself shows its busiest server.
  Bundle busiest;
  for (int h : b.hosts)
    if (inside_of(h).utilisation >= busiest.utilisation) busiest = inside_of(h);
  // The label under the box, shortened to the host range where the box is narrow (about
  // 6 px a character at the tick size).
  std::string label = name;
  if (b.w < 6.0 * label.size() && label.starts_with("servers "))
    label = label.substr(std::string_view("servers ").size());
  out << fmt::format(
      "<g><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
      "stroke=\"#aaa\" rx=\"4\"/><title>{} ({} GPUs){}</title></g>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n",
      left, top, b.w, kServerRowHeight,
      style.cells ? std::string("#f4f4f4") : inside_fill(busiest, loads, "#2a7"),
      html::escape(name), gpus_of(ranks, b.hosts),
      !style.cells && loads.any()
          ? fmt::format(", busiest link inside {} utilised", html::percent(busiest.utilisation))
          : "",
      b.x, top + kServerRowHeight + 12, html::escape(label));
  if (!style.cells || style.hostless) return;
  const double cell = (b.w - 4) / static_cast<double>(b.hosts.size());
  for (std::size_t i = 0; i < b.hosts.size(); ++i) {
    const int h = b.hosts[i];
    out << fmt::format(
        "<g><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
        "stroke=\"#fff\" stroke-width=\"{}\"/><title>{}</title></g>\n",
        left + 2 + static_cast<double>(i) * cell, top + 4, cell, kServerRowHeight - 8,
        inside_fill(inside_of(h), loads, "#2a7"), cell > 4 ? 1 : 0,
        html::escape(server_title(h, ranks, inside_of(h), loads)));
  }
}

void draw_switch_group(std::ostream& out, const Topology& t, const Box& b) {
  const std::string label = switches_label(t, b.switches);
  const bool named = b.w >= 6.0 * label.size() + 6;
  std::string title = html::escape(label);
  if (b.switches.size() > 1)
    title += fmt::format(": {} \u2026 {}", html::escape(t.node(b.switches.front()).name),
                         html::escape(t.node(b.switches.back()).name));
  out << fmt::format(
      "<g><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" rx=\"3\" "
      "fill=\"#557\"/>{}<title>{}</title></g>\n",
      b.x - b.w / 2, b.y - kBoxHeight / 2.0, b.w, kBoxHeight,
      named ? fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"nodename\" "
                          "text-anchor=\"middle\">{}</text>",
                          b.x, b.y + 3, html::escape(label))
            : "",
      title);
}

std::string grouped_legend(bool loaded, const GroupStyle& style) {
  std::string out = style.hostless ? "The grey box at the bottom is the GPUs"
                                   : "A grey box at the bottom is a group of servers that cable "
                                     "to the same switches";
  if (!style.hostless)
    out += style.cells ? ", one cell per server" + std::string(loaded ? ", coloured by the "
                                                                        "busiest link inside it "
                                                                        "(NVLink, PCIe)"
                                                                      : "")
                       : std::string(loaded ? ", coloured by its busiest server's busiest link "
                                              "inside (NVLink, PCIe)"
                                            : "");
  out +=
      "; a dark box above is a switch, or, in a tier too wide to draw switch by switch, the "
      "switches with the same neighbours below (labelled by count) &middot; a line is every "
      "cable between two boxes, both directions: ";
  out += loaded ? "its width the bytes they carried, its colour the busiest cable's "
                  "utilisation over the run (grey: unused)."
                : "its width their capacity.";
  return out + " Hover for names, counts and rates.";
}

RankSpans rank_spans(const Topology& t, const Grouping& g) {
  RankSpans ranks;
  for (const Node& n : t.nodes())
    if (n.kind == NodeKind::Gpu && host_of(n) >= 0) {
      const auto [it, fresh] = ranks.try_emplace(host_of(n), n.rank, n.rank);
      it->second = {std::min(it->second.first, n.rank), std::max(it->second.second, n.rank)};
    }
  for (const Box& b : g.boxes)
    for (int h : b.hosts) ranks.try_emplace(h, 0, -1);  // a server without GPUs
  return ranks;
}

void draw_bundle(std::ostream& out, const Box& down, const Box& up, const std::string& down_name,
                 const std::string& up_name, const Bundle& bundle, const LineScale& scale) {
  const double down_y = down.y - (down.row == 0 ? kServerRowHeight : kBoxHeight) / 2.0;
  // From a server group, straight up under the switch where the group reaches (a group's
  // cables to its rails' leaves fan out rather than meet in one point).
  const double down_x = down.row == 0 && down.w > 8
                            ? std::clamp(up.x, down.x - down.w / 2 + 4, down.x + down.w / 2 - 4)
                            : down.x;
  out << fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
      "stroke-width=\"{:.1f}\"><title>{} \u2014 {}: {} {}, {}</title></line>\n",
      down_x, down_y, up.x, up.y + kBoxHeight / 2.0, scale.colour(bundle), scale.width(bundle, 7.0),
      html::escape(down_name), html::escape(up_name), bundle.cables(),
      bundle.cables() == 1 ? "cable" : "cables", scale.describe(bundle));
}

Drawing grouped_drawing(const Topology& t, const Loads& loads) {
  Grouping g = group_nodes(t);
  std::size_t hosts = 0;
  for (const Box& b : g.boxes) hosts += b.hosts.size();
  GroupStyle style;
  style.cells = hosts <= kMaxServerCells;
  style.hostless =
      std::none_of(t.nodes().begin(), t.nodes().end(), [](const Node& n) { return n.host >= 0; });
  Drawing d;
  d.width = place_boxes(g, style.cells);
  d.height = 40 + kRowGap * (g.rows - 1) + kServerRowHeight + 18;
  d.legend = grouped_legend(loads.any(), style);
  const RankSpans ranks = rank_spans(t, g);
  std::vector<std::string> names;
  for (const Box& b : g.boxes)
    names.push_back(b.row == 0 ? hosts_label(b.hosts, style.hostless, gpus_of(ranks, b.hosts))
                               : switches_label(t, b.switches));
  std::map<std::pair<int, int>, Bundle> lines;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const int a = g.box_of[t.link(l).src], b = g.box_of[t.link(l).dst];
    if (a != b) lines[std::minmax(a, b)].add(t, l, loads, a < b ? 0 : 1);
  }
  std::ostringstream out;
  const LineScale scale(lines, loads.any());
  for (const auto& [ends, bundle] : lines) {
    const bool first_down = g.boxes[ends.first].row <= g.boxes[ends.second].row;
    const int down = first_down ? ends.first : ends.second;
    const int up = first_down ? ends.second : ends.first;
    draw_bundle(out, g.boxes[down], g.boxes[up], names[down], names[up], bundle, scale);
  }
  const std::map<int, Bundle> inside = server_insides(t, g, loads);
  for (std::size_t b = 0; b < g.boxes.size(); ++b) {
    if (g.boxes[b].row == 0)
      draw_server_group(out, g.boxes[b], names[b], inside, loads, ranks, style);
    else
      draw_switch_group(out, t, g.boxes[b]);
  }
  d.body = out.str();
  return d;
}

// ---- Which drawing --------------------------------------------------------------------

Drawing draw(const Topology& t, const Loads& loads) {
  std::set<int> hosts;
  bool fabric = false;
  for (const Node& n : t.nodes()) {
    if (host_of(n) >= 0)
      hosts.insert(host_of(n));
    else
      fabric = true;
  }
  if (fabric && !hosts.empty() &&
      (hosts.size() > kMaxDetailedHosts || t.nodes().size() > kMaxDetailedNodes))
    return grouped_drawing(t, loads);
  if (t.nodes().size() <= kMaxDetailedNodes) return detailed_drawing(t, loads);
  return {};
}

}  // namespace

void topology_figure(std::ostream& out, const Topology& t, const std::vector<LinkTraffic>& loads) {
  const Loads view{loads};
  const Drawing d = draw(t, view);
  if (d.body.empty()) {
    out << fmt::format(
        "<p id=\"topology\">{} nodes on {} links, without servers or switches to group them "
        "by, are too many to draw legibly; each link's load is in links.csv.</p>\n",
        t.nodes().size(), t.links().size());
    return;
  }
  out << "<p class=\"note\" id=\"topology-legend\">" << d.legend << "</p>\n";
  const int scale_h = view.any() ? kScaleHeight : 0;
  out << fmt::format(
      "<div class=\"scroll\"><svg id=\"topology\" width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      d.width, d.height + scale_h);
  if (view.any()) html::load_scale(out, 10, d.height + 4);
  out << d.body << "</svg></div>\n";
}

void write_topology_svg(std::ostream& out, const Topology& t) {
  const std::vector<LinkTraffic> none;
  const Drawing d = draw(t, Loads{none});
  const int title_h = 24;
  out << fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\" font-family=\"sans-serif\">\n<style>\n{}</style>\n"
      "<text x=\"10\" y=\"16\" class=\"axis\">{}: {} GPUs, {} nodes, {} links{}</text>\n"
      "<g transform=\"translate(0,{})\">\n",
      d.width, d.height + title_h, html::style_rules(), html::escape(t.name), t.num_ranks(),
      t.nodes().size(), t.links().size(),
      d.body.empty() ? " (too many to draw without servers or switches to group them by)" : "",
      title_h);
  out << d.body << "</g>\n</svg>\n";
}

}  // namespace collsim
