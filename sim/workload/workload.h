#pragma once
// A training job: what the scenario's "workload" section describes, and how it
// becomes a step graph (workload/step_graph.h).
//
// Two forms. The minimal one is data parallelism by hand: a gradient size and a
// one-GPU compute time. The model one names a model, a GPU, an MFU, tokens and a
// parallelism (DP with ZeRO stages or FSDP, Megatron TP, PP with GPipe or 1F1B, EP),
// and the builder derives every compute and communication task of one step.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "request/nccl_lists.h"
#include "schedule/collective.h"
#include "workload/chakra_options.h"
#include "workload/model.h"
#include "workload/parallel_axis.h"

namespace collsim {

class StepGraphBuilder;

struct Parallelism {
  int dp = 1;  // data-parallel replicas (EP is carved out of them: ep divides dp)
  int tp = 1;
  int pp = 1;
  int ep = 1;
  // Context parallelism: each sequence split over cp ranks, ring attention's K/V among
  // them; gradients reduce over dp x cp.
  int cp = 1;
  int zero = 0;  // 0 (DDP), 1, 2 or 3 (FSDP is 3)
  bool sequence_parallel = false;
  std::string pipeline = "1f1b";  // or "gpipe", or "interleaved" (Narayanan et al. 2021)
  int virtual_stages = 1;         // interleaved: model chunks per stage
  int micro_batches = 1;          // per step, per pipeline (gradient accumulation without PP)
  // Activation recomputation (Korthikanti et al. 2022): "none", "selective" (attention's
  // scores) or "full" (each layer's forward again in backward, its input kept).
  std::string recompute = "none";
  // Placement: which coordinate varies fastest over the job's ranks. TP first keeps a
  // tensor-parallel group inside a node; "cp", when not listed, comes right after "tp".
  std::vector<ParallelAxis> order{ParallelAxis::Tp, ParallelAxis::Ep, ParallelAxis::Pp,
                                  ParallelAxis::Dp};

  int gpus() const { return dp * tp * pp * cp; }
};

struct WorkloadSpec {
  std::string name;        // "job0" unless named
  std::string json_path;   // "workload", "workload[1]"
  std::vector<int> ranks;  // topology ranks the job runs on, in placement order

  // Gradient synchronisation, both forms.
  std::optional<std::int64_t> bucket = 25'000'000;  // nullopt: one bucket (PyTorch's default 25 MB)
  bool overlap = true;                              // buckets all-reduce while backward runs
  std::string algorithm;  // of every collective: "" (the catalogue's default), "auto", "nccl", ...
  std::string protocol;
  NcclLists nccl_lists;  // with algorithm "nccl": what NCCL may pick, per collective

  // Minimal form (no model): gradients in bytes and the one-GPU compute of a step.
  std::int64_t gradients = 0;
  double compute_s = 0;
  bool strong_scaling = true;
  double backward_fraction = 2.0 / 3.0;  // of compute: backward is twice the forward

  // Model form.
  std::optional<ModelSpec> model;
  GpuSpec gpu;
  // The compute kernels' efficiency: a compute task of F FLOPs takes F / (peak x mfu).
  // The step's end-to-end MFU (JobOutcome::mfu) also counts the bubble, exposed
  // communication and recomputation, so it comes out lower.
  double mfu = 0.4;
  std::int64_t tokens_per_gpu = 0;  // per step
  std::int64_t sequence = 0;        // 0: the model's
  DType param_dtype = DType::BF16;
  DType grad_dtype = DType::BF16;
  // "compute_dtype": "fp8": the GEMMs at the GPU's FP8 peak, and the activations the
  // forward's sequence-parallel all-gathers carry in FP8 (Transformer Engine's FP8
  // all-gather; reduce-scatters, all-reduces, PP sends and gradients stay as they were).
  bool fp8 = false;
  Parallelism parallelism;
  // Flash attention never stores the s x s attention scores (their recompute is inside
  // its backward kernel, covered by `mfu`): without it, they are activations to keep.
  bool flash_attention = true;
  std::vector<double> expert_load;  // MoE routing skew; empty: uniform

  // Chakra form: the trace prefix DIR/NAME (resolved against the scenario's folder);
  // trace rank r runs on ranks[r]. The trace gives every task of the step.
  std::string chakra;
  ChakraOptions chakra_options;

