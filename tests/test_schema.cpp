// The JSON Schema in scenarios/schema/ against the bundled files and against the loader:
// every bundled scenario and topology validates, and the schema names exactly the
// fields and values the loader takes (so neither can drift from the other unnoticed).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
// GCC 12 sees a string copy of "2^63 or more" bytes in valijson's JSON pointer code,
// inlined from libstdc++ (false positives, -Wstringop-overflow and -Wrestrict):
// silenced in this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "scenario/cost_json.h"
#include "scenario/scenario.h"
#include "scenario/schema.h"
#include "schedule/algorithms.h"
#include "schedule/collective.h"
#include "schedule/generators/hierarchical.h"
#include "topology/topology.h"
#include "topology/topology_json.h"
#include "workload/workload_json.h"

namespace schema_test {

using collsim::AlgorithmEntry;
using nlohmann::json;
namespace fs = std::filesystem;
using Names = std::set<std::string>;

const fs::path kSourceDir = COLLSIM_SOURCE_DIR;
const fs::path kSchemaDir = kSourceDir / "scenarios" / "schema";

json read(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// Both schemas, parsed once: the scenario schema's "$ref": "topology.schema.json" is
// fetched from the same folder.
struct Schemas {
  json scenario_doc = read(kSchemaDir / "scenario.schema.json");
  json topology_doc = read(kSchemaDir / "topology.schema.json");
  valijson::Schema scenario, topology;

  Schemas() {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    auto fetch = [](const std::string& uri) -> const json* {
      const std::string file = uri.substr(0, uri.find('#'));
      return new json(read(kSchemaDir / fs::path(file).filename()));
    };
    auto free_doc = [](const json* doc) { delete doc; };
    parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(scenario_doc), scenario, fetch,
                          free_doc);
    parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(topology_doc), topology, fetch,
                          free_doc);
  }
};

const Schemas& schemas() {
  static const Schemas s;
  return s;
}

// The schema's complaints, one "path: what" per line; empty when `doc` is valid.
std::string violations(const valijson::Schema& schema, const json& doc) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  if (validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(doc), &results)) return "";
  std::string out;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) {
    std::string where;
    for (const auto& part : e.context) where += part;
    out += where + ": " + e.description + "\n";
  }
  return out;
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

Names names_of(std::span<const std::string_view> list) {
  return {list.begin(), list.end()};
}
Names names_of(std::span<const collsim::FieldDoc> list) {
  Names out;
  for (const auto& f : list) out.emplace(f.name);
  return out;
}
Names names_of(const std::vector<std::string>& list) {
  return {list.begin(), list.end()};
}

Names properties_at(const json& schema, const std::string& pointer) {
  Names out;
  for (const auto& [key, _] : schema.at(json::json_pointer(pointer)).items()) out.insert(key);
  return out;
}

Names enum_at(const json& schema, const std::string& pointer) {
  Names out;
  for (const auto& v : schema.at(json::json_pointer(pointer))) out.insert(v.get<std::string>());
  return out;
}

// Every algorithm option a collective (or, with `groups_only`, a hierarchical level)
// may carry: the union over the catalogue's entries.
Names algorithm_options(bool groups_only) {
  Names out;
  for (const AlgorithmEntry& e : collsim::algorithm_catalogue())
    if (!groups_only || e.on_groups)
      for (const auto& d : e.options) out.insert(std::string(d.name));
  return out;
}

Names with(Names a, const Names& b) {
  a.insert(b.begin(), b.end());
  return a;
}

// Where the schemas list an object's fields ("properties" of a closed object), and
// the loader's list for each.
std::map<std::string, Names> scenario_objects() {
  return {
      {"/properties", names_of(collsim::kScenarioFields)},
      {"/definitions/job/properties", names_of(collsim::kJobKeys)},
      {"/definitions/parallelism/properties", names_of(collsim::kParallelismKeys)},
      {"/definitions/model/oneOf/1/properties", names_of(collsim::kModelKeys)},
      {"/definitions/gpu/oneOf/1/properties", names_of(collsim::kGpuKeys)},
      {"/definitions/network/properties", names_of(collsim::kNetworkFields)},
      {"/properties/launch/oneOf/1/properties", names_of(collsim::kLaunchFields)},
      {"/definitions/cost/properties", names_of(collsim::kCostModelKeys)},
      {"/definitions/linkCost/properties", names_of(collsim::kLinkCostKeys)},
      {"/definitions/collective/properties",
       with(names_of(collsim::kCollectiveFields), algorithm_options(false))},
      {"/definitions/level/properties",
       with(names_of(collsim::kLevelFields), algorithm_options(true))},
      {"/definitions/routing/properties", names_of(collsim::kRoutingFields)},
  };
}

