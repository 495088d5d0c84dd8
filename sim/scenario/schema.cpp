#include "scenario/schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "nccl/protocol.h"
#include "network/network_model.h"
#include "scenario/cost_json.h"
#include "scenario/scenario.h"
#include "schedule/algorithms.h"
#include "schedule/collective.h"
#include "schedule/generators/hierarchical.h"
#include "topology/topology.h"
#include "topology/topology_json.h"
#include "workload/model.h"
#include "workload/workload_json.h"

namespace collsim {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order they are declared

// The shape of a scenario file: its value types and which object sits where. A
// "properties": "@fields:TABLE" is that table's fields; "@NAME" a registry's list.
constexpr std::string_view kScenarioShape = R"json({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "collsim scenario",
  "description": "A cluster, a network model and the collectives to run on it (docs/scenarios.md shows them at work; docs/schema.md lists every field).",
  "type": "object",
  "additionalProperties": false,
  "definitions": {
    "size": {
      "$ref": "topology.schema.json#/definitions/size"
    },
    "bandwidth": {
      "$ref": "topology.schema.json#/definitions/bandwidth"
    },
    "duration": {
      "$ref": "topology.schema.json#/definitions/duration"
    },
    "countOrAuto": {
      "anyOf": [
        {
          "type": "integer",
          "minimum": 1
        },
        {
          "const": "auto"
        }
      ]
    },
    "rankList": {
      "type": "array",
      "items": {
        "type": "integer",
        "minimum": 0
      },
      "uniqueItems": true
    },
    "network": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kNetworkFields"
    },
    "curve": {
      "description": "[[bytes, bytes per second], ...], sizes increasing.",
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "array",
        "minItems": 2,
        "maxItems": 2,
        "items": [
          {
            "$ref": "#/definitions/size"
          },
          {
            "anyOf": [
              {
                "type": "number",
                "exclusiveMinimum": 0
              },
              {
                "$ref": "#/definitions/bandwidth"
              }
            ]
          }
        ]
      }
    },
    "rates": {
      "description": "Curves keyed \"dtype.op\" (\"float32.sum\") or \"any\".",
      "type": "object",
      "additionalProperties": {
        "$ref": "#/definitions/curve"
      }
    },
    "cost": {
      "description": "The cost model beyond alpha-beta (docs/models.md, \"The cost model\").",
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kCostModelKeys"
    },
    "linkCost": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kLinkCostKeys"
    },
    "algorithm": {
      "description": "A catalogue algorithm for the collective (docs/schema.md, \"Algorithms\"); auto: the planner picks the fastest; nccl: what NCCL would pick.",
      "enum": "@algorithm"
    },
    "collective": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kCollectiveFields"
    },
    "level": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kLevelFields"
    },
    "routing": {
      "description": "all_to_all only: MoE token routing (tokens_per_rank, experts, ...) or an explicit ranks x ranks token matrix. The collective becomes a dispatch and a combine.",
      "type": "object",
      "additionalProperties": false,
      "oneOf": [
        {
          "required": [
            "matrix"
          ]
        },
        {
          "required": [
            "tokens_per_rank",
            "experts"
          ]
        }
      ],
      "dependencies": {
        "matrix": {
          "not": {
            "anyOf": [
              {
                "required": [
                  "tokens_per_rank"
                ]
              },
              {
                "required": [
                  "experts"
                ]
              },
              {
                "required": [
                  "top_k"
                ]
              },
              {
                "required": [
                  "expert_load"
                ]
              },
              {
                "required": [
                  "expert_ranks"
                ]
              }
            ]
          }
        }
      },
      "properties": "@fields:kRoutingFields"
    },
    "job": {
      "type": "object",
      "additionalProperties": false,
      "description": "One training job: the minimal form (gradients + compute) or the model form (model + tokens_per_gpu).",
      "properties": "@fields:kJobKeys"
    },
    "parallelism": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kParallelismKeys"
    },
    "model": {
      "oneOf": [
        {
          "enum": "@model"
        },
        {
          "type": "object",
          "additionalProperties": false,
          "properties": "@fields:kModelKeys"
        }
      ]
    },
    "gpu": {
      "oneOf": [
        {
          "enum": "@gpu"
        },
        {
          "type": "object",
          "additionalProperties": false,
          "properties": "@fields:kGpuKeys"
        }
      ]
    }
  },
  "anyOf": [
    {
      "required": [
        "collectives"
      ]
    },
    {
      "required": [
        "workload"
      ]
    }
  ],
  "properties": "@fields:kScenarioFields"
})json";

