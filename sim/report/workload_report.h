#pragma once
// What a training step simulated to, for people (a table), for programs (JSON) and
// for Perfetto (a timeline with a compute and a communication track per rank).
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "simulate/run_workload.h"

namespace collsim {

std::string workload_table(const Scenario& scenario, const WorkloadRun& run);
// One job: its object; several: an array, in the scenario's order.
nlohmann::json workload_json(const Scenario& scenario, const WorkloadRun& run);
// What `collsim run --format json` prints for a scenario with a workload: the scenario's
// name, "workload" as above, and its collectives (if any) as they ran within the step.
nlohmann::json workload_document(const Scenario& scenario, const WorkloadRun& run);
// Every link: kind, bandwidth, bytes, busy time and utilisation over the step.
void write_workload_links_csv(std::ostream& out, const Scenario& scenario, const WorkloadRun& run);
// Ranks beyond `max_ranks` are left out (the metadata says how many were drawn).
void write_workload_trace(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                          int max_ranks = 64);

}  // namespace collsim
