#pragma once
// A scenario, end to end: choices resolved ("auto"), schedules generated and
// checked, routed and simulated.
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "simulate/simulator.h"

namespace collsim {

struct CollectiveOutcome {
  double start_s = 0;
  double end_s = 0;
  double time_s = 0;
  double algbw_Bps = 0;  // bytes / time; 0 when the collective takes no time
  double busbw_Bps = 0;
};

// What an "auto" algorithm or segment count settled on, by simulating each
// candidate alone on the scenario's network.
struct Candidate {
  std::string algorithm;
  int segments = 1;
  double time_s = 0;
};
struct AutoChoice {
  Candidate chosen;
  std::optional<Candidate> runner_up;
  int candidates_tried = 0;
};

struct ScenarioResult {
  std::vector<CollectiveSpec> resolved;  // the scenario's collectives with every "auto" settled
  std::vector<std::optional<AutoChoice>> choices;
  std::vector<Schedule> schedules;  // one per collective, in scenario order
  std::vector<CollectiveOutcome> outcomes;
  SimulationResult sim;
};

ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options = {});

// The collective's schedule, checked; a generator's refusal becomes an InputError
// naming the collective, a structurally broken schedule a std::logic_error.
Schedule generate_schedule(const CollectiveSpec& c);

}  // namespace collsim