// The shape of a topology file; each preset's object is written from kPresetFields.
constexpr std::string_view kTopologyShape = R"json({
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "collsim topology",
  "description": "A cluster for collsim: a preset ({\"preset\": \"cluster\", ...}) or an explicit graph ({\"nodes\": [...], \"links\": [...]}). docs/scenarios.md, \"Topologies\", shows them at work; docs/schema.md lists every field.",
  "oneOf": [
    {
      "$ref": "#/definitions/preset"
    },
    {
      "$ref": "#/definitions/graph"
    }
  ],
  "definitions": {
    "size": {
      "description": "Bytes: a count, or a string like \"64MiB\", \"1GB\" (GB = 1e9, GiB = 2^30).",
      "anyOf": [
        {
          "type": "integer",
          "minimum": 0
        },
        {
          "type": "string",
          "pattern": "^\\s*([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*((Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P)?B)?\\s*$"
        }
      ]
    },
    "bandwidth": {
      "description": "Bytes or bits per second, one direction: \"450GB/s\", \"400Gbps\".",
      "type": "string",
      "pattern": "^\\s*([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*(Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P)?(B/s|Bps|b/s|bps)\\s*$"
    },
    "duration": {
      "description": "Seconds as a number, or a string like \"5us\", \"1.5ms\", \"100ns\".",
      "anyOf": [
        {
          "type": "number",
          "minimum": 0
        },
        {
          "type": "string",
          "pattern": "^\\s*([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*(s|ms|us|µs|ns|ps|min)\\s*$"
        }
      ]
    },
    "ratio": {
      "description": "Downlink : uplink capacity, from 1 to 1000 (2 means 2:1).",
      "type": "number",
      "minimum": 1,
      "maximum": 1000
    },
    "linkKind": {
      "enum": "@link_kind"
    },
    "nodeKind": {
      "enum": "@node_kind"
    },
    "schemaRef": {
      "description": "The JSON Schema of this file, for editors; collsim ignores it.",
      "type": "string"
    },
    "preset": {
      "oneOf": "@presets"
    },
    "server": {
      "description": "What a dgx server and every server of a cluster have (gpu: not on dgx-h100, an H100's).",
      "properties": {
        "gpu": {
          "enum": ["a100", "h100", "h200", "h800", "b200"],
          "description": "The GPUs' model: its server's NVLink, PCIe and NIC rates (the fields beside it override them), whether its NVSwitch reduces (NVLink SHARP: from h100 on), and the generation NCCL's tuning tables are read for. Without it: H100's rates, and the generation guessed from the NVLink bandwidth (below 450 GB/s an Ampere, so name an h800)."
        },
        "cpu": {
          "enum": ["intel", "amd"],
          "description": "The hosts' CPUs. Across hosts NCCL caps its LL protocol by their vendor, not by the GPUs (llMaxBws: Intel 39 GB/s on 2 hosts, 20.4 on more; AMD 22.5 and 19.0). Default: the gpu's DGX's (a100: AMD EPYC; h100, h200, h800, b200: Intel Xeon); without a gpu, AMD for an Ampere, Intel from Hopper on."
        },
        "gpus_per_node": {
          "type": "integer",
          "minimum": 1,
          "maximum": 1024,
          "default": 8,
          "description": "GPUs per server, each with a NIC of its own (a rail)."
        },
        "nvlink": {
          "$ref": "#/definitions/bandwidth",
          "description": "Per GPU per direction through the NVSwitch fabric.",
          "default": "450GB/s"
        },
        "nvlink_latency": {
          "$ref": "#/definitions/duration",
          "description": "Of each GPU's link to the NVSwitch fabric (default 0)."
        },
        "pcie": {
          "$ref": "#/definitions/bandwidth",
          "description": "GPU to its NIC.",
          "default": "64GB/s"
        },
        "nic": {
          "$ref": "#/definitions/bandwidth",
          "description": "Per NIC (one per GPU).",
          "default": "50GB/s"
        },
        "nic_latency": {
          "$ref": "#/definitions/duration",
          "description": "Of each network link: NIC to leaf, leaf to spine, spine to core (default 0)."
        }
      }
    },
    "dimension": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kDimensionFields"
    },
    "graph": {
      "description": "An explicit graph: nodes and the links between them.",
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kGraphFields"
    },
    "node": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kNodeFields"
    },
    "link": {
      "type": "object",
      "additionalProperties": false,
      "properties": "@fields:kLinkFields"
    }
  }
})json";

