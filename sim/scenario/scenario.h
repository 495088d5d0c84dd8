#pragma once
// A scenario: the cluster, the network model and the collectives to run on it,
// as the user wrote them in JSON, checked and resolved.
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "network/network_model.h"
#include "nccl/nccl_model.h"
#include "schedule/algorithms.h"
#include "topology/topology.h"
#include "workload/workload.h"

namespace collsim {

struct CollectiveSpec {
  std::string name;
  std::string json_path;  // "collectives[2]", for errors found later
  CollectiveShape shape;
  std::string algorithm;     // "auto": the planner picks the fastest (plan/plan.h)
  AlgorithmOptions options;  // as written; the planner fills in the rest
  std::int64_t bytes = 0;    // nccl-tests' "size"
  std::vector<int> ranks;             // topology ranks taking part, in the algorithm's rank order
  std::vector<int> after;             // indices of collectives that must finish first
  // "LL", "LL128", "Simple", "auto" (the tuner tries each), or "" (plain α-β).
  std::string protocol;
  NcclFilter nccl_filter;  // "algorithm": "nccl": what "nccl_algo" / "nccl_proto" allow
};

struct Scenario {
  std::string name;
  std::string description;
  Topology topology;
  NetworkParams network;
  std::vector<CollectiveSpec> collectives;
  std::vector<WorkloadSpec> workloads;  // training jobs ("workload"), run with the collectives
};

Scenario load_scenario(const std::filesystem::path& file);

// A calibration file (`collsim calibrate`): its α replaces the network's, its
// bandwidth every link's ({"alpha_s", "bandwidth_Bps"}), or per link kind
// ({"links": {"nvlink": {"bandwidth_Bps": ...}}}). `where` names it in errors.
void apply_calibration(Scenario& s, const nlohmann::json& calibration, const std::string& where);

// `base_dir` resolves relative topology files.
Scenario parse_scenario(const nlohmann::json& doc, const std::filesystem::path& base_dir,
                        std::string default_name = "scenario");

}  // namespace collsim
