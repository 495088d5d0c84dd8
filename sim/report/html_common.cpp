#include "report/html_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.h"

namespace collsim::html {
namespace {

// Ticks for [0, span] seconds: a step of 1, 2 or 5 x 10^k in the unit that keeps the
// labels short (ns, us, ms, s), about `want` of them.
struct TimeTicks {
  double unit_s;  // seconds per unit
  const char* unit;
  double step;  // in units
};
TimeTicks time_ticks(double span, int want = 8) {
  TimeTicks t{1, "s", 1};
  if (span < 1e-6)
    t = {1e-9, "ns", 1};
  else if (span < 1e-3)
    t = {1e-6, "\u00b5s", 1};
  else if (span < 1)
    t = {1e-3, "ms", 1};
  const double raw = span / t.unit_s / want;
  const double mag = std::pow(10, std::floor(std::log10(std::max(raw, 1e-12))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      t.step = m * mag;
      break;
    }
  return t;
}

}  // namespace

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

std::string collective_colour(std::size_t c, int lightness) {
  return fmt::format("hsl({:.0f},62%,{}%)", std::fmod(c * 137.508 + 210, 360.0), lightness);
}
std::string load_colour(double u) {
  u = std::clamp(u, 0.0, 1.0);
  return fmt::format("rgb({},{},{})", static_cast<int>(255 - 75 * u),
                     static_cast<int>(245 - 225 * u), static_cast<int>(235 - 215 * u));
}
std::string percent(double u) {
  return fmt::format("{:.1f}%", u * 100);
}
std::string gbps(double bytes_per_s) {
  // One decimal from 10 GB/s up; three significant digits below, where one decimal read a
  // 1 KB collective's 0.01 GB/s as 0.0.
  const double g = bytes_per_s / 1e9;
  return (g >= 10 || g == 0 ? fmt::format("{:.1f}", g) : format_significant(g, 3)) + " GB/s";
}

void time_axis(std::ostream& out, double span, int y, int grid_top) {
  if (span <= 0) return;
  const TimeTicks t = time_ticks(span);
  const double px = kPlotWidth / (span / t.unit_s);  // pixels per unit
  out << fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#666\"/>\n", kPlotLeft,
                     y, kPlotLeft + kPlotWidth, y);
  for (double v = 0; v <= span / t.unit_s * (1 + 1e-9); v += t.step) {
    const double x = kPlotLeft + v * px;
    out << fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#000\" "
        "stroke-opacity=\"0.12\"/><line x1=\"{0:.1f}\" y1=\"{2}\" x2=\"{0:.1f}\" y2=\"{3}\" "
        "stroke=\"#666\"/><text x=\"{0:.1f}\" y=\"{4}\" class=\"tick\" "
        "text-anchor=\"middle\">{5} {6}</text>\n",
        x, grid_top, y, y + 4, y + 15, format_significant(std::round(v / t.step) * t.step, 6),
        t.unit);
  }
  out << fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">time</text>\n",
                     kPlotLeft - 26, y + 15);
}

void shaded_row(std::ostream& out, int bins, int y, int h, const std::function<Shade(int)>& level) {
  const double px = static_cast<double>(kPlotWidth) / bins;
  for (int k = 0; k < bins;) {
    const Shade here = level(k);
    int end = k + 1;
    while (end < bins && level(end) == here) ++end;
    if (here.quarters > 0)
      out << fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
          "fill-opacity=\"{}\"/>\n",
          kPlotLeft + k * px, y, (end - k) * px, h, here.colour, here.quarters / 4.0);
    k = end;
  }
}

std::string_view style_rules() {
  return "body{font-family:sans-serif;margin:20px;color:#222;max-width:1200px}\n"
         "table{border-collapse:collapse;font-size:13px}\n"
         "td,th{border:1px solid #ccc;padding:2px "
         "8px;text-align:right;vertical-align:top;white-space:nowrap}\n"
         "th{background:#f0f0f0}td.name{text-align:left}\n"
         ".swatch{display:inline-block;width:10px;height:10px;margin-right:5px}\n"
         ".note,.facts{font-size:13px;color:#444;max-width:1100px}\n"
         ".tick{font-size:10px;fill:#333}.axis{font-size:11px;fill:#333;font-weight:bold}\n"
         ".rowname{font-size:10px;fill:#333}.bandname{font-size:10px;fill:#fff;"
         "font-weight:bold}\n.nodename{font-size:9px;fill:#fff}\n"
         ".scroll{overflow-x:auto;max-width:1200px}\n"
         "#hover{position:fixed;top:8px;right:8px;background:#ffe;border:1px solid #999;"
         "padding:4px 8px;font-size:12px;max-width:420px}\n";
}

void page_start(std::ostream& out, std::string_view title) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
      << escape(title) << "</title>\n<style>\n"
      << style_rules() << "</style>\n</head><body>\n";
}

void load_scale(std::ostream& out, int x, int y) {
  out << fmt::format(
      "<defs><linearGradient id=\"load\">{}</linearGradient></defs>"
      "<text x=\"{}\" y=\"{}\" class=\"axis\">utilisation</text>"
      "<rect x=\"{}\" y=\"{}\" width=\"200\" height=\"10\" fill=\"url(#load)\" stroke=\"#999\"/>",
      fmt::format("<stop offset=\"0\" stop-color=\"{}\"/><stop offset=\"0.5\" "
                  "stop-color=\"{}\"/><stop offset=\"1\" stop-color=\"{}\"/>",
                  load_colour(0), load_colour(0.5), load_colour(1)),
      x, y + 9, x + 70, y);
  for (int p : {0, 50, 100})
    out << fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{}%</text>",
                       x + 70 + 2 * p, y + 22, p);
  out << "\n";
}

void hover_panel(std::ostream& out, std::string_view prompt) {
  out << "<div id=\"hover\">" << escape(prompt) << "</div>\n";
}

void page_end(std::ostream& out) {
  // Hovering shows the nearest <title> (the element's or its group's) in a fixed panel,
  // for readers who do not wait for tooltips.
  out << "<script>\ndocument.addEventListener('mouseover', function (e) {\n"
         "  for (var n = e.target; n && n.querySelector; n = n.parentNode) {\n"
         "    var t = n.querySelector(':scope > title');\n"
         "    if (t) { document.getElementById('hover').textContent = t.textContent; return; }\n"
         "  }\n"
         "});\n</script>\n</body></html>\n";
}

}  // namespace collsim::html
