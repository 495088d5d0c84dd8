#include "report/workload_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>

#include "core/csv.h"
#include "core/units.h"
#include "report/chrome_trace.h"
#include "report/trace_lanes.h"
#include "report/workload_ranks.h"

namespace collsim {
namespace workload_report {

// How long link `l` needs, at its full rate, for what crossed it over the step.
double full_rate_s(const Topology& t, const StepResult& r, LinkId l) {
  return static_cast<double>(r.sim.links.bytes(l)) / t.link(l).bandwidth;
}

// The links that carried the most for their rate (utilisation over the step), then the
// longest busy: ranked by busy time, the MoE scenario's hot expert's links (450 GB/s for
// their whole busy time) came 7th behind links busy longer at 290 GB/s.
std::vector<LinkId> hottest_links(const Topology& t, const StepResult& r, std::size_t n) {
  std::vector<LinkId> links(r.sim.links.size());
  std::iota(links.begin(), links.end(), 0);
  std::stable_sort(links.begin(), links.end(), [&](LinkId a, LinkId b) {
    const double fa = full_rate_s(t, r, a), fb = full_rate_s(t, r, b);
    return fa != fb ? fa > fb : r.sim.links.busy(a) > r.sim.links.busy(b);
  });
  links.resize(std::min(n, links.size()));
  while (!links.empty() && r.sim.links.busy(links.back()) == 0) links.pop_back();
  return links;
}

std::string gigabytes(std::int64_t bytes) {
  return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9);
}

// One line of the step's breakdown (simulate/step_breakdown.h: per GPU, the mean over
// the job's ranks); the bubble is a line of its own, last, so that the lines' exposed_s
// add up to step_s.
nlohmann::json share_json(const StepShare& s, double step_s, bool with_op) {
  nlohmann::json o = {{"category", s.category}};
  if (with_op) o["op"] = s.op.empty() ? nlohmann::json() : nlohmann::json(s.op);
  o["tasks"] = s.tasks;
  o["bytes"] = s.bytes;
  o["busy_s"] = s.busy_s;
  o["exposed_s"] = s.exposed_s;
  o["share"] = step_s > 0 ? s.exposed_s / step_s : 0.0;
  return o;
}

nlohmann::json shares_json(const StepBreakdown& b, const std::vector<StepShare>& shares,
                           bool with_op) {
  nlohmann::json out = nlohmann::json::array();
  for (const StepShare& s : shares) out.push_back(share_json(s, b.step_s, with_op));
  StepShare bubble;
  bubble.category = "bubble";
  bubble.exposed_s = b.bubble_s;
  out.push_back(share_json(bubble, b.step_s, with_op));
  return out;
}

// A placement order as its JSON names, fastest-varying first.
std::vector<std::string> order_names(const std::vector<ParallelAxis>& order) {
  std::vector<std::string> out;
  for (ParallelAxis a : order) out.emplace_back(name_of(a));
  return out;
}

nlohmann::json job_json(const JobOutcome& j) {
  const WorkloadSpec& w = *j.spec;
  nlohmann::json o = {{"name", w.name},
                      {"gpus", w.ranks.size()},
                      {"step_s", j.step_s},
                      {"compute_s", j.compute_s},
                      {"comm_s", j.comm_s},
                      {"exposed_comm_s", j.exposed_comm_s},
                      {"overlap", j.overlap},
                      {"idle_s", j.idle_s},
                      {"one_gpu_step_s", j.facts.one_gpu_step_s},
                      {"speedup", j.speedup},
                      {"scaling_efficiency", j.scaling_efficiency},
                      {"buckets", j.facts.gradient_buckets},
                      {"gradient_bytes", j.facts.gradient_bytes},
                      {"collectives", j.collectives},
                      {"held_collectives", j.held_collectives},
                      {"held_s", j.held_s}};
  if (j.alone_step_s > 0) {
    o["alone_step_s"] = j.alone_step_s;
    o["slowdown"] = j.step_s / j.alone_step_s;
  }
  if (w.is_chakra()) o["chakra"] = w.chakra;
  if (w.has_model()) {
    const Parallelism& p = w.parallelism;
    o["model"] = {{"name", w.model->name},
                  {"params", w.model->total_params()},
                  {"active_params", w.model->active_params()}};
    o["gpu"] = w.gpu.name;
    o["mfu"] = w.mfu;  // the input: the compute kernels' efficiency
    o["compute_dtype"] = w.fp8 ? "fp8" : "bfloat16";
    o["end_to_end_mfu"] = j.mfu;
    o["tokens_per_s_per_gpu"] = j.tokens_per_s_per_gpu;
    o["flops_per_step"] = j.facts.flops_per_step;
    o["parallelism"] = {{"dp", p.dp},
                        {"tp", p.tp},
                        {"pp", p.pp},
                        {"ep", p.ep},
                        {"cp", p.cp},
                        {"zero", p.zero},
                        {"micro_batches", p.micro_batches},
                        {"pipeline", p.pipeline},
                        {"virtual_stages", p.virtual_stages},
                        {"sequence_parallel", p.sequence_parallel},
                        {"recompute", p.recompute},
                        {"order", order_names(p.order)}};
    o["memory_bytes"] = {
        {"params", j.facts.memory_params},       {"gradients", j.facts.memory_gradients},
        {"optimizer", j.facts.memory_optimizer}, {"activations", j.facts.memory_activations},
        {"total", j.facts.memory_total()},       {"gpu", w.gpu.memory}};
  }
  o["categories"] = shares_json(j.breakdown, j.breakdown.categories, false);
  o["kinds"] = shares_json(j.breakdown, j.breakdown.kinds, true);
  o["warnings"] = j.facts.warnings;
  return o;
}

// "tp all_reduce"; compute and the bubble by their category alone.
std::string share_label(const StepShare& s) {
  return s.op.empty() ? s.category : s.category + " " + s.op;
}

std::string share_row(const std::string& label, const StepShare& s, double step_s) {
  return fmt::format("{:<26} {:>9} {:>12} {:>10} {:>10} {:>7.1f}%\n", label, s.tasks,
                     s.bytes > 0 ? format_bytes(s.bytes) : "-", format_duration(s.busy_s),
                     format_duration(s.exposed_s), step_s > 0 ? 100 * s.exposed_s / step_s : 0.0);
}

// Per parallelism, then per op where a parallelism has several, then the bubble: the
// exposed column adds up to the step (docs/workloads.md, "Where the step went").
std::string breakdown_table(const StepBreakdown& b) {
  std::string out = fmt::format(
      "# per GPU, mean over {} ranks: busy = in flight, exposed = not hidden behind compute\n"
      "# (kinds in flight together share it evenly); compute + exposed + bubble = step\n",
      b.ranks);
  out += fmt::format("{:<26} {:>9} {:>12} {:>10} {:>10} {:>8}\n", "kind", "tasks", "bytes", "busy",
                     "exposed", "of step");
  for (const StepShare& c : b.categories) {
    std::vector<const StepShare*> kinds;
    for (const StepShare& k : b.kinds)
      if (k.category == c.category) kinds.push_back(&k);
    if (kinds.size() == 1) {
      out += share_row(share_label(*kinds[0]), *kinds[0], b.step_s);
      continue;
    }
    out += share_row(c.category, c, b.step_s);
    for (const StepShare* k : kinds) out += share_row("  " + share_label(*k), *k, b.step_s);
  }
  out += fmt::format("{:<26} {:>9} {:>12} {:>10} {:>10} {:>7.1f}%\n", "bubble", "-", "-", "-",
                     format_duration(b.bubble_s), b.step_s > 0 ? 100 * b.bubble_s / b.step_s : 0.0);
  return out;
}

}  // namespace workload_report

