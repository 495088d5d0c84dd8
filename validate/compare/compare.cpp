#include "validate/compare/compare.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/csv.h"
#include "core/error.h"
#include "core/json_view.h"
#include "core/units.h"
#include "report/chrome_trace.h"

namespace collsim {
namespace {

// What `collsim validate` writes (validate/measure/measure.cpp, measured_json); only name,
// time_s, ops and schedule_digest are compared, the rest is its provenance.
constexpr std::string_view kMeasuredKeys[] = {"scenario", "backend",    "device",
                                              "pinning",  "iterations", "warmup",
                                              "rounds",   "quantile",   "collectives"};
constexpr std::string_view kMeasuredCollectiveKeys[] = {
    "name",  "op",    "algorithm", "plan",       "schedule_digest", "ranks",
    "bytes", "count", "dtype",     "start_s",    "end_s",           "time_s",
    "algbw_GBps", "busbw_GBps", "wrong", "checked", "iterations_s", "ops"};

// One measured collective, checked before anything is compared with it.
struct MeasuredRecord {
  std::string name;
  std::optional<std::string> schedule_digest;
  double time_s = 0;
  std::vector<std::pair<double, double>> ops;  // start and end, from the collective's start
};

// A time within a measurement: from 0 to an hour (kMaxDuration), like every duration
// collsim reads; `positive` when 0 is no measurement (a whole collective).
double read_time(const JsonView& v, bool positive) {
  const double t = v.as_number();
  if (!(t >= 0 && t <= kMaxDuration) || (positive && t == 0))
    v.fail(positive ? "a measured time above 0 s and at most 1 hour (3600 s)"
                    : "a time from 0 to 1 hour (3600 s)");
  return t;
}

MeasuredRecord read_measured_record(const JsonView& c) {
  if (!c.is_object()) c.fail("a measured collective object");
  c.allow_only(kMeasuredCollectiveKeys);
  MeasuredRecord m;
  m.name = c["name"].as_string();
  if (auto d = c.find("schedule_digest")) m.schedule_digest = d->as_string();
  m.time_s = read_time(c["time_s"], true);
  const JsonView ops = c["ops"];
  if (!ops.is_array()) ops.fail("an array of [start, end] times in seconds");
  m.ops.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const JsonView o = ops[i];
    if (!o.is_array() || o.size() != 2) o.fail("a [start, end] pair of times in seconds");
    const double start = read_time(o[0], false), end = read_time(o[1], false);
    if (end < start) o[1].fail(fmt::format("an end no earlier than the start ({})", start));
    m.ops.emplace_back(start, end);
  }
  return m;
}

// measured.json, whole: every collective checked, so a negative or missing time is
// refused naming its JSON path rather than compared.
std::vector<MeasuredRecord> read_measured(const nlohmann::json& measured) {
  const JsonView root(measured, "--measured:");
  if (!root.is_object()) root.fail("a measured.json object of collsim validate");
  root.allow_only(kMeasuredKeys);
  const auto list = root.find("collectives");
  if (!list) throw InputError("--measured", "missing required field \"collectives\"");
  if (!list->is_array()) list->fail("an array of measured collectives");
  std::vector<MeasuredRecord> out;
  // Each name once: which one a collective is compared with would be a guess (two
  // "ar-16KiB" made the error name another collective, the one left unmatched).
  std::unordered_map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < list->size(); ++i) {
    out.push_back(read_measured_record((*list)[i]));
    if (const auto [at, fresh] = index_of.try_emplace(out.back().name, i); !fresh)
      (*list)[i]["name"].fail_message(
          fmt::format("\"{}\" is measured twice (collectives[{}] too); each collective once",
                      out.back().name, at->second));
  }
  return out;
}

const MeasuredRecord& measured_collective(const std::vector<MeasuredRecord>& measured,
                                              const std::string& name) {
  for (const auto& c : measured)
    if (c.name == name) return c;
  throw InputError("--measured",
                   fmt::format("no collective named \"{}\" in the measurements", name));
}

