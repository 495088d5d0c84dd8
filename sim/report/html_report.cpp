#include "report/html_report.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/units.h"

namespace collsim {
namespace {

constexpr int kMaxTimelineBars = 20000;  // beyond this the page gets slow to open
constexpr int kMaxHeatmapLinks = 64;
constexpr int kMaxDrawnNodes = 400;

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Steps cycle through well-separated hues; utilisation goes from pale to dark red.
std::string step_colour(int step) {
  return fmt::format("hsl({},65%,55%)", (step * 47) % 360);
}
std::string load_colour(double u) {
  u = std::clamp(u, 0.0, 1.0);
  return fmt::format("rgb({},{},{})", 255, static_cast<int>(240 - 200 * u),
                     static_cast<int>(230 - 210 * u));
}

void summary_section(std::ostream& out, const ScenarioResult& r) {
  out << "<h2>Collectives</h2>\n<table "
         "id=\"summary\"><tr><th>name</th><th>op</th><th>algorithm</th><th>ranks</th>"
         "<th>size (B)</th><th>time (us)</th><th>algbw (GB/s)</th><th>busbw (GB/s)</th></tr>\n";
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const auto& c = r.resolved[i];
    const auto& o = r.outcomes[i];
    out << fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td>"
        "<td>{:.2f}</td></tr>\n",
        escape(c.name), name_of(c.shape.op), escape(c.algorithm), c.ranks.size(), c.bytes,
        o.time_s * 1e6, o.algbw_Bps / 1e9, o.busbw_Bps / 1e9);
  }
  out << "</table>\n";
}

void timeline_section(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                      double makespan) {
  const int K = s.topology.num_ranks();
  const int width = 1000, row = 18, left = 80;
  std::size_t total = 0;
  for (const auto& t : r.sim.tasks) total += t.ops.size();
  out << "<h2>Timeline</h2>\n<p>One row per rank; each bar is a transfer it sends, coloured by "
         "step. Hover for "
         "details.";
  if (total > kMaxTimelineBars)
    out << fmt::format(" Showing the first {} of {} transfers.", kMaxTimelineBars, total);
  out << "</p>\n";
  out << fmt::format(
      "<svg id=\"timeline\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      left + width + 10, K * row + 30);
  for (int rank = 0; rank < K; ++rank)
    out << fmt::format("<text x=\"4\" y=\"{}\" class=\"label\">rank {}</text>\n", rank * row + 13,
                       rank);
  const double scale = makespan > 0 ? width / makespan : 0;
  int drawn = 0;
  for (std::size_t c = 0; c < r.resolved.size() && drawn < kMaxTimelineBars; ++c) {
    const auto& timing = r.sim.tasks[c].ops;
    for (OpId id = 0; id < timing.size() && drawn < kMaxTimelineBars; ++id, ++drawn) {
      const Op& op = r.schedules[c].ops[id];
      const int src = r.resolved[c].ranks[op.src_rank], dst = r.resolved[c].ranks[op.dst_rank];
      const double x = left + to_seconds(timing[id].start) * scale;
      const double w = std::max(0.5, to_seconds(timing[id].end - timing[id].start) * scale);
      out << fmt::format(
          "<rect class=\"op\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
          "fill-opacity=\"0.8\">"
          "<title>{}: step {} {} {}\u2192{}, {}, {:.3f}-{:.3f} us</title></rect>\n",
          x, src * row + 2, w, row - 4, step_colour(op.step), escape(r.resolved[c].name), op.step,
          op_kind_name(op.kind), src, dst,
          format_bytes(r.schedules[c].bytes(op)), to_seconds(timing[id].start) * 1e6,
          to_seconds(timing[id].end) * 1e6);
    }
  }
  out << fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"label\">0</text><text x=\"{}\" y=\"{}\" class=\"label\" "
      "text-anchor=\"end\">{}</text>\n</svg>\n",
      left, K * row + 20, left + width, K * row + 20, format_duration(makespan));
}

