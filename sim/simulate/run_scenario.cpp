#include "simulate/run_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

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

// Where the run can be cut in two without changing a time: i is a cut when every
// collective from i on waits, directly or through others, on every collective before i,
// so none of them can overlap any before it and all links are idle when they begin.
// Returns the cuts in order (0 first) and then the collective count: each span between
// two is a group whose members may overlap each other only. Throws on an `after` that is
// not an earlier collective.
std::vector<std::size_t> group_bounds(const Scenario& scenario) {
  const auto& cs = scenario.collectives;
  // low[j]: a prefix [0, low[j]) of the collectives j waits on, through whichever path
  // (the largest this finds: the prefixes of those it names, then the names that extend
  // them; a smaller one only loses cuts, never makes a wrong one).
  std::vector<std::size_t> low(cs.size(), 0);
  for (std::size_t j = 0; j < cs.size(); ++j) {
    std::vector<std::size_t> named;
    for (int a : cs[j].after) {
      if (a < 0 || static_cast<std::size_t>(a) >= j)
        throw InputError(cs[j].json_path + ".after", "a collective may only wait on earlier ones");
      named.push_back(static_cast<std::size_t>(a));
      low[j] = std::max(low[j], low[named.back()]);
    }
    std::sort(named.begin(), named.end());
    for (std::size_t a : named)
      if (a == low[j]) ++low[j];
  }
  std::vector<std::size_t> bounds{cs.size()};
  std::size_t least_later = cs.size();  // the least low[j] of the collectives j >= i
  for (std::size_t i = cs.size(); i-- > 0;) {
    least_later = std::min(least_later, low[i]);
    if (least_later >= i) bounds.push_back(i);
  }
  std::reverse(bounds.begin(), bounds.end());
  return bounds;
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
  for (std::size_t l = 0; l < links.size(); ++l)
    if (links.bytes(l) > 0) {
      out.link_bytes.emplace_back(static_cast<LinkId>(l), links.bytes(l));
      out.link_slowed.push_back(links.slowed(l));
    }
  for (int rank : c.ranks) {
    const auto gpu = static_cast<std::size_t>(t.gpu_of_rank(rank));
    out.sent.push_back(sent[gpu]);
    out.received.push_back(received[gpu]);
  }
  return out;
}

// The collective timed by its representatives, where its algorithm folds and the network
// keeps its ranks alike (simulate/symmetric.h, simulate_folded); else nullopt and why not,
// in `note`.
std::optional<StreamedResult> run_folded(const Scenario& scenario, Router& router,
                                         NetworkModel& model, const PlannedCollective& c,
                                         ScenarioResult::Folding& note) {
  std::string why;
  const AlgorithmEntry* entry = find_algorithm(c.spec.shape.op, c.spec.algorithm);
  // A fold made a step at a time is played as it is made, never stored first: it holds only
  // the representatives in flight, and was faster at every size measured (a 4,096-GPU
  // cluster's ring under flow: 0.45 s and 19 MB, stored 1.36 s and 315 MB).
  const bool as_made = entry && entry->quotient_stream;
  std::optional<QuotientSchedule> own;
  if (!as_made) own = run_quotient(c.spec, why);
  std::optional<FoldedRun> run;
  if (entry)
    run =
        simulate_folded(scenario.topology, router, model, scenario.network.model, {c.gpus, c.cost},
                        *entry, c.spec.shape, c.spec.options, std::move(own), why);
  if (!run) {
    if (why.empty()) run_quotient(c.spec, why);  // no fold at all: the algorithm says why
    note.note = "not folded: " + why;
    return std::nullopt;
  }
  note = {true, run->note()};
  return std::move(run->result);
}

}  // namespace

namespace {

// The runs' link rates as one rate per link over time, handed on to `to` point by point as
// they come (run --out streamed: keeping a point per rate change was gigabytes at 4,096 GPUs). A
// run's points are its changes from its `start`; summed with every earlier run's, a change at the
// instant of the link's latest sum replaces it. That needs each link's points in time order across
// the runs: each run begins once those before it have ended (their rates back at 0), as
// run_scenario plays them; a point out of that order is a logic error, not a quiet misreading.
class RateSum final : public RateListener {
 public:
  explicit RateSum(RateListener& to) : to_(to) {}

