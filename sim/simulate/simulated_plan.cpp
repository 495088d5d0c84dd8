#include "simulate/simulated_plan.h"

#include "network/network_model.h"
#include "simulate/simulator.h"
#include "topology/routing.h"

namespace collsim {

CostFunction simulated_alone(const Scenario& scenario, Router& router) {
  // Without per-op records.
  return [&scenario, &router](const PlannedCollective& c) {
    auto model = make_network_model(scenario.network, scenario.topology, router);
    Simulator sim(scenario.topology, router, *model, SimulationOptions{.record_ops = false});
    const auto r = sim.run({{c.spec.name, &*c.schedule, c.gpus, {}, c.cost}});
    return to_seconds(r.tasks[0].end - r.tasks[0].start);
  };
}

Plan make_plan(const Scenario& scenario) {
  Router router(scenario.topology, scenario.network.routing);
  return make_plan(scenario, router, simulated_alone(scenario, router));
}

}  // namespace collsim
