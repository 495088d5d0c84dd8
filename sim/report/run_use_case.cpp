#include "report/run_use_case.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/reports.h"
#include "report/workload_report.h"

namespace collsim {
namespace {

void check_streamable(const Scenario& scenario, const RunRequest& request) {
  const std::string flag = request.fold ? "--symmetry" : "--stream";
  if (!scenario.workloads.empty())
    throw InputError("workload",
                     flag + " runs a scenario's collectives; a training step runs without it");
  if (request.out)
    throw InputError("--out",
                     flag +
                         " keeps no per-op record to write a timeline or per-step "
                         "files from; run without --out (--format json gives result.json)");
}

}  // namespace

RunRecord run_use_case(const Scenario& scenario, const RunRequest& request) {
  RunRecord record;
  // Streamed when asked, and by itself whenever it gives the same figures, no output needs
  // per-op records and a schedule is large: none is then held whole (a 4,096-GPU ring in
  // MBs, not GBs).
  if (request.stream || request.fold ||
      (!request.out && streams_exactly(scenario) && streaming_pays(scenario))) {
    check_streamable(scenario, request);
    // Billions of ops take minutes streamed: folded where the ranks are alike, seconds.
    const FoldWhen fold = request.fold                                ? FoldWhen::Always
                          : !request.stream && folding_pays(scenario) ? FoldWhen::Pays
                                                                      : FoldWhen::Never;
    record.result = run_scenario_streamed(scenario, fold);
  } else if (!scenario.workloads.empty()) {
    record.step = run_workloads(scenario);
    if (request.out) write_workload_files(*request.out, scenario, *record.step);
    return record;
  } else {
    // The timeline is the only output that needs each op's times.
    record.result =
        run_scenario(scenario, SimulationOptions{.record_ops = request.out.has_value()});
  }
  record.traffic = analyse_traffic(scenario, *record.result);
  if (request.out)
    write_run_files(*request.out, scenario, *record.result, *record.traffic, request.files);
  return record;
}

nlohmann::json run_document(const Scenario& scenario, const RunRecord& record) {
  if (record.step) return workload_document(scenario, *record.step);
  return result_json(scenario, *record.result, *record.traffic);
}

void write_run_document(std::ostream& out, const Scenario& scenario, const RunRecord& record) {
  if (record.step)
    out << workload_document(scenario, *record.step).dump(2) << "\n";
  else
    write_result_json(out, scenario, *record.result, *record.traffic);
}

std::string run_table(const Scenario& scenario, const RunRecord& record) {
  if (record.step) return workload_table(scenario, *record.step);
  return summary_table(scenario, *record.result, *record.traffic);
}

}  // namespace collsim