Json names(const std::vector<std::string>& list) {
  return Json(list);
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out{"auto", "nccl"};
  for (const AlgorithmEntry& e : algorithm_catalogue())
    if (std::find(out.begin(), out.end(), e.algorithm) == out.end()) out.emplace_back(e.algorithm);
  return out;
}

std::vector<std::string> protocol_names() {
  std::vector<std::string> out;
  for (Protocol p : kProtocols) out.emplace_back(name_of(p));
  out.emplace_back("auto");
  return out;
}

// What "@NAME" stands for.
Json registry(std::string_view name) {
  if (name == "algorithm") return names(algorithm_names());
  if (name == "op") return names(all_collective_names());
  if (name == "dtype") return names(all_dtype_names());
  if (name == "redop") return names(all_reduce_op_names());
  if (name == "protocol") return names(protocol_names());
  if (name == "network_model") return names(network_model_names());
  if (name == "default_network_model") return std::string(name_of(kDefaultNetworkModel));
  if (name == "link_kind") return names(all_link_kind_names());
  if (name == "node_kind") return names(all_node_kind_names());
  if (name == "model") return names(model_preset_names());
  if (name == "gpu") return names(gpu_preset_names());
  if (name == "presets") {
    Json refs = Json::array();
    for (const PresetFields& p : kPresetFields)
      refs.push_back({{"$ref", "#/definitions/" + std::string(p.definition)}});
    return refs;
  }
  throw std::logic_error("schema: no registry \"" + std::string(name) + "\"");
}

struct Field {
  std::string name;
  Json schema;
  bool required = false;
};

std::vector<Field> fields_of(std::span<const FieldDoc> table) {
  std::vector<Field> out;
  for (const FieldDoc& f : table)
    out.push_back({std::string(f.name), Json::parse(f.schema), f.required});
  return out;
}

// A collective takes its own fields and every option of an algorithm; a hierarchical
// level those of the algorithms that run on groups, as the collective declares them.
std::vector<Field> collective_fields() {
  std::vector<Field> out = fields_of(kCollectiveFields);
  for (Field& f : fields_of(algorithm_option_docs())) out.push_back(std::move(f));
  return out;
}

std::vector<Field> level_fields() {
  std::vector<Field> out = fields_of(kLevelFields);
  for (const FieldDoc& option : algorithm_option_docs()) {
    const bool on_groups =
        std::any_of(algorithm_catalogue().begin(), algorithm_catalogue().end(),
                    [&](const AlgorithmEntry& e) { return e.on_groups && e.takes(option.name); });
    if (on_groups)
      out.push_back(
          {std::string(option.name),
           {{"$ref", "#/definitions/collective/properties/" + std::string(option.name)}}});
  }
  return out;
}

std::vector<Field> table(std::string_view name) {
  static const std::map<std::string_view, std::span<const FieldDoc>> kTables = {
      {"kScenarioFields", kScenarioFields},
      {"kLaunchFields", kLaunchFields},
      {"kNetworkFields", kNetworkFields},
      {"kCostModelKeys", kCostModelKeys},
      {"kLinkCostKeys", kLinkCostKeys},
      {"kRoutingFields", kRoutingFields},
      {"kJobKeys", kJobKeys},
      {"kParallelismKeys", kParallelismKeys},
      {"kModelKeys", kModelKeys},
      {"kGpuKeys", kGpuKeys},
      {"kDimensionFields", kDimensionFields},
      {"kGraphFields", kGraphFields},
      {"kNodeFields", kNodeFields},
      {"kLinkFields", kLinkFields}};
  if (name == "kCollectiveFields") return collective_fields();
  if (name == "kLevelFields") return level_fields();
  const auto it = kTables.find(name);
  if (it == kTables.end()) throw std::logic_error("schema: no field table " + std::string(name));
  return fields_of(it->second);
}

