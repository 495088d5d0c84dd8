#pragma once
// A step graph's collectives planned (identical ones once), its tasks as the simulator
// takes them, and the step's result made from a simulation's record: what a full run
// (run_step.h) and a folded one (step_fold.h) share.
#include <string>
#include <vector>

#include "plan/plan.h"
#include "simulate/run_step.h"

namespace collsim {

struct PlannedStep {
  std::vector<PlannedCollective> planned;  // each distinct collective once
  std::vector<std::string> plans;          // their labels
  std::vector<CollectiveTask> tasks;       // per graph task (when asked for)
  std::vector<int> plan_of_task;           // per graph task: index into planned; -1: compute
};

// Every collective planned; with `tasks`, every task as the simulator takes it (a fold
// makes only those it plays).
PlannedStep plan_step(const Scenario& scenario, Router& router, const StepGraph& graph,
                      bool tasks = true);
// Graph task `t` as the simulator takes it, `plan` its collective's index in `planned`.
CollectiveTask collective_task(const Scenario& scenario, const StepTask& t,
                               const PlannedStep& planned, int plan);

// The step's outcome per task from `sim` (one TaskTiming per graph task).
StepResult step_result(const PlannedStep& planned, SimulationResult sim);

}  // namespace collsim
