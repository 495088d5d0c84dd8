// The run record: the simulator keeps each op's times and route once; reports read
// them and the network models' link counters.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

using namespace collsim;

namespace {

const std::string kScenarios = std::string(COLLSIM_SOURCE_DIR) + "/scenarios/";

// Peak concurrency the slow way, from the record: per link, op intervals sorted with
// ends before starts at the same instant (back-to-back transfers do not overlap).
std::vector<int> peaks_from_record(const Scenario& s, const ScenarioResult& r) {
  std::vector<std::vector<std::pair<Time, int>>> edges(s.topology.links().size());
  for (std::size_t c = 0; c < r.schedules.size(); ++c)
    for (OpId id = 0; id < r.schedules[c].size(); ++id) {
      if (r.schedules[c].ops[id].is_local()) continue;
      const OpTiming& t = r.sim.tasks[c].ops[id];
      for (LinkId l : r.sim.routes[r.sim.tasks[c].paths[id]]) {
        edges[l].emplace_back(t.start, 1);
        edges[l].emplace_back(t.end, -1);
      }
    }
  std::vector<int> out;
  for (auto& e : edges) {
    std::sort(e.begin(), e.end());
    int now = 0, peak = 0;
    for (auto [t, d] : e) peak = std::max(peak, now += d);
    out.push_back(peak);
  }
  return out;
}

}  // namespace

TEST_CASE("record: the report's link bytes, busy time and peaks are the model's counters") {
  Scenario s = load_scenario(kScenarios + "oversubscribed-spine-2to1.json");
  // The flow model (the scenario's), and the others, which count in their own ways.
  for (const char* model : {"flow", "ideal", "packet"}) {
    CAPTURE(model);
    s.network.model = model;
    const ScenarioResult r = run_scenario(s);
    const TrafficReport t = analyse_traffic(s, r);
    const auto peaks = peaks_from_record(s, r);
    int most = 0;
    for (std::size_t l = 0; l < t.links.size(); ++l) {
      CHECK(t.links[l].bytes == r.sim.links.bytes[l]);
      CHECK(t.links[l].busy_s == to_seconds(r.sim.links.busy[l]));
      CHECK(t.links[l].peak_transfers == r.sim.links.peak_in_flight[l]);
      CHECK(t.links[l].peak_transfers == peaks[l]);
      most = std::max(most, t.links[l].peak_transfers);
    }
    CHECK(most > 1);  // contended: the spine carries many transfers at once
  }
}

TEST_CASE("record: each op's route is recorded once, as the router has it") {
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  const ScenarioResult r = run_scenario(s, SimulationOptions{.record_ops = false});
  Router router(s.topology, s.network.routing);
  std::size_t routed = 0;
  for (std::size_t c = 0; c < r.schedules.size(); ++c) {
    const Schedule& sched = r.schedules[c];
    REQUIRE(r.sim.tasks[c].paths.size() == sched.size());
    CHECK(r.sim.tasks[c].ops.empty());  // times only when asked; routes always
    for (OpId id = 0; id < sched.size(); ++id) {
      const Op& op = sched.ops[id];
      const PathId p = r.sim.tasks[c].paths[id];
      if (op.is_local()) {
        CHECK(p == -1);
        continue;
      }
      const auto& ranks = r.resolved[c].ranks;
      const auto want = router.links(router.route(s.topology.gpu_of_rank(ranks[op.src_rank]),
                                                  s.topology.gpu_of_rank(ranks[op.dst_rank])));
      const auto got = r.sim.routes[p];
      REQUIRE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
      ++routed;
    }
  }
  CHECK(routed > 0);
  // One entry per distinct route, far fewer than ops.
  CHECK(r.sim.routes.size() < routed / 10);
}

TEST_CASE("record: the traffic report reads the recorded routes and routes nothing itself") {
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  ScenarioResult r = run_scenario(s, SimulationOptions{.record_ops = false});
  // Rewrite the record so that every route is one link no router would choose for most
  // ops: the report's bottlenecks must follow the record.
  const LinkId only = 3;
  for (std::size_t p = 0; p < r.sim.routes.size(); ++p) {
    r.sim.routes.links[r.sim.routes.first[p]] = only;
    for (auto i = r.sim.routes.first[p] + 1; i < r.sim.routes.first[p + 1]; ++i)
      r.sim.routes.links[i] = only;
  }
  const TrafficReport t = analyse_traffic(s, r);
  REQUIRE(t.per_collective.size() == 2);
  for (const auto& b : t.per_collective) CHECK(b.link == only);
  for (const auto& b : t.per_step) CHECK(b.link == only);
}