Json expand(const Json& v, std::string_view preset);

// Into `out`: "required" (every required field; left out when none is and `always` is
// false) and the fields under "properties", each expanded.
void add_fields(Json& out, const std::vector<Field>& fields, std::string_view preset, bool always) {
  Json required = Json::array(), properties = Json::object();
  for (const Field& f : fields) {
    if (f.required) required.push_back(f.name);
    properties[f.name] = expand(f.schema, preset);
  }
  if (always || !required.empty()) out["required"] = std::move(required);
  if (always) out["additionalProperties"] = false;
  out["properties"] = std::move(properties);
}

constexpr std::string_view kFieldsMarker = "@fields:";

// An object whose "properties" names a table: its fields where the marker stood.
Json expand_object(const Json& v, std::string_view preset) {
  Json out = Json::object();
  for (const auto& [key, value] : v.items()) {
    const std::string text = value.is_string() ? value.get<std::string>() : std::string();
    if (key == "properties" && text.starts_with(kFieldsMarker)) {
      add_fields(out, table(std::string_view(text).substr(kFieldsMarker.size())), preset, false);
    } else {
      out[key] = expand(value, preset);
    }
  }
  return out;
}

// `v` with every marker replaced; "@preset" is the preset whose fields these are.
Json expand(const Json& v, std::string_view preset) {
  if (v.is_object()) return expand_object(v, preset);
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& item : v) out.push_back(expand(item, preset));
    return out;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "@preset") return std::string(preset);
    if (s.starts_with('@')) return registry(std::string_view(s).substr(1));
  }
  return v;
}

// Each preset's object, declared by its row of kPresetFields.
Json preset_object(const PresetFields& p) {
  Json o = {{"description", p.description}, {"type", "object"}};
  add_fields(o, fields_of(preset_fields(p)), p.preset, true);
  if (!p.rules.empty()) {
    const Json rules = Json::parse(p.rules);
    for (const auto& [key, value] : rules.items()) o[key] = value;
  }
  return o;
}

std::string text_of(const Json& doc) {
  return doc.dump(2, ' ', false) + "\n";
}

Json scenario_document() {
  return expand(Json::parse(kScenarioShape), "");
}

Json topology_document() {
  const Json shape = expand(Json::parse(kTopologyShape), "");
  Json doc = shape;
  Json& definitions = doc["definitions"];
  definitions = Json::object();
  for (const auto& [name, value] : shape["definitions"].items()) {
    definitions[name] = value;
    if (name == "preset")
      for (const PresetFields& p : kPresetFields)
        definitions[std::string(p.definition)] = preset_object(p);
  }
  return doc;
}

// --- The reference page: one table per object of the schema ---

// A table cell: on one line, its bars escaped.
std::string escape_cell(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  for (std::size_t at = s.find('|'); at != std::string::npos; at = s.find('|', at + 2))
    s.insert(at, 1, '\\');
  return s;
}

// What a field takes, in a few words: a type with its bounds, the values of an enum, a
// definition's name, or the alternatives.
std::string type_of(const Json& s) {
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"].get<std::string>();
    return "`" + ref.substr(ref.rfind('/') + 1) + "`";
  }
  if (s.contains("const")) return "`" + s["const"].dump() + "`";
  if (s.contains("enum")) {
    std::string out;
    for (const Json& v : s["enum"]) out += (out.empty() ? "" : ", ") + ("`" + v.dump() + "`");
    return "one of " + out;
  }
  for (const char* any : {"anyOf", "oneOf"})
    if (s.contains(any)) {
      std::string out;
      for (const Json& v : s[any]) out += (out.empty() ? "" : " or ") + type_of(v);
      return out;
    }
  std::string out =
      s.contains("type") && s["type"].is_string() ? s["type"].get<std::string>() : "any";
  if (out == "array" && s.contains("items") && s["items"].is_object())
    out = "array of " + type_of(s["items"]);
  const bool low = s.contains("minimum"), above = s.contains("exclusiveMinimum");
  const std::string bound = low ? s["minimum"].dump() : above ? s["exclusiveMinimum"].dump() : "";
  if (s.contains("maximum") && low)
    out += fmt::format(", {} to {}", bound, s["maximum"].dump());
  else if (s.contains("maximum"))
    out += fmt::format(" {} {}, ≤ {}", above ? ">" : "", bound, s["maximum"].dump());
  else if (low || above)
    out += fmt::format(" {} {}", low ? "≥" : ">", bound);
  return out;
}

