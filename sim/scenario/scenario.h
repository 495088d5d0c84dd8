#pragma once
// A scenario: the cluster, the network model and the collectives to run on it,
// as the user wrote them in JSON, checked and resolved.
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
};

// The fields each part of a scenario file takes; the loader refuses any other, and
// tests/test_schema.cpp checks scenarios/schema/scenario.schema.json lists the same.
// "$schema" names the JSON Schema for editors; the loader ignores it.
inline constexpr std::string_view kScenarioFields[] = {"$schema",     "name",      "description",
                                                       "topology",    "placement", "network",
                                                       "collectives", "workload",  "launch"};
inline constexpr std::string_view kLaunchFields[] = {"gpus_per_process", "issue_per_gpu"};
inline constexpr std::string_view kNetworkFields[] = {
    "model", "alpha", "routing", "packet", "switching", "calibration", "cost"};
// Fields every collective takes; the rest belong to its algorithm's entry (the
// catalogue's AlgorithmEntry::options).
inline constexpr std::string_view kCollectiveFields[] = {
    "name",  "op",    "algorithm", "bytes",    "dtype",     "redop",     "root",
    "ranks", "after", "routing",   "protocol", "nccl_algo", "nccl_proto"};
// An all-to-all's "routing": MoE token routing, or an explicit token matrix.
inline constexpr std::string_view kRoutingFields[] = {
    "tokens_per_rank", "bytes_per_token", "experts", "top_k",
    "expert_load",     "expert_ranks",    "matrix"};

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
double schedule_ops_bound(const CollectiveSpec& c);
// What to do about a schedule too big to store: the advice both refusals end with.
inline constexpr const char* kStreamAdvice =
    "run it streamed (collsim run does so without --out when the collectives run one after "
    "another; an \"auto\", NVLS or pipelined one, in more than one segment, is stored all the "
    "same)";
// The most ops the stored schedules of one run may hold together (about 7.5 GiB).
inline constexpr double kMaxStoredOps = static_cast<double>(1 << 26);

}  // namespace collsim
