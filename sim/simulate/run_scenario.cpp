#include "simulate/run_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "simulate/simulated_plan.h"
#include "simulate/streamed.h"
#include "simulate/symmetric.h"
#include "topology/routing.h"

namespace collsim {
namespace {

CollectiveOutcome outcome_of(const CollectiveSpec& c, const CostModel* cost, Time start,
                             Time end, Time ops_end) {
  CollectiveOutcome o;
  o.start_s = to_seconds(start);
  o.end_s = to_seconds(end);
  o.time_s = to_seconds(end - start);
  o.ops_time_s = to_seconds(ops_end - start);
  o.held_by = held_by(cost, start, ops_end, end);
  if (end > start) {
    o.algbw_Bps = static_cast<double>(c.bytes) / o.time_s;
    o.busbw_Bps = o.algbw_Bps * busbw_factor(c.shape.op, c.shape.ranks);
  }
  return o;
}

// The first collective that may overlap the one before it, or none: then each one's ops
// begin after all of the previous one's end, and alone is exact. `after` points only to
// earlier collectives, so i can wait on i - 1 through others only through one between
// them, and there is none: it waits on i - 1 exactly when it names it. Throws on an
// `after` that is not an earlier collective.
std::optional<std::size_t> first_overlapping(const Scenario& scenario) {
  const auto& cs = scenario.collectives;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    bool waits_on_previous = false;
    for (int a : cs[i].after) {
      if (a < 0 || static_cast<std::size_t>(a) >= i)
        throw InputError(cs[i].json_path + ".after", "a collective may only wait on earlier ones");
      waits_on_previous = waits_on_previous || static_cast<std::size_t>(a) + 1 == i;
    }
    if (i > 0 && !waits_on_previous) return i;
  }
  return std::nullopt;
}

// `how`: the flag that asked for the run ("--stream", "--symmetry").
void require_one_after_another(const Scenario& scenario, std::string_view how) {
  if (const auto i = first_overlapping(scenario)) {
    const CollectiveSpec& c = scenario.collectives[*i];
    throw InputError(c.json_path + ".after",
                     fmt::format("{} times each collective alone, so each must run after "
                                 "the one before it; \"{}\" may overlap \"{}\"",
                                 how, c.name, scenario.collectives[*i - 1].name));
  }
}

void add_counters(LinkCounters& into, const LinkCounters& from) {
  for (std::size_t l = 0; l < into.bytes.size(); ++l) {
    into.bytes[l] += from.bytes[l];
    into.busy[l] += from.busy[l];
    into.peak_in_flight[l] = std::max(into.peak_in_flight[l], from.peak_in_flight[l]);
  }
}

void add_counts(std::vector<std::int64_t>& into, const std::vector<std::int64_t>& from) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += from[i];
}

}  // namespace

std::string_view name_of(HeldBy h) {
  constexpr std::string_view names[] = {"", "nccl_model", "host_issue"};
  return names[static_cast<int>(h)];
}

std::string_view held_label(HeldBy h) {
  constexpr std::string_view labels[] = {"", " (NCCL's estimate)", " (host issue)"};
  return labels[static_cast<int>(h)];
}

ScenarioResult simulate_plan(const Scenario& scenario, Plan plan, SimulationOptions options) {
  ScenarioResult out;
  std::vector<CollectiveTask> tasks;
  const std::size_t n = plan.collectives.size();
  out.schedules.reserve(n);
  out.labels.reserve(n);
  out.resolved.reserve(n);
  out.choices.reserve(n);
  out.digests.reserve(n);
  tasks.reserve(n);
  for (auto& c : plan.collectives) {
    out.labels.push_back(c.label());
    out.schedules.push_back(std::move(c.schedule));
    tasks.push_back(
        {c.spec.name, &*out.schedules.back(), std::move(c.gpus), c.spec.after, std::move(c.cost)});
    out.resolved.push_back(std::move(c.spec));
    out.choices.push_back(std::move(c.choice));
    out.digests.push_back(c.digest);
  }
  plan = {};  // all taken: its husks (a KB each) need not outlive the run
  Router router(scenario.topology, scenario.network.routing);
  auto model = make_network_model(scenario.network, scenario.topology, router);
  Simulator sim(scenario.topology, router, *model, options);
  out.sim = sim.run(tasks);

  for (std::size_t i = 0; i < n; ++i)
    out.outcomes.push_back(outcome_of(out.resolved[i], tasks[i].cost.get(), out.sim.tasks[i].start,
                                      out.sim.tasks[i].end, out.sim.tasks[i].ops_end));
  return out;
}

namespace {

ScenarioResult::CollectiveTotals totals_of(const Topology& t, const CollectiveSpec& c,
                                           const LinkCounters& links,
                                           const std::vector<std::int64_t>& sent,
                                           const std::vector<std::int64_t>& received) {
  ScenarioResult::CollectiveTotals out;
  for (std::size_t l = 0; l < links.bytes.size(); ++l)
    if (links.bytes[l] > 0) out.link_bytes.emplace_back(static_cast<LinkId>(l), links.bytes[l]);
  for (int rank : c.ranks) {
    const auto gpu = static_cast<std::size_t>(t.gpu_of_rank(rank));
    out.sent.push_back(sent[gpu]);
    out.received.push_back(received[gpu]);
  }
  return out;
}

// The collective timed by its representatives, where its algorithm folds and the network
// keeps its ranks alike; else nullopt and why not, in `note`.
std::optional<StreamedResult> run_folded(const Scenario& scenario, Router& router,
                                         NetworkModel& model, const PlannedCollective& c,
                                         ScenarioResult::Folding& note) {
  std::string why;
  std::optional<QuotientSchedule> q = run_quotient(c.spec, why);
  const StreamedCollective collective{c.gpus, c.cost};
  if (q) why = fold_problem(scenario.topology, collective, scenario.network.model, q->period);
  if (!why.empty()) {
    note.note = "not folded: " + why;
    return std::nullopt;
  }
  StreamedResult r =
      simulate_folded(scenario.topology, router, model, scenario.network.model, collective, *q);
  note = {true, fmt::format("folded: {} ranks alike, {} of {} ops played", c.spec.shape.ranks,
                            q->size(), q->full_size())};
  return r;
}

}  // namespace

