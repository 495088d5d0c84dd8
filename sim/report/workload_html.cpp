#include "report/workload_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/units.h"
#include "report/html_common.h"
#include "report/workload_ranks.h"

namespace collsim {
namespace workload_html {

using html::escape;

constexpr int kBins = 200;             // time columns of a timeline lane
constexpr int kLaneH = 12;             // pixels a lane
constexpr std::size_t kHotLinks = 10;  // as result.json's "hottest_links"
constexpr int kBarWidth = 900;         // the breakdown and memory bars
constexpr const char* kBubbleColour = "#b0b0b0";
// Orange: apart from the hues html::collective_colour gives the first few parallelisms.
constexpr const char* kComputeColour = "hsl(28,85%,48%)";

std::string share_of(double part, double whole) {
  return html::percent(whole > 0 ? part / whole : 0.0);
}

// "dp 16 · tp 8 · pp 8 · ep 1, ZeRO-1, 1f1b × 16 micro-batches"; the other forms by name.
std::string job_shape(const WorkloadSpec& w) {
  if (w.is_chakra()) return "Chakra trace " + escape(w.chakra);
  if (!w.has_model()) return "data parallel (gradients and compute given)";
  const Parallelism& p = w.parallelism;
  std::string out = fmt::format("{} on {}: dp {} &middot; tp {} &middot; pp {} &middot; ep {}",
                                escape(w.model->name), escape(w.gpu.name), p.dp, p.tp, p.pp, p.ep);
  if (p.zero > 0) out += fmt::format(", ZeRO-{}", p.zero);
  if (p.pp > 1)
    out += fmt::format(", {} &times; {} micro-batches", escape(p.pipeline), p.micro_batches);
  return out;
}

// A colour per category of a job's breakdown: compute green, each communication
// category a hue of its own (html::collective_colour by its place), the bubble grey.
class Palette {
 public:
  explicit Palette(const StepBreakdown& b) {
    std::size_t comm = 0;
    for (const StepShare& c : b.categories)
      colour_[c.category] = c.compute ? kComputeColour : html::collective_colour(comm++);
  }
  const std::string& operator()(const std::string& category) const {
    static const std::string bubble = kBubbleColour;
    const auto it = colour_.find(category);
    return it == colour_.end() ? bubble : it->second;
  }

