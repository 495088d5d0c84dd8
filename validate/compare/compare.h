#pragma once
// Simulated against measured: per collective, per step and per op, with mean absolute
// percentage errors; and one Chrome trace with both timelines side by side.
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

namespace collsim {

struct CompareRow {
  std::string collective;
  int step = -1;  // -1: the whole collective
  int op = -1;    // -1: the whole step (or collective)
  int src = -1, dst = -1;
  std::int64_t bytes = 0;
  double measured_s = 0;
  double simulated_s = 0;
  double error_pct = 0;  // (simulated - measured) / measured
};

struct Comparison {
  std::vector<CompareRow> collectives;
  std::vector<CompareRow> steps;
  std::vector<CompareRow> ops;  // times: when the op completes, from the collective's start
  double mape_pct = 0;          // over collectives
  double step_mape_pct = 0;     // over steps
  double op_mape_pct = 0;       // over ops with a measured duration
};

// `sim` must have per-op timing; `measured` is `collsim validate`'s measured.json,
// checked first: an unknown field, or a time that is negative, not a number or past an
// hour, is an InputError naming its JSON path (--measured:collectives[0].time_s).
Comparison compare_runs(const Scenario& s, const ScenarioResult& sim,
                        const nlohmann::json& measured);
std::string comparison_table(const Comparison& c);
void write_comparison_csv(std::ostream& out, const Comparison& c);
// pid 0: simulated, pid 1: measured; one track per rank each, collectives back to back.
void write_comparison_trace(std::ostream& out, const Scenario& s, const ScenarioResult& sim,
                            const nlohmann::json& measured);

}  // namespace collsim
