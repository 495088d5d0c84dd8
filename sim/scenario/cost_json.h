#pragma once
// The cost model's JSON form, shared by calibration files and a scenario's
// "network": {"cost": {...}} (docs/models.md, "The cost model", documents it).
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "core/field_doc.h"
#include "network/cost_model.h"

namespace collsim {

class JsonView;

// Reads the cost keys of `v` into `model`, leaving keys `v` does not have alone.
// Refuses, with "did you mean", a key that is neither a cost key nor one of a
// calibration file's (kCalibrationKeys): `v` is a calibration file (apply_calibration
// reads its α-β keys, then this) or a scenario's "cost", whose caller checks the
// narrower kCostModelKeys first. A misspelled key is an error, never a term ignored.
void read_cost_model(const JsonView& v, CostModel& model);
// The keys read_cost_model reads.
inline constexpr FieldDoc kCostModelKeys[] = {
    {"launch_s",
     R"json({"$ref": "#/definitions/duration", "description": "Once per collective, before its first op."})json"},
    {"op_overhead_s",
     R"json({"$ref": "#/definitions/duration", "description": "The wake-up after a dependency: an op that waits on another starts this long after it ends, one op at a time on the receiving rank."})json"},
    {"links",
     R"json({"type": "object", "propertyNames": {"$ref": "topology.schema.json#/definitions/linkKind"}, "additionalProperties": {"$ref": "#/definitions/linkCost"}, "description": "Per link kind (nvlink, pcie, ib, ...): its usable rate, efficiency, latency or size curve."})json"},
    {"bandwidth_curve",
     R"json({"$ref": "#/definitions/curve", "description": "A transfer of n bytes moves at curve(n) instead of its links' nominal rate (every kind without its own)."})json"},
    {"reduce",
     R"json({"$ref": "#/definitions/rates", "description": "A reduce op moves at the slower of its link and this rate (the fused read-reduce-write loop), per \"dtype.op\" or \"any\"."})json"},
    {"local_copy",
     R"json({"$ref": "#/definitions/curve", "description": "The rate of an op inside one rank."})json"},
    {"host_memory",
     R"json({"$ref": "#/definitions/curve", "description": "A capacity (by transfer size) that every transfer from or to one host's GPUs shares, through the flow model's max-min solver."})json"},
    {"reduce_memory",
     R"json({"$ref": "#/definitions/rates", "description": "host_memory as concurrent reduce loops see it, per \"dtype.op\" or \"any\"; default host_memory."})json"},
};
// Every key of a calibration file: the cost keys, the α-β pair, and what `collsim
// calibrate` (validate/measure/calibrate.cpp) and `calibrate --nccl-tests` (validate/fit/nccl_fit.cpp)
// write beside them as provenance, which no reader uses.
inline constexpr std::string_view kCalibrationKeys[] = {
    "$schema",    "launch_s",  "op_overhead_s", "links",   "bandwidth_curve", "reduce",
    "local_copy", "host_memory", "reduce_memory", "alpha_s", "bandwidth_Bps", "provenance",
    "overhead",   "alpha_beta", "sweeps",        "backend", "device",          "date",
    "ranks",      "fit"};
// Those of them that change the model (the rest describe the file): a calibration must state
// one, or "links" with a link kind, else it would change nothing.
inline constexpr std::string_view kCalibrationTerms[] = {
    "alpha_s", "bandwidth_Bps", "launch_s",    "op_overhead_s", "bandwidth_curve",
    "reduce",  "local_copy",    "host_memory", "reduce_memory"};
// What "links": {"<kind>": {...}} takes for each link kind.
inline constexpr FieldDoc kLinkCostKeys[] = {
    {"bandwidth_Bps",
     R"json({"type": "number", "exclusiveMinimum": 0, "description": "The usable rate of every link of this kind, bytes per second (instead of the topology's)."})json"},
    {"efficiency",
     R"json({"type": "number", "minimum": 0.000001, "maximum": 1, "description": "The share of the link rate that carries data (a millionth at least)."})json"},
    {"latency_s",
     R"json({"$ref": "#/definitions/duration", "description": "Added once per transfer: the largest of the latencies of the kinds on its route."})json"},
    {"bandwidth_curve",
     R"json({"$ref": "#/definitions/curve", "description": "The rate by transfer size on links of this kind."})json"},
    {"bandwidth_curve_algorithms",
     R"json({"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "The algorithms whose transfers the bandwidth curve was measured on (calibrate --nccl-tests writes them); the others' transfers take its last rate at every size. Absent: every algorithm reads the curve."})json"},
};

// The same keys, written as read_cost_model reads them (seconds and bytes per second).
nlohmann::json cost_model_json(const CostModel& model);
nlohmann::json size_curve_json(const SizeCurve& curve);

}  // namespace collsim
