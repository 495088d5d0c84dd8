#include "simulate/simulated_plan.h"

#include "network/network_model.h"
#include "simulate/run_scenario.h"
#include "simulate/simulator.h"
#include "topology/routing.h"

namespace collsim {

CostFunction simulated_alone(const Scenario& scenario, Router& router) {
  // Without per-op records.
  return [&scenario, &router](const PlannedCollective& c) {
    auto model = make_network_model(scenario.network, scenario.topology, router);
    Simulator sim(scenario.topology, router, *model, SimulationOptions{.record_ops = false});
    const auto r = sim.run({{c.spec.name, &*c.schedule, c.gpus, {}, c.cost}});
    const double time = to_seconds(r.tasks[0].end - r.tasks[0].start);
    // Under ideal, a plan that sends more through a link at once than it carries is held
    // to what that link needs: a naive broadcast no longer wins by sending K-1 copies at once.
    if (scenario.network.model != NetworkModelKind::Ideal) return time;
    return std::max(time, link_floor_s(scenario.topology, r.links));
  };
}

Plan make_plan(const Scenario& scenario) {
  Router router(scenario.topology, scenario.network.routing);
  return make_plan(scenario, router, simulated_alone(scenario, router));
}

Plan plan_as_run(const Scenario& scenario) {
  Router router(scenario.topology, scenario.network.routing);
  return make_plan(scenario, router, simulated_alone(scenario, router),
                   streams_exactly(scenario) && streaming_pays(scenario) ? ScheduleHolding::Streamed
                                                                         : ScheduleHolding::Stored);
}

}  // namespace collsim
