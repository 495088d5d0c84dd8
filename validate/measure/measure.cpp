#include "validate/measure/measure.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/reports.h"
#include "report/transfer_timeline.h"
#include "validate/measure/element_type.h"
#include "validate/measure/validation_error.h"

namespace collsim {

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("model name")) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown cpu";
}

void check_real_runs(const Plan& plan, const RunOptions& options) {
  for (const PlannedCollective& c : plan.collectives)
    if (std::string problem = real_run_problem(*c.schedule, options); !problem.empty())
      throw InputError(c.spec.settings_at(runs_for_real(c.spec.shape.dtype) ? ".bytes" : ".dtype"),
                       problem);
}

MeasuredScenario measure_scenario(Plan plan, const RunOptions& options) {
  MeasuredScenario out;
  out.backend = name_of(options.backend);
  out.device = backend_device(options.backend);
  out.units = backend_units(options.backend);
  out.iterations = options.iterations;
  out.warmup = options.warmup;
  out.rounds = effective_rounds(options);
  out.quantile = options.quantile;
  std::vector<const Schedule*> schedules;
  std::vector<std::string> names;
  for (auto& c : plan.collectives) {
    out.collectives.push_back({std::move(c.spec), std::move(c.schedule), c.digest, {}});
  }
  for (const auto& mc : out.collectives) {
    schedules.push_back(&*mc.schedule);
    names.push_back(mc.spec.name);
  }
  std::vector<Measurement> measured = run_in_rounds(schedules, options, names);
  for (std::size_t i = 0; i < out.collectives.size(); ++i) {
    MeasuredCollective& mc = out.collectives[i];
    mc.m = std::move(measured[i]);
    if (mc.m.pinning.cpus.size() >= out.pinning.cpus.size()) out.pinning = mc.m.pinning;
  }
  return out;
}

std::string measured_table(const MeasuredScenario& m) {
  std::string out = fmt::format(
      "# measured on {} ({}), {} of {} iterations in {} round{}, each after {} warm-up\n",
      m.backend, m.device, quantile_name(m.quantile), m.iterations, m.rounds,
      m.rounds == 1 ? "" : "s", m.warmup);
  // Each collective's ranks are placed for their own count: one note per placement, naming
  // its collectives where they were placed differently (4 ranks share 2 cores, 2 do not).
  std::vector<std::pair<const Pinning*, std::vector<std::string>>> placements;
  for (const auto& c : m.collectives) {
    auto same = std::find_if(placements.begin(), placements.end(),
                             [&](const auto& p) { return p.first->note == c.m.pinning.note; });
    if (same == placements.end()) same = placements.insert(same, {&c.m.pinning, {}});
    same->second.push_back(c.spec.name);
  }
  if (placements.empty()) placements.push_back({&m.pinning, {}});
  for (const auto& [pinning, names] : placements) {
    out += "# " + pinning->note;
    if (placements.size() > 1) out += fmt::format(" ({})", fmt::join(names, ", "));
    out += "\n";
    if (pinning->shared) out += "# ranks share cores or GPUs: times include waiting for a turn\n";
  }
  out +=
      "# time in microseconds; algbw, busbw in GB/s (1 GB = 1e9 bytes); #wrong: elements differing "
      "from the replayer\n";
  out += fmt::format("# {:<16} {:>12} {:>12} {:>9} {:>6} {:>5} {:>12} {:>9} {:>9} {:>7}\n", "name",
                     "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong");
  for (const auto& c : m.collectives) {
    const double t = c.m.time_s;
    const double algbw = t > 0 ? c.spec.bytes / t : 0;
    out += fmt::format(
        "  {:<16} {:>12} {:>12} {:>9} {:>6} {:>5} {:>12.2f} {:>9.2f} {:>9.2f} {:>7}\n", c.spec.name,
        c.spec.bytes, c.spec.shape.count, name_of(c.spec.shape.dtype),
        is_reducing(c.spec.shape.op) ? std::string(name_of(c.spec.shape.reduce_op)) : "none",
        is_rooted(c.spec.shape.op) ? c.spec.shape.root : -1, t * 1e6, algbw / 1e9,
        algbw * busbw_factor(c.spec.shape.op, c.spec.shape.ranks) / 1e9, c.m.wrong);
  }
  return out;
}

nlohmann::json measured_json(const Scenario& s, const MeasuredScenario& m) {
  nlohmann::json cols = nlohmann::json::array();
  double at = 0;
  for (const auto& c : m.collectives) {
    const double t = c.m.time_s;
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : c.m.ops) ops.push_back({to_seconds(o.start), to_seconds(o.end)});
    cols.push_back(
        {{"name", c.spec.name},
         {"op", name_of(c.spec.shape.op)},
         {"algorithm", c.spec.algorithm},
         {"plan", describe_algorithm(c.spec.algorithm, c.spec.options)},
         {"schedule_digest", digest_text(c.digest)},
         {"ranks", c.spec.ranks},
         {"bytes", c.spec.bytes},
         {"count", c.spec.shape.count},
         {"dtype", name_of(c.spec.shape.dtype)},
         {"start_s", at},
         {"end_s", at + t},
         {"time_s", t},
         {"algbw_GBps", t > 0 ? nlohmann::json(c.spec.bytes / t / 1e9) : nlohmann::json(nullptr)},
         {"busbw_GBps", t > 0 ? nlohmann::json(c.spec.bytes / t / 1e9 *
                                               busbw_factor(c.spec.shape.op, c.spec.shape.ranks))
                              : nlohmann::json(nullptr)},
         {"wrong", c.m.wrong},
         {"checked", c.m.checked},
         {"iterations_s", c.m.iteration_s},
         {"ops", ops}});
    at += t;
  }
  const nlohmann::json pinning = {{"pinned", m.pinning.pinned},
                                  {"cpus", m.pinning.cpus},
                                  {"ranks_share_units", m.pinning.shared},
                                  {"note", m.pinning.note}};
  return {{"scenario", s.name}, {"backend", m.backend},       {"device", m.device},
          {"pinning", pinning}, {"iterations", m.iterations}, {"warmup", m.warmup},
          {"rounds", m.rounds}, {"quantile", m.quantile},     {"collectives", cols}};
}

void write_measured_trace(std::ostream& out, const Scenario& s, const MeasuredScenario& m) {
  // The simulator's timeline, fed the measured timings in place of simulated ones.
  std::vector<std::vector<OpTiming>> times;
  std::vector<TimelineCollective> collectives;
  Time at = 0;
  for (const auto& c : m.collectives) {
    auto& t = times.emplace_back();
    t.reserve(c.m.ops.size());
    for (const auto& o : c.m.ops) t.push_back({at + o.start, at + o.end});
    at += from_seconds(c.m.time_s);
  }
  for (std::size_t i = 0; i < m.collectives.size(); ++i) {
    const auto& c = m.collectives[i];
    collectives.push_back({c.spec.name, &c.spec.ranks, &*c.schedule, times[i]});
  }
  write_transfer_timeline(out, s.topology, collectives, nullptr);
}

}  // namespace collsim