// What a "$ref" inside this document points at (null for another file's), so that a field
// that is another's ("level.segments": the collective's) reads as that one.
const Json* referenced(const Json& doc, const Json& s) {
  if (!s.contains("$ref")) return nullptr;
  const std::string ref = s["$ref"].get<std::string>();
  if (ref.rfind("#/", 0) != 0) return nullptr;
  const Json::json_pointer at(ref.substr(1));
  return doc.contains(at) ? &doc.at(at) : nullptr;
}

void object_table(std::string& out, const std::string& title, const Json& o, const Json& doc) {
  if (!o.is_object() || !o.contains("properties") || !o["properties"].is_object()) return;
  out += "### `" + title + "`\n\n";
  if (o.contains("description")) out += escape_cell(o["description"].get<std::string>()) + "\n\n";
  std::vector<std::string> required;
  if (o.contains("required"))
    for (const Json& r : o["required"]) required.push_back(r.get<std::string>());
  out += "| field | takes | default | what it is |\n|---|---|---|---|\n";
  for (const auto& [name, field] : o["properties"].items()) {
    const bool needed = std::find(required.begin(), required.end(), name) != required.end();
    // Another field's schema (not a definition's type): that field's row.
    const Json* other = referenced(doc, field);
    const bool same_as_field =
        other && field["$ref"].get<std::string>().find("/properties/") != std::string::npos;
    const Json& s = same_as_field ? *other : field;
    // Without a word of its own, a field says what its definition says.
    const std::string about = s.contains("description") ? s["description"].get<std::string>()
                              : other                   ? other->value("description", "")
                                                        : "";
    out += fmt::format("| `{}`{} | {} | {} | {} |\n", name, needed ? " (required)" : "",
                       escape_cell(type_of(s)),
                       s.contains("default") ? "`" + escape_cell(s["default"].dump()) + "`" : "",
                       escape_cell(about));
  }
  out += "\n";
}

// `o`'s table if it has fields, and those of its alternatives that have (a model given
// by its numbers).
void tables_of(std::string& out, const std::string& title, const Json& o, const Json& doc) {
  object_table(out, title, o, doc);
  for (const char* any : {"oneOf", "anyOf"})
    if (o.contains(any))
      for (const Json& alternative : o[any]) object_table(out, title, alternative, doc);
}

// Every object of `doc` with fields: the document itself, its fields' alternatives (an
// object form of "launch"), and each definition.
void reference_of(std::string& out, const std::string& name, const Json& doc) {
  tables_of(out, name, doc, doc);
  const Json properties = doc.value("properties", Json::object());
  for (const auto& [key, value] : properties.items())
    for (const char* any : {"oneOf", "anyOf"})
      if (value.contains(any))
        for (const Json& alternative : value[any])
          object_table(out, name + "." + key, alternative, doc);
  if (!doc.contains("definitions")) return;
  for (const auto& [key, value] : doc["definitions"].items()) tables_of(out, key, value, doc);
}

std::vector<std::string_view> field_names_of(const std::vector<OptionDef>& options) {
  std::vector<std::string_view> out;
  for (const OptionDef& o : options) out.push_back(o.name);
  return out;
}

