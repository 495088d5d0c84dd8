#pragma once
// A step graph (workload/step_graph.h) timed on a scenario's network: compute tasks
// take their durations on their GPUs, collectives are planned (identical ones once)
// and simulated together, so they overlap compute and contend with each other.
#include <cstdint>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "simulate/simulator.h"
#include "workload/step_graph.h"

namespace collsim {

struct StepTaskOutcome {
  double start_s = 0;
  double end_s = 0;
  int plan = -1;  // collectives: index into StepResult::plans
};

// Where one rank's time went: unions of intervals, so two overlapping collectives
// count once, and communication hidden behind compute is not exposed.
struct RankTime {
  double compute_s = 0;
  double comm_s = 0;
  double exposed_comm_s = 0;  // communicating while not computing
  double busy_s = 0;          // computing or communicating
};

struct StepResult {
  std::vector<StepTaskOutcome> tasks;  // per graph task
  std::vector<std::string> plans;      // each distinct planned collective: its label
  double step_s = 0;                   // the last task's end
  std::vector<RankTime> ranks;         // per topology rank
  SimulationResult sim;
};

StepResult simulate_step(const Scenario& scenario, const StepGraph& graph,
                         SimulationOptions options = {.record_ops = false});

// Per rank, what the tasks of `graph` selected by `keep` (all when empty) occupied.
std::vector<RankTime> rank_times(const StepGraph& graph, const StepResult& r, int num_ranks,
                                 const std::vector<bool>& keep = {});

}  // namespace collsim
