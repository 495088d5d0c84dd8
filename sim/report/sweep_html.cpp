// sweep.html: time and bus bandwidth against size, log-log, one line per algorithm.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "core/units.h"
#include "report/html_common.h"
#include "sweep/sweep.h"

namespace collsim {
namespace {

constexpr int kW = 700, kH = 380, kLeft = 70, kBottom = 44, kTop = 28, kRight = 10;
constexpr int kLegend = 300;  // room right of the plot for the legend

// Okabe-Ito's colour-blind safe hues (its yellow left out: too pale on white), then
// golden-angle hues: no two series share a colour, however many there are.
std::string colour_of(std::size_t i) {
  static constexpr const char* kColours[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                             "#e69f00", "#56b4e9", "#000000"};
  return i < std::size(kColours) ? kColours[i] : html::collective_colour(i, 35);
}

constexpr std::size_t kShapes = 7, kFills = 3;

// A marker shape per series, centred on (x, y): circle, square, triangle, diamond,
// down-triangle, cross, plus; filled, then hollow, then half transparent (21 distinct).
std::string marker_shape(std::size_t i, double x, double y, const std::string& colour) {
  const double r = 4;
  static constexpr const char* kFill[kFills] = {
      "fill=\"{0}\" stroke=\"{0}\"", "fill=\"white\" stroke=\"{0}\"",
      "fill=\"{0}\" fill-opacity=\"0.35\" stroke=\"{0}\""};
  const std::string paint = fmt::format(fmt::runtime(kFill[i / kShapes % kFills]), colour);
  switch (i % kShapes) {
    case 0:
      return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" {}/>", x, y, r, paint);
    case 1:
      return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" {}/>", x - r,
                         y - r, 2 * r, 2 * r, paint);
    case 2:
      return fmt::format("<path d=\"M{:.1f} {:.1f}l{} {}h{}z\" {}/>", x, y - r - 1, r + 1,
                         2 * r + 1, -2 * r - 2, paint);
    case 3:
      return fmt::format("<path d=\"M{:.1f} {:.1f}l{} {}l{} {}l{} {}z\" {}/>", x, y - r - 1, r + 1,
                         r + 1, -r - 1, r + 1, -r - 1, -r - 1, paint);
    case 4:
      return fmt::format("<path d=\"M{:.1f} {:.1f}l{} {}h{}z\" {}/>", x, y + r + 1, r + 1,
                         -2 * r - 1, -2 * r - 2, paint);
    case 5:
      return fmt::format(
          "<path d=\"M{0:.1f} {1:.1f}l{2} {2}m0 {3}l{3} {2}\" stroke=\"{4}\" "
          "stroke-width=\"2.2\"/>",
          x - r, y - r, 2 * r, -2 * r, colour);
    default:
      return fmt::format(
          "<path d=\"M{0:.1f} {1:.1f}h{2}M{3:.1f} {4:.1f}v{2}\" stroke=\"{5}\" "
          "stroke-width=\"2.2\"/>",
          x - r - 1, y, 2 * r + 2, x, y - r - 1, colour);
  }
}

// The marker with a hover title: its closing "/>" opened around a <title>.
std::string marker(std::size_t i, double x, double y, const std::string& colour,
                   const std::string& title = "") {
  const std::string m = marker_shape(i, x, y, colour);
  if (title.empty()) return m;
  const std::string tag = m.substr(1, m.find(' ') - 1);
  return m.substr(0, m.size() - 2) + "><title>" + title + "</title></" + tag + ">";
}

// Sizes: powers of two, every 1, 2, 5 or 10 doublings (10: 1 KiB, 1 MiB, 1 GiB), so
// labels are round binary sizes.
std::vector<double> size_ticks(double lo, double hi) {
  const int k0 = static_cast<int>(std::ceil(std::log2(lo) - 1e-9)),
            k1 = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  int stride = 10;
  for (int s : {1, 2, 5})
    if ((k1 - k0) / s <= 8) {
      stride = s;
      break;
    }
  std::vector<double> out;
  for (int k = k0; k <= k1; ++k)
    if (k % stride == 0) out.push_back(std::ldexp(1.0, k));
  if (out.empty()) out.push_back(std::ldexp(1.0, k0));
  return out;
}

