#pragma once
// The scenario's "workload": one job object or a list of them (see docs/workloads.md).
#include <filesystem>
#include <string_view>
#include <vector>

#include "core/json_view.h"
#include "topology/topology.h"
#include "workload/workload.h"

namespace collsim {

// What a job, its parallelism and an explicit model take (the schema test compares).
inline constexpr std::string_view kJobKeys[] = {"name",
                                                "ranks",
                                                "gradients",
                                                "compute",
                                                "scaling",
                                                "bucket",
                                                "overlap",
                                                "algorithm",
                                                "protocol",
                                                "dtype",
                                                "accumulation",
                                                "backward_fraction",
                                                "model",
                                                "gpu",
                                                "mfu",
                                                "tokens_per_gpu",
                                                "sequence",
                                                "param_dtype",
                                                "grad_dtype",
                                                "parallelism",
                                                "expert_load",
                                                "flash_attention",
                                                "compute_dtype",
                                                "chakra",
                                                "memory_bandwidth",
                                                "serialize_compute",
                                                "process_groups"};
inline constexpr std::string_view kParallelismKeys[] = {
    "dp",   "tp", "pp", "ep", "zero", "fsdp", "sequence_parallel", "pipeline", "micro_batches",
    "order", "recompute", "virtual_stages", "cp"};
inline constexpr std::string_view kModelKeys[] = {
    "name",         "layers",         "hidden",  "vocab", "sequence",       "attention_params",
    "mlp_params",   "attention_dim",  "experts", "top_k", "shared_experts", "expert_params",
    "dense_layers", "tied_embeddings", "heads", "kv_dim"};
inline constexpr std::string_view kGpuKeys[] = {"name", "peak_flops", "fp8_peak_flops", "memory"};

// Jobs without "ranks" take the topology's ranks in order, each after the previous
// job's; every job's ranks must be distinct from the others'. `base_dir` resolves a
// Chakra trace's relative prefix.
std::vector<WorkloadSpec> parse_workloads(const JsonView& v, const Topology& topology,
                                          const std::filesystem::path& base_dir = ".");

// MoE "expert_load" (a job's) or an all-to-all's "load" (a collective's routing): one
// share per expert, each from 0 to 1, summing to 1; refused, never rescaled.
std::vector<double> parse_expert_shares(const JsonView& load, int experts);

}  // namespace collsim
