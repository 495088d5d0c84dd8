#include "simulate/run_scenario.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
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
    throw InputError("topology",
                     fmt::format("rank {} ({}) cannot reach rank {} ({}), which {} needs; "
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

namespace {

double simulate_alone(const Scenario& scenario, Router& router, const CollectiveSpec& c) {
  const Schedule s = generate_schedule(c);
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, SimulationOptions{.record_ops = false});
  const auto r = sim.run({{c.name, &s, placement(scenario.topology, c.ranks), {}}});
  return to_seconds(r.tasks[0].end - r.tasks[0].start);
}

// Segment counts worth trying: powers of two up to the element count, and the
// uncontended optimum sqrt((K-2) N / (alpha beta)) with its neighbours.
std::vector<int> segment_candidates(const Scenario& scenario, Router& router,
                                    const CollectiveSpec& c) {
  std::vector<int> out;
  const std::int64_t most = std::min<std::int64_t>(c.shape.count, 1 << 16);
  for (std::int64_t s = 1; s <= most; s *= 2) out.push_back(static_cast<int>(s));
  if (c.ranks.size() > 2 && scenario.network.alpha > 0) {
    const auto& t = scenario.topology;
    const double beta =
        router.info(router.route(t.gpu_of_rank(c.ranks[0]), t.gpu_of_rank(c.ranks[1]))).bottleneck;
    const double best = std::sqrt((c.ranks.size() - 2.0) * static_cast<double>(c.bytes) /
                                  (to_seconds(scenario.network.alpha) * beta));
    for (double f : {0.8, 1.0, 1.25}) {
      const auto s = static_cast<std::int64_t>(std::llround(best * f));
      if (s >= 1 && s <= most) out.push_back(static_cast<int>(s));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Settles "auto" algorithm and segments by simulating each candidate alone.
std::optional<AutoChoice> resolve(const Scenario& scenario, Router& router, CollectiveSpec& c) {
  if (c.levels_from_topology && c.options.level_sizes.empty()) {
    try {
      c.options.level_sizes = levels_from_hosts(scenario.topology, c);
    } catch (const InputError&) {
      if (c.algorithm == "hierarchical") throw;  // "auto" just skips hierarchical
    }
  }
  if (c.algorithm != "auto" && !c.auto_segments) return std::nullopt;
  std::vector<std::string> algorithms{c.algorithm};
  if (c.algorithm == "auto") algorithms = algorithms_for(c.shape.op);
  std::vector<Candidate> results;
  for (const auto& a : algorithms) {
    if (a == "hierarchical" && c.options.level_sizes.empty()) continue;
    CollectiveSpec trial = c;
    trial.algorithm = a;
    std::vector<int> segments{c.options.segments};
    if (c.auto_segments && find_algorithm(c.shape.op, a)->uses_segments)
      segments = segment_candidates(scenario, router, c);
    for (int S : segments) {
      trial.options.segments = S;
      results.push_back({a, S, simulate_alone(scenario, router, trial)});
    }
  }
  if (results.empty()) throw InputError(c.json_path + ".algorithm", "no algorithm applies here");
  // Fastest first; ties go to the earlier candidate, so the choice is reproducible.
  std::stable_sort(results.begin(), results.end(),
                   [](const Candidate& a, const Candidate& b) { return a.time_s < b.time_s; });
  AutoChoice choice{results.front(), std::nullopt, static_cast<int>(results.size())};
  for (const auto& r : results) {
    const bool other = c.algorithm == "auto" ? r.algorithm != choice.chosen.algorithm
                                             : r.segments != choice.chosen.segments;
    if (other) {
      choice.runner_up = r;
      break;
    }
  }
  c.algorithm = choice.chosen.algorithm;
  c.options.segments = choice.chosen.segments;
  return choice;
}

}  // namespace

ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options) {
  ScenarioResult out;
  Router router(scenario.topology, scenario.network.routing);
  for (const auto& c : scenario.collectives) check_reachable(scenario, c, router);
  out.resolved = scenario.collectives;
  for (auto& c : out.resolved) out.choices.push_back(resolve(scenario, router, c));
  out.schedules.reserve(out.resolved.size());
  for (const auto& c : out.resolved) out.schedules.push_back(generate_schedule(c));

  std::vector<CollectiveTask> tasks;
  for (std::size_t i = 0; i < out.resolved.size(); ++i) {
    const auto& c = out.resolved[i];
    tasks.push_back({c.name, &out.schedules[i], placement(scenario.topology, c.ranks), c.after});
  }
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  out.sim = sim.run(tasks);

  for (std::size_t i = 0; i < tasks.size(); ++i) {
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

}  // namespace collsim