 private:
  std::map<std::string, std::string> colour_;
};

std::string swatch(const std::string& colour) {
  return fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>", colour);
}

// ---- Headline ----------------------------------------------------------------------

void headline_section(std::ostream& out, const WorkloadRun& run) {
  const bool several = run.jobs.size() > 1;
  out << "<h2>Step</h2>\n";
  for (const JobOutcome& j : run.jobs)
    out << fmt::format(
        "<p class=\"headline\">{}Step <b>{}</b>: compute {}, exposed communication <b>{}</b> "
        "({} of the step), bubble <b>{}</b> ({}).</p>\n",
        several ? "<b>" + escape(j.spec->name) + "</b> &middot; " : "", format_duration(j.step_s),
        format_duration(j.compute_s), format_duration(j.exposed_comm_s),
        share_of(j.exposed_comm_s, j.step_s), format_duration(j.idle_s),
        share_of(j.idle_s, j.step_s));
  out << "<div class=\"scroll\"><table "
         "id=\"headline\"><tr><th>job</th><th>GPUs</th><th>what</th><th>step</th>"
         "<th>compute</th><th>communication (hidden)</th><th>exposed communication</th>"
         "<th>bubble</th><th>speedup over one GPU</th><th>scaling efficiency</th>";
  if (several) out << "<th>alone</th><th>sharing costs</th>";
  out << "</tr>\n";
  for (const JobOutcome& j : run.jobs) {
    out << fmt::format(
        "<tr><td class=\"name\">{}</td><td>{}</td><td class=\"name\">{}</td><td>{}</td>"
        "<td>{}</td><td>{} ({})</td><td>{} ({})</td><td>{} ({})</td><td>{}</td><td>{}</td>",
        escape(j.spec->name), j.spec->ranks.size(), job_shape(*j.spec), format_duration(j.step_s),
        format_duration(j.compute_s), format_duration(j.comm_s), html::percent(j.overlap),
        format_duration(j.exposed_comm_s), share_of(j.exposed_comm_s, j.step_s),
        format_duration(j.idle_s), share_of(j.idle_s, j.step_s),
        j.speedup > 0 ? fmt::format("{:.2f}&times;", j.speedup) : "-",
        j.speedup > 0 ? html::percent(j.scaling_efficiency) : "-");
    if (several)
      out << (j.alone_step_s > 0
                  ? fmt::format("<td>{}</td><td>{}</td>", format_duration(j.alone_step_s),
                                html::percent(j.step_s / j.alone_step_s - 1))
                  : "<td>-</td><td>-</td>");
    out << "</tr>\n";
  }
  out << "</table></div>\n<p class=\"note\">Per GPU, the mean over the job's ranks: compute + "
         "exposed communication + bubble = the step. Communication is hidden while compute "
         "runs on the GPU; the bubble is neither (pipeline fill and drain, waiting on a "
         "straggler).</p>\n";
}

// ---- Where the step went -----------------------------------------------------------

// One segment of the stacked bar from x, `part` of the step wide.
double bar_segment(std::ostream& out, double x, double part, double step, int y,
                   const std::string& colour, const std::string& title) {
  const double w = step > 0 ? kBarWidth * part / step : 0;
  if (w <= 0) return x;
  out << fmt::format(
      "<g><title>{}</title><rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"24\" "
      "fill=\"{}\"/></g>\n",
      title, x, y, w, colour);
  return x + w;
}

std::string segment_title(const std::string& name, const StepShare& s, double step) {
  return fmt::format("{}: exposed {} ({} of the step), busy {}", escape(name),
                     format_duration(s.exposed_s), share_of(s.exposed_s, step),
                     format_duration(s.busy_s));
}

// Compute, each communication category's exposed part, the bubble: they add up to the step.
void breakdown_bar(std::ostream& out, const StepBreakdown& b, const Palette& colour, int job) {
  out << fmt::format(
      "<svg id=\"breakdown-{}\" width=\"{}\" height=\"30\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n",
      job, kBarWidth + 20);
  double x = 10;
  for (const StepShare& c : b.categories)
    x = bar_segment(out, x, c.exposed_s, b.step_s, 3, colour(c.category),
                    segment_title(c.category, c, b.step_s));
  bar_segment(out, x, b.bubble_s, b.step_s, 3, kBubbleColour,
              fmt::format("bubble: {} ({} of the step)", format_duration(b.bubble_s),
                          share_of(b.bubble_s, b.step_s)));
  out << "</svg>\n<p class=\"note legend\">";
  for (const StepShare& c : b.categories)
    out << fmt::format("{}{} {} ({}) &nbsp; ", swatch(colour(c.category)), escape(c.category),
                       format_duration(c.exposed_s), share_of(c.exposed_s, b.step_s));
  out << fmt::format("{}bubble {} ({})</p>\n", swatch(kBubbleColour), format_duration(b.bubble_s),
                     share_of(b.bubble_s, b.step_s));
}

std::string share_cells(const StepShare& s, double step) {
  return fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>", s.tasks,
                     s.bytes > 0 ? format_bytes(s.bytes) : "-", format_duration(s.busy_s),
                     format_duration(s.exposed_s), share_of(s.exposed_s, step));
}

// Per parallelism, each with its collective kinds beneath; the bubble last.
void breakdown_table(std::ostream& out, const StepBreakdown& b, const Palette& colour, int job) {
  out << fmt::format(
      "<table id=\"breakdown-table-{}\"><tr><th>parallelism / kind</th><th>tasks</th>"
      "<th>bytes</th><th>busy</th><th>exposed</th><th>of step</th></tr>\n",
      job);
  for (const StepShare& c : b.categories) {
    out << fmt::format("<tr><td class=\"name\">{}<b>{}</b></td>{}</tr>\n",
                       swatch(colour(c.category)), escape(c.category), share_cells(c, b.step_s));
    for (const StepShare& k : b.kinds)
      if (k.category == c.category && !k.op.empty())
        out << fmt::format("<tr><td class=\"name\">&nbsp;&nbsp;&nbsp;{} {}</td>{}</tr>\n",
                           escape(k.category), escape(k.op), share_cells(k, b.step_s));
  }
  out << fmt::format(
      "<tr><td class=\"name\">{}<b>bubble</b></td><td>-</td><td>-</td><td>-</td><td>{}</td>"
      "<td>{}</td></tr>\n<tr><td class=\"name\"><b>step</b></td><td></td><td></td><td></td>"
      "<td>{}</td><td>100.0%</td></tr>\n</table>\n",
      swatch(kBubbleColour), format_duration(b.bubble_s), share_of(b.bubble_s, b.step_s),
      format_duration(b.step_s));
}

void breakdown_section(std::ostream& out, const JobOutcome& j, int job, bool several) {
  const StepBreakdown& b = j.breakdown;
  const Palette colour(b);
  out << fmt::format("<h2>Where the step went{}</h2>\n",
                     several ? ": " + escape(j.spec->name) : "");
  out << fmt::format(
      "<p class=\"note\">Per GPU, mean over {} ranks. Busy: some task of the kind in flight; "
      "exposed: in flight while no compute runs (kinds in flight together share the instant "
      "evenly). Compute + exposed + bubble = the step.</p>\n",
      b.ranks);
  breakdown_bar(out, b, colour, job);
  breakdown_table(out, b, colour, job);
  if (!j.facts.warnings.empty()) {
    out << "<ul class=\"warnings\">\n";
    for (const auto& w : j.facts.warnings) out << "<li>" << escape(w) << "</li>\n";
    out << "</ul>\n";
  }
}

// ---- Timelines ---------------------------------------------------------------------

struct Interval {
  double a = 0, b = 0;
};

// Sorted, overlaps merged: a rank's tasks of one kind counted once.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::ranges::sort(v, {}, &Interval::a);
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.a <= out.back().b)
      out.back().b = std::max(out.back().b, i.b);
    else
      out.push_back(i);
  }
  return out;
}

