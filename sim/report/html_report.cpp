#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/units.h"
#include "report/html_common.h"
#include "report/reports.h"
#include "report/topology_drawing.h"

namespace collsim {
namespace {

// Budgets that keep the page small (well under 1 MB) whatever the run: past them the
// page shows aggregates and leaves the detail to timeline.json and the CSVs.
constexpr std::size_t kMaxTimelineBars = 1500;  // one bar per transfer up to this many
constexpr int kMaxTimelineRows = 64;            // beyond: a row per group of ranks
constexpr int kTimelineBins = 200;              // columns of the aggregated timeline
constexpr std::size_t kHeatmapLinks = 24;
constexpr int kHottestPerCollective = 3;

// Each collective as a named band over [start, end]; overlapping ones stacked in lanes.
// Returns the height used.
int collective_bands(std::ostream& out, const ScenarioResult& r, double span, int y) {
  const double scale = span > 0 ? html::kPlotWidth / span : 0;
  std::vector<double> lane_end;
  const int lane_h = 18;
  for (std::size_t c = 0; c < r.outcomes.size(); ++c) {
    const auto& o = r.outcomes[c];
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > o.start_s + 1e-15) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = o.end_s;
    const double x = html::kPlotLeft + o.start_s * scale,
                 w = std::max(1.0, (o.end_s - o.start_s) * scale);
    const std::string& name = r.resolved[c].name;
    out << fmt::format(
        "<g class=\"band\"><title>{}: {} to {} ({})</title><rect x=\"{:.1f}\" y=\"{}\" "
        "width=\"{:.1f}\" height=\"{}\" fill=\"{}\" rx=\"3\"/>",
        html::escape(name), format_duration(o.start_s), format_duration(o.end_s),
        format_duration(o.time_s), x, y + lane * lane_h, w, lane_h - 3, html::collective_colour(c));
    // The name where it fits (about 6 px a character), else only in the tooltip.
    if (w > 6.0 * name.size() + 8)
      out << fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"bandname\">{}</text>", x + 4,
                         y + lane * lane_h + 11, html::escape(name));
    out << "</g>\n";
  }
  out << fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">collectives</text>\n",
      html::kPlotLeft - 6, y + 11);
  return static_cast<int>(lane_end.size()) * lane_h + 4;
}

void facts_line(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  out << fmt::format(
      "<p class=\"facts\">Topology <b>{}</b> ({} GPUs, {} links) &middot; network model <b>{}</b> "
      "(\u03b1 {}) &middot; everything done at <b>{}</b></p>\n",
      html::escape(s.topology.name), s.topology.num_ranks(), s.topology.links().size(),
      name_of(s.network.model), format_duration(to_seconds(s.network.alpha)),
      format_duration(traffic.makespan_s));
}

void summary_section(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                     const TrafficReport& traffic) {
  out << "<h2>Collectives</h2>\n<table id=\"summary\"><tr><th>name</th><th>op</th><th>plan</th>"
         "<th>ranks</th><th>size</th><th>start</th><th>time</th><th>algbw</th><th>busbw</th>"
         "<th>bottleneck link</th></tr>\n";
  for (std::size_t i = 0; i < r.resolved.size(); ++i) {
    const auto& c = r.resolved[i];
    const auto& o = r.outcomes[i];
    const bool timed = o.time_s > 0 && c.bytes > 0;  // a barrier moves no data
    std::string bottleneck = "-";
    if (i < traffic.per_collective.size() && traffic.per_collective[i].link >= 0) {
      const Bottleneck& b = traffic.per_collective[i];
      bottleneck = s.topology.link_label(b.link);
      if (b.share_of_rate < 1)  // as the text says it: a reducing switch's legs slowed it
        bottleneck += fmt::format(" (at {}%: a reducing switch's legs)",
                                  format_significant(100 * b.share_of_rate, 3));
    }
    out << fmt::format(
        "<tr><td class=\"name\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td>"
        "<td>{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td class=\"name\">{}</td></tr>\n",
        html::collective_colour(i), html::escape(c.name), name_of(c.shape.op),
        html::escape(r.labels[i]), c.ranks.size(), format_bytes(c.bytes),
        format_duration(o.start_s), format_duration(o.time_s),
        timed ? html::gbps(o.algbw_Bps) : "-", timed ? html::gbps(o.busbw_Bps) : "-",
        html::escape(bottleneck));
  }
  out << "</table>\n<p class=\"note\">Sizes in binary units (1 MiB = 2<sup>20</sup> B); "
         "bandwidths in GB/s (1 GB = 10<sup>9</sup> B); busbw as nccl-tests computes it.</p>\n";
  if (const std::string caveat = ideal_caveat(s, r, traffic); !caveat.empty())
    out << "<p class=\"note\" id=\"caveat\"><b>Caveat:</b> " << html::escape(caveat) << ".</p>\n";
}

