#pragma once
// The files `collsim run --out DIR` writes, in one place for the command line and Python:
// for a scenario's collectives result.json, links.csv, ranks.csv, steps.csv,
// utilisation.csv, timeline.json (gzipped on request) and report.html; for a training
// step result.json, timeline.json, links.csv and report.html. All or nothing: the files
// appear together, or an InputError names what could not be written.
#include <cstddef>
#include <filesystem>

#include "report/html_report.h"
#include "report/reports.h"
#include "report/traffic.h"
#include "report/transfer_timeline.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "simulate/run_workload.h"

namespace collsim {

struct RunFileOptions {
  std::size_t trace_transfers = kTraceTransfers;  // the timeline's transfer slices, at most
  bool trace_gzip = false;                        // timeline.json.gz instead
};

// What the files need of each op, gathered in one walk of a run's ops (simulate/op_sink.h),
// from a stored run's record or as a streamed run retires them: the traffic with its
// utilisation bins and busy times, the timeline's transfers and the page's timeline.
// `result`: the run's figures (its collectives, outcomes and timings).
class RunFileGather final : public OpSink {
 public:
  RunFileGather(const Scenario& scenario, const ScenarioResult& result,
                const RunFileOptions& options);
  void collective(std::size_t c, const Schedule* whole) override;
  void op(const RetiredOp& op) override;
  void collective_done() override;
  RateListener* rates() override { return traffic_walk_.rates(); }
  // After the walk: the traffic report (the files read it too).
  const TrafficReport& finish();

 private:
  friend void write_run_files(const std::filesystem::path&, const Scenario&, const ScenarioResult&,
                              RunFileGather&, const RunFileOptions&);
  TrafficReport traffic_;
  TrafficWalk traffic_walk_;
  TraceGather trace_;
  PageTimeline page_;
};

// The files, from what `gathered` took in of every op.
void write_run_files(const std::filesystem::path& dir, const Scenario& scenario,
                     const ScenarioResult& result, RunFileGather& gathered,
                     const RunFileOptions& options = {});
// The trace gzipped as a run's (RunFileOptions::trace_gzip, and past kGzipTraceAbove).
void write_workload_files(const std::filesystem::path& dir, const Scenario& scenario,
                          const WorkloadRun& run, const RunFileOptions& options = {});

}  // namespace collsim
