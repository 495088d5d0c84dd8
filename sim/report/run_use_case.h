#pragma once
// What `collsim run` does, in one place for the command line and Python: a training step
// when the scenario has a workload, else its collectives (streamed when asked, or when it
// gives the same figures and no file is written; else stored);
// per-op records only when an output needs them; the files of --out written before
// anything is returned, so that nothing is reported as done when they could not be.
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "report/run_files.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "simulate/run_workload.h"

namespace collsim {

struct RunRequest {
  std::optional<std::filesystem::path> out;  // write what `run --out DIR` writes there
  // Insist on no schedule held whole (--stream) where collectives overlap nothing; a
  // training step runs as it does without (run_use_case says why).
  bool stream = false;
  // Time each collective whose ranks are interchangeable by one rank's ops (--symmetry,
  // simulate/symmetric.h); streams the rest, as --stream does.
  bool fold = false;
  RunFileOptions files;  // the timeline's size and compression
};

// A run's figures: a training step, or the collectives with their traffic.
struct RunRecord {
  std::optional<WorkloadRun> step;
  std::string step_note;  // a training step: WorkloadRun::fold_note
  std::optional<ScenarioResult> result;
  std::optional<TrafficReport> traffic;
};

// Throws InputError for what the request cannot do (--symmetry with --out).
RunRecord run_use_case(const Scenario& scenario, const RunRequest& request);

// `collsim run --format json`'s document (result.json), and its text table.
nlohmann::json run_document(const Scenario& scenario, const RunRecord& record);
// run_document(...).dump(2) and a newline, a run of collectives written as it is made.
void write_run_document(std::ostream& out, const Scenario& scenario, const RunRecord& record);
std::string run_table(const Scenario& scenario, const RunRecord& record);

}  // namespace collsim
