#include "simulate/run_step.h"

#include <algorithm>
#include <deque>

#include "simulate/planned_step.h"
#include "simulate/simulated_plan.h"
#include "topology/routing.h"

namespace collsim {

namespace {

// Every graph task as the simulator takes it, once its collectives are planned.
void add_tasks(const Scenario& scenario, const StepGraph& graph, PlannedStep& planned) {
  planned.tasks.reserve(graph.tasks.size());
  for (std::size_t i = 0; i < graph.tasks.size(); ++i)
    planned.tasks.push_back(
        collective_task(scenario, graph.tasks[i], planned, planned.plan_of_task[i]));
}

}  // namespace

PlannedStep plan_step(const Scenario& scenario, Router& router, const StepGraph& graph,
                      bool tasks) {
  PlannedStep out;
  const CostFunction cost = simulated_alone(scenario, router);
  std::deque<CollectiveSpec> asked;  // what each plan was asked for (the memo points into it)
  PlanMemo memo(scenario.topology, PlanMemo::Ranks::Layout);
  out.plan_of_task.assign(graph.tasks.size(), -1);
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    const StepTask& t = graph.tasks[i];
    if (t.kind == StepTaskKind::Collective) {
      CollectiveSpec spec = *t.collective;
      spec.name = t.name;
      spec.ranks = t.ranks;
      spec.shape.ranks = static_cast<int>(t.ranks.size());
      spec.after.clear();
      const auto same = memo.find(spec);
      const int plan = static_cast<int>(same ? *same : out.planned.size());
      if (!same) {
        out.planned.push_back(plan_collective(scenario, router, cost, spec));
        out.plans.push_back(out.planned.back().label());
        memo.add(asked.emplace_back(std::move(spec)), out.planned.size() - 1);
      }
      out.plan_of_task[i] = plan;
    }
  }
  if (tasks) add_tasks(scenario, graph, out);
  return out;
}

CollectiveTask collective_task(const Scenario& scenario, const StepTask& t,
                               const PlannedStep& planned, int plan) {
  CollectiveTask task;
  task.name = t.name;
  for (int r : t.ranks) task.rank_gpu.push_back(scenario.topology.gpu_of_rank(r));
  task.after.assign(t.after.begin(), t.after.end());
  if (t.kind == StepTaskKind::Compute) {
    task.duration = from_seconds(t.duration_s);
  } else {
    task.cost = planned.planned[plan].cost;
    task.schedule = &*planned.planned[plan].schedule;  // on the heap: stays put as `planned` grows
  }
  return task;
}

StepResult step_result(const PlannedStep& planned, SimulationResult sim) {
  StepResult out;
  out.plans = planned.plans;
  out.tasks.resize(planned.plan_of_task.size());
  for (std::size_t i = 0; i < out.tasks.size(); ++i) {
    const TaskTiming& timing = sim.tasks[i];
    StepTaskOutcome& o = out.tasks[i];
    o.plan = planned.plan_of_task[i];
    o.start_s = to_seconds(timing.start);
    o.end_s = to_seconds(timing.end);
    o.ops_end_s = to_seconds(timing.ops_end);
    const CostModel* cost = o.plan >= 0 ? planned.planned[o.plan].cost.get() : nullptr;
    o.held_by = held_by(cost, timing.start, timing.ops_end, timing.end);
    out.step_s = std::max(out.step_s, o.end_s);
  }
  out.sim = std::move(sim);
  return out;
}

StepResult simulate_step(const Scenario& scenario, const StepGraph& graph,
                         SimulationOptions options) {
  Router router(scenario.topology, scenario.network.routing);
  return simulate_planned_step(scenario, graph, plan_step(scenario, router, graph), options);
}

StepResult simulate_planned_step(const Scenario& scenario, const StepGraph& graph,
                                 PlannedStep planned, SimulationOptions options) {
  if (planned.tasks.empty()) add_tasks(scenario, graph, planned);
  Router router(scenario.topology, scenario.network.routing);
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  return step_result(planned, sim.run(planned.tasks));
}

}  // namespace collsim
