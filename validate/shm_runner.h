#pragma once
// The shm transport: one process per rank (fork + exec of this same program),
// every rank's buffers in one POSIX shared-memory segment, and per-op "done"
// counters in that segment that ranks wait on with futexes. Each op is run by its
// destination rank: a memcpy, or an element-wise reduction in the schedule's
// dtype. The runner owns every process and the segment; whatever happens — a rank
// crashing, hanging past the timeout, Ctrl-C — it stops the others, removes the
// segment, and says which rank failed at which op.
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "simulate/simulator.h"

namespace collsim {

struct ShmOptions {
  int iterations = 5;
  int warmup = 1;
  double timeout_s = 60;   // per iteration
  std::string executable;  // this program, re-executed for each rank
  int kill_rank = -1;      // fault injection for tests: this rank kills itself at its first op
};

struct ShmMeasurement {
  std::vector<double> iteration_s;  // each measured iteration: first op start to last op end
  double median_s = 0;
  std::vector<OpTiming> ops;  // op timings (ps from the iteration's start) of the median iteration
  std::int64_t checked = 0;   // output elements compared with the replayer's
  std::int64_t wrong = 0;     // nccl-tests' #wrong
};

// Runs the schedule for real. Throws ValidationError on a failed rank or timeout.
ShmMeasurement run_on_shm(const Schedule& s, const ShmOptions& options);

// The entry point of a rank process: `collsim __rank fd:N RANK` (the segment's
// descriptor, inherited from the runner).
int shm_rank_main(const std::string& segment, int rank);

// Whether shared-memory segments of this program are left in /dev/shm (for tests).
std::vector<std::string> leftover_segments();

}  // namespace collsim