// The algorithms "algorithm" names, one row per algorithm and what it does (entries of
// one algorithm that do the same for several collectives share their row), algorithms in
// the catalogue's order; "(default)" marks a collective's first entry, what it runs
// without "algorithm".
void algorithm_table(std::string& out) {
  out +=
      "## Algorithms\n\n"
      "What a collective's `\"algorithm\"` (and a hierarchy level's) takes, besides `\"auto\"` "
      "(every applicable algorithm simulated alone on the network, the fastest kept) and "
      "`\"nccl\"` (what NCCL would pick, [nccl.md](nccl.md)): the collectives each serves, "
      "the options it reads besides a collective's own fields, and what its schedule does. "
      "Without `\"algorithm\"` a collective runs the one marked (default).\n\n"
      "| algorithm | collectives | options | what it does |\n|---|---|---|---|\n";
  struct Row {
    const AlgorithmEntry* first;
    std::string collectives;
  };
  std::vector<Row> rows;
  std::vector<CollectiveOp> defaulted;
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    std::string op(name_of(e.op));
    if (std::find(defaulted.begin(), defaulted.end(), e.op) == defaulted.end()) {
      defaulted.push_back(e.op);
      op += " (default)";
    }
    const auto same = [&](const Row& r) {
      return r.first->algorithm == e.algorithm && r.first->summary == e.summary &&
             field_names_of(r.first->options) == field_names_of(e.options);
    };
    const auto row = std::find_if(rows.begin(), rows.end(), same);
    if (row != rows.end()) {
      row->collectives += ", " + op;
      continue;
    }
    // After the last row of its algorithm, if it has one: an algorithm's rows together.
    const auto last = std::find_if(rows.rbegin(), rows.rend(),
                                   [&](const Row& r) { return r.first->algorithm == e.algorithm; });
    rows.insert(last == rows.rend() ? rows.end() : last.base(), {&e, op});
  }
  for (const Row& r : rows) {
    std::string options;
    for (std::string_view o : field_names_of(r.first->options))
      options += (options.empty() ? "`" : ", `") + std::string(o) + "`";
    out += fmt::format("| `{}` | {} | {} | {} |\n", r.first->algorithm, r.collectives, options,
                       escape_cell(std::string(r.first->summary)));
  }
  out += "\n";
}

}  // namespace

std::string scenario_schema() {
  return text_of(scenario_document());
}

std::string topology_schema() {
  return text_of(topology_document());
}

namespace {

// Every "$ref" under `v` into the topology file made local: "topology.schema.json" is
// definitions.topology, "topology.schema.json#/definitions/X" definitions.X.
void localise_refs(Json& v) {
  constexpr std::string_view file = "topology.schema.json";
  if (v.is_object()) {
    if (auto ref = v.find("$ref"); ref != v.end() && ref->is_string()) {
      const std::string target = ref->get<std::string>();
      if (target == file)
        *ref = "#/definitions/topology";
      else if (target.starts_with(std::string(file) + "#"))
        *ref = target.substr(file.size());
    }
    for (auto& [key, value] : v.items()) localise_refs(value);
  } else if (v.is_array()) {
    for (auto& value : v) localise_refs(value);
  }
}

}  // namespace

std::string scenario_schema_whole() {
  Json doc = scenario_document();
  Json topology = topology_document();
  Json& definitions = doc["definitions"];
  for (const auto& [name, value] : topology["definitions"].items()) {
    // The scenario's own definitions of these are references to the topology's.
    const auto mine = definitions.find(name);
    if (mine != definitions.end() &&
        *mine != Json{{"$ref", "topology.schema.json#/definitions/" + name}})
      throw std::logic_error("schema: the scenario and topology files both define " + name);
    definitions[name] = value;
  }
  topology.erase("definitions");
  topology.erase("$schema");
  definitions["topology"] = std::move(topology);
  localise_refs(doc);
  return text_of(doc);
}

std::string schema_reference() {
  std::string out =
      "# Scenario and topology fields\n\n"
      "Written by `collsim schema --markdown` from the tables the loaders read (do not edit: "
      "`tests/test_schema.cpp` checks this page is what it prints). What the fields mean in "
      "practice, with examples: [scenarios.md](scenarios.md).\n\n"
      "## Scenario files\n\n";
  reference_of(out, "scenario", scenario_document());
  algorithm_table(out);
  out += "## Topology files\n\n";
  reference_of(out, "topology", topology_document());
  return out;
}

}  // namespace collsim