// Values: 1, 2 and 5 per decade when the range is short, else only the decades.
std::vector<double> value_ticks(double lo, double hi) {
  const int d0 = static_cast<int>(std::floor(std::log10(lo))),
            d1 = static_cast<int>(std::ceil(std::log10(hi)));
  std::vector<double> out;
  for (int d = d0; d <= d1; ++d)
    for (double m : d1 - d0 <= 3 ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10.0, d);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    }
  return out;
}

std::string time_label(double seconds) {
  if (seconds < 1e-3) return format_significant(std::round(seconds * 1e9) / 1e3, 6) + " \u00b5s";
  if (seconds < 1) return format_significant(std::round(seconds * 1e6) / 1e3, 6) + " ms";
  return format_significant(seconds, 6) + " s";
}

// What one chart draws: its id, its y axis, and a point's value from its time and busbw.
struct Chart {
  const char* id;
  const char* ylabel;
  bool time;
  double (*value)(double time_s, double busbw_Bps);
};

struct Point {
  std::int64_t bytes;
  double value;
  std::string title;  // hover text, escaped
  std::string pick;   // NCCL's pick there ("ring/LL/24ch"), escaped; empty off the nccl line
};

struct Series {
  std::string name;  // escaped
  std::vector<Point> points;
  int same_as = -1;  // an earlier series with exactly these values
  bool measured = false;
};

std::string value_label(const Chart& c, double v) {
  return c.time ? time_label(v) : format_significant(v, 4) + " GB/s";
}

// "nccl: ring/LL/24ch" -> "ring/LL/24ch": the label says it is on the nccl line.
std::string pick_of(const SweepRow& row) {
  constexpr std::string_view kPrefix = "nccl: ";
  return row.plan.starts_with(kPrefix) ? row.plan.substr(kPrefix.size()) : row.plan;
}

Point point_of(const SweepRow& row, const Chart& c) {
  const double v = c.value(row.time_s, row.busbw_Bps);
  return {row.bytes, v,
          html::escape(fmt::format("{} at {}: {}, {}", row.algorithm, format_bytes(row.bytes),
                                   value_label(c, v), row.plan)),
          row.algorithm == "nccl" ? html::escape(pick_of(row)) : ""};
}

// The measured points within the sweep's sizes, by size: the axes stay the sweep's.
Series measured_series(const SweepResult& r, int ranks, const Chart& c, double lo, double hi) {
  Series s{"measured", {}, -1, true};
  for (const auto& m : r.measured) {
    const double v = c.value(m.time_s, m.busbw_Bps);
    if (m.ranks != ranks || v <= 0 || m.bytes < lo || m.bytes > hi) continue;
    s.points.push_back(
        {m.bytes, v,
         html::escape(fmt::format("measured at {}: {}", format_bytes(m.bytes), value_label(c, v))),
         ""});
  }
  std::sort(s.points.begin(), s.points.end(),
            [](const Point& a, const Point& b) { return a.bytes < b.bytes; });
  return s;
}

// One line per algorithm at `ranks`, in row order, then the measured points if any.
std::vector<Series> series_of(const SweepResult& r, int ranks, const Chart& c) {
  std::vector<Series> out;
  std::map<std::string, std::size_t> index;
  double lo = 1e300, hi = 0;
  for (const auto& row : r.rows) {
    if (row.ranks != ranks || c.value(row.time_s, row.busbw_Bps) <= 0) continue;
    auto [it, fresh] = index.emplace(row.algorithm, out.size());
    if (fresh) out.push_back({html::escape(row.algorithm), {}});
    out[it->second].points.push_back(point_of(row, c));
    lo = std::min(lo, static_cast<double>(row.bytes));
    hi = std::max(hi, static_cast<double>(row.bytes));
  }
  if (Series m = measured_series(r, ranks, c, lo, hi); !m.points.empty())
    out.push_back(std::move(m));
  return out;
}