namespace {

// A scenario's own collective, run beside the jobs' steps (job -1 in the step graph).
struct BesideCollective {
  const std::string& name;
  const std::string& plan;
  double start_s, end_s;
};

std::vector<BesideCollective> beside_collectives(const Scenario& scenario, const WorkloadRun& run) {
  std::vector<BesideCollective> out;
  for (std::size_t i = 0; i < scenario.collectives.size(); ++i) {
    const auto& o = run.step.tasks[i];  // the scenario's collectives come first in the graph
    out.push_back({scenario.collectives[i].name, run.step.plans[o.plan], o.start_s, o.end_s});
  }
  return out;
}

}  // namespace

std::string workload_table(const Scenario& scenario, const WorkloadRun& run) {
  using namespace workload_report;
  std::string out;
  for (const JobOutcome& j : run.jobs) {
    const WorkloadSpec& w = *j.spec;
    out += fmt::format("# {} on {} GPUs", w.name, w.ranks.size());
    if (w.has_model()) {
      const Parallelism& p = w.parallelism;
      out += fmt::format(
          ": {} ({:.1f}B params) on {} with kernels at {:.0f}% of peak, dp {} tp {} pp {} ep {}",
          w.model->name, w.model->total_params() / 1e9, w.gpu.name, w.mfu * 100, p.dp, p.tp, p.pp,
          p.ep);
      if (p.cp > 1) out += fmt::format(" cp {}", p.cp);
      if (p.zero > 0) out += fmt::format(", ZeRO-{}", p.zero);
      if (p.recompute != "none") out += fmt::format(", {} recompute", p.recompute);
      if (w.fp8) out += ", FP8";
      if (p.pp > 1) out += fmt::format(", {} x {} micro-batches", p.pipeline, p.micro_batches);
      if (p.virtual_stages > 1) out += fmt::format(", {} virtual stages", p.virtual_stages);
    }
    if (w.is_chakra()) out += fmt::format(": Chakra trace {}", w.chakra);
    out += "\n";
    out += fmt::format("step            {}\n", format_duration(j.step_s));
    out += fmt::format("compute         {}   (per GPU, mean)\n", format_duration(j.compute_s));
    out += fmt::format("communication   {}   ({:.0f}% hidden behind compute)\n",
                       format_duration(j.comm_s), j.overlap * 100);
    out += fmt::format("exposed comm    {}   ({:.1f}% of the step)\n",
                       format_duration(j.exposed_comm_s),
                       j.step_s > 0 ? 100 * j.exposed_comm_s / j.step_s : 0.0);
    out +=
        fmt::format("bubble          {}   (no compute, no communication: pipeline, stragglers)\n",
                    format_duration(j.idle_s));
    if (j.held_collectives > 0)
      out += fmt::format(
          "held            {} of {} collectives: NCCL's own estimate of its pick (or the host's "
          "time to issue one) outlasted their ops on the links, by {} per GPU (mean); counted "
          "in communication\n",
          j.held_collectives, j.collectives, format_duration(j.held_s));
    if (j.facts.one_gpu_step_s > 0)  // a trace without compute has no one-GPU step
      out += fmt::format("speedup         {:.2f}x over one GPU ({}), scaling efficiency {:.1f}%\n",
                         j.speedup, format_duration(j.facts.one_gpu_step_s),
                         100 * j.scaling_efficiency);
    if (w.has_model())
      out += fmt::format("MFU             {:.1f}% end to end (model FLOPs / (GPUs x peak x step)), "
                         "{:.0f} tokens/s per GPU\n",
                         100 * j.mfu, j.tokens_per_s_per_gpu);
    if (!w.is_chakra())  // a trace's gradients are among its collectives
      out += fmt::format("gradients       {} per GPU in {} bucket{}{}\n",
                         format_bytes(j.facts.gradient_bytes), j.facts.gradient_buckets,
                         j.facts.gradient_buckets == 1 ? "" : "s",
                         w.parallelism.pp > 1 ? " (the stage with the most)" : "");
    if (w.has_model())
      out += fmt::format(
          "memory per GPU  {} (weights {}, gradients {}, optimizer {}, activations {}) of {}\n",
          gigabytes(j.facts.memory_total()), gigabytes(j.facts.memory_params),
          gigabytes(j.facts.memory_gradients), gigabytes(j.facts.memory_optimizer),
          gigabytes(j.facts.memory_activations), gigabytes(w.gpu.memory));
    if (j.alone_step_s > 0)
      out += fmt::format("alone           {}   (sharing the cluster costs {:.1f}%)\n",
                         format_duration(j.alone_step_s), 100 * (j.step_s / j.alone_step_s - 1));
    out += breakdown_table(j.breakdown);
    for (const auto& warning : j.facts.warnings) out += "warning: " + warning + "\n";
    out += "\n";
  }
  if (const auto beside = beside_collectives(scenario, run); !beside.empty()) {
    out += "# the scenario's collectives, run beside the step\n";
    out +=
        fmt::format("{:<24} {:<24} {:>10} {:>10} {:>10}\n", "name", "plan", "start", "end", "time");
    for (const BesideCollective& c : beside)
      out += fmt::format("{:<24} {:<24} {:>10} {:>10} {:>10}\n", c.name, c.plan,
                         format_duration(c.start_s), format_duration(c.end_s),
                         format_duration(c.end_s - c.start_s));
    out += "\n";
  }
  const auto hot = hottest_links(scenario.topology, run.step, 5);
  if (!hot.empty()) {
    out += "# hottest links (bytes / (capacity x step)), and how long each was busy\n";
    for (LinkId l : hot)
      out += fmt::format("{:<28} {:>5.1f}% utilised  busy {:>10} ({:>5.1f}%)  {}\n",
                         scenario.topology.link_label(l),
                         100 * full_rate_s(scenario.topology, run.step, l) / run.step.step_s,
                         format_duration(to_seconds(run.step.sim.links.busy(l))),
                         100 * to_seconds(run.step.sim.links.busy(l)) / run.step.step_s,
                         format_bytes(run.step.sim.links.bytes(l)));
  }
  return out;
}

