#pragma once
// Topologies from JSON: a preset ({"preset": "switch", "gpus": 8, ...}), an inline
// graph ({"nodes": [...], "links": [...]}), a file path, or a bundled name.
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "topology/topology.h"

namespace collsim {

class JsonView;

// `base_dir` resolves relative file names (the scenario's folder).
Topology load_topology(const JsonView& spec, const std::filesystem::path& base_dir);
// Where bundled topologies are looked for: $COLLSIM_TOPOLOGY_PATH, then the
// source tree's topologies/ folder.
std::vector<std::filesystem::path> topology_search_path();
std::vector<std::string> bundled_topology_names();
// The inverse of loading an inline graph: a JSON document that loads back equal.
nlohmann::json topology_to_json(const Topology& t);

}  // namespace collsim