// Series that have the same value at every size as an earlier one are marked, so the
// plot can say that one line hides another.
void find_coinciding(std::vector<Series>& series) {
  for (std::size_t b = 0; b < series.size(); ++b)
    for (std::size_t a = 0; a < b && series[b].same_as < 0; ++a) {
      const auto &pa = series[a].points, &pb = series[b].points;
      if (series[a].same_as >= 0 || pa.size() != pb.size()) continue;
      bool same = true;
      for (std::size_t k = 0; k < pa.size() && same; ++k)
        same = pa[k].bytes == pb[k].bytes &&
               std::fabs(pa[k].value - pb[k].value) <= 1e-9 * std::fabs(pa[k].value);
      if (same) series[b].same_as = static_cast<int>(a);
    }
}

// Coinciding lines dashed so both show; measured points dotted.
std::string dash_of(const Series& s) {
  if (s.measured) return " stroke-dasharray=\"2 3\"";
  return s.same_as >= 0 ? " stroke-dasharray=\"6 4\"" : "";
}

// Labels where NCCL's pick changes along its line (the first point included).
std::string pick_labels(const Series& s, const std::function<double(double)>& X,
                        const std::function<double(double)>& Y, const std::string& colour) {
  std::string out, last;
  for (const auto& p : s.points) {
    if (p.pick.empty() || p.pick == last) continue;
    last = p.pick;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"pick\" style=\"fill:{}\">{}</text>",
                       X(static_cast<double>(p.bytes)) + 5, Y(p.value) - 7, colour, p.pick);
  }
  return out;
}

// Where a plot's values land: log2 of size across, log10 of the value up.
struct PlotFrame {
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  double X(double x) const {
    return kLeft + (kW - kLeft - kRight) * (std::log2(x) - std::log2(xmin)) /
                       (std::log2(xmax) - std::log2(xmin));
  }
  double Y(double y) const {
    return kH - kBottom -
           (kH - kBottom - kTop) * (std::log10(y) - std::log10(ymin)) /
               (std::log10(ymax) - std::log10(ymin));
  }
};

// The data's extent, the values widened to whole decades or half decades so the ticks
// frame it; nullopt when there is nothing to draw.
std::optional<PlotFrame> frame_of(const std::vector<Series>& series) {
  PlotFrame f;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      f.xmin = std::min(f.xmin, static_cast<double>(p.bytes));
      f.xmax = std::max(f.xmax, static_cast<double>(p.bytes));
      f.ymin = std::min(f.ymin, p.value);
      f.ymax = std::max(f.ymax, p.value);
    }
  if (series.empty() || f.xmax <= f.xmin || f.ymax <= 0) return std::nullopt;
  f.ymin = std::pow(10, std::floor(std::log10(f.ymin) * 2) / 2);
  f.ymax = std::pow(10, std::ceil(std::log10(f.ymax) * 2) / 2);
  if (f.ymax <= f.ymin) f.ymax = f.ymin * 10;
  return f;
}

