#pragma once
// report.html for a training step: one self-contained page (inline SVG, the hover script
// of report/html_common.h, no network) with each job's step, where it went (a stacked
// bar and a table per parallelism and collective kind), a timeline of one representative
// rank per pipeline stage, memory per GPU against the GPU, and the hottest links. Its
// size is bounded whatever the cluster: the timeline is binned into columns and draws
// at most kMaxStages stages per job.
#include <ostream>

#include "report/workload_report.h"

namespace collsim {

inline constexpr int kMaxStages = 16;

// `max_ranks`: the sample of report/workload_ranks.h, the ranks timeline.json draws; the
// page lists them with a row each, collapsed.
void write_workload_html(std::ostream& out, const Scenario& scenario, const WorkloadRun& run,
                         int max_ranks = kTraceRanks);

}  // namespace collsim
