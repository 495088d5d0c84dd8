#include "simulate/run_scenario.h"

#include "topology/routing.h"

namespace collsim {

ScenarioResult simulate_plan(const Scenario& scenario, Plan plan, SimulationOptions options) {
  ScenarioResult out;
  std::vector<CollectiveTask> tasks;
  const std::size_t n = plan.collectives.size();
  out.schedules.reserve(n);  // tasks point into it: no reallocation below
  for (auto& c : plan.collectives) {
    out.labels.push_back(c.label());
    out.schedules.push_back(std::move(c.schedule));
    tasks.push_back(
        {c.spec.name, &out.schedules.back(), std::move(c.gpus), c.spec.after, std::move(c.cost)});
    out.resolved.push_back(std::move(c.spec));
    out.choices.push_back(std::move(c.choice));
    out.digests.push_back(c.digest);
  }
  Router router(scenario.topology, scenario.network.routing);
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  out.sim = sim.run(tasks);

  for (std::size_t i = 0; i < n; ++i) {
    const auto& c = out.resolved[i];
    const TaskTiming& t = out.sim.tasks[i];
    CollectiveOutcome o;
    o.start_s = to_seconds(t.start);
    o.end_s = to_seconds(t.end);
    o.time_s = to_seconds(t.end - t.start);
    if (t.end > t.start) {
      o.algbw_Bps = static_cast<double>(c.bytes) / o.time_s;
      o.busbw_Bps = o.algbw_Bps * busbw_factor(c.shape.op, c.shape.ranks);
    }
    out.outcomes.push_back(o);
  }
  return out;
}

ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options) {
  return simulate_plan(scenario, make_plan(scenario), options);
}

}  // namespace collsim