// Each collective over its own duration: its busiest links and how evenly its ranks sent.
void per_collective_section(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                            const TrafficReport& traffic) {
  out << "<h2>Per collective</h2>\n<p class=\"note\">Each collective judged over its own "
         "duration (not the whole run): utilisation = bytes / (capacity &times; its "
         "time).</p>\n<table id=\"per-collective\"><tr><th>collective</th><th>time</th>"
         "<th>busiest links (utilisation, bytes)</th><th>links used</th><th>sent per rank "
         "(min / mean / max)</th><th>received per rank (min / mean / max)</th><th>skew (max / "
         "mean)</th></tr>\n";
  for (std::size_t c = 0; c < traffic.collectives.size(); ++c) {
    const CollectiveTraffic& ct = traffic.collectives[c];
    std::string links;
    for (const auto& lb : ct.hottest(kHottestPerCollective))
      links += fmt::format("{}{} {} ({})", links.empty() ? "" : "<br>",
                           html::escape(s.topology.link_label(lb.link)),
                           html::percent(lb.utilisation), format_bytes(lb.bytes));
    const RankSpread sent = spread(ct.ranks, &RankTraffic::sent),
                     received = spread(ct.ranks, &RankTraffic::received);
    out << fmt::format(
        "<tr><td class=\"name\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td>"
        "<td>{}</td><td class=\"name\">{}</td><td>{}</td><td>{} / {} / {}</td>"
        "<td>{} / {} / {}</td><td>sent {:.2f}, received {:.2f}</td></tr>\n",
        html::collective_colour(c), html::escape(r.resolved[c].name),
        format_duration(ct.duration_s()), links.empty() ? "-" : links, ct.links.size(),
        format_bytes(sent.min), format_bytes(sent.mean), format_bytes(sent.max),
        format_bytes(received.min), format_bytes(received.mean), format_bytes(received.max),
        sent.imbalance(), received.imbalance());
  }
  out << "</table>\n";
}

}  // namespace

namespace page_detail {

// Rows of the timeline: a rank each, or groups of consecutive ranks when there are many.
struct Rows {
  int ranks_per_row = 1;
  int count = 0;
  std::string label(int row, int K) const {
    if (ranks_per_row == 1) return fmt::format("rank {}", row);
    return fmt::format("ranks {}\u2013{}", row * ranks_per_row,
                       std::min(K, (row + 1) * ranks_per_row) - 1);
  }
};

Rows rows_of(int K) {
  Rows rows;
  rows.ranks_per_row = (K + kMaxTimelineRows - 1) / kMaxTimelineRows;
  rows.count = (K + rows.ranks_per_row - 1) / rows.ranks_per_row;
  return rows;
}

}  // namespace page_detail

using page_detail::Rows;
using page_detail::rows_of;

// One bar per transfer where they are few, each at its sender's row; else per row and
// time column, the time its ranks spent sending, and which collective sent most there.
struct PageTimeline::State {
  struct Bar {
    std::size_t collective;
    int step;
    OpKind kind;
    int src, dst;
    std::int64_t bytes;
    double a, b;
  };

  State(const Scenario& s, const ScenarioResult& r)
      : r_(r), K_(s.topology.num_ranks()), rows_(rows_of(K_)) {
    for (const auto& o : r.outcomes) span_ = std::max(span_, o.end_s);
    for (std::size_t c = 0; c < r.resolved.size(); ++c) ops_ += r.op_count(c);
    bars_ = ops_ <= kMaxTimelineBars && rows_.ranks_per_row == 1;
    if (bars_) return;
    width_ = span_ / kTimelineBins;
    const std::size_t cells = static_cast<std::size_t>(rows_.count) * kTimelineBins;
    busy_.assign(cells, 0), best_.assign(cells, 0), owner_.assign(cells, -1);
  }