// Duration of each step: its last op's end minus its first op's start.
std::map<int, double> step_lengths(const Schedule& s,
                                   const std::vector<std::pair<double, double>>& ops) {
  std::map<int, std::pair<double, double>> span;
  for (OpId id = 0; id < s.size(); ++id) {
    auto [it, fresh] = span.try_emplace(s.ops[id].step, ops[id]);
    if (!fresh) {
      it->second.first = std::min(it->second.first, ops[id].first);
      it->second.second = std::max(it->second.second, ops[id].second);
    }
  }
  std::map<int, double> out;
  for (const auto& [step, se] : span) out[step] = se.second - se.first;
  return out;
}

double error_pct(double sim, double meas) {
  return meas > 0 ? (sim - meas) / meas * 100 : 0;
}

// Mean absolute percentage error of the rows of one collective (or all: name empty),
// leaving out rows whose measured time is 0 (an op too short for the clock).
double mape(const std::vector<CompareRow>& rows, const std::string& collective = {}) {
  double sum = 0;
  int n = 0;
  for (const auto& r : rows)
    if ((collective.empty() || r.collective == collective) && r.measured_s > 0) {
      sum += std::fabs(r.error_pct);
      ++n;
    }
  return n ? sum / n : 0;
}

}  // namespace

Comparison compare_runs(const Scenario&, const ScenarioResult& sim,
                        const nlohmann::json& measured_json) {
  const std::vector<MeasuredRecord> measured = read_measured(measured_json);
  Comparison out;
  for (std::size_t i = 0; i < sim.resolved.size(); ++i) {
    const auto& name = sim.resolved[i].name;
    const MeasuredRecord& m = measured_collective(measured, name);
    const Schedule& sched = *sim.schedules[i];
    if (m.schedule_digest && *m.schedule_digest != digest_text(sim.digests[i]))
      throw InputError("--measured",
                       fmt::format("{}: measured with schedule \"{}\", but the plan simulates {} "
                                   "(another algorithm, size or options?)",
                                   name, *m.schedule_digest, digest_text(sim.digests[i])));
    if (m.ops.size() != sched.size())
      throw InputError(
          "--measured",
          fmt::format("{}: {} measured ops, but the schedule has {} (another algorithm or "
                      "size?)",
                      name, m.ops.size(), sched.size()));
    const double meas = m.time_s, simt = sim.outcomes[i].time_s;
    out.collectives.push_back(
        {name, -1, -1, -1, -1, sim.resolved[i].bytes, meas, simt, error_pct(simt, meas)});
    std::vector<std::pair<double, double>> sim_ops;
    const std::vector<std::pair<double, double>>& meas_ops = m.ops;
    const Time t0 = sim.sim.tasks[i].start;
    for (const auto& o : sim.sim.tasks[i].ops)
      sim_ops.emplace_back(to_seconds(o.start - t0), to_seconds(o.end - t0));
    const auto sim_steps = step_lengths(sched, sim_ops), meas_steps = step_lengths(sched, meas_ops);
    for (const auto& [step, len] : meas_steps)
      out.steps.push_back(
          {name, step, -1, -1, -1, 0, len, sim_steps.at(step), error_pct(sim_steps.at(step), len)});
    const auto& ranks = sim.resolved[i].ranks;
    const int element = element_size(sched.shape.dtype);
    for (OpId id = 0; id < sched.size(); ++id) {
      const Op& op = sched.ops[id];
      // When the op completes, counted from the collective's start: durations alone would
      // compare the simulator's alpha (charged inside each transfer) with a bare memcpy.
      const double m_end = meas_ops[id].second, s_end = sim_ops[id].second;
      out.ops.push_back({name, op.step, static_cast<int>(id), ranks[op.src_rank],
                         ranks[op.dst_rank], op.count * element, m_end, s_end,
                         error_pct(s_end, m_end)});
    }
  }
  out.mape_pct = mape(out.collectives);
  out.step_mape_pct = mape(out.steps);
  out.op_mape_pct = mape(out.ops);
  return out;
}

