#pragma once
// The plan as a person or a script reads it (`collsim plan`).
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "plan/plan.h"

namespace collsim {

std::string plan_table(const Scenario& s, const Plan& plan);
// {scenario, collectives[i] = {name, op, ranks, bytes, algorithm, plan, options, steps,
//  transfers, schedule_digest, auto?}}
nlohmann::json plan_json(const Scenario& s, const Plan& plan);

}  // namespace collsim