  void collective(std::size_t c) {
    c_ = c;
    if (!bars_) mine_.assign(busy_.size(), 0.0);
  }

  void op(const RetiredOp& r) {
    const Op& op = *r.op;
    const std::vector<int>& ranks = r_.resolved[c_].ranks;
    const double a = to_seconds(r.start), b = to_seconds(r.end);
    if (bars_) {
      bar_list_.push_back(
          {c_, op.step, op.kind, ranks[op.src_rank], ranks[op.dst_rank], r.bytes, a, b});
      return;
    }
    const int B = kTimelineBins;
    const int row = ranks[op.src_rank] / rows_.ranks_per_row;
    const int k0 = std::min(B - 1, static_cast<int>(a / width_)),
              k1 = std::min(B - 1, static_cast<int>(b / width_));
    for (int k = k0; k <= k1; ++k)
      mine_[static_cast<std::size_t>(row) * B + k] +=
          std::max(0.0, std::min(b, (k + 1) * width_) - std::max(a, k * width_));
  }

  void collective_done() {
    if (bars_) return;
    for (std::size_t i = 0; i < busy_.size(); ++i) {
      busy_[i] += mine_[i];
      if (mine_[i] > best_[i]) best_[i] = mine_[i], owner_[i] = static_cast<int>(c_);
    }
    std::vector<double>().swap(mine_);
  }

  // The bars, in the collective's colour, darker on odd steps.
  void write_bars(std::ostream& out, double scale, int top, int row_h) const {
    for (const Bar& x : bar_list_)
      out << fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: "
          "step {} {} {}\u2192{}, {}, {} to {}</title></rect>\n",
          html::kPlotLeft + x.a * scale, top + x.src * row_h + 2,
          std::max(0.6, (x.b - x.a) * scale), row_h - 4,
          html::collective_colour(x.collective, x.step % 2 ? 38 : 55),
          html::escape(r_.resolved[x.collective].name), x.step, op_kind_name(x.kind), x.src, x.dst,
          format_bytes(x.bytes), format_duration(x.a), format_duration(x.b));
  }

  // Per row and column, the collective that sent most there, the share of the time in
  // quarters.
  void write_bins(std::ostream& out, int top, int row_h) const {
    const int B = kTimelineBins;
    for (int row = 0; row < rows_.count; ++row) {
      const int in_row = std::min(K_, (row + 1) * rows_.ranks_per_row) - row * rows_.ranks_per_row;
      html::shaded_row(out, B, top + row * row_h + 2, row_h - 4, [&](int k) {
        const std::size_t i = static_cast<std::size_t>(row) * B + k;
        const double share = std::min(1.0, busy_[i] / (width_ * in_row));
        if (share <= 0) return html::Shade{};
        return html::Shade{html::collective_colour(owner_[i]),
                           std::max(1, static_cast<int>(share * 4 + 0.5))};
      });
    }
  }

  const ScenarioResult& r_;
  const int K_;
  const Rows rows_;
  double span_ = 0;
  std::uint64_t ops_ = 0;
  bool bars_ = true;
  std::size_t c_ = 0;
  std::vector<Bar> bar_list_;
  double width_ = 0;
  std::vector<double> busy_, best_, mine_;  // per (row, column); mine_: this collective's
  std::vector<int> owner_;
};

PageTimeline::PageTimeline(const Scenario& s, const ScenarioResult& r)
    : state_(std::make_unique<State>(s, r)) {}
PageTimeline::~PageTimeline() = default;
void PageTimeline::collective(std::size_t c, const Schedule*) {
  state_->collective(c);
}
void PageTimeline::op(const RetiredOp& op) {
  state_->op(op);
}
void PageTimeline::collective_done() {
  state_->collective_done();
}

