#pragma once
// Topologies from JSON: a preset ({"preset": "switch", "gpus": 8, ...}), an inline
// graph ({"nodes": [...], "links": [...]}), a file path, or a bundled name.
#include <algorithm>
#include <array>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_doc.h"
#include "topology/topology.h"

namespace collsim {

class JsonView;

// Tables joined end to end, at compile time (presets that share a server's fields).
template <std::size_t... N>
constexpr std::array<FieldDoc, (N + ...)> join_fields(const FieldDoc (&... tables)[N]) {
  std::array<FieldDoc, (N + ...)> out{};
  std::size_t at = 0;
  ((std::copy(std::begin(tables), std::end(tables), out.begin() + at), at += N), ...);
  return out;
}

// The fields each form of topology takes; the loader refuses any other, and
// tests/test_schema.cpp checks scenarios/schema/topology.schema.json lists the same.
// "$schema" names the JSON Schema for editors; the loader ignores it.
inline constexpr FieldDoc kGraphFields[] = {
    {"$schema", R"json({"$ref": "#/definitions/schemaRef"})json"},
    {"name", R"json({"type": "string", "description": "The topology's name in the reports."})json"},
    {"description", R"json({"type": "string", "description": "Free text."})json"},
    {"gpu",
     R"json({"enum": ["a100", "h100", "h200", "h800", "b200"], "description": "The GPUs' model: the generation NCCL's tuning tables are read for (without it, guessed from the GPUs' NVLink bandwidth) and the default sharp_efficiency of a switch that reduces. The links are the file's."})json"},
    {"cpu", R"json({"$ref": "#/definitions/server/properties/cpu"})json"},
    {"nodes",
     R"json({"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/node"}, "description": "GPUs and what connects them."})json",
     kRequired},
    {"links",
     R"json({"type": "array", "items": {"$ref": "#/definitions/link"}, "description": "Full duplex unless a link says otherwise."})json",
     kRequired},
};
inline constexpr FieldDoc kNodeFields[] = {
    {"name", R"json({"type": "string", "description": "Unique; links and placement name it."})json",
     kRequired},
    {"kind",
     R"json({"$ref": "#/definitions/nodeKind", "description": "gpu, or what forwards between them: nvswitch, pcie_switch, nic, switch, leaf, spine, core, cpu."})json",
     kRequired},
    {"rank",
     R"json({"type": "integer", "minimum": 0, "maximum": 1048576, "description": "GPUs only: the rank it hosts (default: the order GPUs are listed)."})json"},
    {"host",
     R"json({"type": "integer", "minimum": 0, "maximum": 1048576, "description": "Which server the node sits in: on every GPU and NIC, or on none. Where no node names one, the servers are the islands NVLink, NVSwitch and PCIe links join (with their NICs), when there are several."})json"},
    {"sharp",
     R"json({"type": "boolean", "description": "Switches only: reduces in the switch. An nvswitch reduces and multicasts (NVLink SHARP: nvls, nvls_tree); a network switch (switch, leaf, spine, core) reduces what the GPUs' NICs send it (InfiniBand SHARP: collnet_direct, collnet_chain, and nvls across hosts)."})json"},
    {"sharp_efficiency",
     R"json({"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "With sharp: the fraction of the link rate the switch's own transfers reach. Default: an nvswitch 0.85 (NCCL's nvlsEfficiency of the GPUs' generation), a network switch 1 (SHARP's streaming aggregation at line rate)."})json"},
};
inline constexpr FieldDoc kLinkFields[] = {
    {"src", R"json({"type": "string", "description": "A node's name."})json", kRequired},
    {"dst", R"json({"type": "string", "description": "A node's name."})json", kRequired},
    {"bandwidth",
     R"json({"$ref": "#/definitions/bandwidth", "description": "Its rate (each way, when duplex)."})json",
     kRequired},
    {"latency",
     R"json({"$ref": "#/definitions/duration", "description": "Paid by every transfer that crosses it (default 0)."})json"},
    {"kind",
     R"json({"$ref": "#/definitions/linkKind", "description": "Which of NCCL's latencies and which cost-model terms it takes."})json",
     kRequired},
    {"duplex",
     R"json({"type": "boolean", "default": true, "description": "true: one cable, a link each way; false: src to dst only."})json"},
};
// What the presets of alike links (switch, ring, torus, a multidim dimension; nvl72 its latency)
// share.
inline constexpr FieldDoc kPresetBandwidth[] = {
    {"bandwidth",
     R"json({"$ref": "#/definitions/bandwidth", "description": "Of every link, each direction."})json",
     kRequired},
};
inline constexpr FieldDoc kPresetLatency[] = {
    {"latency",
     R"json({"$ref": "#/definitions/duration", "description": "Of every link, paid once per link crossed (default 0)."})json"},
};
inline constexpr FieldDoc kPresetKind[] = {
    {"kind",
     R"json({"$ref": "#/definitions/linkKind", "default": "nvlink", "description": "The links' kind: which of NCCL's latencies and which cost-model terms they take."})json"},
};
inline constexpr FieldDoc kDimensionOwnFields[] = {
    {"shape",
     R"json({"enum": ["ring", "switch", "fully_connected"], "description": "How the groups of this dimension are wired."})json",
     kRequired},
    {"size",
     R"json({"type": "integer", "minimum": 1, "maximum": 65536, "description": "Members of each group: the sizes multiply to the GPU count."})json",
     kRequired},
};
inline constexpr auto kDimensionFields =
    join_fields(kDimensionOwnFields, kPresetBandwidth, kPresetLatency, kPresetKind);
// What every preset takes: "$schema" (for editors; the loader ignores it) and its name.
inline constexpr FieldDoc kPresetCommonFields[] = {
    {"$schema", R"json({"$ref": "#/definitions/schemaRef"})json"},
    {"preset", R"json({"const": "@preset", "description": "Which preset."})json", kRequired},
};
inline constexpr FieldDoc kPresetGpus[] = {
    {"gpus",
     R"json({"type": "integer", "minimum": 1, "maximum": 1048576, "description": "GPUs, ranks 0 to gpus - 1."})json",
     kRequired},
};
inline constexpr auto kSwitchPresetFields =
    join_fields(kPresetGpus, kPresetBandwidth, kPresetLatency, kPresetKind);
inline constexpr FieldDoc kNvl72OwnFields[] = {
    {"gpus",
     R"json({"type": "integer", "minimum": 1, "maximum": 1048576, "default": 72, "description": "GPUs in the NVLink domain."})json"},
    {"bandwidth", R"json({"$ref": "#/definitions/bandwidth", "default": "900GB/s"})json"},
};
// An NVLink domain: its links are NVLink (no "kind").
inline constexpr auto kNvl72PresetFields = join_fields(kNvl72OwnFields, kPresetLatency);
inline constexpr FieldDoc kRingOwnFields[] = {
    {"bidirectional",
     R"json({"type": "boolean", "default": true, "description": "true: a link each way between neighbours; false: one way round."})json"},
};
inline constexpr auto kRingPresetFields =
    join_fields(kPresetGpus, kPresetBandwidth, kPresetLatency, kPresetKind, kRingOwnFields);
// What a dgx-h100 server and every server of a cluster have (the schema's "server").
// The GPUs' model, on the presets that build servers of any (dgx-h100 is an H100's).
inline constexpr FieldDoc kServerGpuField[] = {
    {"gpu", R"json({"$ref": "#/definitions/server/properties/gpu"})json"},
};
inline constexpr FieldDoc kServerFields[] = {
    {"cpu", R"json({"$ref": "#/definitions/server/properties/cpu"})json"},
    {"gpus_per_node", R"json({"$ref": "#/definitions/server/properties/gpus_per_node"})json"},
    {"nvlink", R"json({"$ref": "#/definitions/server/properties/nvlink"})json"},
    {"nvlink_latency", R"json({"$ref": "#/definitions/server/properties/nvlink_latency"})json"},
    {"pcie", R"json({"$ref": "#/definitions/server/properties/pcie"})json"},
    {"nic", R"json({"$ref": "#/definitions/server/properties/nic"})json"},
    {"nic_latency", R"json({"$ref": "#/definitions/server/properties/nic_latency"})json"},
};
inline constexpr auto kDgxPresetFields = join_fields(kServerFields);
inline constexpr auto kDgxAnyPresetFields = join_fields(kServerGpuField, kServerFields);
inline constexpr FieldDoc kClusterNodesField[] = {
    {"nodes",
     R"json({"type": "integer", "minimum": 1, "maximum": 1048576, "description": "Servers."})json",
     kRequired},
};
inline constexpr FieldDoc kClusterFabricFields[] = {
    {"radix",
     R"json({"type": "integer", "minimum": 2, "maximum": 65536, "default": 64, "description": "Leaf switch ports: a leaf takes radix x o / (o + 1) servers of its rail."})json"},
    {"oversubscription",
     R"json({"$ref": "#/definitions/ratio", "default": 1, "description": "A leaf's server-facing rate over its uplink rate (2: 2:1)."})json"},
    {"spines",
     R"json({"type": "integer", "minimum": 1, "maximum": 65536, "default": 1, "description": "Spine switches (per pod): every leaf has a link to each, splitting its uplink rate."})json"},
    {"fabric",
     R"json({"$ref": "#/definitions/linkKind", "default": "ib", "description": "The network links' kind (ib, roce, ethernet)."})json"},
    {"sharp",
     R"json({"type": "boolean", "default": false, "description": "The leaves, spines and cores reduce in the switch (InfiniBand SHARP, with NCCL_COLLNET_ENABLE and its plugin): NCCL's CollNet algorithms (collnet_direct, collnet_chain) and its NVLS across hosts (nvls) apply."})json"},
    {"pod_nodes",
     R"json({"type": "integer", "minimum": 1, "maximum": 1048576, "description": "Servers per pod: makes the cluster three tiers."})json"},
    {"cores",
     R"json({"type": "integer", "minimum": 1, "maximum": 65536, "default": 1, "description": "Core switches over the pods' spines (three tiers)."})json"},
    {"core_oversubscription",
     R"json({"$ref": "#/definitions/ratio", "default": 1, "description": "A spine's pod-facing rate over its rate to the cores."})json"},
};
inline constexpr auto kClusterPresetFields =
    join_fields(kClusterNodesField, kServerGpuField, kServerFields, kClusterFabricFields);
inline constexpr FieldDoc kTorusDims[] = {
    {"dims",
     R"json({"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "integer", "minimum": 1, "maximum": 65536}, "description": "The ring size of each dimension: [4, 4] is 16 GPUs."})json",
     kRequired},
};
inline constexpr auto kTorusPresetFields =
    join_fields(kTorusDims, kPresetBandwidth, kPresetLatency, kPresetKind);
inline constexpr FieldDoc kMultidimPresetFields[] = {
    {"dims",
     R"json({"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/dimension"}, "description": "The dimensions, innermost (a server) first."})json",
     kRequired},
};

struct PresetFields {
  std::string_view preset;
  std::span<const FieldDoc> fields;
  std::string_view definition;  // its object's name in the JSON Schema's "definitions"
  std::string_view description;
  // Rules across its fields, as JSON Schema keywords (the loader checks them in code).
  std::string_view rules = {};
};
// Every preset with its own fields (nvl72 takes the switch's, with defaults of its own).
inline constexpr PresetFields kPresetFields[] = {
    {"switch", kSwitchPresetFields, "switchPreset",
     "GPUs each with one full-duplex link to one non-blocking switch."},
    {"nvl72", kNvl72PresetFields, "nvl72Preset",
     "One NVLink domain on NVSwitch trays that reduce and multicast (NVLS)."},
    {"ring", kRingPresetFields, "ringPreset", "GPUs in a ring of neighbour links."},
    {"dgx-h100", kDgxPresetFields, "dgxPreset",
     "One DGX H100-like server: GPUs on one NVSwitch fabric, a NIC per GPU on PCIe."},
    {"dgx", kDgxAnyPresetFields, "dgxAnyPreset",
     "One DGX-like server of the named GPUs (\"gpu\": a100, h100, h200, h800, b200): GPUs on "
     "one NVSwitch fabric, a NIC per GPU on PCIe. The same as dgx-h100 with its \"gpu\"."},
    {"cluster", kClusterPresetFields, "clusterPreset",
     "Rail-optimized fat tree of dgx-h100-like servers: two tiers (leaves, spines), or three "
     "with pod_nodes (pods of leaves and spines under core switches).",
     R"json({"dependencies": {"cores": ["pod_nodes"], "core_oversubscription": ["pod_nodes"]}})json"},
    {"torus", kTorusPresetFields, "torusPreset", "A 2D or 3D torus: every dimension a ring."},
    {"multidim", kMultidimPresetFields, "multidimPreset",
     "ASTRA-sim-style dimensions, innermost (a server) first."}};

// Everything a preset takes: kPresetCommonFields, then its own.
inline std::vector<FieldDoc> preset_fields(const PresetFields& p) {
  std::vector<FieldDoc> out(std::begin(kPresetCommonFields), std::end(kPresetCommonFields));
  out.insert(out.end(), p.fields.begin(), p.fields.end());
  return out;
}

// `base_dir` resolves relative file names (the scenario's folder).
Topology load_topology(const JsonView& spec, const std::filesystem::path& base_dir);
// Where bundled topologies are looked for: $COLLSIM_TOPOLOGY_PATH, then the
// source tree's topologies/ folder.
std::vector<std::filesystem::path> topology_search_path();
std::vector<std::string> bundled_topology_names();
// The inverse of loading an inline graph: a JSON document that loads back equal.
nlohmann::json topology_to_json(const Topology& t);

}  // namespace collsim