  // The points that follow are a run's that began at `start`.
  void begin_run(Time start) {
    start_ = start;
    for (LinkId l : touched_) run_rate_[l] = 0, in_touched_[l] = false;
    touched_.clear();
  }
  void links(std::size_t count) override {
    if (count > total_.size()) {
      total_.resize(count, 0);
      run_rate_.resize(count, 0);
      in_touched_.resize(count, false);
      latest_.resize(count);
    }
    to_.links(count);
  }
  void rate(LinkId l, RatePoint p) override {
    if (!in_touched_[l]) touched_.push_back(l), in_touched_[l] = true;
    total_[l] += p.milli_Bps - run_rate_[l];
    run_rate_[l] = p.milli_Bps;
    const Time at = add_time(start_, p.at);
    std::optional<RatePoint>& latest = latest_[l];
    if (latest && latest->at == at) {
      latest->milli_Bps = total_[l];
      return;
    }
    if (latest) {
      if (at < latest->at) throw std::logic_error("link rates reached the report out of order");
      to_.rate(l, *latest);
    }
    latest = RatePoint{at, total_[l]};
  }
  // After the last run: each link's latest sum.
  void finish() {
    for (std::size_t l = 0; l < latest_.size(); ++l)
      if (latest_[l]) to_.rate(static_cast<LinkId>(l), *latest_[l]);
    latest_.clear();
  }

 private:
  RateListener& to_;
  Time start_ = 0;
  std::vector<std::int64_t> total_, run_rate_;  // per link: every run's sum, this run's
  std::vector<LinkId> touched_;                 // links this run has noted, each once
  std::vector<bool> in_touched_;
  std::vector<std::optional<RatePoint>> latest_;
};

// Each link's points as they come, kept: where a sink has no listener of its own.
class KeptRates final : public RateListener {
 public:
  explicit KeptRates(std::vector<std::vector<RatePoint>>& into) : into_(into) {}
  void links(std::size_t count) override {
    if (count > into_.size()) into_.resize(count);
  }
  void rate(LinkId link, RatePoint point) override { into_[link].push_back(point); }

 private:
  std::vector<std::vector<RatePoint>>& into_;
};

// run_scenario_streamed's state: the result so far, filled a group of collectives at a
// time, in scenario order; with a sink, each collective's ops handed to it as they retire.
class StreamedRun {
 public:
  StreamedRun(const Scenario& scenario, FoldWhen fold, OpSink* sink)
      : scenario_(scenario),
        topo_(scenario.topology),
        router_(topo_, scenario.network.routing),
        fold_(fold),
        sink_(sink) {
    if (sink_) rate_sum_.emplace(sink_->rates() ? *sink_->rates() : kept_rates_);
    out_.sim.links.resize(topo_.links().size());
    out_.sim.node_sent.assign(topo_.nodes().size(), 0);
    out_.sim.node_received.assign(topo_.nodes().size(), 0);
  }

  Router& router() { return router_; }
  // The plan's stored schedules, all held until each is played (make_plan counted them).
  void holding(const Plan& plan) {
    for (const PlannedCollective& c : plan.collectives) held_ += c.schedule->size();
  }

