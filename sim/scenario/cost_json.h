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
    {"launch_s", R"json({"$ref": "#/definitions/duration"})json"},
    {"op_overhead_s", R"json({"$ref": "#/definitions/duration"})json"},
    {"links",
     R"json({"type": "object", "propertyNames": {"$ref": "topology.schema.json#/definitions/linkKind"}, "additionalProperties": {"$ref": "#/definitions/linkCost"}})json"},
    {"bandwidth_curve", R"json({"$ref": "#/definitions/curve"})json"},
    {"reduce", R"json({"$ref": "#/definitions/rates"})json"},
    {"local_copy", R"json({"$ref": "#/definitions/curve"})json"},
    {"host_memory", R"json({"$ref": "#/definitions/curve"})json"},
    {"reduce_memory", R"json({"$ref": "#/definitions/rates"})json"},
};
// Every key of a calibration file: the cost keys, the α-β pair, and what `collsim
// calibrate` (validate/measure/calibrate.cpp) and `calibrate --nccl-tests` (validate/fit/nccl_fit.cpp)
// write beside them as provenance, which no reader uses.
inline constexpr std::string_view kCalibrationKeys[] = {
    "$schema",    "launch_s",  "op_overhead_s", "links",   "bandwidth_curve", "reduce",
    "local_copy", "host_memory", "reduce_memory", "alpha_s", "bandwidth_Bps", "provenance",
    "overhead",   "alpha_beta", "sweeps",        "backend", "device",          "date",
    "ranks",      "fit"};
// What "links": {"<kind>": {...}} takes for each link kind.
inline constexpr FieldDoc kLinkCostKeys[] = {
    {"bandwidth_Bps", R"json({"type": "number", "exclusiveMinimum": 0})json"},
    {"efficiency", R"json({"type": "number", "exclusiveMinimum": 0, "maximum": 1})json"},
    {"latency_s", R"json({"$ref": "#/definitions/duration"})json"},
    {"bandwidth_curve", R"json({"$ref": "#/definitions/curve"})json"},
};

// The same keys, written as read_cost_model reads them (seconds and bytes per second).
nlohmann::json cost_model_json(const CostModel& model);
nlohmann::json size_curve_json(const SizeCurve& curve);

}  // namespace collsim
