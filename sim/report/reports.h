#pragma once
// What a run produces for people and tools: the summary table, result.json,
// links.csv and a Chrome/Perfetto timeline.
#include <nlohmann/json_fwd.hpp>
#include <optional>
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

// Under the ideal model, which gives every transfer its links to itself: whether collective
// `b.collective` took less than its bottleneck's bytes need at the link's full rate (its time
// is then no physical one). False under flow and packet, which share links.
bool over_link_rate(const Scenario& scenario, const ScenarioResult& result, const Bottleneck& b);
// Under ideal, what of the run no physical network could do (collectives over their links'
// rate, links that carried more than their rate over the run): a sentence, or "" where none.
// The text, result.json ("caveat") and report.html all say it.
std::string ideal_caveat(const Scenario& scenario, const ScenarioResult& result,
                         const TrafficReport& traffic);

// nccl-tests-style table, one row per collective, then the hottest links.
std::string summary_table(const Scenario& scenario, const ScenarioResult& result,
                          const TrafficReport& traffic, int hottest = 5);
// {scenario, topology, network, makespan_s, collectives[], links[], ranks[]}
// A collective's held_by: nothing when nothing held it, else name_of(held); in JSON, null or
// that name.
std::optional<std::string_view> held_name(HeldBy held);
nlohmann::json held_json(HeldBy held);

// The document write_result_json writes, read back (tests compare it).
nlohmann::json result_json(const Scenario& scenario, const ScenarioResult& result,
                           const TrafficReport& traffic);
// result.json as nlohmann's dump(2) writes it, and a newline, written as text
// (report/json_text.h), never as one document: the collectives a batch at a time, each
// batch made on `threads` threads (0: the cores this process may use, up to 8); the same
// bytes on any number.
void write_result_json(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                       const TrafficReport& traffic, int threads = 0);
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
}  // namespace collsim