  // One collective with nothing beside it: folded where asked and it folds, else streamed
  // (its digest with it), else its stored schedule alone.
  void alone(PlannedCollective& c) {
    Time start = 0;
    for (int a : c.spec.after) start = std::max(start, out_.sim.tasks[a].end);
    auto model = make_network_model(scenario_.network, topo_, router_);
    std::optional<StreamedResult> streamed;
    if (fold_ != FoldWhen::Never) out_.folding.emplace_back();
    if (fold_ == FoldWhen::Always ||
        (fold_ == FoldWhen::Pays && folding_pays(c.spec, scenario_.network.model))) {
      if (c.streamed)
        streamed = run_folded(scenario_, router_, *model, c, out_.folding.back());
      else
        out_.folding.back().note = "not folded: its schedule is not streamed";
    }
    const std::size_t index = out_.sim.tasks.size();
    if (!streamed && c.streamed) {
      std::optional<ShiftedSink> shifted;
      if (sink_) {
        sink_->collective(index, nullptr);
        rate_sum_->begin_run(start);
        shifted.emplace(*sink_, start, &*rate_sum_);
      }
      streamed = simulate_streamed(
          topo_, router_, *model, {c.gpus, c.cost}, [&] { return run_generator(c.spec); },
          GenerateOn::OwnThread, shifted ? &*shifted : nullptr);
      if (sink_) sink_->collective_done();
      c.digest = streamed->digest;
    }
    if (streamed) {
      absorb_counters(*streamed);
      absorb_rates(streamed->link_rates, start);
      absorb_totals(c, *streamed);
      TaskTiming timing;
      timing.start = 0;
      timing.end = streamed->end;
      timing.ops_start = streamed->ops_start;
      timing.ops_end = streamed->ops_end;
      record(c, start, timing, streamed->steps, streamed->ops);
      return;
    }
    const SimulationResult r = stored_alone(c, *model);
    retire_to_sink(index, *c.schedule, r, 0, start);
    absorb_counters(r);
    absorb_rates(r.link_rates, start);
    absorb_totals(c, r);
    record(c, start, r.tasks[0], c.schedule->num_steps, c.schedule->size());
  }

  // Collectives that may overlap each other (and none before `first`, the first of them,
  // which all of them wait on): their stored schedules together, as the stored run plays
  // them, from when every earlier collective has ended; each one's own links and ranks
  // from a run of it alone (what it moves does not depend on what it meets).
  void together(std::span<PlannedCollective> group, std::size_t first) {
    const Time start = last_end_;
    std::vector<CollectiveTask> tasks;
    for (PlannedCollective& c : group) {
      hold_whole(c);
      std::vector<int> after;  // within the group; those before it have all ended
      for (int a : c.spec.after)
        if (static_cast<std::size_t>(a) >= first) after.push_back(a - static_cast<int>(first));
      tasks.push_back({c.spec.name, &*c.schedule, c.gpus, std::move(after), c.cost});
    }
    auto model = make_network_model(scenario_.network, topo_, router_);
    Simulator sim(topo_, router_, *model, SimulationOptions{.record_ops = sink_ != nullptr});
    const SimulationResult r = sim.run(tasks);
    absorb_counters(r);
    absorb_rates(r.link_rates, start);
    for (std::size_t k = 0; k < group.size(); ++k) {
      PlannedCollective& c = group[k];
      retire_to_sink(out_.sim.tasks.size(), *c.schedule, r, k, start);
      if (fold_ != FoldWhen::Never)
        out_.folding.push_back({false, "not folded: it may overlap another collective"});
      auto own = make_network_model(scenario_.network, topo_, router_);
      absorb_totals(c, stored_alone(c, *own));
      record(c, start, r.tasks[k], c.schedule->num_steps, c.schedule->size());
    }
  }

  ScenarioResult take() {
    if (rate_sum_) rate_sum_->finish();
    return std::move(out_);
  }

 private:
  // A streamed plan's schedule generated whole, to run beside others; with every schedule
  // held now, within the ops one run may hold (kMaxStoredOps, as make_plan counts them).
  void hold_whole(PlannedCollective& c) {
    if (!c.streamed) return;
    if (std::string too_big = schedule_size_problem(c.spec, false); !too_big.empty())
      throw InputError(c.spec.json_path,
                       too_big +
                           " (it may overlap another collective: held whole to play "
                           "beside it; make it run after the others to stream it)");
    c.schedule = SharedSchedule(generate_schedule(c.spec));
    c.digest = schedule_digest(*c.schedule);
    c.streamed = false;
    held_ += c.schedule->size();
    if (static_cast<double>(held_) > kMaxStoredOps)
      throw InputError(c.spec.json_path,
                       fmt::format("the schedules held at once to play the collectives that may "
                                   "overlap it hold {} ops, more than the 2^26 collsim holds in "
                                   "memory; make them run one after another, or split the "
                                   "scenario",
                                   held_));
  }