std::string comparison_table(const Comparison& c) {
  std::string out =
      "# simulated vs measured; times in microseconds; error = (simulated - measured) / measured\n";
  out += fmt::format("# {:<20} {:>12} {:>12} {:>9} {:>10} {:>10}\n", "collective", "measured",
                     "simulated", "error", "step MAPE", "op MAPE");
  for (const auto& row : c.collectives)
    out += fmt::format("  {:<20} {:>12.2f} {:>12.2f} {:>8.1f}% {:>9.1f}% {:>9.1f}%\n",
                       row.collective, row.measured_s * 1e6, row.simulated_s * 1e6, row.error_pct,
                       mape(c.steps, row.collective), mape(c.ops, row.collective));
  out += fmt::format(
      "# mean absolute percentage error: {:.1f}% over collectives, {:.1f}% over steps, {:.1f}% "
      "over ops\n",
      c.mape_pct, c.step_mape_pct, c.op_mape_pct);
  return out;
}

void write_comparison_csv(std::ostream& out, const Comparison& c) {
  // One row per collective (step and op -1), per step (op -1) and per op.
  out << "collective,step,op,src,dst,bytes,measured_s,simulated_s,error_pct\n";
  for (const auto* rows : {&c.collectives, &c.steps, &c.ops})
    for (const auto& r : *rows)
      out << fmt::format("{},{},{},{},{},{},{:.9g},{:.9g},{:.4f}\n", csv_field(r.collective), r.step, r.op,
                         r.src, r.dst, r.bytes, r.measured_s, r.simulated_s, r.error_pct);
}

void write_comparison_trace(std::ostream& out, const Scenario& s, const ScenarioResult& sim,
                            const nlohmann::json& measured_json) {
  const std::vector<MeasuredRecord> measured = read_measured(measured_json);
  ChromeTrace trace(out);
  trace.process_name(0, "simulated");
  trace.process_name(1, "measured");
  for (int pid = 0; pid < 2; ++pid)
    for (int rank = 0; rank < s.topology.num_ranks(); ++rank)
      trace.thread_name(
          pid, rank,
          fmt::format("rank {} ({})", rank, s.topology.node(s.topology.gpu_of_rank(rank)).name));
  fmt::memory_buffer name;         // scratch for slice names: no allocation per op
  double sim_at = 0, meas_at = 0;  // both laid back to back, collective after collective
  for (std::size_t i = 0; i < sim.resolved.size(); ++i) {
    const auto& spec = sim.resolved[i];
    const Schedule& sched = *sim.schedules[i];
    const MeasuredRecord& m = measured_collective(measured, spec.name);
    if (m.ops.size() != sched.size())  // compare_runs says which; the trace needs each op
      throw InputError("--measured", fmt::format("{}: {} measured ops, but the schedule has {}",
                                                 spec.name, m.ops.size(), sched.size()));
    const Time t0 = sim.sim.tasks[i].start;
    // Slices go on the track of the rank that runs the op for real (Op::executor, schedule/schedule.h).
    for (OpId id = 0; id < sched.size(); ++id) {
      const Op& op = sched.ops[id];
      const auto& so = sim.sim.tasks[i].ops[id];
      const double ss = sim_at + to_seconds(so.start - t0), se = sim_at + to_seconds(so.end - t0);
      const double ms = meas_at + m.ops[id].first, me = meas_at + m.ops[id].second;
      name.clear();
      fmt::format_to(std::back_inserter(name), "step {} {}\u2192{}", op.step,
                     spec.ranks[op.src_rank], spec.ranks[op.dst_rank]);
      for (auto [pid, a, b] : {std::tuple{0, ss, se}, std::tuple{1, ms, me}})
        trace.complete(pid, spec.ranks[op.executor()], a * 1e6, (b - a) * 1e6,
                       std::string_view(name.data(), name.size()), spec.name);
    }
    sim_at += sim.outcomes[i].time_s;
    meas_at += m.time_s;
  }
  trace.finish();
}

}  // namespace collsim
