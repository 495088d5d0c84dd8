#include "report/run_files.h"

#include <ostream>

#include "report/html_report.h"
#include "report/output_dir.h"
#include "report/trace_file.h"
#include "report/workload_html.h"
#include "report/workload_report.h"

namespace collsim {

RunFileGather::RunFileGather(const Scenario& scenario, const ScenarioResult& result,
                             const RunFileOptions& options)
    : traffic_(traffic_totals(scenario, result, true)),
      traffic_walk_(scenario, result, traffic_),
      trace_(scenario.topology.num_ranks(), options.trace_transfers, timeline_spans(result)),
      page_(scenario, result) {}

void RunFileGather::collective(std::size_t c, const Schedule* whole) {
  traffic_walk_.collective(c, whole);
  trace_.collective(c, whole);
  page_.collective(c, whole);
}

void RunFileGather::op(const RetiredOp& op) {
  traffic_walk_.op(op);
  trace_.op(op);
  page_.op(op);
}

void RunFileGather::collective_done() {
  traffic_walk_.collective_done();
  trace_.collective_done();
  page_.collective_done();
}

const TrafficReport& RunFileGather::finish() {
  traffic_walk_.finish();
  return traffic_;
}

namespace {

// Every file a run's --out may hold. Each run drops them all and commit() keeps those it wrote:
// a training step after a collectives run left the earlier ranks.csv, steps.csv and
// utilisation.csv beside its own result.json, as if they described it.
void drop_every_run_file(OutputDir& out) {
  for (const char* name : {"result.json", "links.csv", "ranks.csv", "steps.csv", "utilisation.csv",
                           "timeline.json", "timeline.json.gz", "report.html"})
    out.drop(name);
}

}  // namespace

void write_run_files(const std::filesystem::path& dir, const Scenario& scenario,
                     const ScenarioResult& result, RunFileGather& gathered,
                     const RunFileOptions& options) {
  const TrafficReport& traffic = gathered.traffic_;
  OutputDir out(dir);
  drop_every_run_file(out);
  write_result_json(out.open("result.json"), scenario, result, traffic);
  write_links_csv(out.open("links.csv"), scenario, result, traffic);
  write_ranks_csv(out.open("ranks.csv"), scenario, result, traffic);
  write_steps_csv(out.open("steps.csv"), scenario, result, traffic);
  write_utilisation_csv(out.open("utilisation.csv"), scenario, traffic);
  {
    TraceFile trace(out, "timeline.json", options.trace_gzip);
    std::ostream stream(&trace);
    write_chrome_trace(stream, scenario, result, traffic, gathered.trace_.take());
    trace.finish();
  }
  write_html_report(out.open("report.html"), scenario, result, traffic, gathered.page_);
  out.commit();
}

void write_workload_files(const std::filesystem::path& dir, const Scenario& scenario,
                          const WorkloadRun& run, const RunFileOptions& options) {
  OutputDir out(dir);
  drop_every_run_file(out);
  out.open("result.json") << workload_document(scenario, run).dump(2) << "\n";
  {
    TraceFile trace(out, "timeline.json", options.trace_gzip);
    std::ostream stream(&trace);
    write_workload_trace(stream, scenario, run);
    trace.finish();
  }
  write_workload_links_csv(out.open("links.csv"), scenario, run);
  write_workload_html(out.open("report.html"), scenario, run);
  out.commit();
}

}  // namespace collsim
