#pragma once
// What a run produces for people and tools: the summary table, result.json,
// links.csv and a Chrome/Perfetto timeline.
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

namespace collsim {

// How evenly a collective's ranks sent or received (bytes).
struct RankSpread {
  std::int64_t min = 0, max = 0, mean = 0;
  double imbalance() const { return mean > 0 ? static_cast<double>(max) / mean : 1.0; }
};
RankSpread spread(std::span<const RankTraffic> ranks, std::int64_t RankTraffic::*field);

// nccl-tests-style table, one row per collective, then the hottest links.
std::string summary_table(const Scenario& scenario, const ScenarioResult& result,
                          const TrafficReport& traffic, int hottest = 5);
// {scenario, topology, network, makespan_s, collectives[], links[], ranks[]}
// A collective's held_by in JSON: null when nothing held it, else name_of(held).
nlohmann::json held_json(HeldBy held);

nlohmann::json result_json(const Scenario& scenario, const ScenarioResult& result,
                           const TrafficReport& traffic);
// result_json(...).dump(2) and a newline, written one collective at a time (memory: one
// collective's document, not every one's).
void write_result_json(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                       const TrafficReport& traffic);
// Rows with scope "run" (every link or rank, over the whole run), then rows with scope
// "collective" (what each collective moved, over its own window): docs/commands.md lists the columns.
void write_links_csv(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                     const TrafficReport& traffic);
void write_ranks_csv(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                     const TrafficReport& traffic);
// The bottleneck link of every step of every collective.
void write_steps_csv(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                     const TrafficReport& traffic);
// Utilisation per link per time bin (rows: links; columns: bins).
void write_utilisation_csv(std::ostream& out, const Scenario& scenario,
                           const TrafficReport& traffic);
// Chrome trace event format (needs record_ops): per rank, send and receive tracks
// with one slice per transfer at each end, an arrow from sender to receiver, and a
// counter track per busy link with its utilisation over time. Beyond `max_transfers`
// (what a viewer still opens: a transfer takes about 600 bytes of JSON) each rank's
// send and receive tracks hold time bins instead (max_transfers / 2K of them), each
// saying how busy the rank was, the bytes it moved and the transfers it touched.
constexpr std::size_t kTraceTransfers = 200'000;
void write_chrome_trace(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                        const TrafficReport& traffic, std::size_t max_transfers = kTraceTransfers);

// What that timeline shows of one collective, simulated or measured: its ops' times
// (absolute, one per schedule op) and the topology ranks its schedule's ranks run on.
struct TimelineCollective {
  std::string_view name;
  const std::vector<int>* ranks = nullptr;
  const Schedule* schedule = nullptr;
  std::span<const OpTiming> ops;
};
// The timeline of write_chrome_trace from any timings; link counter tracks when
// `traffic` is given.
void write_transfer_timeline(std::ostream& out, const Topology& topology,
                             std::span<const TimelineCollective> collectives,
                             const TrafficReport* traffic,
                             std::size_t max_transfers = kTraceTransfers);

}  // namespace collsim
