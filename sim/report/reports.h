#pragma once
// What a run produces for people and tools: the summary table, result.json,
// links.csv and a Chrome/Perfetto timeline.
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>

#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

namespace collsim {

// nccl-tests-style table, one row per collective.
std::string summary_table(const Scenario& scenario, const ScenarioResult& result);
// {scenario, topology, network, collectives[], links[]}
nlohmann::json result_json(const Scenario& scenario, const ScenarioResult& result);
void write_links_csv(std::ostream& out, const Scenario& scenario, const ScenarioResult& result);
// Chrome trace event format: one track per rank, one slice per transfer (needs record_ops).
void write_chrome_trace(std::ostream& out, const Scenario& scenario, const ScenarioResult& result);

}  // namespace collsim