ScenarioResult run_scenario_streamed(const Scenario& scenario, FoldWhen fold) {
  require_one_after_another(scenario, fold == FoldWhen::Always ? "--symmetry" : "--stream");
  for (const auto& c : scenario.collectives)  // refused before routing a million GPUs
    if (std::string too_big = schedule_size_problem(c, true); !too_big.empty())
      throw InputError(c.json_path, too_big);
  const Topology& topo = scenario.topology;
  Router router(topo, scenario.network.routing);
  Plan plan =
      make_plan(scenario, router, simulated_alone(scenario, router), ScheduleHolding::Streamed);
  ScenarioResult out;
  out.sim.links.resize(topo.links().size());
  out.sim.node_sent.assign(topo.nodes().size(), 0);
  out.sim.node_received.assign(topo.nodes().size(), 0);
  for (PlannedCollective& c : plan.collectives) {
    Time start = 0;
    for (int a : c.spec.after) start = std::max(start, out.sim.tasks[a].end);
    auto model = make_network_model(scenario.network, topo, router);
    Time took = 0, ops_took = 0;
    Schedule header;  // what the reports read of the schedule: its step count
    std::uint64_t ops = c.schedule->size();
    auto absorb = [&](const auto& r) {  // a StreamedResult or a SimulationResult
      add_counters(out.sim.links, r.links);
      add_counts(out.sim.node_sent, r.node_sent);
      add_counts(out.sim.node_received, r.node_received);
      out.sim.events += r.events;
      out.sim.transfers += r.transfers;
      out.streamed_totals.push_back(totals_of(topo, c.spec, r.links, r.node_sent, r.node_received));
    };
    // Folded where asked and it folds, else streamed (its digest with it), else stored.
    std::optional<StreamedResult> streamed;
    if (fold != FoldWhen::Never) out.folding.emplace_back();
    if (fold == FoldWhen::Always || (fold == FoldWhen::Pays && folding_pays(c.spec))) {
      if (c.streamed)
        streamed = run_folded(scenario, router, *model, c, out.folding.back());
      else
        out.folding.back().note = "not folded: its schedule is not streamed";
    }
    if (!streamed && c.streamed) {
      streamed = simulate_streamed(topo, router, *model, {c.gpus, c.cost},
                                   [&] { return run_generator(c.spec); });
      c.digest = streamed->digest;
    }
    if (streamed) {
      took = streamed->end;
      ops_took = streamed->ops_end;
      header.num_steps = streamed->steps;
      ops = streamed->ops;
      absorb(*streamed);
    } else {  // chosen on stored schedules, NVLS, a pipeline's lanes: the stored one, alone
      Simulator sim(topo, router, *model, SimulationOptions{.record_ops = false});
      const SimulationResult r = sim.run({{c.spec.name, &*c.schedule, c.gpus, {}, c.cost}});
      took = r.tasks[0].end - r.tasks[0].start;
      ops_took = r.tasks[0].ops_end - r.tasks[0].start;
      header.num_steps = c.schedule->num_steps;
      absorb(r);
    }
    TaskTiming timing;
    timing.start = start;
    timing.end = add_time(start, took);
    timing.ops_end = add_time(start, ops_took);
    out.sim.tasks.push_back(timing);
    out.outcomes.push_back(
        outcome_of(c.spec, c.cost.get(), timing.start, timing.end, timing.ops_end));
    out.labels.push_back(c.label());
    out.schedules.push_back(
        SharedSchedule(std::move(header)));  // no ops: reports read the counters alone
    out.streamed_ops.push_back(ops);
    out.digests.push_back(c.digest);
    out.resolved.push_back(std::move(c.spec));
    out.choices.push_back(std::move(c.choice));
  }
  return out;
}

bool streams_exactly(const Scenario& scenario) {
  return !scenario.collectives.empty() && scenario.workloads.empty() &&
         !first_overlapping(scenario);
}

namespace {

double largest_schedule(const Scenario& scenario) {
  double largest = 0;
  for (const CollectiveSpec& c : scenario.collectives)
    largest = std::max(largest, schedule_ops_bound(c));
  return largest;
}

}  // namespace

bool streaming_pays(const Scenario& scenario) {
  return largest_schedule(scenario) >= kStreamingPaysOps;
}

bool folding_pays(const CollectiveSpec& c) {
  return schedule_ops_bound(c) >= kFoldingPaysOps;
}

bool folding_pays(const Scenario& scenario) {
  return largest_schedule(scenario) >= kFoldingPaysOps;
}

ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options) {
  return simulate_plan(scenario, make_plan(scenario), options);
}

}  // namespace collsim