std::map<std::string, Names> topology_objects() {
  std::map<std::string, Names> out = {
      {"/definitions/graph/properties", names_of(collsim::kGraphFields)},
      {"/definitions/node/properties", names_of(collsim::kNodeFields)},
      {"/definitions/link/properties", names_of(collsim::kLinkFields)},
      {"/definitions/dimension/properties", names_of(collsim::kDimensionFields)},
  };
  for (const auto& p : collsim::kPresetFields)
    out["/definitions/" + std::string(p.definition) + "/properties"] =
        names_of(collsim::preset_fields(p));
  return out;
}

// Every closed object's "properties" in `schema`, by JSON pointer.
void closed_objects(const json& schema, const std::string& at, Names& out) {
  if (schema.is_object()) {
    if (schema.value("additionalProperties", json(true)) == json(false) &&
        schema.contains("properties"))
      out.insert(at + "/properties");
    for (const auto& [key, value] : schema.items())
      closed_objects(value, at + "/" + key, out);  // no '/' or '~' in the schemas' keys
  } else if (schema.is_array()) {
    for (std::size_t i = 0; i < schema.size(); ++i)
      closed_objects(schema[i], at + "/" + std::to_string(i), out);
  }
}

Names keys_of(const std::map<std::string, Names>& m) {
  Names out;
  for (const auto& [k, _] : m) out.insert(k);
  return out;
}

Names catalogue_algorithms() {
  Names out = {"auto", "nccl"};
  for (const AlgorithmEntry& e : collsim::algorithm_catalogue())
    out.insert(std::string(e.algorithm));
  return out;
}

std::string loader_error(const json& doc) {
  try {
    collsim::parse_scenario(doc, kSourceDir / "scenarios");
  } catch (const collsim::InputError& e) {
    return e.what();
  }
  return "";
}

const json kGood = {{"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "100GB/s"}}},
                    {"collectives", {{{"op", "all_reduce"}, {"bytes", "1MiB"}}}}};

}  // namespace schema_test

using namespace schema_test;

TEST_CASE("every bundled scenario and topology file names its schema and validates", "[schema]") {
  int checked = 0;
  for (const auto& file : json_files(kSourceDir / "scenarios")) {
    INFO(file.string());
    const json doc = read(file);
    CHECK(doc.value("$schema", "") == "schema/scenario.schema.json");
    CHECK(violations(schemas().scenario, doc) == "");
    // ... and the loader ignores "$schema" (a Chakra trace needs protobuf to load: test_chakra.cpp)
    if (!collsim::test::needs_protobuf(doc)) CHECK_NOTHROW(collsim::load_scenario(file));
    ++checked;
  }
  for (const auto& file : json_files(kSourceDir / "topologies")) {
    INFO(file.string());
    const json doc = read(file);
    CHECK(doc.value("$schema", "") == "../scenarios/schema/topology.schema.json");
    CHECK(violations(schemas().topology, doc) == "");
    CHECK_NOTHROW(collsim::load_topology(collsim::JsonView(doc, "t"), file.parent_path()));
    ++checked;
  }
  CHECK(checked >= 20);
}

