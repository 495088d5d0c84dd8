#include "report/workload_sweep_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <string>

#include "core/units.h"
#include "report/html_common.h"

namespace collsim {
// Named, not anonymous: the report layer is built as one unity file.
namespace workload_sweep_page {

constexpr int kRowH = 22, kBarH = 14, kTop = 24;
constexpr int kLabelW = 340;                          // the settings, left of the bars
constexpr int kStepX = kLabelW + 10, kStepW = 380;    // step time
constexpr int kMemX = kStepX + kStepW + 30, kMemW = 300;  // memory per GPU

constexpr const char* kFits = "#2b7bba";
constexpr const char* kNoFit = "#d9a0a0";

// "dp=2 tp=8 pp=4 micro_batches=8 recompute=none": the hover's and the summary's.
std::string label_of(const WorkloadSweep& s, const WorkloadPoint& p) {
  std::string out;
  for (std::size_t c = 0; c < s.columns.size(); ++c)
    out += (c ? " " : "") + s.columns[c] + "=" + p.settings[c];
  return out;
}

// "2 / 8 / 4 / 8 / none" under a header of the columns: short enough for a row's label.
std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t c = 0; c < parts.size(); ++c) out += (c ? " / " : "") + parts[c];
  return out;
}

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// The scales: the slowest step and the most memory (or the capacity) among points that ran.
struct Scales {
  double step = 0, memory = 0;
};
Scales scales_of(const WorkloadSweep& s) {
  Scales k;
  for (const auto& p : s.points) {
    if (!p.error.empty()) continue;
    k.step = std::max(k.step, p.step_s);
    k.memory = std::max({k.memory, p.memory_bytes, p.memory_capacity});
  }
  return k;
}

std::string hover(const WorkloadSweep& s, const WorkloadPoint& p, bool best) {
  if (!p.error.empty()) return label_of(s, p) + ": refused, " + p.error;
  return fmt::format("{}: step {}, MFU {:.1f}%, {:.0f} tokens/s per GPU, {} per GPU{}{}",
                     label_of(s, p), format_duration(p.step_s), 100 * p.mfu,
                     p.tokens_per_s_per_gpu, gigabytes(p.memory_bytes),
                     p.fits ? "" : " (does not fit)", best ? ", best" : "");
}

void bar(std::ostream& out, int x, int y, double width, const char* colour, bool best) {
  out << fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"{}/>", x, y,
      std::max(width, 1.0), kBarH, colour, best ? " stroke=\"#000\" stroke-width=\"2\"" : "");
}

void row(std::ostream& out, const WorkloadSweep& s, std::size_t i, const Scales& k) {
  const WorkloadPoint& p = s.points[i];
  const bool best = static_cast<int>(i) == s.best;
  const int y = kTop + static_cast<int>(i) * kRowH;
  out << fmt::format("<g><title>{}</title>", html::escape(hover(s, p, best)));
  out << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\"{}>{}</text>", kLabelW,
                     y + kBarH - 2, best ? " font-weight=\"bold\"" : "",
                     html::escape((best ? "\u2605 " : "") + joined(p.settings)));
  if (!p.error.empty()) {
    out << fmt::format(
        "<text x=\"{}\" y=\"{}\" fill=\"#888\" font-size=\"11\">refused: {}</text></g>\n",
        kStepX, y + kBarH - 2, html::escape(p.error));
    return;
  }
  const char* colour = p.fits ? kFits : kNoFit;
  bar(out, kStepX, y, k.step > 0 ? kStepW * p.step_s / k.step : 0, colour, best);
  bar(out, kMemX, y, k.memory > 0 ? kMemW * p.memory_bytes / k.memory : 0, colour, best);
  out << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text></g>\n", kMemX + kMemW + 6,
                     y + kBarH - 2, p.fits ? "" : "does not fit");
}

void plot(std::ostream& out, const WorkloadSweep& s) {
  const Scales k = scales_of(s);
  const int height = kTop + static_cast<int>(s.points.size()) * kRowH + 10;
  const int width = kMemX + kMemW + 90;
  out << fmt::format("<svg width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
                     width, height);
  out << fmt::format("<text x=\"{}\" y=\"14\" text-anchor=\"end\">{}</text>", kLabelW,
                     html::escape(joined(s.columns)));
  out << fmt::format("<text x=\"{}\" y=\"14\">step time (longest {})</text>", kStepX,
                     format_duration(k.step));
  out << fmt::format("<text x=\"{}\" y=\"14\">memory per GPU (to {})</text>\n", kMemX,
                     gigabytes(k.memory));
  for (std::size_t i = 0; i < s.points.size(); ++i) row(out, s, i, k);
  // The GPU's capacity, where the model form knows it (the same GPU at every point).
  for (const auto& p : s.points)
    if (p.error.empty() && p.memory_capacity > 0 && k.memory > 0) {
      const double x = kMemX + kMemW * p.memory_capacity / k.memory;
      out << fmt::format(
          "<g><title>capacity {}</title><line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" "
          "stroke=\"#c00\" stroke-dasharray=\"4 3\"/></g>\n",
          gigabytes(p.memory_capacity), x, kTop - 4, x, height - 6);
      break;
    }
  out << "</svg>\n";
}

std::string summary(const WorkloadSweep& s) {
  std::size_t fit = 0, refused = 0;
  for (const auto& p : s.points) {
    refused += !p.error.empty();
    fit += p.error.empty() && p.fits;
  }
  std::string text = fmt::format("{} points: {} fit in memory, {} do not, {} refused. ",
                                 s.points.size(), fit, s.points.size() - fit - refused, refused);
  if (s.best < 0) return text + "None fits.";
  const WorkloadPoint& b = s.points[s.best];
  return text + fmt::format("Best (fastest that fits): {}, step {}, MFU {:.1f}%, {:.0f} tokens/s "
                            "per GPU.",
                            label_of(s, b), format_duration(b.step_s), 100 * b.mfu,
                            b.tokens_per_s_per_gpu);
}

}  // namespace workload_sweep_page

void write_workload_sweep_html(std::ostream& out, const WorkloadSweep& sweep) {
  using namespace workload_sweep_page;
  const std::string title = "collsim workload sweep: " + sweep.scenario +
                            (sweep.job.empty() ? "" : ", job " + sweep.job);
  html::page_start(out, title);
  out << "<h1>" << html::escape(title) << "</h1>\n<p>" << html::escape(summary(sweep))
      << "</p>\n";
  out << fmt::format(
      "<p><span style=\"color:{}\">&#9632;</span> fits &nbsp; <span style=\"color:{}\">&#9632;"
      "</span> does not fit &nbsp; &#9733; best &nbsp; dashed: the GPU's memory</p>\n",
      kFits, kNoFit);
  html::hover_panel(out, "hover over a row");
  plot(out, sweep);
  html::page_end(out);
}

}  // namespace collsim
