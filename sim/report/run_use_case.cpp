#include "report/run_use_case.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/reports.h"
#include "report/workload_report.h"

namespace collsim {
namespace {

void refuse_fold_with_files(const RunRequest& request) {
  if (request.out && request.fold)
    throw InputError("--out",
                     "--symmetry plays one rank's ops where ranks are alike: the files need "
                     "every op (run --out without --symmetry streams them)");
}

}  // namespace

RunRecord run_use_case(const Scenario& scenario, const RunRequest& request) {
  RunRecord record;
  // A training step is played as --stream plays collectives that may overlap: its tasks
  // (any of which may overlap others) together, each distinct collective's schedule held
  // once however many tasks run it, and each task's op state only while it runs
  // (simulate/simulator.h). So --stream takes it as it is. It is folded by its replicas
  // (simulate/step_fold.h) where that pays, or with --symmetry wherever it holds; --stream
  // insists on the whole step, as on whole collectives.
  if (!scenario.workloads.empty()) {
    const StepFold fold = request.fold     ? StepFold::Always
                          : request.stream ? StepFold::Never
                                           : StepFold::Pays;
    record.step = run_workloads(scenario, fold);
    record.step_note = record.step->fold_note;
    if (request.out) write_workload_files(*request.out, scenario, *record.step, request.files);
    return record;
  }
  // Streamed when asked, and by itself whenever it gives the same figures and a schedule
  // is large: none is then held whole (a 4,096-GPU ring in MBs, not GBs).
  const bool streamed =
      request.stream || request.fold || (streams_exactly(scenario) && streaming_pays(scenario));
  if (streamed) {
    refuse_fold_with_files(request);
    // Billions of ops take minutes streamed: folded where the ranks are alike, seconds. With
    // files, this pass only times the run (below).
    const FoldWhen fold = request.fold                                ? FoldWhen::Always
                          : !request.stream && folding_pays(scenario) ? FoldWhen::Pays
                                                                      : FoldWhen::Never;
    record.result = run_scenario_streamed(scenario, fold);
  } else {
    // The files are the only outputs that need each op's times.
    record.result =
        run_scenario(scenario, SimulationOptions{.record_ops = request.out.has_value()});
  }
  if (!request.out) {
    record.traffic = analyse_traffic(scenario, *record.result);
    return record;
  }
  RunFileGather gathered(scenario, *record.result, request.files);
  if (streamed) {
    // A streamed run's files: played again, in full, each op handed over as it retires. The
    // first pass gave the makespan and the spans the files' time bins are laid on, folded
    // where that pays (the same figures in a fraction of the time, but no digest); this one
    // gives the schedules' digests and the links' rates over time, which it keeps.
    ScenarioResult full = run_scenario_streamed(scenario, FoldWhen::Never, &gathered);
    record.result->sim.link_rates = std::move(full.sim.link_rates);
    record.result->digests = std::move(full.digests);
    record.result->folding = std::move(full.folding);
  } else {
    retire_recorded(*record.result, gathered);
  }
  record.traffic = gathered.finish();
  write_run_files(*request.out, scenario, *record.result, gathered, request.files);
  return record;
}

nlohmann::json run_document(const Scenario& scenario, const RunRecord& record) {
  if (record.step) {
    nlohmann::json doc = workload_document(scenario, *record.step);
    if (!record.step_note.empty()) doc["symmetry"] = record.step_note;
    return doc;
  }
  return result_json(scenario, *record.result, *record.traffic);
}

void write_run_document(std::ostream& out, const Scenario& scenario, const RunRecord& record) {
  if (record.step)
    out << run_document(scenario, record).dump(2) << "\n";
  else
    write_result_json(out, scenario, *record.result, *record.traffic);
}

std::string run_table(const Scenario& scenario, const RunRecord& record) {
  if (record.step)
    return workload_table(scenario, *record.step) +
           (record.step_note.empty() ? "" : "# training step: " + record.step_note + "\n");
  return summary_table(scenario, *record.result, *record.traffic);
}

}  // namespace collsim