namespace {

void timeline_section(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                      const TrafficReport& traffic, const PageTimeline::State& timeline) {
  const int K = s.topology.num_ranks();
  const double span = traffic.makespan_s;
  const Rows& rows = timeline.rows_;
  const std::uint64_t ops = timeline.ops_;
  const bool bars = timeline.bars_;
  out << "<h2>Timeline</h2>\n<p class=\"note\">";
  if (bars)
    out << "One row per rank; each bar is a transfer it sends, in its collective's colour "
           "(darker on odd steps). Hover for details.";
  else
    out << fmt::format(
        "{} transfers are too many to draw one by one: each row shows, per time column, the "
        "share of the time {} sending (darker is busier), in the colour of the collective that "
        "sent most there. Every transfer is in timeline.json (open it in ui.perfetto.dev).",
        ops, rows.ranks_per_row == 1 ? "its rank was" : "its ranks were");
  out << "</p>\n";
  const int row_h = rows.count > 32 ? 10 : 18;
  const int bands_top = 6;
  std::ostringstream body;
  const int bands_h = collective_bands(body, r, span, bands_top);
  const int top = bands_top + bands_h + 4;
  const int axis_y = top + rows.count * row_h + 4;
  out << fmt::format(
      "<svg id=\"timeline\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      html::kPlotLeft + html::kPlotWidth + 30, axis_y + 24);
  out << body.str();
  for (int row = 0; row < rows.count; ++row)
    if (rows.count <= 32 || row % 2 == 0 || rows.ranks_per_row > 1)
      out << fmt::format(
          "<text x=\"{}\" y=\"{}\" class=\"rowname\" text-anchor=\"end\">{}</text>\n",
          html::kPlotLeft - 6, top + row * row_h + row_h - 5, rows.label(row, K));
  html::time_axis(out, span, axis_y, top);
  if (bars)
    timeline.write_bars(out, span > 0 ? html::kPlotWidth / span : 0, top, row_h);
  else
    timeline.write_bins(out, top, row_h);
  out << "</svg>\n";
}

// The links the heatmap shows: each collective's busiest few (over its own duration),
// then the busiest over the whole run, up to kHeatmapLinks.
std::vector<LinkId> heatmap_links(const TrafficReport& traffic) {
  std::vector<LinkId> shown;
  std::set<LinkId> seen;
  auto add = [&](LinkId l) {
    if (shown.size() < kHeatmapLinks && seen.insert(l).second) shown.push_back(l);
  };
  for (const auto& ct : traffic.collectives)
    for (const auto& lb : ct.hottest(kHottestPerCollective)) add(lb.link);
  std::vector<LinkId> busiest;
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l)
    if (traffic.links[l].bytes > 0) busiest.push_back(l);
  std::stable_sort(busiest.begin(), busiest.end(), [&](LinkId a, LinkId b) {
    return traffic.links[a].utilisation > traffic.links[b].utilisation;
  });
  for (LinkId l : busiest) add(l);
  return shown;
}

void heatmap_section(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                     const TrafficReport& traffic) {
  const std::vector<LinkId> shown = heatmap_links(traffic);
  std::size_t used = 0;
  for (const auto& lt : traffic.links) used += lt.bytes > 0;
  out << "<h2>Link utilisation over time</h2>\n";
  if (shown.empty()) {
    out << "<p class=\"note\" id=\"heatmap-note\">No link carried bytes.</p>\n";
    return;
  }
  out << fmt::format(
      "<p class=\"note\" id=\"heatmap-note\">{} of the {} links that carried bytes: each "
      "collective's {} busiest over its own duration, then the busiest over the whole run (by "
      "bytes / (capacity &times; run time)). Each row is one direction of a link, in {} time "
      "columns of {}. Every link is in utilisation.csv.</p>\n",
      shown.size(), used, kHottestPerCollective, traffic.bins, format_duration(traffic.bin_s));
  const int cell_h = 14, bands_top = 34;
  std::ostringstream body;
  html::load_scale(body, html::kPlotLeft, 4);
  const int bands_h = collective_bands(body, r, traffic.makespan_s, bands_top);
  const int top = bands_top + bands_h + 4;
  const int axis_y = top + static_cast<int>(shown.size()) * cell_h + 2;
  out << fmt::format(
      "<svg id=\"heatmap\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      html::kPlotLeft + html::kPlotWidth + 30, axis_y + 24);
  out << body.str();
  const double cell_w = traffic.bins > 0 ? static_cast<double>(html::kPlotWidth) / traffic.bins : 0;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const LinkId l = shown[i];
    const LinkTraffic& lt = traffic.links[l];
    const int y = top + static_cast<int>(i) * cell_h;
    float peak = 0;
    for (float u : lt.bins) peak = std::max(peak, u);
    out << fmt::format(
        "<g><title>{} ({}, {}): {} carried, {} over the run, peak column {}</title>"
        "<text x=\"{}\" y=\"{}\" class=\"rowname\" text-anchor=\"end\">{}</text>",
        html::escape(s.topology.link_label(l)), name_of(s.topology.link(l).kind),
        html::gbps(s.topology.link(l).bandwidth), format_bytes(lt.bytes),
        html::percent(lt.utilisation), html::percent(peak), html::kPlotLeft - 6, y + cell_h - 4,
        html::escape(s.topology.link_label(l)));
    // Runs of columns in the same tenth of utilisation are one rect.
    auto tenth = [&](int k) { return static_cast<int>(std::ceil(lt.bins[k] * 10 - 1e-6)); };
    for (int k = 0; k < traffic.bins;) {
      const int level = tenth(k);
      int end = k + 1;
      while (end < traffic.bins && tenth(end) == level) ++end;
      if (level > 0)
        out << fmt::format(
            "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
            "fill=\"{}\"/>",
            html::kPlotLeft + k * cell_w, y, (end - k) * cell_w, cell_h - 1,
            html::load_colour(level / 10.0));
      k = end;
    }
    out << "</g>\n";
  }
  out << fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#bbb\"/>\n",
      html::kPlotLeft, top, html::kPlotWidth, axis_y - top - 2);
  html::time_axis(out, traffic.makespan_s, axis_y, top);
  out << "</svg>\n";
}

