#include "report/run_files.h"

#include <ostream>

#include "report/html_report.h"
#include "report/output_dir.h"
#include "report/trace_file.h"
#include "report/workload_html.h"
#include "report/workload_report.h"

namespace collsim {

void write_run_files(const std::filesystem::path& dir, const Scenario& scenario,
                     const ScenarioResult& result, const TrafficReport& traffic,
                     const RunFileOptions& options) {
  OutputDir out(dir);
  write_result_json(out.open("result.json"), scenario, result, traffic);
  write_links_csv(out.open("links.csv"), scenario, result, traffic);
  write_ranks_csv(out.open("ranks.csv"), scenario, result, traffic);
  write_steps_csv(out.open("steps.csv"), scenario, result, traffic);
  write_utilisation_csv(out.open("utilisation.csv"), scenario, traffic);
  {
    TraceFile trace(out, "timeline.json", options.trace_gzip);
    std::ostream stream(&trace);
    write_chrome_trace(stream, scenario, result, traffic, options.trace_transfers);
    trace.finish();
  }
  write_html_report(out.open("report.html"), scenario, result, traffic);
  out.commit();
}

void write_workload_files(const std::filesystem::path& dir, const Scenario& scenario,
                          const WorkloadRun& run) {
  OutputDir out(dir);
  out.open("result.json") << workload_document(scenario, run).dump(2) << "\n";
  write_workload_trace(out.open("timeline.json"), scenario, run);
  write_workload_links_csv(out.open("links.csv"), scenario, run);
  write_workload_html(out.open("report.html"), scenario, run);
  out.commit();
}

}  // namespace collsim
