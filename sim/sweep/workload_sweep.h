#pragma once
// Sweeps over a training step: any field of the scenario (a bucket size, a
// parallelism degree, the topology's node count) through a list of values, or
// every dp x tp x pp split of the job's GPUs; per point the step time, speedup,
// scaling efficiency, end-to-end MFU, tokens/s per GPU and whether it fits in memory,
// and the best point that fits.
//
// Splits keep the global batch (tokens per step of the job) and the micro-batch size
// fixed, so micro-batches per pipeline follow dp as Megatron derives them:
// micro_batches = global batch / (dp x micro-batch size) = micro_batches0 x dp0 / dp.
// A split where that is not a whole number, or is below pp (a pipeline needs at least pp
// micro-batches to fill), is refused. A split that does not fit in memory is tried again
// with selective, then full activation recomputation.
#include <filesystem>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace collsim {

struct SweepAxis {
  std::string path;                 // dotted, from the scenario's root: "workload.bucket"
  std::vector<std::string> values;  // JSON text where it parses ("8", "null"), else a string
};

struct WorkloadSweepOptions {
  std::vector<SweepAxis> axes;
  bool splits = false;  // also every dp x tp x pp of the first job's GPUs (tp within a node)
  // Called after each point with (points done, points in all): a progress line.
  std::function<void(std::size_t, std::size_t)> progress;
};

struct WorkloadPoint {
  // Per axis (then dp, tp, pp, micro_batches, recompute with splits).
  std::vector<std::string> settings;
  double step_s = 0, compute_s = 0, exposed_comm_s = 0, idle_s = 0;
  double speedup = 0, scaling_efficiency = 0;
  double mfu = 0, tokens_per_s_per_gpu = 0;  // end to end (bubble and exposed time count)
  int gpus = 0;
  double memory_bytes = 0;     // per GPU, model form; 0 otherwise
  double memory_capacity = 0;  // the GPU's, model form; 0 otherwise
  bool fits = true;
  std::string error;  // a point the scenario refuses (e.g. tp not dividing the GPUs)
};

struct WorkloadSweep {
  std::string scenario, job;  // names, for the page's title
  std::vector<std::string> columns;
  std::vector<WorkloadPoint> points;
  int best = -1;  // fastest point that fits in memory
};

// No point ran (a misspelt --set path, say): the CLI and Python then refuse the sweep,
// with the first point's reason.
bool every_point_refused(const WorkloadSweep& s);
// An InputError naming what made the points (`--set`, `--splits`, or both), with the first
// refusal, when every point was refused.
void require_a_point_ran(const WorkloadSweep& s, const WorkloadSweepOptions& options);

// `doc` is the scenario's JSON; the first job of its workload is the one measured.
WorkloadSweep sweep_workload(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                             const WorkloadSweepOptions& options);

// "workload.bucket=10MB,25MB,null" -> an axis; an InputError naming `--set` otherwise.
SweepAxis parse_axis(const std::string& text);

// What the CLI's --set/--splits and Python's set=/splits= ask for, checked alike: at
// least one axis or the splits (an InputError naming `--set` otherwise).
WorkloadSweepOptions workload_sweep_options(const std::vector<std::string>& sets, bool splits);

std::string workload_sweep_table(const WorkloadSweep& s);
std::string workload_sweep_csv(const WorkloadSweep& s);
nlohmann::json workload_sweep_json(const WorkloadSweep& s);

}  // namespace collsim
