#pragma once
// A scenario's training jobs (and its collectives, if any), one step, simulated
// together: each job's step time, where its GPUs' time went, and with several jobs
// what sharing the cluster cost each.
#include <cstdint>
#include <string>
#include <vector>

#include "simulate/run_step.h"
#include "simulate/step_breakdown.h"

namespace collsim {

struct JobOutcome {
  const WorkloadSpec* spec = nullptr;
  WorkloadFacts facts;
  double step_s = 0;
  // Means over the job's ranks, from `breakdown`: a rank's compute, communication, the
  // part of it not hidden behind compute, and the bubble (doing neither: pipeline fill
  // and drain, waiting on others).
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, idle_s = 0;
  double overlap = 0;  // share of communication hidden behind compute
  double speedup = 0;  // the one-GPU step over this step
  double scaling_efficiency = 0;
  // Model form: end-to-end MFU, the model's FLOPs of the step (recomputation not
  // counted) over GPUs x peak x step; and tokens per second per GPU. Zero otherwise.
  double mfu = 0;
  double tokens_per_s_per_gpu = 0;
  double alone_step_s = 0;  // several jobs: the step with the cluster to itself
  // Its collectives (tasks: each group's its own) that a least duration held past their
  // ops (StepTaskOutcome::held_by), of how many; and that time, per GPU like `comm_s` (the
  // mean over the job's ranks of the held time of the collectives each took part in).
  // Counted in communication like any other time a collective is in flight.
  int collectives = 0, held_collectives = 0;
  double held_s = 0;
  StepBreakdown breakdown;  // per parallelism and collective kind: busy, exposed
};

struct WorkloadRun {
  StepGraph graph;
  std::vector<int> job_of_task;  // -1: one of the scenario's collectives
  StepResult step;
  std::vector<JobOutcome> jobs;
  // "folded: ..." where the step was timed by a group of its replicas (simulate/step_fold.h),
  // "not folded: ..." where a fold was asked for and does not hold; else empty.
  std::string fold_note;
};

// Whether a step of one job with data-parallel replicas is folded by them: never, where
// its ops reach what a collective's fold pays from (folding_pays_ops), or always.
enum class StepFold { Never, Pays, Always };

WorkloadRun run_workloads(const Scenario& scenario, StepFold fold = StepFold::Never);
// The run points into the scenario (JobOutcome::spec): it must outlive the run.
WorkloadRun run_workloads(Scenario&&, StepFold = StepFold::Never) = delete;

}  // namespace collsim