// The SVG element, the frame, the grid with its ticks and the axis labels.
void plot_axes(std::ostream& out, const PlotFrame& f, int ranks, const Chart& chart) {
  out << fmt::format(
      "<svg id=\"{}-{}\" class=\"plot\" width=\"{}\" height=\"{}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      chart.id, ranks, kW + kLegend, kH);
  out << fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", kLeft,
      kTop, kW - kLeft - kRight, kH - kBottom - kTop);
  for (double d : size_ticks(f.xmin, f.xmax))
    out << fmt::format(
        "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" class=\"grid\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" class=\"tick\" text-anchor=\"middle\">{4}</text>\n",
        f.X(d), kTop, kH - kBottom, kH - kBottom + 14, format_bytes(static_cast<std::int64_t>(d)));
  for (double d : value_ticks(f.ymin, f.ymax))
    out << fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" class=\"grid\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" class=\"tick\" text-anchor=\"end\">{5}</text>\n",
        kLeft, kW - kRight, f.Y(d), kLeft - 4, f.Y(d) + 3,
        chart.time ? time_label(d) : format_significant(d, 6));
  out << fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">message size (binary: 1 "
      "KiB = 1024 B)</text><text x=\"{}\" y=\"16\" class=\"axis\">{}</text>\n",
      (kLeft + kW) / 2, kH - 8, kLeft, chart.ylabel);
}

// Crossovers under the lines: a dashed vertical each, labelled at the top.
void plot_crossovers(std::ostream& out, const PlotFrame& f,
                     const std::vector<Crossover>& crossovers) {
  for (const auto& x : crossovers) {
    if (x.estimate < f.xmin || x.estimate > f.xmax) continue;
    const std::string label = html::escape(fmt::format("{} \u2192 {} \u2248 {}", x.from, x.to,
                                                       format_bytes(std::llround(x.estimate))));
    const double px = f.X(x.estimate);
    out << fmt::format(
        "<g class=\"crossover\"><title>{0}</title><line x1=\"{1:.1f}\" x2=\"{1:.1f}\" y1=\"{2}\" "
        "y2=\"{3}\" stroke=\"#444\" stroke-dasharray=\"4 3\"/><text x=\"{4:.1f}\" y=\"{5}\" "
        "class=\"xlabel\" transform=\"rotate(90 {4:.1f} {5})\">{0}</text></g>\n",
        label, px, kTop, kH - kBottom, px + 3, kTop + 4);
  }
}

// Lines, each point's marker with its own hover title; then the legend: each name in its
// line's colour, with its marker and dash.
void plot_series(std::ostream& out, const PlotFrame& f, const std::vector<Series>& series) {
  const std::function<double(double)> X = [&](double x) { return f.X(x); };
  const std::function<double(double)> Y = [&](double y) { return f.Y(y); };
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const std::string colour = colour_of(i);
    std::string points, marks;
    for (const auto& p : s.points) {
      const double x = X(static_cast<double>(p.bytes)), y = Y(p.value);
      points += fmt::format("{:.1f},{:.1f} ", x, y);
      marks += marker(i, x, y, colour, p.title);
    }
    out << fmt::format(
        "<g class=\"series\"><title>{}</title><polyline points=\"{}\" fill=\"none\" "
        "stroke=\"{}\" stroke-width=\"2\"{}/>{}{}</g>\n",
        s.name, points, colour, dash_of(s), marks, pick_labels(s, X, Y, colour));
  }
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const int y = kTop + 8 + 18 * static_cast<int>(i);
    const std::string colour = colour_of(i);
    out << fmt::format(
        "<g class=\"legend\"><line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" "
        "stroke-width=\"2\"{4}/>{5}<text x=\"{6}\" y=\"{7}\" class=\"legendname\" "
        "style=\"fill:{3}\">{8}{9}</text></g>\n",
        kW + 8, kW + 36, y, colour, dash_of(s), marker(i, kW + 22, y, colour), kW + 42, y + 4,
        s.name, s.same_as >= 0 ? fmt::format(" (= {})", series[s.same_as].name) : "");
  }
}

// One log-log plot: x = size, y = the chart's value; a line with markers per algorithm
// (NCCL's picks labelled), the measured points, crossovers as labelled dashed verticals.
void plot(std::ostream& out, const SweepResult& r, int ranks,
          const std::vector<Crossover>& crossovers, const Chart& chart) {
  std::vector<Series> series = series_of(r, ranks, chart);
  const std::optional<PlotFrame> frame = frame_of(series);
  if (!frame) return;
  find_coinciding(series);
  plot_axes(out, *frame, ranks, chart);
  plot_crossovers(out, *frame, crossovers);
  plot_series(out, *frame, series);
  out << "</svg>\n";
  for (const Series& s : series)
    if (s.same_as >= 0)
      out << fmt::format(
          "<p class=\"note coincide\">{} and {} coincide: the same {} at every size, so one "
          "line lies on the other (dashed, with its own markers).</p>\n",
          series[s.same_as].name, s.name, chart.time ? "time" : "bus bandwidth");
}