// [0, end) less the (merged) intervals.
std::vector<Interval> gaps(const std::vector<Interval>& busy, double end) {
  std::vector<Interval> out;
  double at = 0;
  for (const Interval& i : busy) {
    if (i.a > at && at < end) out.push_back({at, std::min(i.a, end)});
    at = std::max(at, i.b);
  }
  if (at < end) out.push_back({at, end});
  return out;
}

// Per column of [0, span): the share of it the (merged) intervals cover.
std::vector<double> coverage(const std::vector<Interval>& v, double span) {
  std::vector<double> share(kBins, 0.0);
  if (span <= 0) return share;
  const double width = span / kBins;
  for (const Interval& i : v) {
    const int k0 = std::clamp(static_cast<int>(i.a / width), 0, kBins - 1);
    const int k1 = std::clamp(static_cast<int>(i.b / width), 0, kBins - 1);
    for (int k = k0; k <= k1; ++k)
      share[k] += std::max(0.0, std::min(i.b, (k + 1) * width) - std::max(i.a, k * width)) / width;
  }
  return share;
}

void shaded_lane(std::ostream& out, const std::vector<double>& share, const std::string& colour,
                 int y, int h) {
  html::shaded_row(out, kBins, y, h, [&](int k) {
    if (share[k] <= 0) return html::Shade{};
    return html::Shade{colour, std::clamp(static_cast<int>(share[k] * 4 + 0.5), 1, 4)};
  });
}

// A rank's activity by category (compute and each communication category), in the
// breakdown's order, plus `all`: every task's interval, for the bubble.
struct RankActivity {
  std::vector<std::pair<std::string, std::vector<Interval>>> by_category;
  std::vector<Interval> all;
};

// For each of `ranks`, its tasks' intervals; one pass over the graph.
std::vector<RankActivity> activity_of(const Scenario& scenario, const WorkloadRun& run,
                                      const StepBreakdown& b, const std::vector<int>& ranks) {
  std::vector<int> slot(scenario.topology.num_ranks(), -1);
  for (std::size_t i = 0; i < ranks.size(); ++i) slot[ranks[i]] = static_cast<int>(i);
  std::vector<std::map<std::string, std::vector<Interval>>> raw(ranks.size());
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i)
    for (int r : run.graph.tasks[i].ranks)
      if (slot[r] >= 0)
        raw[slot[r]][run.graph.tasks[i].category].push_back(
            {run.step.tasks[i].start_s, run.step.tasks[i].end_s});
  std::vector<RankActivity> out(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    for (const StepShare& c : b.categories) {
      const auto it = raw[i].find(c.category);
      if (it == raw[i].end()) continue;
      out[i].all.insert(out[i].all.end(), it->second.begin(), it->second.end());
      out[i].by_category.emplace_back(c.category, merged(it->second));
    }
    out[i].all = merged(std::move(out[i].all));
  }
  return out;
}