  SimulationResult stored_alone(const PlannedCollective& c, NetworkModel& model) {
    Simulator sim(topo_, router_, model, SimulationOptions{.record_ops = sink_ != nullptr});
    return sim.run({{c.spec.name, &*c.schedule, c.gpus, {}, c.cost}});
  }

  // Task `task` of a stored run, which began at `start` in the scenario, to the sink.
  void retire_to_sink(std::size_t index, const Schedule& s, const SimulationResult& r,
                      std::size_t task, Time start) {
    if (!sink_) return;
    ShiftedSink shifted(*sink_, start);
    retire_recorded(index, s, r.tasks[task], r.routes, shifted);
  }

  template <class Result>  // a StreamedResult or a SimulationResult
  void absorb_counters(const Result& r) {
    out_.sim.links.accumulate(r.links);
    add_counts(out_.sim.node_sent, r.node_sent);
    add_counts(out_.sim.node_received, r.node_received);
    out_.sim.events += r.events;
    out_.sim.transfers += r.transfers;
  }

  // Each link's rate over time, from a stored run that began at `start` in the scenario,
  // summed with the other runs' as they come (a streamed run hands its own over itself).
  void absorb_rates(const std::vector<std::vector<RatePoint>>& rates, Time start) {
    if (rates.empty()) return;
    rate_sum_->begin_run(start);
    rate_sum_->links(rates.size());
    for (std::size_t l = 0; l < rates.size(); ++l)
      for (const RatePoint& p : rates[l]) rate_sum_->rate(static_cast<LinkId>(l), p);
  }

  template <class Result>
  void absorb_totals(const PlannedCollective& c, const Result& r) {
    out_.streamed_totals.push_back(totals_of(topo_, c.spec, r.links, r.node_sent, r.node_received));
  }

  // The collective's place in the result: `timing` relative to `start`, when its group
  // began; its schedule by its step count alone (the reports read the counters).
  void record(PlannedCollective& c, Time start, const TaskTiming& timing, int steps,
              std::uint64_t ops) {
    TaskTiming t;
    t.start = add_time(start, timing.start);
    t.end = add_time(start, timing.end);
    t.ops_start = timing.ops_start < 0 ? -1 : add_time(start, timing.ops_start);
    t.ops_end = add_time(start, timing.ops_end);
    out_.sim.tasks.push_back(t);
    last_end_ = std::max(last_end_, t.end);
    out_.outcomes.push_back(outcome_of(c.spec, c.cost.get(), t.start, t.end, t.ops_end));
    out_.labels.push_back(c.label());
    Schedule header;
    header.num_steps = steps;
    out_.schedules.push_back(SharedSchedule(std::move(header)));
    out_.streamed_ops.push_back(ops);
    out_.digests.push_back(c.digest);
    out_.resolved.push_back(std::move(c.spec));
    out_.choices.push_back(std::move(c.choice));
    held_ -= c.schedule->size();
    c.schedule = SharedSchedule();  // played: its memory back before the next group's
  }

  const Scenario& scenario_;
  const Topology& topo_;
  Router router_;
  FoldWhen fold_;
  OpSink* sink_;
  ScenarioResult out_;
  // With a sink: the runs' link rates summed as they come, into the sink's listener or, where
  // it has none, kept in out_.sim.link_rates.
  KeptRates kept_rates_{out_.sim.link_rates};
  std::optional<RateSum> rate_sum_;
  std::size_t held_ = 0;  // ops of the schedules held now, a shared one once per collective
  Time last_end_ = 0;     // when every collective recorded so far has ended
};

}  // namespace