nlohmann::json workload_json(const Scenario& scenario, const WorkloadRun& run) {
  using namespace workload_report;
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobOutcome& j : run.jobs) jobs.push_back(job_json(j));
  nlohmann::json links = nlohmann::json::array();
  for (LinkId l : hottest_links(scenario.topology, run.step, 10))
    links.push_back({{"link", scenario.topology.link_label(l)},
                     {"utilisation", full_rate_s(scenario.topology, run.step, l) / run.step.step_s},
                     {"busy_s", to_seconds(run.step.sim.links.busy(l))},
                     {"bytes", run.step.sim.links.bytes(l)}});
  for (auto& j : jobs) j["hottest_links"] = links;
  return jobs.size() == 1 ? jobs[0] : jobs;
}

nlohmann::json workload_document(const Scenario& scenario, const WorkloadRun& run) {
  nlohmann::json doc = {{"scenario", scenario.name}, {"workload", workload_json(scenario, run)}};
  if (scenario.collectives.empty()) return doc;
  nlohmann::json list = nlohmann::json::array();
  for (const BesideCollective& c : beside_collectives(scenario, run))
    list.push_back({{"name", c.name},
                    {"plan", c.plan},
                    {"start_s", c.start_s},
                    {"end_s", c.end_s},
                    {"time_s", c.end_s - c.start_s}});
  doc["collectives"] = std::move(list);
  return doc;
}