std::string lane_title(const std::string& what, int rank, const std::vector<Interval>& v,
                       double step) {
  double total = 0;
  for (const Interval& i : v) total += i.b - i.a;
  return fmt::format("<title>rank {}, {}: {} ({} of the step)</title>", rank, escape(what),
                     format_duration(total), share_of(total, step));
}

// One lane: its label, the shaded columns, the hover text. Returns the next lane's y.
int lane(std::ostream& out, const std::string& label, const std::string& what, int rank,
         const std::vector<Interval>& v, const std::string& colour, double span, double step,
         int y) {
  out << "<g>" << lane_title(what, rank, v, step);
  out << fmt::format("<text x=\"{}\" y=\"{}\" class=\"rowname\" text-anchor=\"end\">{}</text>\n",
                     html::kPlotLeft - 6, y + kLaneH - 3, label);
  shaded_lane(out, coverage(v, span), colour, y + 1, kLaneH - 2);
  out << "</g>\n";
  return y + kLaneH;
}

// A stage's representative: compute, each communication category, the bubble.
int stage_lanes(std::ostream& out, const StageRepresentative& rep, const RankActivity& act,
                const Palette& colour, double span, double step, int y) {
  bool first = true;
  const auto label = [&](const std::string& what) {
    const std::string name = escape(what);
    if (!std::exchange(first, false)) return name;
    return fmt::format("<tspan font-weight=\"bold\">stage {} &middot; rank {}</tspan> {}",
                       rep.stage, rep.rank, name);
  };
  for (const auto& [category, v] : act.by_category)
    y = lane(out, label(category), category, rep.rank, v, colour(category), span, step, y);
  y = lane(out, label("bubble"), "bubble", rep.rank, gaps(act.all, step), kBubbleColour, span, step,
           y);
  return y + 5;
}

// At most kMaxStages of the job's stages, evenly spaced, the first and last among them.
std::vector<StageRepresentative> drawn_stages(const std::vector<StageRepresentative>& all,
                                              int job) {
  std::vector<int> index;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].job == job) index.push_back(static_cast<int>(i));
  std::vector<StageRepresentative> out;
  for (int i : evenly_spaced(index, kMaxStages)) out.push_back(all[i]);
  return out;
}

void timeline_svg_start(std::ostream& out, const std::string& id, int height) {
  out << fmt::format(
      "<svg id=\"{}\" width=\"{}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n", id,
      html::kPlotLeft + html::kPlotWidth + 30, height);
}

void stage_timeline(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                    const std::vector<StageRepresentative>& reps, int job) {
  const JobOutcome& j = run.jobs[job];
  const Palette colour(j.breakdown);
  const auto stages = drawn_stages(reps, job);
  std::vector<int> ranks;
  for (const auto& rep : stages) ranks.push_back(rep.rank);
  const auto activity = activity_of(scenario, run, j.breakdown, ranks);
  int lanes = 0;
  for (const auto& a : activity) lanes += static_cast<int>(a.by_category.size()) + 1;
  const int top = 4, axis_y = top + lanes * kLaneH + 5 * static_cast<int>(stages.size()) + 4;
  const double span = run.step.step_s;
  timeline_svg_start(out, fmt::format("stage-timeline-{}", job), axis_y + 24);
  int y = top;
  for (std::size_t s = 0; s < stages.size(); ++s)
    y = stage_lanes(out, stages[s], activity[s], colour, span, j.step_s, y);
  html::time_axis(out, span, axis_y, top);
  out << "</svg>\n";
  if (const std::size_t all = pipeline_stages(*j.spec).size(); stages.size() < all)
    out << fmt::format("<p class=\"note\">{} of the {} stages drawn, evenly spaced.</p>\n",
                       stages.size(), all);
}

