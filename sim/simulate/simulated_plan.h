#pragma once
// The planner's usual cost function: each candidate simulated alone on the scenario's
// network. It lives here, above the planner, so that the planner (plan/) never
// depends on the simulator; the planner takes it as a CostFunction.
#include "plan/plan.h"

namespace collsim {

// Without per-op records; `router` must outlive the function.
CostFunction simulated_alone(const Scenario& scenario, Router& router);

// make_plan with simulated_alone: what run, plan, trace and validate execute.
Plan make_plan(const Scenario& scenario);

// What `collsim run` executes, for `collsim plan` to show: make_plan, except that a scenario
// run streams by itself (streams_exactly, streaming_pays) is planned as the streamed run
// plans it, its collectives that stream marked PlannedCollective::streamed, none held.
Plan plan_as_run(const Scenario& scenario);

}  // namespace collsim
