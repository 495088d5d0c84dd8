#pragma once
// The plan: a scenario with every choice settled. Each collective's algorithm is
// chosen ("auto" by the tuner), its options are filled in (hierarchical levels
// from the hosts, segments), and its schedule is generated and checked, once.
// Every command consumes the plan, so the schedule `trace` proves, the one
// `validate` runs for real and the one `run` times are the same object.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scenario/scenario.h"
#include "schedule/quotient.h"

namespace collsim {

class Router;

// One option set the tuner tried, and what it cost.
struct Candidate {
  std::string algorithm;
  AlgorithmOptions options;
  std::string label;  // describe_algorithm(algorithm, options), then the protocol
  double time_s = 0;
  std::string protocol;  // "" when none was set
};

// What "auto" (an algorithm or a segment count) settled on.
struct AutoChoice {
  Candidate chosen;
  std::optional<Candidate> runner_up;  // the fastest with another algorithm, or other options
  int candidates_tried = 0;
};

struct PlannedCollective {
  CollectiveSpec spec;  // algorithm and every option settled: no "auto" left
  std::shared_ptr<const AutoChoice> choice;  // "auto": what was weighed; null otherwise
  SharedSchedule schedule;  // shared with every collective that asked for the same (make_plan)
  std::vector<NodeId> gpus;               // the schedule's rank r runs on GPU node gpus[r]
  std::uint64_t digest = 0;               // schedule_digest(schedule): which schedule, op for op
  std::shared_ptr<const CostModel> cost;  // beyond α-β: the network's, as the protocol adjusts it
  // "algorithm": "nccl": what NCCL's cost model picked ("ring/LL128/24ch"), which the
  // schedule above runs; empty otherwise.
  std::string nccl_pick;
  // ... and every algorithm x protocol its model weighed, with its latency and bandwidth
  // terms (what NCCL_DEBUG_SUBSYS=TUNE prints), in NCCL's order.
  std::vector<NcclOption> nccl_options = {};
  // ... its estimate of the pick on the channels it launches at this size, and the larger
  // size whose estimate is less (NcclPick::least_at; 0: none), which then bounds it.
  double nccl_run_us = 0;
  std::int64_t nccl_least_at = 0;
  // NCCL's point-to-point sends (send/recv, all-to-all, ...): the bytes each peer gets, whose
  // send takes cost->stripe's channels at that size; 0 otherwise.
  std::int64_t nccl_peer_bytes = 0;
  // ScheduleHolding::Streamed: `schedule` was not generated; it is generated while it is
  // simulated (simulate/streamed.h), and `digest` comes from that run.
  bool streamed = false;

  // "ring (8 channels) LL128", or "nccl: ring/LL128/24ch".
  std::string label() const;
};

struct Plan {
  std::vector<PlannedCollective> collectives;  // in scenario order

  // By name; null when there is none.
  const PlannedCollective* find(std::string_view name) const;
};

// What the tuner minimises: a candidate's cost in seconds.
using CostFunction = std::function<double(const PlannedCollective&)>;

// Whether the plan generates every schedule now (and checks it), or leaves those with
// nothing left to choose to be generated while they are simulated, so that none is
// ever held whole (collsim run --stream). A choice ("auto") is still made on stored
// schedules, and switch ops (NVLS) are always stored.
enum class ScheduleHolding { Stored, Streamed };

// The most ops a candidate of "segments": "auto" may have, by schedule_ops_bound: past it,
// each candidate takes seconds to simulate, and a few dozen of them (algorithms x
// segment counts x protocols) minutes. The fewest segments are always tried.
inline constexpr double kMostOpsTried = 1 << 22;

// Every choice settled with `cost` deciding between candidates; `router` must route the
// scenario's topology. The planner knows no simulator: the usual cost, each candidate
// simulated alone, is injected from above (simulate/simulated_plan.h: make_plan(scenario)).
Plan make_plan(const Scenario& scenario, Router& router, const CostFunction& cost,
               ScheduleHolding holding = ScheduleHolding::Stored);

// Plans already made, found by what was asked: planning is deterministic, so a collective
// asking what an earlier one asked (CollectiveSpec::asks_the_same_as: all but its name,
// place and predecessors) takes that plan, its schedule shared. `Ranks::Layout` also
// matches other ranks laid out over hosts alike (a training step's identical groups,
// each task placed on its own GPUs).
class PlanMemo {
 public:
  enum class Ranks { Same, Layout };
  PlanMemo(const Topology& topology, Ranks ranks) : topology_(topology), ranks_(ranks) {}
  // The index given with an earlier request asking what `spec` asks, if any.
  std::optional<std::size_t> find(const CollectiveSpec& spec) const;
  // `asked` (which must outlive the memo) was planned as `index`.
  void add(const CollectiveSpec& asked, std::size_t index);

 private:
  struct Entry {
    const CollectiveSpec* asked;
    std::size_t index;
    std::vector<int> hosts;  // layout(asked->ranks), computed once
  };
  // Narrows the search (`hosts`: the request's layout); `same` and the layouts decide.
  std::uint64_t key(const CollectiveSpec& s, const std::vector<int>& hosts) const;
  bool same(const CollectiveSpec& a, const CollectiveSpec& b) const;
  // Ranks::Layout: each rank's host, renumbered by first appearance; Ranks::Same: empty.
  std::vector<int> layout(const std::vector<int>& ranks) const;

  const Topology& topology_;
  Ranks ranks_;
  std::unordered_map<std::uint64_t, std::vector<Entry>> by_key_;
};

// One collective settled the way make_plan settles each of a scenario's (workloads
// plan theirs one by one).
PlannedCollective plan_collective(const Scenario& scenario, Router& router,
                                  const CostFunction& cost, const CollectiveSpec& spec);

// The collective's schedule, checked; a generator's refusal becomes an InputError
// naming the collective, a structurally broken schedule a std::logic_error.
Schedule generate_schedule(const CollectiveSpec& c);
// Runs the collective's generator unchecked (for a stream, which checks each step),
// a refusal as an InputError naming the collective.
Schedule run_generator(const CollectiveSpec& c);
// The collective's schedule folded by a turn of its ranks (AlgorithmEntry::quotient),
// made without the full schedule; nullopt, and `why`, when its algorithm has none for
// this shape and these options.
std::optional<QuotientSchedule> run_quotient(const CollectiveSpec& c, std::string& why);

// Hex digits of a digest, as every command prints it.
std::string digest_text(std::uint64_t digest);

}  // namespace collsim
