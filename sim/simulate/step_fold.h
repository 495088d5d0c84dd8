#pragma once
// A training step folded by turns of its data-parallel replicas, as simulate/symmetric.h
// folds one collective by turns of its ranks.
//
// Where turning every rank's work to the next replica maps the step onto itself — each
// task of one replica onto a task of the next with the same plan, duration and category,
// waiting on the turned images of what it waited on; each task across the replicas (a
// stage's compute, a gradient collective) onto itself, a collective's ranks turned as a
// rotation its schedule folds by — and a turn of a group of replicas maps the network onto
// itself for everything the played tasks send, every group of replicas runs, instant for
// instant, what the first does. So only the first group's tasks are played, each
// collective across the replicas by its representatives (schedule/quotient.h), over
// canonical links; then every task, link and GPU takes its image's record. The group is
// the fewest replicas whose turn maps the network onto itself (on a rail-optimised fat
// tree, the replicas on one leaf).
//
// The result — every task's times, every link's and GPU's counters, the transfers — is
// the full run's, bit for bit (tests/test_step_fold.cpp plays both); `events` counts those
// played.
#include <optional>
#include <string>

#include "scenario/scenario.h"
#include "simulate/run_step.h"
#include "workload/step_graph.h"
#include "workload/workload.h"

namespace collsim {

struct FoldedStep {
  StepResult result;
  int replicas = 1;  // the job's
  int played = 1;    // the replicas played (the turn)
};

// `graph`, one job's step whose replicas `turn` gives, timed as simulate_step times it by
// the first group of replicas; nullopt, and in `why` what breaks the fold, where the step
// or the network is not mapped onto itself by any turn of fewer than all replicas. Where
// it does not fold and had planned the step's collectives, their plan is moved into
// `planned` (when given): the whole run takes it instead of planning them again.
std::optional<FoldedStep> simulate_step_folded(const Scenario& scenario, const StepGraph& graph,
                                               const ReplicaTurn& turn, std::string& why,
                                               PlannedStep* planned = nullptr);

}  // namespace collsim
