#pragma once
// A scenario run for real, collective by collective, and what came out: the same
// table and the same JSON shape as the simulator's, plus #wrong.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "scenario/scenario.h"
#include "validate/measure/runner.h"

namespace collsim {

struct MeasuredCollective {
  CollectiveSpec spec;
  SharedSchedule schedule;  // the plan's, shared
  std::uint64_t digest;  // the plan's schedule_digest: what compare checks it simulates
  Measurement m;
};

struct MeasuredScenario {
  std::string backend;
  std::string device;
  SharedUnits units{0, ""};  // what the ranks run on, and how many of them there are
  int iterations = 0, warmup = 0, rounds = 1;
  double quantile = 0.5;  // which iteration stands for a collective (RunOptions::quantile)
  Pinning pinning;        // of the collective with the most ranks
  std::vector<MeasuredCollective> collectives;
};

// Throws InputError, at the collective's "dtype" or "bytes", for the first collective that
// cannot run for real (real_run_problem): asked before anything is written or run.
void check_real_runs(const Plan& plan, const RunOptions& options);
// Runs each planned collective alone (one after the other), checks its result. Its caller
// asks check_real_runs first (validate does, before it makes its --out folder); a type no
// real run stores is still refused here, as a ValidationError when its collective is reached.
MeasuredScenario measure_scenario(Plan plan, const RunOptions& options);

std::string measured_table(const MeasuredScenario& m);
// {scenario, backend, device, collectives[i] = {name, op, ..., time_s, algbw_GBps, busbw_GBps,
// wrong, iterations_s[], ops[][2]}}; time_s is the iteration at the run's quantile (the
// median by default) and ops are [start_s, end_s] of that iteration.
nlohmann::json measured_json(const Scenario& s, const MeasuredScenario& m);
// A Chrome trace of those iterations, laid one after the other.
void write_measured_trace(std::ostream& out, const Scenario& s, const MeasuredScenario& m);

// This machine's processor, from /proc/cpuinfo.
std::string cpu_name();

}  // namespace collsim
