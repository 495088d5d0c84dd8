#include "simulate/run_scenario.h"

#include <fmt/format.h>
#include <stdexcept>

#include "core/error.h"

namespace collsim {
namespace {

std::vector<NodeId> placement(const Topology& topology, const std::vector<int>& ranks) {
  std::vector<NodeId> out;
  out.reserve(ranks.size());
  for (int r : ranks) out.push_back(topology.gpu_of_rank(r));
  return out;
}

void check_reachable(const Scenario& s, const CollectiveSpec& c, Router& router) {
  const auto gpus = placement(s.topology, c.ranks);
  if (auto bad = router.find_unreachable(gpus)) {
    const Node& a = s.topology.node(bad->first);
    const Node& b = s.topology.node(bad->second);
    throw InputError("topology", fmt::format("rank {} ({}) cannot reach rank {} ({}), which {} needs; "
                                             "every pair of ranks needs a directed path",
                                             a.rank, a.name, b.rank, b.name, c.json_path));
  }
}

}  // namespace

Schedule generate_schedule(const CollectiveSpec& c) {
  const AlgorithmEntry* entry = find_algorithm(c.shape.op, c.algorithm);
  if (!entry) throw InputError(c.json_path + ".algorithm", "no such algorithm for this collective");
  Schedule s;
  try {
    s = entry->generate(c.shape, c.options);
  } catch (const std::invalid_argument& e) {
    throw InputError(c.json_path, e.what());
  }
  // A generator bug must never be timed as if it were a result.
  if (auto problem = check_schedule(s); !problem.empty())
    throw std::logic_error(fmt::format("{} {} generated an invalid schedule: {}", c.algorithm,
                                       name_of(c.shape.op), problem));
  return s;
}

ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options) {
  ScenarioResult out;
  Router router(scenario.topology);
  for (const auto& c : scenario.collectives) check_reachable(scenario, c, router);
  out.schedules.reserve(scenario.collectives.size());
  for (const auto& c : scenario.collectives) out.schedules.push_back(generate_schedule(c));

  std::vector<CollectiveTask> tasks;
  for (std::size_t i = 0; i < scenario.collectives.size(); ++i) {
    const auto& c = scenario.collectives[i];
    tasks.push_back({c.name, &out.schedules[i], placement(scenario.topology, c.ranks), c.after});
  }
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  out.sim = sim.run(tasks);

  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto& c = scenario.collectives[i];
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

}  // namespace collsim