void heatmap_section(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  std::vector<LinkId> busiest;
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l)
    if (traffic.links[l].bytes > 0) busiest.push_back(l);
  std::stable_sort(busiest.begin(), busiest.end(), [&](LinkId a, LinkId b) {
    return traffic.links[a].utilisation > traffic.links[b].utilisation;
  });
  if (busiest.size() > kMaxHeatmapLinks) busiest.resize(kMaxHeatmapLinks);
  const int left = 220, cell_h = 12, width = 800;
  out << "<h2>Link utilisation over time</h2>\n<p>The most utilised links (rows) across time bins; "
         "darker is "
         "closer to full capacity.</p>\n";
  out << fmt::format(
      "<svg id=\"heatmap\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      left + width + 10, busiest.size() * cell_h + 20);
  const double cell_w = traffic.bins > 0 ? static_cast<double>(width) / traffic.bins : width;
  for (std::size_t i = 0; i < busiest.size(); ++i) {
    const LinkId l = busiest[i];
    out << fmt::format("<text x=\"2\" y=\"{}\" class=\"label\">{}</text>\n", i * cell_h + 10,
                       escape(s.topology.link_label(l)));
    const auto& bins = traffic.links[l].bins;
    for (std::size_t k = 0; k < bins.size(); ++k)
      out << fmt::format(
          "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{} bin "
          "{}: "
          "{:.0f}%</title></rect>\n",
          left + k * cell_w, i * cell_h, cell_w + 0.3, cell_h - 1, load_colour(bins[k]),
          escape(s.topology.link_label(l)), k, bins[k] * 100);
  }
  out << "</svg>\n";
}

void kind_bars_section(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  std::map<std::string, std::int64_t> by_kind;
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l)
    by_kind[std::string(name_of(s.topology.link(l).kind))] += traffic.links[l].bytes;
  std::int64_t most = 1;
  for (const auto& [k, b] : by_kind) most = std::max(most, b);
  out << "<h2>Bytes per link kind</h2>\n";
  out << fmt::format(
      "<svg id=\"kind-bars\" width=\"760\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      by_kind.size() * 24 + 10);
  int i = 0;
  for (const auto& [kind, bytes] : by_kind) {
    const double w = 500.0 * static_cast<double>(bytes) / static_cast<double>(most);
    out << fmt::format(
        "<text x=\"2\" y=\"{}\" class=\"label\">{}</text><rect x=\"90\" y=\"{}\" width=\"{:.1f}\" "
        "height=\"16\" fill=\"steelblue\"><title>{}: {}</title></rect><text x=\"{:.1f}\" y=\"{}\" "
        "class=\"label\">{}</text>\n",
        i * 24 + 14, kind, i * 24 + 2, w, kind, format_bytes(bytes), 96 + w, i * 24 + 14,
        format_bytes(bytes));
    ++i;
  }
  out << "</svg>\n";
}

// Layers by node kind: GPUs at the bottom, then NICs, NVSwitches, leaves, spines.
int layer_of(NodeKind k) {
  switch (k) {
    case NodeKind::Gpu:
      return 0;
    case NodeKind::Nic:
    case NodeKind::PcieSwitch:
    case NodeKind::Cpu:
      return 1;
    case NodeKind::NvSwitch:
      return 2;
    case NodeKind::Switch:
    case NodeKind::Leaf:
      return 3;
    case NodeKind::Spine:
      return 4;
    case NodeKind::Core:
      return 5;
  }
  return 3;
}

