#pragma once
// The cost model's JSON form, shared by calibration files and a scenario's
// "network": {"cost": {...}} (docs/models.md, "The cost model", documents it).
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "network/cost_model.h"

namespace collsim {

class JsonView;

// Reads the cost keys of `v` into `model`, leaving keys `v` does not have alone. Keys
// it does not know are left to the caller (a calibration file has others too).
void read_cost_model(const JsonView& v, CostModel& model);
// The keys read_cost_model reads.
inline constexpr std::string_view kCostModelKeys[] = {"launch_s", "op_overhead_s", "links",
                                                      "bandwidth_curve", "reduce", "local_copy",
                                                      "host_memory", "reduce_memory"};
// What "links": {"<kind>": {...}} takes for each link kind.
inline constexpr std::string_view kLinkCostKeys[] = {"bandwidth_Bps", "efficiency", "latency_s",
                                                     "bandwidth_curve"};

// The same keys, written as read_cost_model reads them (seconds and bytes per second).
nlohmann::json cost_model_json(const CostModel& model);
nlohmann::json size_curve_json(const SizeCurve& curve);

}  // namespace collsim