  bool has_model() const { return model.has_value(); }
  // The peak the compute kernels run at: bf16's, or FP8's with "compute_dtype": "fp8".
  double peak_flops() const { return fp8 ? gpu.fp8_peak_flops : gpu.peak_flops; }
  bool is_chakra() const { return !chakra.empty(); }
};

// What the builder worked out besides the graph: for the report.
struct WorkloadFacts {
  double one_gpu_step_s = 0;  // the whole step's compute on one GPU at this MFU
  double flops_per_step = 0;  // model form
  // What one GPU synchronises each step, on the pipeline stage that synchronises the most
  // (its TP share of the stage's dense and expert gradients), and in how many buckets.
  int gradient_buckets = 0;
  std::int64_t gradient_bytes = 0;
  // Memory per GPU (the most loaded one), model form.
  std::int64_t memory_params = 0;
  std::int64_t memory_gradients = 0;
  std::int64_t memory_optimizer = 0;
  std::int64_t memory_activations = 0;
  std::int64_t memory_total() const {
    return memory_params + memory_gradients + memory_optimizer + memory_activations;
  }
  std::vector<std::string> warnings;
};

// What a job's step graph will hold, worked out from its description alone (no task is
// made): a step too big to build is refused before anything is allocated. Counts
// saturate at int64's end rather than wrap.
struct WorkloadSize {
  std::int64_t tasks = 0;    // compute and collective tasks
  std::int64_t entries = 0;  // ranks the tasks list, plus their all-to-all matrices' entries
  std::int64_t ops = 0;      // transfers simulated: 2K^2 for a collective of K ranks (a
                             // ring all-reduce's 2K(K-1), an all-to-all's K^2)
  std::int64_t buckets = 0;  // gradient buckets, for the message
};

// The most a scenario's workloads may add up to. Tasks: a step of 2,140,032 (Llama 3
// 405B on 16,384 GPUs as Meta ran it: TP 8, PP 16, DP 128, 16 micro-batches, 256 MiB
// buckets) takes 98 s and 4.1 GB under the flow model (DP 64, 1,070,016 tasks: 27-35 s,
// 1.4 GB); the bound keeps a step within a few minutes and about 6 GB. The largest bundled
// workload has 19,120. Entries: 4 to 8 bytes each. Ops: transfers simulated, 2^29 (that
// step: 496 million). A Chakra job counts nothing here: its reader bounds its trace.
inline constexpr std::int64_t kMaxStepTasks = std::int64_t{3} << 20;
inline constexpr std::int64_t kMaxStepEntries = std::int64_t{1} << 26;
inline constexpr std::int64_t kMaxStepOps = std::int64_t{1} << 29;

// The largest model collsim accounts for, in parameters: its gradients in 8-byte
// elements stay within a size's 2^50 bytes (units.h). Today's largest are ~2^41.
inline constexpr double kMaxModelParams = static_cast<double>(std::int64_t{1} << 47);

WorkloadSize workload_size(const WorkloadSpec& w);

// The job's topology ranks per pipeline stage, each in placement order: pp lists for the
// model form, one list of every rank otherwise (the reports draw a rank per stage).
std::vector<std::vector<int>> pipeline_stages(const WorkloadSpec& w);

// The job's data-parallel replicas as a turn of its ranks: `next[r]` is the topology rank
// that holds, in the next replica, what rank r holds in its own (the last replica's go to
// the first); -1 for ranks not the job's. A step the turn maps onto itself can be timed by
// one replica's tasks (simulate/step_fold.h checks that it does). The minimal form's ranks
// are each a replica; one replica (and no turn) for a Chakra trace, or a model with expert
// or context parallelism.
struct ReplicaTurn {
  int replicas = 1;
  std::vector<int> next;     // by topology rank
  std::vector<int> replica;  // by topology rank: the replica it is in; -1: none
};
ReplicaTurn replica_turn(const WorkloadSpec& w);

// Appends the job's tasks to `builder` (streams named per job, so jobs never chain
// into each other) and returns what it worked out.
WorkloadFacts build_workload(const WorkloadSpec& w, StepGraphBuilder& builder);

}  // namespace collsim