TEST_CASE("the schema refuses what the loader refuses", "[schema]") {
  REQUIRE(violations(schemas().scenario, kGood) == "");
  REQUIRE(loader_error(kGood) == "");
  // Each a one-field change of the good scenario, by JSON pointer.
  const std::vector<std::pair<std::string, json>> bad = {
      {"/collectives/0/byts", "1MiB"},                     // unknown field
      {"/collectives/0/op", "allreduce"},                  // not an op
      {"/collectives/0/dtype", "fp8"},                     // not a dtype
      {"/collectives/0/algorithm", "rign"},                // not an algorithm
      {"/collectives/0/bytes", "1 MiBs"},                  // not a size
      {"/topology/bandwidth", "100GB"},                    // a size, not a bandwidth
      {"/topology/preset", "fat_tree"},                    // not a preset
      {"/topology/kind", "nvlink5"},                       // not a link kind
      {"/network/model", "fluid"},                         // not a network model
      {"/network/alpha", "5 parsecs"},                     // not a duration
      {"/network/cost/links/infiniband", json::object()},  // not a link kind
      {"/collectives/0/segments", 0},                      // fewer than 1
      {"/collectives/0/bytes", "-0"},                      // a sign: no size is negative
      {"/network/alpha", "-0us"},                          // nor a duration
      {"/$schema", 5},                                     // the schema's address: a string
  };
  for (const auto& [pointer, value] : bad) {
    INFO(pointer << " = " << value.dump());
    json doc = kGood;
    doc[json::json_pointer(pointer)] = value;
    CHECK(violations(schemas().scenario, doc) != "");
    CHECK(loader_error(doc) != "");
  }
  json no_op = kGood;
  no_op["collectives"][0].erase("op");
  CHECK(violations(schemas().scenario, no_op) != "");
  CHECK(loader_error(no_op) != "");
}

