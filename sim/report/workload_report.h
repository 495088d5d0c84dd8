#pragma once
// What a training step simulated to, for people (a table), for programs (JSON) and
// for Perfetto (a timeline with a compute track per rank and communication tracks, as
// many as the rank has collectives in flight at once).
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
// Beyond `max_ranks` ranks, the first `max_ranks` that carry tasks are drawn (the
// metadata says how many, and lists them).
void write_workload_trace(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                          int max_ranks = 64);

}  // namespace collsim
