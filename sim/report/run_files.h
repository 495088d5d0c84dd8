#pragma once
// The files `collsim run --out DIR` writes, in one place for the command line and Python:
// for a scenario's collectives result.json, links.csv, ranks.csv, steps.csv,
// utilisation.csv, timeline.json (gzipped on request) and report.html; for a training
// step result.json, timeline.json, links.csv and report.html. All or nothing: the files
// appear together, or an InputError names what could not be written.
#include <cstddef>
#include <filesystem>

#include "report/reports.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "simulate/run_workload.h"

namespace collsim {

struct RunFileOptions {
  std::size_t trace_transfers = kTraceTransfers;  // the timeline's transfer slices, at most
  bool trace_gzip = false;                        // timeline.json.gz instead
};

// `result` must come from a run that recorded its ops (SimulationOptions::record_ops).
void write_run_files(const std::filesystem::path& dir, const Scenario& scenario,
                     const ScenarioResult& result, const TrafficReport& traffic,
                     const RunFileOptions& options = {});

void write_workload_files(const std::filesystem::path& dir, const Scenario& scenario,
                          const WorkloadRun& run);

}  // namespace collsim
