#pragma once
// The scenario's "workload": one job object or a list of them (see README, Workloads).
#include <filesystem>
#include <vector>

#include "core/json_view.h"
#include "topology/topology.h"
#include "workload/workload.h"

namespace collsim {

// Jobs without "ranks" take the topology's ranks in order, each after the previous
// job's; every job's ranks must be distinct from the others'. `base_dir` resolves a
// Chakra trace's relative prefix.
std::vector<WorkloadSpec> parse_workloads(const JsonView& v, const Topology& topology,
                                          const std::filesystem::path& base_dir = ".");

}  // namespace collsim
