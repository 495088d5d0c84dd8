#pragma once
// What a training step simulated to, for people (a table), for programs (JSON) and
// for Perfetto (a timeline with a compute track per rank and communication tracks, as
// many as the rank has collectives in flight at once).
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

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
// Beyond `max_ranks` ranks, a sample is drawn (report/workload_ranks.h: each pipeline
// stage's representative and a few evenly spaced ranks per job); the metadata lists the
// ranks drawn and the representatives.
inline constexpr int kTraceRanks = 32;
void write_workload_trace(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                          int max_ranks = kTraceRanks);

namespace workload_report {
// The `n` links that carried the most for their rate over the step (utilisation), then the
// longest busy; none idle.
std::vector<LinkId> hottest_links(const Topology& t, const StepResult& r, std::size_t n);
std::string gigabytes(std::int64_t bytes);  // "12.34 GB" (10^9 B, as GPUs are sold)
}  // namespace workload_report

}  // namespace collsim