TEST_CASE("the schema accepts what the loader accepts, field by field", "[schema]") {
  // Fields the bundled files leave out, each in a form the loader takes.
  const json rich = json::parse(R"({
    "$schema": "schema/scenario.schema.json",
    "name": "rich", "description": "every optional field",
    "topology": {"$schema": "x", "preset": "cluster", "nodes": 2, "gpus_per_node": 4,
                 "nvlink": "450GB/s", "nvlink_latency": "100ns", "pcie": "0.001PB/s", "nic": "400Gbps",
                 "nic_latency": 1e-6, "radix": 8, "oversubscription": 1.5, "spines": 2,
                 "fabric": "roce"},
    "placement": ["n1.gpu0", "n1.gpu1", "n1.gpu2", "n1.gpu3", "n0.gpu0", "n0.gpu1", "n0.gpu2", "n0.gpu3"],
    "network": {"model": "packet", "alpha": "2us", "routing": "single", "packet": "4KiB",
                "switching": "cut_through",
                "cost": {"launch_s": 2e-6, "op_overhead_s": "1us",
                         "links": {"nvlink": {"efficiency": 0.9, "latency_s": 1e-7,
                                              "bandwidth_curve": [[1024, "10GB/s"], ["1MiB", 4e11]]}},
                         "bandwidth_curve": [[1, 1e9]], "reduce": {"float32.sum": [[1, 1e11]]},
                         "reduce_memory": {"any": [[1, 1e11]]}, "local_copy": [[1, 1e11]],
                         "host_memory": [[1, 1e11]]}},
    "collectives": [
      {"name": "a", "op": "all_reduce", "algorithm": "ring", "bytes": 4096, "dtype": "bfloat16",
       "redop": "max", "channels": "auto", "protocol": "LL128"},
      {"name": "b", "op": "all_reduce", "algorithm": "hierarchical", "bytes": "64KiB",
       "levels": [{"size": 4, "algorithm": "ring", "channels": 2}, {"size": 2, "algorithm": "binomial_tree", "segments": 4}],
       "after": []},
      {"name": "c", "op": "all_reduce", "algorithm": "parameter_server", "bytes": "1MB", "servers": [0, 4]},
      {"name": "c2", "op": "all_gather", "algorithm": "ring", "bytes": "0.0000152587890625PiB",
       "ranks": [2, 3]},
      {"name": "d", "op": "all_reduce", "algorithm": "nccl", "bytes": "1MiB", "nccl_algo": "^nvls",
       "nccl_proto": "simple"},
      {"name": "e", "op": "broadcast", "algorithm": "auto", "bytes": "1MiB", "root": 3,
       "segments": "auto", "ranks": [0, 1, 2, 3]},
      {"name": "f", "op": "all_to_all", "routing": {"tokens_per_rank": 64, "bytes_per_token": "2KiB",
       "experts": 6, "top_k": 2, "expert_load": [0.5, 0.1, 0.1, 0.1, 0.1, 0.1],
       "expert_ranks": [0, 1, 2, 3, 4, 5]}},
      {"name": "g", "op": "all_to_all", "ranks": [0, 1], "routing": {"bytes_per_token": 8,
       "matrix": [[0, 3], [5, 0]]}},
      {"op": "barrier", "algorithm": "dissemination"}
    ]})");
  INFO(violations(schemas().scenario, rich));
  CHECK(violations(schemas().scenario, rich) == "");
  CHECK(loader_error(rich) == "");
  const json graph =
      json::parse(R"({"name": "pair", "description": "two GPUs and a switch", "gpu": "h100",
    "nodes": [{"name": "g0", "kind": "gpu", "rank": 1, "host": 0}, {"name": "g1", "kind": "gpu", "rank": 0, "host": 0},
              {"name": "sw", "kind": "nvswitch", "sharp": true, "sharp_efficiency": 0.8}],
    "links": [{"src": "g0", "dst": "sw", "bandwidth": "100GB/s", "latency": "1us", "kind": "nvlink"},
              {"src": "g1", "dst": "sw", "bandwidth": "100GB/s", "kind": "nvlink", "duplex": false},
              {"src": "sw", "dst": "g1", "bandwidth": "100GB/s", "kind": "nvlink", "duplex": false}]})");
  CHECK(violations(schemas().topology, graph) == "");
  CHECK_NOTHROW(collsim::load_topology(collsim::JsonView(graph, "t"), "."));
  for (
      const char* preset :
      {R"({"preset": "ring", "gpus": 4, "bandwidth": "1GB/s", "bidirectional": false, "kind": "pcie"})",
       R"({"preset": "nvl72"})", R"({"preset": "dgx-h100", "gpus_per_node": 4})",
       R"({"preset": "dgx", "gpu": "a100", "nic": "50GB/s"})",
       R"({"preset": "torus", "dims": [2, 2, 2], "bandwidth": "1GB/s", "latency": "1ns"})",
       R"({"preset": "cluster", "nodes": 8, "pod_nodes": 4, "cores": 2, "core_oversubscription": 2})",
       R"({"preset": "multidim", "dims": [{"shape": "fully_connected", "size": 3, "bandwidth": "1Gbps"}]})"}) {
    INFO(preset);
    const json doc = json::parse(preset);
    CHECK(violations(schemas().topology, doc) == "");
    CHECK_NOTHROW(collsim::load_topology(collsim::JsonView(doc, "t"), "."));
  }
}

TEST_CASE("the schema and the loader take the same fields", "[schema]") {
  for (const auto& [doc, objects] : {std::pair{&schemas().scenario_doc, scenario_objects()},
                                     std::pair{&schemas().topology_doc, topology_objects()}}) {
    for (const auto& [pointer, loader] : objects) {
      INFO(pointer);
      CHECK(properties_at(*doc, pointer) == loader);
    }
    // No closed object in the schema escapes the comparison.
    Names closed;
    closed_objects(*doc, "", closed);
    CHECK(closed == keys_of(objects));
  }
}