// Every sampled rank of the job, a row each: compute above, communication below.
void sampled_ranks(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                   const RankSample& sample, int job) {
  const JobOutcome& j = run.jobs[job];
  std::vector<int> ranks;
  for (int r : sample.ranks)
    if (std::ranges::find(j.spec->ranks, r) != j.spec->ranks.end()) ranks.push_back(r);
  const auto activity = activity_of(scenario, run, j.breakdown, ranks);
  out << fmt::format(
      "<details id=\"ranks-{}\"><summary>{} rank{} of this job, a row each (compute above, "
      "communication below: the ranks timeline.json draws{})</summary>\n",
      job, ranks.size(), ranks.size() == 1 ? "" : "s",
      sample.all ? ", every rank" : "; open it in ui.perfetto.dev for each task");
  const int top = 4, row_h = 2 * kLaneH, axis_y = top + static_cast<int>(ranks.size()) * row_h + 4;
  timeline_svg_start(out, fmt::format("ranks-timeline-{}", job), axis_y + 24);
  const double span = run.step.step_s;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::vector<Interval> compute, comm;
    for (const StepShare& c : j.breakdown.categories)
      for (const auto& [category, v] : activity[i].by_category)
        if (category == c.category) {
          auto& into = c.compute ? compute : comm;
          into.insert(into.end(), v.begin(), v.end());
        }
    const int y = top + static_cast<int>(i) * row_h;
    out << fmt::format(
        "<g>{}<text x=\"{}\" y=\"{}\" class=\"rowname\" "
        "text-anchor=\"end\">rank {}</text>\n",
        lane_title("busy (compute or communication)", ranks[i], activity[i].all, j.step_s),
        html::kPlotLeft - 6, y + row_h - 8, ranks[i]);
    shaded_lane(out, coverage(merged(compute), span), kComputeColour, y + 1, kLaneH - 2);
    shaded_lane(out, coverage(merged(comm), span), html::collective_colour(0, 40), y + kLaneH - 1,
                kLaneH - 2);
    out << "</g>\n";
  }
  html::time_axis(out, span, axis_y, top);
  out << "</svg>\n</details>\n";
}

void timeline_section(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                      const RankSample& sample, int job) {
  const JobOutcome& j = run.jobs[job];
  out << fmt::format("<h2>Per-stage timeline{}</h2>\n",
                     run.jobs.size() > 1 ? ": " + escape(j.spec->name) : "");
  out << fmt::format(
      "<p class=\"note\">One rank per pipeline stage: the one whose last task ends last "
      "within the stage (ties: the lowest rank), the rank the stage's part of the step "
      "waits for. Lanes: compute, each parallelism's communication in flight, and the "
      "bubble (neither). Each lane is {} columns of {}, shaded by the share of the column "
      "it is busy (darker is busier); hover a lane for its total. Each task of these "
      "ranks is in timeline.json.</p>\n",
      kBins, format_duration(run.step.step_s / kBins));
  stage_timeline(out, scenario, run, sample.representatives, job);
  sampled_ranks(out, scenario, run, sample, job);
}

// ---- Memory, links, the scenario's collectives ---------------------------------------

void memory_section(std::ostream& out, const JobOutcome& j, int job, bool several) {
  const WorkloadSpec& w = *j.spec;
  if (!w.has_model()) return;
  const WorkloadFacts& f = j.facts;
  const std::int64_t total = f.memory_total(), capacity = w.gpu.memory;
  const double scale =
      kBarWidth / static_cast<double>(std::max<std::int64_t>(1, std::max(total, capacity)));
  out << fmt::format("<h2>Memory per GPU{}</h2>\n", several ? ": " + escape(w.name) : "");
  out << fmt::format("<p class=\"headline\" id=\"memory-total-{}\">{} of the {}'s {} ({}){}</p>\n",
                     job, workload_report::gigabytes(total), escape(w.gpu.name),
                     workload_report::gigabytes(capacity),
                     share_of(static_cast<double>(total), static_cast<double>(capacity)),
                     total > capacity ? " <b class=\"over\">exceeds the GPU</b>" : "");
  out << fmt::format(
      "<svg id=\"memory-{}\" width=\"{}\" height=\"52\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      job, kBarWidth + 20);
  const std::pair<const char*, std::int64_t> parts[] = {{"weights", f.memory_params},
                                                        {"gradients", f.memory_gradients},
                                                        {"optimizer", f.memory_optimizer},
                                                        {"activations", f.memory_activations}};
  double x = 10;
  std::string legend;
  for (std::size_t i = 0; i < std::size(parts); ++i) {
    const auto [name, bytes] = parts[i];
    const std::string colour = html::collective_colour(i + 3, 55);
    x = bar_segment(out, x, static_cast<double>(bytes) * scale, kBarWidth, 14, colour,
                    fmt::format("{}: {}", name, workload_report::gigabytes(bytes)));
    legend +=
        fmt::format("{}{} {} &nbsp; ", swatch(colour), name, workload_report::gigabytes(bytes));
  }
  const double cap_x = 10 + capacity * scale;
  out << fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"8\" x2=\"{0:.1f}\" y2=\"44\" stroke=\"#c00\" stroke-width=\"2\"/>"
      "<text x=\"{0:.1f}\" y=\"7\" class=\"tick\" text-anchor=\"end\">{1} capacity {2}</text>\n"
      "</svg>\n<p class=\"note legend\">{3}(per GPU, the most loaded stage; GB = 10<sup>9</sup> "
      "B)</p>\n",
      cap_x, escape(w.gpu.name), workload_report::gigabytes(capacity), legend);
}

