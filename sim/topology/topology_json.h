#pragma once
// Topologies from JSON: a preset ({"preset": "switch", "gpus": 8, ...}), an inline
// graph ({"nodes": [...], "links": [...]}), a file path, or a bundled name.
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topology/topology.h"

namespace collsim {

class JsonView;

// The fields each form of topology takes; the loader refuses any other, and
// tests/test_schema.cpp checks scenarios/schema/topology.schema.json lists the same.
// "$schema" names the JSON Schema for editors; the loader ignores it.
inline constexpr std::string_view kGraphFields[] = {"$schema", "name", "description", "nodes",
                                                    "links"};
inline constexpr std::string_view kNodeFields[] = {"name", "kind",  "rank",
                                                   "host", "sharp", "sharp_efficiency"};
inline constexpr std::string_view kLinkFields[] = {"src",     "dst",  "bandwidth",
                                                   "latency", "kind", "duplex"};
inline constexpr std::string_view kDimensionFields[] = {"shape", "size", "bandwidth", "latency",
                                                        "kind"};
inline constexpr std::string_view kSwitchPresetFields[] = {"$schema",   "preset",  "gpus",
                                                           "bandwidth", "latency", "kind"};
inline constexpr std::string_view kRingPresetFields[] = {
    "$schema", "preset", "gpus", "bandwidth", "latency", "kind", "bidirectional"};
inline constexpr std::string_view kDgxPresetFields[] = {
    "$schema", "preset", "gpus_per_node", "nvlink", "nvlink_latency", "pcie", "nic", "nic_latency"};
inline constexpr std::string_view kClusterPresetFields[] = {"$schema",
                                                            "preset",
                                                            "nodes",
                                                            "gpus_per_node",
                                                            "nvlink",
                                                            "nvlink_latency",
                                                            "pcie",
                                                            "nic",
                                                            "nic_latency",
                                                            "radix",
                                                            "oversubscription",
                                                            "spines",
                                                            "fabric",
                                                            "pod_nodes",
                                                            "cores",
                                                            "core_oversubscription"};
inline constexpr std::string_view kTorusPresetFields[] = {"$schema",   "preset",  "dims",
                                                          "bandwidth", "latency", "kind"};
inline constexpr std::string_view kMultidimPresetFields[] = {"$schema", "preset", "dims"};

struct PresetFields {
  std::string_view preset;
  std::span<const std::string_view> fields;
};
// Every preset with its fields (nvl72 takes the switch's).
inline constexpr PresetFields kPresetFields[] = {
    {"switch", kSwitchPresetFields},    {"nvl72", kSwitchPresetFields},
    {"ring", kRingPresetFields},        {"dgx-h100", kDgxPresetFields},
    {"cluster", kClusterPresetFields},  {"torus", kTorusPresetFields},
    {"multidim", kMultidimPresetFields}};

// `base_dir` resolves relative file names (the scenario's folder).
Topology load_topology(const JsonView& spec, const std::filesystem::path& base_dir);
// Where bundled topologies are looked for: $COLLSIM_TOPOLOGY_PATH, then the
// source tree's topologies/ folder.
std::vector<std::filesystem::path> topology_search_path();
std::vector<std::string> bundled_topology_names();
// The inverse of loading an inline graph: a JSON document that loads back equal.
nlohmann::json topology_to_json(const Topology& t);

}  // namespace collsim