void write_workload_links_csv(std::ostream& out, const Scenario& scenario, const WorkloadRun& run) {
  fmt::memory_buffer b;
  fmt::format_to(std::back_inserter(b), "link,kind,bandwidth_Bps,bytes,busy_s,utilisation\n");
  const Topology& t = scenario.topology;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const double busy = to_seconds(run.step.sim.links.busy(l));
    const double bw = t.links()[l].bandwidth;
    const double bytes = static_cast<double>(run.step.sim.links.bytes(l));
    fmt::format_to(std::back_inserter(b), "{},{},{:.12g},{},{:.12g},{:.6f}\n",
                   csv_field(t.link_label(l)), name_of(t.links()[l].kind), bw,
                   run.step.sim.links.bytes(l), busy,
                   run.step.step_s > 0 ? bytes / (bw * run.step.step_s) : 0.0);
  }
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

namespace workload_report {

// The communication lane of every collective on every drawn rank: lane[task][k] for the
// task's k-th rank. TraceLanes takes intervals in start order: collectives are sorted
// by start, ties kept in graph order so that the lanes are deterministic.
struct CommLanes {
  TraceLanes lanes;
  std::vector<std::vector<int>> lane;
};

CommLanes comm_lanes(const WorkloadRun& run, const std::vector<bool>& drawn) {
  const auto& tasks = run.graph.tasks;
  CommLanes out{TraceLanes(static_cast<int>(drawn.size())), {}};
  out.lane.resize(tasks.size());
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].kind != StepTaskKind::Compute) order.push_back(i);
  std::ranges::stable_sort(order, {}, [&](std::size_t i) { return run.step.sim.tasks[i].start; });
  for (std::size_t i : order) {
    const TaskTiming& when = run.step.sim.tasks[i];
    out.lane[i].assign(tasks[i].ranks.size(), -1);
    for (std::size_t k = 0; k < tasks[i].ranks.size(); ++k)
      if (const int r = tasks[i].ranks[k]; drawn[r])
        out.lane[i][k] = out.lanes.place(r, when.start, when.end);
  }
  return out;
}

// Each stage's representative rank: {"job": ..., "stage": ..., "rank": ...}, comma-separated.
std::string representatives_json(const WorkloadRun& run,
                                 const std::vector<StageRepresentative>& reps) {
  std::string out;
  for (const auto& rep : reps)
    out += fmt::format("{}{{\"job\": {}, \"stage\": {}, \"rank\": {}}}", out.empty() ? "" : ", ",
                       json_quote(run.jobs[rep.job].spec->name), rep.stage, rep.rank);
  return out;
}

// Each rank's job (-1: none), from the tasks it runs.
std::vector<int> job_of_ranks(const WorkloadRun& run, int ranks) {
  std::vector<int> out(static_cast<std::size_t>(ranks), -1);
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i)
    if (const int job = run.job_of_task[i]; job >= 0)
      for (int r : run.graph.tasks[i].ranks) out[r] = job;
  return out;
}

