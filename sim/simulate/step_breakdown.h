#pragma once
// Where a timed step's time went, per GPU: compute, each kind of communication, and
// the bubble, as parts of the step that add up to it.
//
// The definition (docs/workloads.md, "Where the step went"). On each of the job's ranks, every
// instant of [0, step) is exactly one of:
//   - compute: a compute task runs on the rank (communication then is hidden);
//   - exposed communication: no compute runs, and collectives are in flight on the
//     rank (a collective is in flight on each of its ranks from its start to its end);
//     the instant is split evenly among the kinds in flight, a kind being a category
//     and an op ("tp all_reduce");
//   - bubble: neither (pipeline fill and drain, waiting on a straggler before a
//     collective can start).
// A kind's busy time is the time any task of it is in flight on the rank, overlapping
// tasks counted once. Every figure is the mean over the job's ranks: the parts add up
// to the step whether or not the ranks are alike, and none exceeds it.
#include <cstdint>
#include <string>
#include <vector>

#include "simulate/run_step.h"

namespace collsim {

struct StepShare {
  std::string category;  // "compute", "dp", "tp", "pp", "ep", "fsdp", "collective", ...
  std::string op;        // a collective's ("all_reduce"); empty: compute, or a whole category
  bool compute = false;  // compute tasks (Chakra's memory nodes too), not communication
  std::int64_t tasks = 0;
  std::int64_t bytes = 0;  // collectives: nccl-tests sizes, summed over the tasks
  double busy_s = 0;       // mean over the ranks: some task of it in flight
  double exposed_s = 0;    // mean over the ranks: the part of the step it is charged
};

struct StepBreakdown {
  double step_s = 0;  // the last task's end
  int ranks = 0;      // the ranks the means are over
  // Compute kinds first, then collectives by category and op, each in name order.
  std::vector<StepShare> kinds;
  // The same per category (op empty): exposed summed over its kinds, busy their union.
  std::vector<StepShare> categories;
  double compute_s = 0;       // some compute in flight
  double comm_s = 0;          // some collective in flight
  double exposed_comm_s = 0;  // the collective kinds' exposed, summed
  double bubble_s = 0;        // step = compute + exposed communication + bubble
};

// The tasks of `graph` selected by `keep` (all when empty), timed by `r`, on `ranks`
// (topology ranks; a task's ranks outside them are not counted).
StepBreakdown step_breakdown(const StepGraph& graph, const StepResult& r,
                             const std::vector<int>& ranks, const std::vector<bool>& keep = {});

}  // namespace collsim