void links_section(std::ostream& out, const Scenario& scenario, const WorkloadRun& run) {
  const auto hot = workload_report::hottest_links(scenario.topology, run.step, kHotLinks);
  out << "<h2>Hottest links</h2>\n";
  if (hot.empty()) {
    out << "<p class=\"note\" id=\"hottest-links\">No link carried bytes.</p>\n";
    return;
  }
  out << "<table id=\"hottest-links\"><tr><th>link</th><th>kind</th><th>bandwidth</th>"
         "<th>bytes</th><th>busy</th><th>busy, of the step</th><th>utilisation</th></tr>\n";
  const Topology& t = scenario.topology;
  const double step = run.step.step_s;
  for (LinkId l : hot) {
    const double busy = to_seconds(run.step.sim.links.busy(l));
    const double bw = t.link(l).bandwidth;
    const auto bytes = run.step.sim.links.bytes(l);
    const double util = step > 0 ? static_cast<double>(bytes) / (bw * step) : 0.0;
    out << fmt::format(
        "<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td class=\"name\"><svg width=\"104\" height=\"10\"><rect width=\"{:.1f}\" "
        "height=\"10\" fill=\"{}\"/></svg> {}</td><td>{}</td></tr>\n",
        escape(t.link_label(l)), name_of(t.link(l).kind), html::gbps(bw), format_bytes(bytes),
        format_duration(busy), step > 0 ? 104 * std::min(1.0, busy / step) : 0.0,
        html::load_colour(step > 0 ? busy / step : 0), share_of(busy, step), html::percent(util));
  }
  out << "</table>\n<p class=\"note\">Busiest over the step first (as result.json's "
         "hottest_links); utilisation = bytes / (bandwidth &times; step). Every link is in "
         "links.csv.</p>\n";
}

void collectives_section(std::ostream& out, const Scenario& scenario, const WorkloadRun& run) {
  if (scenario.collectives.empty()) return;
  out << "<h2>The scenario's collectives</h2>\n<table id=\"collectives\"><tr><th>name</th>"
         "<th>plan</th><th>start</th><th>time</th></tr>\n";
  for (std::size_t i = 0; i < scenario.collectives.size(); ++i) {
    const auto& o = run.step.tasks[i];  // the scenario's collectives come first in the graph
    out << fmt::format(
        "<tr><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td></tr>\n",
        escape(scenario.collectives[i].name), escape(run.step.plans[o.plan]),
        format_duration(o.start_s), format_duration(o.end_s - o.start_s));
  }
  out << "</table>\n";
}

}  // namespace workload_html

void write_workload_html(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                         int max_ranks) {
  using namespace workload_html;
  const RankSample sample = sample_ranks(scenario, run, max_ranks);
  const bool several = run.jobs.size() > 1;
  html::page_start(out, "collsim: " + scenario.name);
  out << "<h1>collsim: " << escape(scenario.name) << " &mdash; one training step</h1>\n";
  if (!scenario.description.empty())
    out << "<p class=\"note\">" << escape(scenario.description) << "</p>\n";
  out << fmt::format(
      "<p class=\"facts\">Topology <b>{}</b> ({} GPUs, {} links) &middot; network model <b>{}</b> "
      "&middot; {} job{} &middot; everything done at <b>{}</b></p>\n",
      escape(scenario.topology.name), scenario.topology.num_ranks(),
      scenario.topology.links().size(), escape(name_of(scenario.network.model)), run.jobs.size(),
      several ? "s" : "", format_duration(run.step.step_s));
  html::hover_panel(out, "hover over a bar, lane or link");
  headline_section(out, run);
  for (std::size_t j = 0; j < run.jobs.size(); ++j) {
    const int job = static_cast<int>(j);
    breakdown_section(out, run.jobs[j], job, several);
    timeline_section(out, scenario, run, sample, job);
    memory_section(out, run.jobs[j], job, several);
  }
  links_section(out, scenario, run);
  collectives_section(out, scenario, run);
  html::page_end(out);
}

}  // namespace collsim
