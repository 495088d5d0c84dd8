#include "simulate/run_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "simulate/planned_step.h"
#include "simulate/run_scenario.h"
#include "simulate/step_fold.h"

namespace collsim {
namespace workload_run {

// The scenario's own collectives first, as tasks of no job.
void add_collectives(const Scenario& s, StepGraphBuilder& b, std::vector<int>& job_of_task) {
  for (const CollectiveSpec& c : s.collectives) {
    StepTask t;
    t.kind = StepTaskKind::Collective;
    t.name = c.name;
    t.category = "collective";
    t.ranks = c.ranks;
    t.after.assign(c.after.begin(), c.after.end());
    t.collective = c;
    b.add(std::move(t), std::vector<std::string>{});
    job_of_task.push_back(-1);
  }
}

// A trace's one-GPU step: each rank's own work (its compute and memory nodes) as it ran,
// overlapping nodes counted once, summed over the ranks. The durations summed made a rank's
// three concurrent 10 us kernels 30 us of one GPU's, and a 2-GPU step 300% efficient.
double one_gpu_step_of_trace(const StepGraph& g, const StepResult& r,
                             const std::vector<bool>& keep) {
  std::map<int, std::vector<std::pair<double, double>>> spans;  // per rank
  for (std::size_t i = 0; i < g.tasks.size(); ++i)
    if (keep[i] && g.tasks[i].kind == StepTaskKind::Compute)
      for (int rank : g.tasks[i].ranks)
        spans[rank].emplace_back(r.tasks[i].start_s, r.tasks[i].end_s);
  double total = 0;
  for (auto& [rank, s] : spans) {
    std::sort(s.begin(), s.end());
    double end = -1;
    for (const auto& [from, to] : s) {
      total += std::max(0.0, to - std::max(from, end));
      end = std::max(end, to);
    }
  }
  return total;
}

JobOutcome summarise(const WorkloadSpec& w, const WorkloadFacts& facts, const StepGraph& g,
                     const std::vector<int>& job_of_task, int job, const StepResult& r) {
  JobOutcome o;
  o.spec = &w;
  o.facts = facts;
  std::vector<bool> keep(g.tasks.size());
  for (std::size_t i = 0; i < g.tasks.size(); ++i) keep[i] = job_of_task[i] == job;
  o.breakdown = step_breakdown(g, r, w.ranks, keep);
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    if (!keep[i] || g.tasks[i].kind != StepTaskKind::Collective) continue;
    ++o.collectives;
    if (r.tasks[i].held_by == HeldBy::Nothing) continue;
    ++o.held_collectives;
    o.held_s +=
        (r.tasks[i].end_s - r.tasks[i].ops_end_s) * static_cast<double>(g.tasks[i].ranks.size());
  }
  if (!w.ranks.empty()) o.held_s /= static_cast<double>(w.ranks.size());
  const StepBreakdown& b = o.breakdown;
  o.step_s = b.step_s;
  o.compute_s = b.compute_s;
  o.comm_s = b.comm_s;
  o.exposed_comm_s = b.exposed_comm_s;
  o.idle_s = b.bubble_s;
  // Clamped: with nothing hidden, rounding of the two means made it -1e-16, printed "-0%".
  o.overlap = o.comm_s > 0 ? std::clamp(1 - o.exposed_comm_s / o.comm_s, 0.0, 1.0) : 0;
  if (w.is_chakra()) o.facts.one_gpu_step_s = one_gpu_step_of_trace(g, r, keep);
  o.speedup = o.step_s > 0 ? o.facts.one_gpu_step_s / o.step_s : 0;
  o.scaling_efficiency = o.speedup / static_cast<double>(w.ranks.size());
  if (w.has_model() && o.step_s > 0) {
    const double gpus = static_cast<double>(w.ranks.size());
    o.mfu = facts.flops_per_step / (gpus * w.peak_flops() * o.step_s);
    o.tokens_per_s_per_gpu = static_cast<double>(w.tokens_per_gpu) / o.step_s;
  }
  return o;
}

// The step folded by its replicas where `fold` asks and the fold holds (the note says
// which); nullopt to run it whole.
std::optional<StepResult> folded_step(const Scenario& scenario, const StepGraph& graph,
                                      StepFold fold, std::string& note, PlannedStep& planned) {
  if (fold == StepFold::Never) return std::nullopt;
  if (scenario.workloads.size() != 1 || !scenario.collectives.empty()) {
    if (fold == StepFold::Always)
      note = "not folded: a step of several jobs, or with the scenario's collectives, runs whole";
    return std::nullopt;
  }
  const WorkloadSpec& w = scenario.workloads.front();
  if (fold == StepFold::Pays &&
      static_cast<double>(workload_size(w).ops) < folding_pays_ops(scenario.network.model))
    return std::nullopt;
  std::string why;
  auto folded = simulate_step_folded(scenario, graph, replica_turn(w), why, &planned);
  if (!folded) {
    if (fold == StepFold::Always) note = "not folded: " + why;
    return std::nullopt;
  }
  note = fmt::format("folded: {} replicas alike, {} played", folded->replicas, folded->played);
  return std::move(folded->result);
}

}  // namespace workload_run

WorkloadRun run_workloads(const Scenario& scenario, StepFold fold) {
  using namespace workload_run;
  WorkloadRun run;
  StepGraphBuilder builder;
  std::size_t tasks = scenario.collectives.size();
  for (const WorkloadSpec& w : scenario.workloads)
    tasks += static_cast<std::size_t>(workload_size(w).tasks);
  builder.reserve(tasks);
  add_collectives(scenario, builder, run.job_of_task);
  std::vector<WorkloadFacts> facts;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // each job's task range
  for (std::size_t j = 0; j < scenario.workloads.size(); ++j) {
    const std::size_t first = builder.graph().tasks.size();
    facts.push_back(build_workload(scenario.workloads[j], builder));
    spans.push_back({first, builder.graph().tasks.size()});
    run.job_of_task.resize(builder.graph().tasks.size(), static_cast<int>(j));
  }
  run.graph = builder.take();
  PlannedStep planned;  // the fold's plan where it tried and did not hold
  if (auto folded = folded_step(scenario, run.graph, fold, run.fold_note, planned))
    run.step = std::move(*folded);
  else if (!planned.plan_of_task.empty())
    run.step = simulate_planned_step(scenario, run.graph, std::move(planned));
  else
    run.step = simulate_step(scenario, run.graph);
  for (std::size_t j = 0; j < scenario.workloads.size(); ++j)
    run.jobs.push_back(summarise(scenario.workloads[j], facts[j], run.graph, run.job_of_task,
                                 static_cast<int>(j), run.step));
  // With company on the cluster, each job again alone: what contention cost it.
  if (scenario.workloads.size() + (scenario.collectives.empty() ? 0 : 1) > 1) {
    for (std::size_t j = 0; j < scenario.workloads.size(); ++j) {
      StepGraphBuilder alone;
      build_workload(scenario.workloads[j], alone);
      const StepResult r = simulate_step(scenario, alone.graph());
      run.jobs[j].alone_step_s = r.step_s;
    }
  }
  return run;
}

}  // namespace collsim
