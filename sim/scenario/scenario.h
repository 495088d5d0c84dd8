#pragma once
// A scenario: the cluster, the network model and the collectives to run on it,
// as the user wrote them in JSON, checked and resolved.
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_doc.h"
#include "nccl/nccl_model.h"
#include "network/network_model.h"
#include "request/collective_spec.h"
#include "schedule/algorithms.h"
#include "topology/topology.h"
#include "workload/workload.h"

namespace collsim {

struct Scenario {
  std::string name;
  std::string description;
  Topology topology;
  NetworkParams network;
  // How the host issues the collectives ("launch"); empty: not said (one process per GPU).
  std::optional<LaunchMode> launch;
  std::vector<CollectiveSpec> collectives;
  std::vector<WorkloadSpec> workloads;  // training jobs ("workload"), run with the collectives
  std::vector<std::string> calibrations;  // the calibration files applied, in order
};

// The fields each part of a scenario file takes; the loader refuses any other, and
// tests/test_schema.cpp checks scenarios/schema/scenario.schema.json lists the same.
// "$schema" names the JSON Schema for editors; the loader ignores it.
inline constexpr FieldDoc kScenarioFields[] = {
    {"$schema",
     R"json({"description": "The JSON Schema of this file, for editors; collsim ignores it.", "type": "string"})json"},
    {"name",
     R"json({"type": "string", "description": "Default: the file's name without .json."})json"},
    {"description",
     R"json({"type": "string", "description": "Free text, shown in the reports."})json"},
    {"topology",
     R"json({"description": "A bundled topology's name (\"dgx-h100\"), a file relative to this one, or a topology object.", "anyOf": [{"type": "string"}, {"$ref": "topology.schema.json"}]})json",
     kRequired},
    {"placement",
     R"json({"description": "GPU node names in rank order: rank r runs on placement[r].", "type": "array", "items": {"type": "string"}})json"},
    {"network",
     R"json({"$ref": "#/definitions/network", "description": "The network model and its parameters (default: the default model, no alpha)."})json"},
    {"collectives",
     R"json({"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/collective"}, "description": "The collectives to run, one after another unless their \"after\" says otherwise."})json"},
    {"workload",
     R"json({"description": "Training jobs: one job, or a list on disjoint ranks (docs/workloads.md).", "oneOf": [{"$ref": "#/definitions/job"}, {"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/job"}}]})json"},
    {"launch",
     R"json({"description": "How the host issues the collectives: \"process_per_gpu\" (the default), or one process driving several GPUs as nccl-tests -g N does, which issues their kernels one after another (a collective then takes at least gpus_per_process x issue_per_gpu).", "oneOf": [{"const": "process_per_gpu"}, {"type": "object", "additionalProperties": false, "properties": "@fields:kLaunchFields"}]})json"},
};
inline constexpr FieldDoc kLaunchFields[] = {
    {"gpus_per_process",
     R"json({"type": "integer", "minimum": 1, "maximum": 65536, "description": "GPUs one process drives (nccl-tests -g N); at most the GPUs the topology has."})json",
     kRequired},
    {"issue_per_gpu",
     R"json({"$ref": "#/definitions/duration", "default": "4.4us", "description": "The host's time to issue one GPU's kernel (docs/nccl.md section 11)."})json"},
};
inline constexpr FieldDoc kNetworkFields[] = {
    {"model",
     R"json({"enum": "@network_model", "default": "@default_network_model", "description": "ideal: alpha + n/beta, no contention; flow: max-min fair sharing of every link; packet: store-and-forward or cut-through packets."})json"},
    {"alpha",
     R"json({"$ref": "#/definitions/duration", "description": "Per-message start-up cost (software latency)."})json"},
    {"routing",
     R"json({"enum": ["auto", "ecmp", "single", "dmodk"], "default": "auto", "description": "auto: dmodk among InfiniBand links, ecmp among any other (Ethernet, RoCE, NVLink); ecmp: a fixed hash of source, destination and hop picks among equal-cost links, as Ethernet switches spread flows; single: always the first; dmodk: the (d mod k)-th of the k equal-cost links into a switch, d the port the route leaves it by towards the destination (InfiniBand's fat-tree routing, as its subnet manager programs it: a leaf's servers spread over the spines by port, and clusters with several spines fold)."})json"},
    {"packet",
     R"json({"$ref": "#/definitions/size", "description": "Packet size (packet model; default 64KiB)."})json"},
    {"switching",
     R"json({"enum": ["store_and_forward", "cut_through"], "description": "Packet model: whether a switch forwards a packet once it has all of it (the default) or as its head arrives."})json"},
    {"calibration",
     R"json({"type": "string", "description": "A calibration file (collsim calibrate), relative to this scenario; its terms apply after the inline cost's, over them."})json"},
    {"cost",
     R"json({"$ref": "#/definitions/cost", "description": "Costs beyond the links' alpha-beta, inline (a calibration file gives the same)."})json"},
};
// Fields every collective takes; the rest belong to its algorithm's entry (the
// catalogue's AlgorithmEntry::options).
inline constexpr FieldDoc kCollectiveFields[] = {
    {"name",
     R"json({"type": "string", "description": "Unique; default \"<op>#<index>\". A routed all-to-all becomes <name>.dispatch and <name>.combine."})json"},
    {"op", R"json({"enum": "@op", "description": "The collective, as NCCL names it."})json",
     kRequired},
    {"algorithm",
     R"json({"$ref": "#/definitions/algorithm", "description": "How it runs (schema.md's Algorithms table); default: the one marked (default) there for its op."})json"},
    {"bytes",
     R"json({"$ref": "#/definitions/size", "description": "nccl-tests' size: the per-rank buffer (required except for barriers and routed all-to-alls)."})json"},
    {"dtype",
     R"json({"enum": "@dtype", "default": "float32", "description": "Element type: counts are bytes / its size, chunks split on elements."})json"},
    {"redop",
     R"json({"enum": "@redop", "default": "sum", "description": "The reduction (the replayer checks its results bit for bit)."})json"},
    {"root",
     R"json({"type": "integer", "minimum": 0, "default": 0, "description": "The root of a rooted collective (broadcast, reduce, scatter, gather), a position in ranks."})json"},
    {"ranks",
     R"json({"$ref": "#/definitions/rankList", "description": "Topology ranks taking part, in the algorithm's rank order (default: all)."})json"},
    {"after",
     R"json({"type": "array", "items": {"type": "string"}, "description": "Names of earlier collectives that must finish first (default: the previous one)."})json"},
    {"routing",
     R"json({"$ref": "#/definitions/routing", "description": "all_to_all for MoE: tokens routed to experts (or a token matrix) instead of bytes; becomes <name>.dispatch and <name>.combine."})json"},
    {"protocol",
     R"json({"enum": "@protocol", "description": "NCCL's protocol as costs (NCCL's base latency once, its per-hop latency per transfer instead of alpha, its payload efficiency, NVLink at NCCL's usable rate); auto tries all three; default none: plain alpha-beta."})json"},
    {"nccl_algo",
     R"json({"type": "string", "description": "With \"algorithm\": \"nccl\" only: what NCCL may pick, in NCCL_ALGO's form: \"ring,tree\", \"^nvls\" for all but those, or per collective \"ring;allreduce:tree,nvls\" (a first list for every collective, then a collective's name and its own list)."})json"},
    {"nccl_proto",
     R"json({"type": "string", "description": "With \"algorithm\": \"nccl\" only (which refuses \"protocol\"): NCCL_PROTO's form: \"simple\", \"^ll128\", or per collective \"^ll128;allreduce:simple\"."})json"},
};
// An all-to-all's "routing": MoE token routing, or an explicit token matrix.
inline constexpr FieldDoc kRoutingFields[] = {
    {"tokens_per_rank",
     R"json({"type": "integer", "minimum": 0, "description": "Tokens each rank routes; each goes to top_k experts."})json"},
    {"bytes_per_token",
     R"json({"$ref": "#/definitions/size", "description": "What one token carries (hidden size x element size)."})json",
     kRequired},
    {"experts",
     R"json({"type": "integer", "minimum": 1, "description": "Experts E, in equal contiguous blocks over the ranks unless expert_ranks places them."})json"},
    {"top_k",
     R"json({"type": "integer", "minimum": 1, "default": 1, "description": "Experts each token goes to."})json"},
    {"expert_load",
     R"json({"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "description": "The fraction of routed tokens each expert receives, one per expert, each 0 to 1, summing to 1 (default: uniform)."})json"},
    {"expert_ranks",
     R"json({"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "The rank (a position in the collective's ranks) hosting each expert, one per expert. Default: equal contiguous blocks, rank r hosting experts r*E/K .. (r+1)*E/K - 1, which needs the expert count E to be a multiple of the rank count K."})json"},
    {"matrix",
     R"json({"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}, "description": "Tokens rank s sends rank d at [s][d]; with it, the other fields but bytes_per_token are refused."})json"},
};

Scenario load_scenario(const std::filesystem::path& file);
// For what works on a scenario's collectives (plan, trace, compare, validate): an
// InputError when it has none, only a "workload".
void require_collectives(const Scenario& s);

// Sets the scenario's launch mode, and the host issue time of its cost model to match.
void set_launch(Scenario& s, LaunchMode launch);

// A topology as `collsim topo` and Python's collsim.topology take it: a bundled name,
// a topology file, a scenario file (its topology, with its placement), or JSON text of
// either. Relative file names resolve against `base_dir`.
Topology load_topology_argument(const std::string& arg, const std::filesystem::path& base_dir);

// A calibration file (`collsim calibrate`): its α replaces the network's, its
// bandwidth every link's ({"alpha_s", "bandwidth_Bps"}), or per link kind
// ({"links": {"nvlink": {"bandwidth_Bps": ...}}}). `where` names it in errors.
void apply_calibration(Scenario& s, const nlohmann::json& calibration, const std::string& where);

// `base_dir` resolves relative topology files.
Scenario parse_scenario(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                        std::string default_name = "scenario");

// Why the collective's schedule is refused, from a bound on any catalogue algorithm's op
// count; empty when it is not. A stored schedule is held whole (about 115 bytes an op,
// 2^26 ops at most); a streamed one holds only the ops in flight, and is bounded by
// the time its 2^35 ops would take. Checked before generating (plan/plan.h).
std::string schedule_size_problem(const CollectiveSpec& c, bool streamed = false);
// The most ops the collective's schedule may have: 4 x ranks x segments x channels for a
// pipeline (AlgorithmEntry::lanes), else 2 x ranks x max(ranks, segments) x channels (what
// the size check above compares with its bounds).
// Why a scenario's data, bytes x ranks summed over its collectives, is more than collsim
// counts (2^54), or "". The loader checks it; so does a sweep, whose points it never loads.
std::string data_problem(double data);
// Why that data is more packets than a model of packets holds (2^28), or "".
std::string packet_count_problem(const NetworkParams& network, double data);

double schedule_ops_bound(const CollectiveSpec& c);
// What to do about a schedule too big to store: the advice both refusals end with.
inline constexpr const char* kStreamAdvice =
    "run it streamed (collsim run does so by itself for a collective that overlaps no other; "
    "an \"auto\", NVLS or pipelined one, in more than one segment, is stored all the same)";
// The most ops the stored schedules of one run may hold together (about 7.5 GiB).
inline constexpr double kMaxStoredOps = static_cast<double>(1 << 26);

}  // namespace collsim