// "rank 17", and for a stage's representative "rank 17 (job0 stage 2)"; with several jobs,
// every rank's job ("rank 9 (b)": their ranks interleave on the machine).
std::string process_name(const WorkloadRun& run, const std::vector<StageRepresentative>& reps,
                         const std::vector<int>& job_of_rank, int rank) {
  for (const auto& rep : reps)
    if (rep.rank == rank)
      return fmt::format("rank {} ({} stage {})", rank, run.jobs[rep.job].spec->name, rep.stage);
  if (const int job = job_of_rank[rank]; run.jobs.size() > 1 && job >= 0)
    return fmt::format("rank {} ({})", rank, run.jobs[job].spec->name);
  return fmt::format("rank {}", rank);
}

// "communication", "communication 2", ...: thread 1 + lane of the rank's process.
std::string comm_thread_name(int lane) {
  return lane == 0 ? "communication" : fmt::format("communication {}", lane + 1);
}

}  // namespace workload_report

void write_workload_trace(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                          int max_ranks) {
  using namespace workload_report;
  const int total = scenario.topology.num_ranks();
  const RankSample sample = sample_ranks(scenario, run, max_ranks);
  const std::vector<int>& ranks = sample.ranks;
  std::vector<bool> drawn(total, false);
  for (int r : ranks) drawn[r] = true;
  const CommLanes comm = comm_lanes(run, drawn);
  const std::vector<int> job_of_rank = job_of_ranks(run, total);

  fmt::memory_buffer b;
  fmt::format_to(std::back_inserter(b),
                 "{{\"displayTimeUnit\": \"ms\", \"otherData\": "
                 "{{\"ranks_drawn\": {}, \"ranks\": {}",
                 ranks.size(), total);
  if (!sample.all)  // which ones, when some are left out
    fmt::format_to(std::back_inserter(b), ", \"ranks_shown\": [{}]", fmt::join(ranks, ", "));
  fmt::format_to(std::back_inserter(b), ", \"representatives\": [{}]}}, \"traceEvents\": [\n",
                 representatives_json(run, sample.representatives));
  bool first = true;
  const auto sep = [&] {
    fmt::format_to(std::back_inserter(b), "{}", first ? "" : ",\n");
    first = false;
  };
  for (int r : ranks) {
    sep();
    fmt::format_to(std::back_inserter(b),
                   "{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {0}, \"args\": "
                   "{{\"name\": {1}}}}},\n"
                   "{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {0}, \"tid\": 0, "
                   "\"args\": {{\"name\": \"compute\"}}}}",
                   r, json_quote(process_name(run, sample.representatives, job_of_rank, r)));
    for (int lane = 0; lane < std::max(1, comm.lanes.count(r)); ++lane)
      fmt::format_to(std::back_inserter(b),
                     ",\n{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, "
                     "\"args\": {{\"name\": \"{}\"}}}}",
                     r, 1 + lane, comm_thread_name(lane));
  }
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i) {
    const StepTask& t = run.graph.tasks[i];
    const auto& o = run.step.tasks[i];
    const bool is_compute = t.kind == StepTaskKind::Compute;
    for (std::size_t k = 0; k < t.ranks.size(); ++k) {
      const int r = t.ranks[k];
      if (!drawn[r]) continue;
      sep();
      // Start and end rounded to the nanosecond each, the duration their difference: rounded
      // apart, a slice ended 1 ns after the next one on its track began.
      const auto start_ns = std::llround(o.start_s * 1e9), end_ns = std::llround(o.end_s * 1e9);
      fmt::format_to(std::back_inserter(b),
                     "{{\"ph\": \"X\", \"pid\": {}, \"tid\": {}, \"ts\": {:.3f}, \"dur\": {:.3f}, "
                     "\"name\": {}, \"cat\": \"{}\"",
                     r, is_compute ? 0 : 1 + comm.lane[i][k], static_cast<double>(start_ns) / 1e3,
                     static_cast<double>(end_ns - start_ns) / 1e3, json_quote(t.name), t.category);
      if (!is_compute)
        fmt::format_to(std::back_inserter(b), ", \"args\": {{\"bytes\": {}, \"plan\": {}}}",
                       t.collective->bytes, json_quote(run.step.plans[o.plan]));
      fmt::format_to(std::back_inserter(b), "}}");
    }
  }
  fmt::format_to(std::back_inserter(b), "\n]}}\n");
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

}  // namespace collsim
