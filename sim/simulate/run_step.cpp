#include "simulate/run_step.h"

#include <algorithm>
#include <deque>

#include "plan/plan.h"
#include "topology/routing.h"
#include "simulate/simulated_plan.h"

namespace collsim {

StepResult simulate_step(const Scenario& scenario, const StepGraph& graph,
                         SimulationOptions options) {
  StepResult out;
  Router router(scenario.topology, scenario.network.routing);
  const CostFunction cost = simulated_alone(scenario, router);
  std::vector<PlannedCollective> planned;
  std::deque<CollectiveSpec> asked;  // what each plan was asked for (the memo points into it)
  PlanMemo memo(scenario.topology, PlanMemo::Ranks::Layout);
  std::vector<CollectiveTask> tasks;
  tasks.reserve(graph.tasks.size());
  out.tasks.resize(graph.tasks.size());
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    const StepTask& t = graph.tasks[i];
    CollectiveTask task;
    task.name = t.name;
    for (int r : t.ranks) task.rank_gpu.push_back(scenario.topology.gpu_of_rank(r));
    task.after.assign(t.after.begin(), t.after.end());
    if (t.kind == StepTaskKind::Compute) {
      task.duration = from_seconds(t.duration_s);
    } else {
      CollectiveSpec spec = *t.collective;
      spec.name = t.name;
      spec.ranks = t.ranks;
      spec.shape.ranks = static_cast<int>(t.ranks.size());
      spec.after.clear();
      const auto same = memo.find(spec);
      const int plan = static_cast<int>(same ? *same : planned.size());
      if (!same) {
        planned.push_back(plan_collective(scenario, router, cost, spec));
        out.plans.push_back(planned.back().label());
        memo.add(asked.emplace_back(std::move(spec)), planned.size() - 1);
      }
      out.tasks[i].plan = plan;
      task.cost = planned[plan].cost;
      task.schedule = &*planned[plan].schedule;  // on the heap: stays put as `planned` grows
    }
    tasks.push_back(std::move(task));
  }
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  out.sim = sim.run(tasks);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const TaskTiming& timing = out.sim.tasks[i];
    out.tasks[i].start_s = to_seconds(timing.start);
    out.tasks[i].end_s = to_seconds(timing.end);
    out.tasks[i].ops_end_s = to_seconds(timing.ops_end);
    out.tasks[i].held_by = held_by(tasks[i].cost.get(), timing.start, timing.ops_end, timing.end);
    out.step_s = std::max(out.step_s, out.tasks[i].end_s);
  }
  return out;
}

}  // namespace collsim