void retire_recorded(std::size_t index, const Schedule& s, const TaskTiming& task,
                     const RouteTable& routes, OpSink& sink) {
  sink.collective(index, &s);
  for (OpId id = 0; id < s.size(); ++id) {
    RetiredOp r;
    r.id = id;
    r.op = &s.ops[id];
    r.bytes = s.bytes(s.ops[id]);
    if (!task.ops.empty()) r.start = task.ops[id].start, r.end = task.ops[id].end;
    if (!task.paths.empty() && task.paths[id] >= 0) r.route = routes[task.paths[id]];
    sink.op(r);
  }
  sink.collective_done();
}

void retire_recorded(const ScenarioResult& r, OpSink& sink) {
  for (std::size_t c = 0; c < r.resolved.size(); ++c)
    retire_recorded(c, *r.schedules[c], r.sim.tasks[c], r.sim.routes, sink);
}

ScenarioResult run_scenario_streamed(const Scenario& scenario, FoldWhen fold, OpSink* sink) {
  if (sink && fold != FoldWhen::Never)
    throw std::logic_error("a folded run plays some ranks' ops: none to hand to a sink");
  const std::vector<std::size_t> bounds = group_bounds(scenario);
  for (const auto& c : scenario.collectives)  // refused before routing a million GPUs
    if (std::string too_big = schedule_size_problem(c, true); !too_big.empty())
      throw InputError(c.json_path, too_big);
  StreamedRun run(scenario, fold, sink);
  Plan plan = make_plan(scenario, run.router(), simulated_alone(scenario, run.router()),
                        ScheduleHolding::Streamed);
  run.holding(plan);
  for (std::size_t g = 0; g + 1 < bounds.size(); ++g) {
    const std::size_t first = bounds[g], size = bounds[g + 1] - first;
    if (size == 1)
      run.alone(plan.collectives[first]);
    else
      run.together(std::span(plan.collectives).subspan(first, size), first);
  }
  return run.take();
}

bool streams_exactly(const Scenario& scenario) {
  return !scenario.collectives.empty() && scenario.workloads.empty();
}

namespace {

// The largest schedule bound of the scenario's collectives, or (alone_only) of those a
// streamed run streams: those alone in their group (group_bounds; the others are held
// whole anyway).
double largest_schedule(const Scenario& scenario, bool alone_only) {
  const std::vector<std::size_t> bounds = group_bounds(scenario);
  double largest = 0;
  for (std::size_t g = 0; g + 1 < bounds.size(); ++g) {
    if (alone_only && bounds[g + 1] - bounds[g] != 1) continue;
    for (std::size_t i = bounds[g]; i < bounds[g + 1]; ++i)
      largest = std::max(largest, schedule_ops_bound(scenario.collectives[i]));
  }
  return largest;
}

}  // namespace

bool streaming_pays(const Scenario& scenario) {
  return largest_schedule(scenario, true) >= kStreamingPaysOps;
}

double folding_pays_ops(NetworkModelKind model) {
  switch (model) {
    case NetworkModelKind::Ideal:
      return 1073741824.0;  // 2^30: a ring all-reduce from 23,171 ranks on (2 K^2)
    case NetworkModelKind::Flow:
      return 16777216.0;  // 2^24: from 2,897 ranks on
    case NetworkModelKind::Packet:
      return 1048576.0;  // 2^20
  }
  return 1073741824.0;
}

bool folding_pays(const CollectiveSpec& c, NetworkModelKind model) {
  return schedule_ops_bound(c) >= folding_pays_ops(model);
}

bool folding_pays(const Scenario& scenario) {
  return largest_schedule(scenario, false) >= folding_pays_ops(scenario.network.model);
}

ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options) {
  return simulate_plan(scenario, make_plan(scenario), options);
}

double link_floor_s(const Topology& topology, const LinkCounters& links) {
  double floor = 0;
  for (LinkId l = 0; l < static_cast<LinkId>(topology.links().size()); ++l)
    floor = std::max(floor, static_cast<double>(links.bytes(l)) / topology.link(l).bandwidth);
  return floor;
}

}  // namespace collsim
