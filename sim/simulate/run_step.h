#pragma once
// A step graph (workload/step_graph.h) timed on a scenario's network: compute tasks
// take their durations on their GPUs, collectives are planned (identical ones once)
// and simulated together, so they overlap compute and contend with each other.
#include <cstdint>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "simulate/op_costs.h"
#include "simulate/simulator.h"
#include "workload/step_graph.h"

namespace collsim {

struct StepTaskOutcome {
  double start_s = 0;
  double end_s = 0;
  int plan = -1;  // collectives: index into StepResult::plans
  // Collectives: when the last op ended, and what held it longer (then end_s is later).
  double ops_end_s = 0;
  HeldBy held_by = HeldBy::Nothing;
};

struct StepResult {
  std::vector<StepTaskOutcome> tasks;  // per graph task
  std::vector<std::string> plans;      // each distinct planned collective: its label
  double step_s = 0;                   // the last task's end
  SimulationResult sim;
};

// No per-op record by default: a step's reports read task times and link counters.
StepResult simulate_step(const Scenario& scenario, const StepGraph& graph,
                         SimulationOptions options = {.record_ops = false, .keep_routes = false});
// The same with its collectives planned already (plan_step, with or without its tasks).
struct PlannedStep;
StepResult simulate_planned_step(const Scenario& scenario, const StepGraph& graph,
                                 PlannedStep planned,
                                 SimulationOptions options = {.record_ops = false,
                                                              .keep_routes = false});
// Where its time went per rank: simulate/step_breakdown.h.

}  // namespace collsim
