#pragma once
// A scenario, end to end: planned (plan/plan.h), then simulated.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "scenario/scenario.h"
#include "simulate/op_costs.h"
#include "simulate/op_sink.h"
#include "simulate/simulator.h"

namespace collsim {

// "nccl_model", "host_issue" (JSON); "" for Nothing.
std::string_view name_of(HeldBy h);
// What a row's label adds for it: " (NCCL's estimate)", " (host issue)", "".
std::string_view held_label(HeldBy h);

struct CollectiveOutcome {
  double start_s = 0;
  double end_s = 0;
  double time_s = 0;
  double algbw_Bps = 0;  // bytes / time; 0 when the collective takes no time
  double busbw_Bps = 0;
  // What its ops alone took, and what held it longer (NCCL's estimate for its pick, the
  // host's time to issue it) when something did.
  double ops_time_s = 0;
  HeldBy held_by = HeldBy::Nothing;
};

struct ScenarioResult {
  std::vector<CollectiveSpec> resolved;  // the plan's collectives, every choice settled
  std::vector<std::shared_ptr<const AutoChoice>> choices;  // null where nothing was chosen
  std::vector<SharedSchedule> schedules;  // one per collective, in scenario order (shared)
  std::vector<std::uint64_t> digests;  // schedule_digest of each
  std::vector<std::string> labels;     // PlannedCollective::label() of each
  std::vector<CollectiveOutcome> outcomes;
  SimulationResult sim;
  // A streamed run's op count per collective (its schedules hold none); empty otherwise.
  std::vector<std::uint64_t> streamed_ops;
  // A streamed run's totals per collective (each one's own counters, from a run of it
  // alone), which the reports read instead of its ops.
  struct CollectiveTotals {
    std::vector<std::pair<LinkId, std::int64_t>> link_bytes;  // the links it used, by id
    std::vector<std::int64_t> link_slowed;  // of each, LinkCounters::slowed (0: none)
    std::vector<std::int64_t> sent, received;                 // by its own rank index
  };
  std::vector<CollectiveTotals> streamed_totals;
  // Where folds were tried (FoldWhen), per collective: whether it was simulated folded
  // (simulate/symmetric.h), and how, or why not ("" where none was tried); empty otherwise.
  struct Folding {
    bool folded = false;
    std::string note;
  };
  std::vector<Folding> folding;

  std::uint64_t op_count(std::size_t i) const {
    return streamed_ops.empty() ? schedules[i]->size() : streamed_ops[i];
  }
};

// Times the plan's schedules together on the scenario's network (collectives
// contend where they overlap); the result takes the plan's schedules over.
ScenarioResult simulate_plan(const Scenario& scenario, Plan plan, SimulationOptions options = {});

// The least time the busiest link needs for the bytes that crossed it, at its full rate: no
// network that shares its links finishes sooner. The ideal model, which gives every transfer
// its links to itself, can (a naive broadcast's root sends its K-1 copies at once, each at
// full rate): where it does, its time is no physical one.
double link_floor_s(const Topology& topology, const LinkCounters& links);
// make_plan, then simulate_plan.
ScenarioResult run_scenario(const Scenario& scenario, SimulationOptions options = {});

// The same figures without holding any schedule whole (collsim run when that is exact and
// pays, collsim run --stream): each collective is generated while it is simulated
// (simulate/streamed.h), alone on the network, starting when the collectives it runs
// `after` have ended. Collectives that may overlap (neither waits on the other) are held
// whole and played together, as run_scenario plays them, from when every collective
// before them has ended: exact, as every later collective waits on all of them (the run
// is cut only where that holds). Keeps totals (link and rank counters, times), no per-op
// record: schedules hold no ops, the digests are the streams'.
// Which collectives are timed by one rank's ops where their ranks are interchangeable
// (schedule/quotient.h, simulate/symmetric.h; the same figures, no digest): none, those
// whose schedule could reach folding_pays_ops, or every one (run --symmetry).
// With a sink (FoldWhen::Never only), every op is handed to it as it retires
// (op_sink.h): the per-op reports of a run too large to record.
enum class FoldWhen { Never, Pays, Always };
ScenarioResult run_scenario_streamed(const Scenario& scenario, FoldWhen fold = FoldWhen::Never,
                                     OpSink* sink = nullptr);

// A stored run's ops to a sink, each collective's in id order, from its record: times
// where SimulationOptions::record_ops kept them, routes where keep_routes did. The
// second form hands over one task as collective `index`.
void retire_recorded(const ScenarioResult& r, OpSink& sink);
void retire_recorded(std::size_t index, const Schedule& s, const TaskTiming& task,
                     const RouteTable& routes, OpSink& sink);

// Whether run_scenario_streamed gives exactly what run_scenario gives: the scenario has
// collectives and no workload.
bool streams_exactly(const Scenario& scenario);
// Whether streaming is worth its per-collective set-up (a generator thread, a network
// model): some collective it would stream (one that overlaps no other) could reach
// kStreamingPaysOps ops. Below, storing
// is faster (20,000 chained 1 KiB all-reduces on 8 GPUs: 2.1 s stored, 3.3 s streamed). `collsim
// run` streams by itself when both hold and no per-op output is asked.
inline constexpr double kStreamingPaysOps = 1 << 20;
bool streaming_pays(const Scenario& scenario);
// Whether some collective's schedule could reach the ops from which its streamed run
// takes tens of seconds or more under the scenario's network model, measured on the 2-core
// VM (docs/results/benchmarks.md): ideal about 80 ns an op (2^30 ops: 90 s), flow 0.3 to
// 2.4 us on a cluster (2^24: 5 to 40 s), packet about 8 us (2^20: 8 s). A fold takes
// seconds where its ranks are alike. `collsim run` then folds what folds by itself (no digest for
// those;
// --stream insists on the whole schedule).
double folding_pays_ops(NetworkModelKind model);
bool folding_pays(const CollectiveSpec& c, NetworkModelKind model);
bool folding_pays(const Scenario& scenario);  // for some collective

}  // namespace collsim
