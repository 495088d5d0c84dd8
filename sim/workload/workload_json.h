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
inline constexpr FieldDoc kJobKeys[] = {
    {"name", R"json({"type": "string"})json"},
    {"ranks", R"json({"$ref": "#/definitions/rankList"})json"},
    {"gradients",
     R"json({"$ref": "#/definitions/size", "description": "Minimal form: bytes all-reduced each step."})json"},
    {"compute",
     R"json({"$ref": "#/definitions/duration", "description": "Minimal form: one GPU's compute for the step."})json"},
    {"scaling", R"json({"enum": ["strong", "weak"]})json"},
    {"bucket",
     R"json({"oneOf": [{"$ref": "#/definitions/size"}, {"type": "null"}], "description": "Gradient bucket; null: one bucket. Default 25MB."})json"},
    {"overlap", R"json({"type": "boolean"})json"},
    {"algorithm", R"json({"type": "string"})json"},
    {"protocol", R"json({"enum": "@protocol"})json"},
    {"dtype", R"json({"enum": "@dtype"})json"},
    {"accumulation", R"json({"type": "integer", "minimum": 1})json"},
    {"backward_fraction", R"json({"type": "number", "minimum": 0, "maximum": 1})json"},
    {"model", R"json({"$ref": "#/definitions/model"})json"},
    {"gpu", R"json({"$ref": "#/definitions/gpu"})json"},
    {"mfu", R"json({"type": "number", "exclusiveMinimum": 0, "maximum": 1})json"},
    {"tokens_per_gpu", R"json({"type": "integer", "minimum": 1})json"},
    {"sequence", R"json({"type": "integer", "minimum": 1})json"},
    {"param_dtype", R"json({"enum": "@dtype"})json"},
    {"grad_dtype", R"json({"enum": "@dtype"})json"},
    {"parallelism", R"json({"$ref": "#/definitions/parallelism"})json"},
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
inline constexpr FieldDoc kParallelismKeys[] = {
    {"dp", R"json({"type": "integer", "minimum": 1})json"},
    {"tp", R"json({"type": "integer", "minimum": 1})json"},
    {"pp", R"json({"type": "integer", "minimum": 1})json"},
    {"ep", R"json({"type": "integer", "minimum": 1})json"},
    {"zero", R"json({"enum": [0, 1, 2, 3]})json"},
    {"fsdp", R"json({"type": "boolean"})json"},
    {"sequence_parallel", R"json({"type": "boolean"})json"},
    {"pipeline", R"json({"enum": ["1f1b", "gpipe", "interleaved"]})json"},
    {"micro_batches", R"json({"type": "integer", "minimum": 1})json"},
    {"order",
     R"json({"type": "array", "items": {"enum": ["tp", "cp", "ep", "pp", "dp"]}, "minItems": 4, "maxItems": 5, "uniqueItems": true})json"},
    {"recompute",
     R"json({"enum": ["none", "selective", "full"], "description": "Activation recomputation: none (default), selective (the attention scores) or full (each layer's forward again in backward, its input kept)."})json"},
    {"virtual_stages",
     R"json({"type": "integer", "minimum": 1, "description": "Interleaved 1F1B: model chunks per pipeline stage (Narayanan et al. 2021); micro_batches must be a multiple of pp."})json"},
    {"cp",
     R"json({"type": "integer", "minimum": 1, "maximum": 1024, "description": "Context parallelism: each sequence split over cp ranks (ring attention); dp x tp x pp x cp = the job's ranks."})json"},
};
inline constexpr FieldDoc kModelKeys[] = {
    {"name", R"json({"type": "string"})json"},
    {"layers", R"json({"type": "integer", "minimum": 1})json", kRequired},
    {"hidden", R"json({"type": "integer", "minimum": 1})json", kRequired},
    {"vocab", R"json({"type": "integer", "minimum": 0})json"},
    {"sequence", R"json({"type": "integer", "minimum": 1})json"},
    {"attention_params", R"json({"$ref": "#/definitions/size"})json"},
    {"mlp_params", R"json({"$ref": "#/definitions/size"})json"},
    {"attention_dim", R"json({"type": "integer", "minimum": 1})json"},
    {"experts", R"json({"type": "integer", "minimum": 0})json"},
    {"top_k", R"json({"type": "integer", "minimum": 1})json"},
    {"shared_experts", R"json({"type": "integer", "minimum": 0})json"},
    {"expert_params", R"json({"$ref": "#/definitions/size"})json"},
    {"dense_layers", R"json({"type": "integer", "minimum": 0})json"},
    {"tied_embeddings", R"json({"type": "boolean"})json"},
    {"heads",
     R"json({"type": "integer", "minimum": 1, "description": "Query heads (default attention_dim / 128): the attention scores' size without flash attention."})json"},
    {"kv_dim",
     R"json({"type": "integer", "minimum": 1, "description": "Width of a token's keys (and values), what ring attention passes (default attention_dim; Llama 3: 8 KV heads x 128)."})json"},
};
inline constexpr FieldDoc kGpuKeys[] = {
    {"name", R"json({"type": "string"})json"},
    {"peak_flops", R"json({"type": "number", "minimum": 1000000000.0, "maximum": 1e+18})json",
     kRequired},
    {"fp8_peak_flops",
     R"json({"type": "number", "minimum": 1000000000.0, "maximum": 1e+18, "description": "Dense FP8 FLOP/s (default: none, so \"compute_dtype\": \"fp8\" is refused)."})json"},
    {"memory", R"json({"$ref": "#/definitions/size"})json", kRequired},
};

// Jobs without "ranks" take the topology's ranks in order, each after the previous
// job's; every job's ranks must be distinct from the others'. `base_dir` resolves a
// Chakra trace's relative prefix.
std::vector<WorkloadSpec> parse_workloads(const JsonView& v, const Topology& topology,
                                          const std::filesystem::path& base_dir = ".");

// MoE "expert_load" (a job's) or an all-to-all's "load" (a collective's routing): one
// share per expert, each from 0 to 1, summing to 1; refused, never rescaled.
std::vector<double> parse_expert_shares(const JsonView& load, int experts);

}  // namespace collsim