constexpr Chart kTimeChart{"time", "time", true, [](double time_s, double) { return time_s; }};
constexpr Chart kBusbwChart{"busbw", "busbw (GB/s, 1 GB = 1e9 B)", false,
                            [](double, double busbw_Bps) { return busbw_Bps / 1e9; }};

// Where the fastest line changes at `ranks`, NCCL's pick counted: the page draws it.
std::vector<Crossover> page_crossovers(const SweepResult& r, int ranks) {
  const auto& counts = r.plan.rank_counts;
  const auto it = std::find(counts.begin(), counts.end(), ranks);
  if (it == counts.end()) return {};
  return sweep_crossovers(r.plan, r.rows, static_cast<std::size_t>(it - counts.begin()), true);
}

}  // namespace

void write_sweep_html(std::ostream& out, const SweepResult& r) {
  const SweepAbout& about = r.plan.about;
  const auto& algorithms = r.plan.algorithms;
  const bool with_nccl =
      std::find(algorithms.begin(), algorithms.end(), "nccl") != algorithms.end();
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>collsim "
         "sweep</title>\n<style>body{font-family:sans-serif;margin:20px;color:#222}"
         ".tick{font-size:10px;fill:#333}.axis{font-size:11px;fill:#333;font-weight:bold}"
         ".legendname{font-size:12px}.xlabel{font-size:10px;fill:#444}.pick{font-size:10px}"
         ".grid{stroke:#000;stroke-opacity:0.08}.note{font-size:13px;color:#444}</style>"
         "</head><body>\n";
  out << fmt::format("<h1>collsim sweep: {} on {}</h1>\n", html::escape(about.op),
                     html::escape(about.topology));
  out << fmt::format(
      "<p class=\"note\">Network model {} (\u03b1 {}). Each algorithm simulated "
      "alone at each size; dashed verticals mark where the fastest algorithm "
      "changes{}.</p>\n",
      html::escape(about.network), format_duration(to_seconds(about.alpha)),
      with_nccl ? " (NCCL's pick counted: its line is labelled with what it picked)" : "");
  for (const auto& why : r.plan.left_out)
    out << fmt::format("<p class=\"note\">Left out: {}</p>\n", html::escape(why));
  if (!r.measured.empty())
    out << "<p class=\"note\">measured (dotted): the out-of-place time and busbw of the "
           "nccl-tests log given with --measured, at its sizes within the sweep's.</p>\n";
  std::vector<int> rank_counts;
  for (const auto& row : r.rows)
    if (std::find(rank_counts.begin(), rank_counts.end(), row.ranks) == rank_counts.end())
      rank_counts.push_back(row.ranks);
  for (int n : rank_counts) {
    const std::vector<Crossover> crossovers = page_crossovers(r, n);
    out << fmt::format("<h2>{} ranks</h2>\n<h3>Time against size</h3>\n", n);
    plot(out, r, n, crossovers, kTimeChart);
    out << "<h3>Bus bandwidth against size</h3>\n";
    plot(out, r, n, crossovers, kBusbwChart);
    out << "<ul>\n";
    for (const auto& x : crossovers)
      out << fmt::format("<li>{} &rarr; {} at about {} (between {} and {})</li>\n",
                         html::escape(x.from), html::escape(x.to),
                         format_bytes(std::llround(x.estimate)), format_bytes(x.below),
                         format_bytes(x.above));
    out << "</ul>\n";
  }
  out << "</body></html>\n";
}

}  // namespace collsim
