#pragma once
// Runs a schedule for real: one process per rank (fork + exec of this same program),
// coordinated through one POSIX shared-memory segment (validate/measure/control_segment.h),
// with the data moved by a transport (validate/measure/rank_device.h): shm or cuda-ipc. Each
// op is run by one rank once its dependencies have started (shm: completed; cuda-ipc:
// enqueued, with the GPU ordering the rest). The runner owns every process and the
// segment; whatever happens — a rank crashing, hanging past the timeout, Ctrl-C — it
// stops the others, removes the segment, and says which rank failed at which op.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "validate/measure/control_segment.h"

namespace collsim {

struct RunOptions {
  Backend backend = Backend::Shm;
  int iterations = 5;
  int warmup = 1;
  // run_in_rounds: the measured iterations are split over this many rounds, each round
  // running every schedule once (with its own warm-up): a slow spell of a shared
  // machine then falls on a few iterations of each schedule, not on all of one.
  int rounds = 1;
  // Which iteration stands for the run: the one at this quantile of the iteration
  // lengths (0.5, the median). A lower one times a shared machine without most of its
  // neighbours' interference, as timeit's minimum does.
  double quantile = 0.5;
  double timeout_s = 60;   // per iteration
  std::string executable;  // this program, re-executed for each rank
  bool pin = true;         // each rank bound to its own CPU core, as mpirun --bind-to core
  int kill_rank = -1;      // fault injection for tests: this rank kills itself at its first op
  int fail_rank = -1;      // ... this rank reports an error and exits at its first op
};

// Where the ranks run: rank r is bound to the r-th CPU of the process's allowed set
// (round-robin when ranks outnumber them); for cuda-ipc also to GPU r mod GPUs.
struct Pinning {
  bool pinned = false;
  std::vector<int> cpus;  // per rank: the CPU it is bound to; -1 when not pinned
  int allowed = 0;        // CPUs this process may run on
  int gpus = 0;           // cuda-ipc: GPUs visible; 0 otherwise
  bool shared = false;    // ranks outnumber CPUs (or GPUs): some share one, taking turns
  std::string note;       // one line saying all of it, for stderr and provenance
};
Pinning plan_pinning(int ranks, const std::vector<int>& allowed_cpus, bool pin, int gpus = 0);
std::vector<int> allowed_cpus();  // this process's affinity mask, lowest CPU first

struct Measurement {
  std::vector<double> iteration_s;  // each measured iteration: release of all ranks to last op end
  double time_s = 0;                // the length of the iteration at RunOptions::quantile
  std::vector<OpTiming> ops;        // that iteration's op timings (ps from its release)
  std::int64_t checked = 0;         // output elements compared with the replayer's
  std::int64_t wrong = 0;           // nccl-tests' #wrong
  // Every measured iteration's op timings (ps from that iteration's release).
  std::vector<std::vector<OpTiming>> iteration_ops;
  Pinning pinning;
  // What each rank read back of its own affinity: {CPUs allowed, the lowest of them}.
  std::vector<std::array<int, 2>> affinity;
};

std::string_view name_of(Backend b);
std::optional<Backend> backend_from_name(std::string_view name);

// What the ranks will run on ("AMD EPYC 7B13", "1 x NVIDIA H200"). Throws a one-line
// ValidationError when the backend cannot run here (cuda-ipc: no toolkit or no device).
std::string backend_device(Backend b);

// What ranks share: CPU cores (shm) or GPUs (cuda-ipc), and how many this machine has.
struct SharedUnits {
  int count;
  const char* name;  // singular: "CPU core", "GPU"
};
SharedUnits backend_units(Backend b);

// Runs the schedule for real. Throws ValidationError on a failed rank or timeout.
Measurement run_for_real(const Schedule& s, const RunOptions& options);
// Runs every schedule for real, options.rounds times in turn, and pools each one's
// iterations (time_s and ops over all of them; results checked every round).
// Where quantile q falls among n sorted values (the nearest rank; n > 0): the one rule
// for the iteration that stands for a run and for calibrate's sweep points.
std::size_t quantile_index(std::size_t n, double q);
// "median", "p25": how tables name RunOptions::quantile.
std::string quantile_name(double q);
// The rounds run_in_rounds makes: options.rounds, at most one per iteration.
int effective_rounds(const RunOptions& options);
// `names` (may be empty): each schedule's collective, which a failure then names.
std::vector<Measurement> run_in_rounds(const std::vector<const Schedule*>& schedules,
                                       const RunOptions& options,
                                       const std::vector<std::string>& names = {});
// Why `s` cannot run for real, or "": an element type no real run stores, or more memory
// than the machine has available (the runner's inputs and expected results, and the shared
// segment the ranks map). Asked of every collective before the first runs.
std::string real_run_problem(const Schedule& s, const RunOptions& options);

// The entry point of a rank process: `collsim __rank fd:N RANK` (the segment's
// descriptor, inherited from the runner).
int rank_main(const std::string& segment, int rank);

// Whether shared-memory segments of this program are left in /dev/shm (for tests).
std::vector<std::string> leftover_segments();

}  // namespace collsim