TEST_CASE("the schema and the loader know the same names", "[schema]") {
  const json& s = schemas().scenario_doc;
  const json& t = schemas().topology_doc;
  CHECK(enum_at(s, "/definitions/collective/properties/op/enum") ==
        names_of(collsim::all_collective_names()));
  CHECK(enum_at(s, "/definitions/collective/properties/dtype/enum") ==
        names_of(collsim::all_dtype_names()));
  CHECK(enum_at(s, "/definitions/collective/properties/redop/enum") ==
        names_of(collsim::all_reduce_op_names()));
  CHECK(enum_at(s, "/definitions/algorithm/enum") == catalogue_algorithms());
  CHECK(enum_at(t, "/definitions/linkKind/enum") == names_of(collsim::all_link_kind_names()));
  CHECK(enum_at(t, "/definitions/nodeKind/enum") == names_of(collsim::all_node_kind_names()));
  CHECK(enum_at(t, "/definitions/server/properties/gpu/enum") ==
        names_of(collsim::gpu_model_names()));
  CHECK(enum_at(t, "/definitions/graph/properties/gpu/enum") ==
        names_of(collsim::gpu_model_names()));
  Names presets, loader_presets;
  for (const auto& p : t.at("/definitions/preset/oneOf"_json_pointer)) {
    const std::string ref = p.at("$ref").get<std::string>();  // "#/definitions/<x>Preset"
    presets.insert(t.at(json::json_pointer(ref.substr(1)))
                       .at("/properties/preset/const"_json_pointer)
                       .get<std::string>());
  }
  for (const auto& p : collsim::kPresetFields) loader_presets.insert(std::string(p.preset));
  CHECK(presets == loader_presets);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

TEST_CASE("the schema files are what collsim schema writes from the loaders' tables", "[schema]") {
  // Editing a schema file by hand fails here: change the FieldDoc table beside the
  // loader (or the registry) and run `collsim schema [topology] > scenarios/schema/...`.
  const auto text = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  CHECK(text(kSchemaDir / "scenario.schema.json") == collsim::scenario_schema());
  CHECK(text(kSchemaDir / "topology.schema.json") == collsim::topology_schema());
  // And the reference page: `collsim schema --markdown > docs/schema.md`.
  CHECK(text(kSourceDir / "docs" / "schema.md") == collsim::schema_reference());
}

TEST_CASE("the reference's algorithm table has every catalogue entry, each saying what it does",
          "[schema]") {
  const std::string page = collsim::schema_reference();
  const auto table = page.find("## Algorithms");
  REQUIRE(table != std::string::npos);
  const std::string rows = page.substr(table, page.find("\n## ", table + 1) - table);
  for (const collsim::AlgorithmEntry& e : collsim::algorithm_catalogue()) {
    INFO(e.algorithm << " " << collsim::name_of(e.op));
    CHECK_FALSE(e.summary.empty());
    // Its row: the algorithm, this collective among those of the second cell (the default
    // marked), and its summary as the last cell.
    const std::string start = "| `" + std::string(e.algorithm) + "` | ";
    bool listed = false;
    for (auto at = rows.find(start); at != std::string::npos; at = rows.find(start, at + 1)) {
      const std::string row = rows.substr(at, rows.find('\n', at) - at);
      const auto cells_end = row.find(" | ", start.size());
      const std::string ops = row.substr(start.size(), cells_end - start.size()) + ", ";
      const std::string op(collsim::name_of(e.op));
      const bool has_op = ops.starts_with(op + ", ") || ops.starts_with(op + " (default), ") ||
                          ops.find(", " + op + ", ") != std::string::npos ||
                          ops.find(", " + op + " (default), ") != std::string::npos;
      listed |= has_op && row.ends_with(" " + std::string(e.summary) + " |");
    }
    CHECK(listed);
  }
  // The collective's default (the catalogue's first entry for it) is marked as such.
  CHECK(rows.find("all_reduce (default)") < rows.find("| `binomial_tree` |"));
}

TEST_CASE("the scenario schema as one document needs no other file", "[schema]") {
  // Python's jsonschema.validate(doc, collsim.schema()) has nothing to resolve
  // "topology.schema.json" against: it failed, Unresolvable, on the docs' own example.
  const json whole = json::parse(collsim::scenario_schema_whole());
  CHECK(whole.dump().find("topology.schema.json") == std::string::npos);
  valijson::Schema schema;
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  int fetched = 0;
  auto fetch = [&fetched](const std::string&) -> const json* {
    ++fetched;
    return new json(json::object());
  };
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(whole), schema, fetch,
                        [](const json* doc) { delete doc; });
  CHECK(fetched == 0);
  for (const auto& file : json_files(kSourceDir / "scenarios")) {
    INFO(file.string());
    CHECK(violations(schema, read(file)) == "");
  }
  json bad = kGood;
  bad["topology"]["gpus"] = "x";
  CHECK(violations(schema, bad) != "");
}