void topology_section(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  const Topology& t = s.topology;
  out << "<h2>Topology and load</h2>\n";
  if (t.nodes().size() > kMaxDrawnNodes) {
    out << fmt::format(
        "<p id=\"topology\">{} nodes are too many to draw legibly; see links.csv.</p>\n",
        t.nodes().size());
    return;
  }
  std::map<int, std::vector<NodeId>> layers;
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n)
    layers[layer_of(t.node(n).kind)].push_back(n);
  const int width = 1000, gap = 110;
  const int height = static_cast<int>(layers.size()) * gap + 20;
  std::vector<std::pair<double, double>> pos(t.nodes().size());
  int level = 0;
  for (const auto& [layer, nodes] : layers) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      pos[nodes[i]] = {(i + 0.5) * width / nodes.size(), height - 30.0 - level * gap};
    ++level;
  }
  std::int64_t most = 1;
  for (const auto& lt : traffic.links) most = std::max(most, lt.bytes);
  out << "<p>Line width: bytes carried (both directions); colour: the busier direction's "
         "utilisation.</p>\n";
  out << fmt::format(
      "<svg id=\"topology\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      width, height);
  std::map<std::pair<NodeId, NodeId>, std::pair<std::int64_t, double>>
      cables;  // bytes, max utilisation
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const auto key = std::minmax(t.link(l).src, t.link(l).dst);
    auto& [bytes, util] = cables[{key.first, key.second}];
    bytes += traffic.links[l].bytes;
    util = std::max(util, traffic.links[l].utilisation);
  }
  for (const auto& [ends, load] : cables) {
    const auto [a, b] = ends;
    const double w = 0.5 + 6.0 * static_cast<double>(load.first) / static_cast<double>(most);
    out << fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"{:.2f}\"><title>{} - {}: {}, {:.0f}% utilised</title></line>\n",
        pos[a].first, pos[a].second, pos[b].first, pos[b].second,
        load.first > 0 ? load_colour(0.15 + 0.85 * load.second) : "#ccc", w, escape(t.node(a).name),
        escape(t.node(b).name), format_bytes(load.first), load.second * 100);
  }
  for (NodeId n = 0; n < static_cast<NodeId>(t.nodes().size()); ++n) {
    const bool gpu = t.node(n).kind == NodeKind::Gpu;
    out << fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\"><title>{} "
        "({})</title></circle>\n",
        pos[n].first, pos[n].second, gpu ? 6 : 5, gpu ? "#2a7" : "#557", escape(t.node(n).name),
        name_of(t.node(n).kind));
  }
  out << "</svg>\n";
}

}  // namespace

void write_html_report(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>collsim: "
      << escape(s.name)
      << "</"
         "title>\n<style>body{font-family:sans-serif;margin:20px;color:#222}table{border-collapse:"
         "collapse}"
         "td,th{border:1px solid #ccc;padding:2px "
         "8px;text-align:right}.label{font-size:10px;fill:#333}"
         "#hover{position:fixed;top:8px;right:8px;background:#ffe;border:1px solid "
         "#999;padding:4px 8px;"
         "font-size:12px;max-width:420px}</style>\n</head><body>\n";
  out << "<h1>collsim: " << escape(s.name) << "</h1>\n";
  if (!s.description.empty()) out << "<p>" << escape(s.description) << "</p>\n";
  out << fmt::format(
      "<p>Topology {} ({} GPUs, {} links); network {} (alpha {}); all done at {}.</p>\n",
      escape(s.topology.name), s.topology.num_ranks(), s.topology.links().size(), s.network.model,
      format_duration(to_seconds(s.network.alpha)), format_duration(traffic.makespan_s));
  out << "<div id=\"hover\">hover over a bar, cell or link</div>\n";
  summary_section(out, r);
  if (traffic.timed) {
    timeline_section(out, s, r, traffic.makespan_s);
    heatmap_section(out, s, traffic);
  }
  kind_bars_section(out, s, traffic);
  topology_section(out, s, traffic);
  // Hovering shows an element's <title> in a fixed panel, for readers who do not wait for tooltips.
  out << "<script>\ndocument.addEventListener('mouseover', function (e) {\n"
         "  var t = e.target.querySelector ? e.target.querySelector('title') : null;\n"
         "  if (t) document.getElementById('hover').textContent = t.textContent;\n"
         "});\n</script>\n</body></html>\n";
}

}  // namespace collsim
