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
// shape, algorithm and protocol, and ranks laid out over hosts the same way.
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

struct Interval {
  double begin, end;
};

// Sorted, merged.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.begin <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& i : v) s += i.end - i.begin;
  return s;
}

// Length of a minus b (both merged).
double minus(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double out = 0;
  std::size_t j = 0;
  for (const auto& i : a) {
    double at = i.begin;
    while (j < b.size() && b[j].end <= at) ++j;
    for (std::size_t k = j; k < b.size() && b[k].begin < i.end; ++k) {
      if (b[k].begin > at) out += b[k].begin - at;
      at = std::max(at, b[k].end);
    }
    if (i.end > at) out += i.end - at;
  }
  return out;
}

}  // namespace step_run

StepResult simulate_step(const Scenario& scenario, const StepGraph& graph,
                         SimulationOptions options) {
  using namespace step_run;
  StepResult out;
  Router router(scenario.topology, scenario.network.routing);
  const CostFunction cost = simulated_alone(scenario, router);
  std::vector<PlannedCollective> planned;
  std::unordered_map<std::string, int> plan_of;
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
      const auto [it, fresh] =
          plan_of.try_emplace(plan_key(scenario.topology, spec), static_cast<int>(planned.size()));
      if (fresh) {
        planned.push_back(plan_collective(scenario, router, cost, spec));
        out.plans.push_back(planned.back().label());
      }
      out.tasks[i].plan = it->second;
      task.cost = planned[it->second].cost;
    }
    tasks.push_back(std::move(task));
  }
  // Schedules are final only now (the vector no longer grows).
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (out.tasks[i].plan >= 0) tasks[i].schedule = &planned[out.tasks[i].plan].schedule;
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  out.sim = sim.run(tasks);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    out.tasks[i].start_s = to_seconds(out.sim.tasks[i].start);
    out.tasks[i].end_s = to_seconds(out.sim.tasks[i].end);
    out.step_s = std::max(out.step_s, out.tasks[i].end_s);
  }
  out.ranks = rank_times(graph, out, scenario.topology.num_ranks());
  return out;
}

std::vector<RankTime> rank_times(const StepGraph& graph, const StepResult& r, int num_ranks,
                                 const std::vector<bool>& keep) {
  using namespace step_run;
  std::vector<std::vector<Interval>> compute(num_ranks), comm(num_ranks);
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    if (!keep.empty() && !keep[i]) continue;
    const StepTask& t = graph.tasks[i];
    const Interval span{r.tasks[i].start_s, r.tasks[i].end_s};
    if (span.end <= span.begin) continue;
    auto& into = t.kind == StepTaskKind::Compute ? compute : comm;
    for (int rank : t.ranks) into[rank].push_back(span);
  }
  std::vector<RankTime> out(num_ranks);
  for (int rank = 0; rank < num_ranks; ++rank) {
    const auto c = merged(std::move(compute[rank])), m = merged(std::move(comm[rank]));
    RankTime& rt = out[rank];
    rt.compute_s = length(c);
    rt.comm_s = length(m);
    rt.exposed_comm_s = minus(m, c);
    rt.busy_s = rt.compute_s + rt.exposed_comm_s;
  }
  return out;
}

}  // namespace collsim
