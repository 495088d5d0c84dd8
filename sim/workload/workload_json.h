#pragma once
// The scenario's "workload": one job object or a list of them (see docs/workloads.md).
#include <filesystem>
#include <string_view>
#include <vector>

#include "core/field_doc.h"
#include "core/json_view.h"
#include "topology/topology.h"
#include "workload/workload.h"

namespace collsim {

// What a job, its parallelism and an explicit model take (the schema test compares).
// (Laid out by hand, one field to a pair of lines, as the other field tables are.)
// clang-format off
inline constexpr FieldDoc kJobKeys[] = {
    {"name", R"json({"type": "string", "description": "The job's name in the reports."})json"},
    {"ranks",
     R"json({"$ref": "#/definitions/rankList", "description": "The job's topology ranks (default: as many as its trace or parallelism asks, or all left: after the jobs before it where enough are left there, else the lowest run of that many free ranks in a row, one starting at a multiple of that many first; never scattered)."})json"},
    {"gradients",
     R"json({"$ref": "#/definitions/size", "description": "Minimal form: bytes all-reduced each step."})json"},
    {"compute",
     R"json({"$ref": "#/definitions/duration", "description": "Minimal form: one GPU's compute for the step."})json"},
    {"scaling",
     R"json({"enum": ["strong", "weak"], "description": "Minimal form: strong (default) divides compute by the ranks, weak keeps it per GPU."})json"},
    {"bucket",
     R"json({"oneOf": [{"$ref": "#/definitions/size"}, {"type": "null"}], "description": "Gradient bucket; null: one bucket. Default 25MB."})json"},
    {"overlap",
     R"json({"type": "boolean", "description": "Buckets all-reduce while backward runs (default true); false: after it."})json"},
    {"algorithm",
     R"json({"type": "string", "description": "Of every collective the job issues (any all-reduce algorithm, auto, nccl); a collective without it (all-to-all) takes its default."})json"},
    {"protocol",
     R"json({"enum": "@protocol", "description": "NCCL's protocol costs for every collective the job issues; not with \"algorithm\": \"nccl\", which picks its own (restrict it with nccl_proto)."})json"},
    {"nccl_algo",
     R"json({"type": "string", "description": "With \"algorithm\": \"nccl\" only: what NCCL may pick for the job's collectives, in NCCL_ALGO's form: \"ring\", \"^nvls\", or per collective \"ring;allgather:^nvls\"; a list that leaves a collective the job runs nothing is refused."})json"},
    {"nccl_proto",
     R"json({"type": "string", "description": "With \"algorithm\": \"nccl\" only (which refuses \"protocol\"): NCCL_PROTO's form for the job's collectives: \"simple\", \"^ll128\", or per collective \"^ll128;allreduce:simple\"."})json"},
    {"dtype",
     R"json({"enum": "@dtype", "description": "Minimal form: the gradients' element type (default bfloat16); Chakra: the collectives' (default uint8: Chakra sizes are bytes)."})json"},
    {"accumulation",
     R"json({"type": "integer", "minimum": 1, "description": "Minimal form: micro-batches per step (gradient accumulation), the all-reduce on the last only."})json"},
    {"backward_fraction",
     R"json({"type": "number", "minimum": 0, "maximum": 1, "description": "Minimal form: the share of compute that is backward (default 2/3); gradients become ready in reverse order as it runs, one slice per bucket."})json"},
    {"model",
     R"json({"$ref": "#/definitions/model", "description": "A preset (llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, deepseek-v3) or the model's numbers."})json"},
    {"gpu",
     R"json({"$ref": "#/definitions/gpu", "description": "A preset (h100, a100, b200) or the GPU's numbers (default: the topology's named GPU where it is one of these presets, else h100)."})json"},
    {"mfu",
     R"json({"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "The compute kernels' efficiency (default 0.4): F FLOPs take F / (peak x mfu). Not the step's MFU, which the run reports."})json"},
    {"tokens_per_gpu",
     R"json({"type": "integer", "minimum": 1, "description": "Tokens per GPU per step (the global batch is that times the GPUs)."})json"},
    {"sequence",
     R"json({"type": "integer", "minimum": 1, "description": "Sequence length for the attention FLOPs (default: the model's)."})json"},
    {"param_dtype",
     R"json({"enum": "@dtype", "description": "The weights' type (default bfloat16)."})json"},
    {"grad_dtype",
     R"json({"enum": "@dtype", "description": "The gradients' type (default bfloat16)."})json"},
    {"parallelism",
     R"json({"$ref": "#/definitions/parallelism", "description": "How the job's ranks split the model and the batch."})json"},
    {"expert_load",
     R"json({"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "description": "MoE: the share of routed tokens each expert receives, one per expert, each 0 to 1, summing to 1 (default: uniform)."})json"},
    {"flash_attention",
     R"json({"type": "boolean", "description": "Attention runs as flash attention, which never stores the s x s scores (default true); false: they are activations kept for backward unless recomputed."})json"},
    {"compute_dtype",
     R"json({"enum": ["bfloat16", "fp8"], "description": "The GEMMs' type: fp8 runs them at the GPU's FP8 peak and all-gathers the forward's sequence-parallel activations in FP8 (default bfloat16)."})json"},
    {"chakra",
     R"json({"type": "string", "description": "A Chakra execution trace: DIR/NAME reads DIR/NAME.0.et ... NAME.(K-1).et, relative to the scenario (docs/chakra.md)."})json"},
    {"memory_bandwidth",
     R"json({"$ref": "#/definitions/bandwidth", "description": "Chakra: memory load/store nodes take tensor_size / this."})json"},
    {"serialize_compute",
     R"json({"type": "boolean", "description": "Chakra: a rank's compute nodes run one at a time."})json"},
    {"process_groups",
     R"json({"type": "object", "additionalProperties": {"$ref": "#/definitions/rankList"}, "description": "Chakra: process group name -> trace ranks."})json"},
};
// clang-format on
inline constexpr FieldDoc kParallelismKeys[] = {
    {"dp",
     R"json({"type": "integer", "minimum": 1, "description": "Data-parallel replicas; dp x tp x pp x cp = the job's ranks."})json"},
    {"tp",
     R"json({"type": "integer", "minimum": 1, "description": "Tensor parallelism: each layer split over tp ranks (Megatron)."})json"},
    {"pp",
     R"json({"type": "integer", "minimum": 1, "description": "Pipeline stages, the layers split evenly."})json"},
    {"ep",
     R"json({"type": "integer", "minimum": 1, "description": "Expert parallelism, carved out of DP (it must divide dp)."})json"},
    {"zero",
     R"json({"enum": [0, 1, 2, 3], "description": "ZeRO stage: 1 shards the optimizer states, 2 also the gradients (reduce-scattered), 3 also the weights (= fsdp)."})json"},
    {"fsdp", R"json({"type": "boolean", "description": "true: ZeRO-3."})json"},
    {"sequence_parallel",
     R"json({"type": "boolean", "description": "TP's all-reduces become reduce-scatter + all-gather, the activations between them split over TP."})json"},
    {"pipeline",
     R"json({"enum": ["1f1b", "gpipe", "interleaved"], "description": "The pipeline schedule (interleaved: 1F1B over virtual_stages model chunks per stage)."})json"},
    {"micro_batches",
     R"json({"type": "integer", "minimum": 1, "description": "Micro-batches per step through the pipeline."})json"},
    {"order",
     R"json({"type": "array", "items": {"enum": ["tp", "cp", "ep", "pp", "dp"]}, "minItems": 4, "maxItems": 5, "uniqueItems": true, "description": "Placement, fastest-varying first (default [tp, ep, pp, dp]: a TP group inside a node); cp, if not listed, comes right after tp."})json"},
    {"recompute",
     R"json({"enum": ["none", "selective", "full"], "description": "Activation recomputation: none (default), selective (the attention scores) or full (each layer's forward again in backward, its input kept)."})json"},
    {"virtual_stages",
     R"json({"type": "integer", "minimum": 1, "description": "Interleaved 1F1B: model chunks per pipeline stage (Narayanan et al. 2021); micro_batches must be a multiple of pp."})json"},
    {"cp",
     R"json({"type": "integer", "minimum": 1, "maximum": 1024, "description": "Context parallelism: each sequence split over cp ranks (ring attention); dp x tp x pp x cp = the job's ranks."})json"},
};
inline constexpr FieldDoc kModelKeys[] = {
    {"name", R"json({"type": "string", "description": "The model's name in the reports."})json"},
    {"layers", R"json({"type": "integer", "minimum": 1, "description": "Transformer layers."})json",
     kRequired},
    {"hidden", R"json({"type": "integer", "minimum": 1, "description": "Hidden size h."})json",
     kRequired},
    {"vocab",
     R"json({"type": "integer", "minimum": 0, "description": "Vocabulary (the embedding and the output head)."})json"},
    {"sequence", R"json({"type": "integer", "minimum": 1, "description": "Sequence length."})json"},
    {"attention_params",
     R"json({"$ref": "#/definitions/size", "description": "Attention parameters per layer (default 4h^2)."})json"},
    {"mlp_params",
     R"json({"$ref": "#/definitions/size", "description": "MLP parameters per layer (default 8h^2)."})json"},
    {"attention_dim",
     R"json({"type": "integer", "minimum": 1, "description": "Width of the attention (default h)."})json"},
    {"experts",
     R"json({"type": "integer", "minimum": 0, "description": "Routed experts per MoE layer (0: dense)."})json"},
    {"top_k",
     R"json({"type": "integer", "minimum": 1, "description": "Experts each token goes to."})json"},
    {"shared_experts",
     R"json({"type": "integer", "minimum": 0, "description": "Experts every token goes to."})json"},
    {"expert_params",
     R"json({"$ref": "#/definitions/size", "description": "Parameters of one expert."})json"},
    {"dense_layers",
     R"json({"type": "integer", "minimum": 0, "description": "The first layers that are dense in an MoE model."})json"},
    {"tied_embeddings",
     R"json({"type": "boolean", "description": "The output head shares the embedding's weights."})json"},
    {"heads",
     R"json({"type": "integer", "minimum": 1, "description": "Query heads (default attention_dim / 128): the attention scores' size without flash attention."})json"},
    {"kv_dim",
     R"json({"type": "integer", "minimum": 1, "description": "Width of a token's keys (and values), what ring attention passes (default attention_dim; Llama 3: 8 KV heads x 128)."})json"},
};
inline constexpr FieldDoc kGpuKeys[] = {
    {"name", R"json({"type": "string", "description": "The GPU's name in the reports."})json"},
    {"peak_flops",
     R"json({"type": "number", "minimum": 1000000000.0, "maximum": 1e+18, "description": "Dense BF16 FLOP/s."})json",
     kRequired},
    {"fp8_peak_flops",
     R"json({"type": "number", "minimum": 1000000000.0, "maximum": 1e+18, "description": "Dense FP8 FLOP/s (default: none, so \"compute_dtype\": \"fp8\" is refused)."})json"},
    {"memory",
     R"json({"$ref": "#/definitions/size", "description": "Its memory: what the step's memory estimate is checked against."})json",
     kRequired},
};

// Jobs without "ranks" take the topology's ranks in order, each after the previous
// job's; every job's ranks must be distinct from the others'. `base_dir` resolves a
// Chakra trace's relative prefix.
std::vector<WorkloadSpec> parse_workloads(const JsonView& v, const Topology& topology,
                                          const std::filesystem::path& base_dir = ".");

// MoE "expert_load" (a job's) or an all-to-all's "load" (a collective's routing): one
// share per expert, each from 0 to 1/top_k (top-k routing picks k distinct experts),
// summing to 1; refused, never rescaled.
std::vector<double> parse_expert_shares(const JsonView& load, int experts, int top_k);

}  // namespace collsim