void kind_bars_section(std::ostream& out, const Scenario& s, const TrafficReport& traffic) {
  std::map<std::string, std::int64_t> by_kind;
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l)
    by_kind[std::string(name_of(s.topology.link(l).kind))] += traffic.links[l].bytes;
  std::int64_t most = 1;
  for (const auto& [k, b] : by_kind) most = std::max(most, b);
  out << "<h2>Bytes per link kind</h2>\n<p class=\"note\">Summed over every link of the kind, "
         "both directions (a byte crossing three links counts three times).</p>\n";
  out << fmt::format(
      "<svg id=\"kind-bars\" width=\"760\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      by_kind.size() * 24 + 10);
  int i = 0;
  for (const auto& [kind, bytes] : by_kind) {
    const double w = 500.0 * static_cast<double>(bytes) / static_cast<double>(most);
    out << fmt::format(
        "<text x=\"84\" y=\"{}\" class=\"rowname\" text-anchor=\"end\">{}</text><rect x=\"90\" "
        "y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"steelblue\"><title>{}: {}</title></rect>"
        "<text x=\"{:.1f}\" y=\"{}\" class=\"tick\">{}</text>\n",
        i * 24 + 14, kind, i * 24 + 2, w, kind, format_bytes(bytes), 96 + w, i * 24 + 14,
        format_bytes(bytes));
    ++i;
  }
  out << "</svg>\n";
}

}  // namespace

void write_html_report(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic) {
  PageTimeline timeline(s, r);
  if (traffic.timed) retire_recorded(r, timeline);
  write_html_report(out, s, r, traffic, timeline);
}

void write_html_report(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                       const TrafficReport& traffic, const PageTimeline& timeline) {
  html::page_start(out, "collsim: " + s.name);
  out << "<h1>collsim: " << html::escape(s.name) << "</h1>\n";
  if (!s.description.empty())
    out << "<p class=\"note\">" << html::escape(s.description) << "</p>\n";
  facts_line(out, s, traffic);
  html::hover_panel(out, "hover over a bar, band, row or link");
  summary_section(out, s, r, traffic);
  per_collective_section(out, s, r, traffic);
  if (traffic.timed) {
    timeline_section(out, s, r, traffic, *timeline.state_);
    heatmap_section(out, s, r, traffic);
  }
  kind_bars_section(out, s, traffic);
  out << "<h2>Topology and load</h2>\n";
  topology_figure(out, s.topology, traffic.links);
  html::page_end(out);
}

}  // namespace collsim
