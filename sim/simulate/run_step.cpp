#include "simulate/run_step.h"

#include <fmt/format.h>
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "plan/plan.h"
#include "topology/routing.h"
#include "simulate/simulated_plan.h"

namespace collsim {
namespace step_run {

// Collectives equal in everything but which GPUs run them share one plan: the same
// request (CollectiveSpec::asks_the_same_elsewhere), and ranks laid out over hosts the same
// way. The key narrows the search; the request decides.
std::string plan_key(const Topology& topology, const CollectiveSpec& c) {
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|", name_of(c.shape.op), c.bytes,
                                name_of(c.shape.dtype), name_of(c.shape.reduce_op), c.algorithm,
                                c.protocol, c.shape.root, c.shape.count, c.ranks.size());
  std::unordered_map<int, int> hosts;
  for (int r : c.ranks) {
    const int host = topology.node(topology.gpu_of_rank(r)).host;
    key +=
        fmt::format("{},", hosts.try_emplace(host, static_cast<int>(hosts.size())).first->second);
  }
  if (c.shape.matrix) {
    std::size_t h = c.shape.matrix->size();
    for (auto v : *c.shape.matrix) h = h * 1000003u ^ std::hash<std::int64_t>{}(v);
    key += fmt::format("m{}", h);
  }
  return key;
}

}  // namespace step_run

StepResult simulate_step(const Scenario& scenario, const StepGraph& graph,
                         SimulationOptions options) {
  using namespace step_run;
  StepResult out;
  Router router(scenario.topology, scenario.network.routing);
  const CostFunction cost = simulated_alone(scenario, router);
  std::vector<PlannedCollective> planned;
  std::vector<CollectiveSpec> asked;  // what each plan was asked for
  std::unordered_map<std::string, std::vector<int>> plans_by_key;
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
      CollectiveSpec spec = t.collective;
      spec.name = t.name;
      spec.ranks = t.ranks;
      spec.shape.ranks = static_cast<int>(t.ranks.size());
      spec.after.clear();
      std::vector<int>& same_key = plans_by_key[plan_key(scenario.topology, spec)];
      const auto same = std::find_if(same_key.begin(), same_key.end(),
                                     [&](int p) { return asked[p].asks_the_same_elsewhere(spec); });
      const int plan = same != same_key.end() ? *same : static_cast<int>(planned.size());
      if (plan == static_cast<int>(planned.size())) {
        planned.push_back(plan_collective(scenario, router, cost, spec));
        out.plans.push_back(planned.back().label());
        asked.push_back(spec);
        same_key.push_back(plan);
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
