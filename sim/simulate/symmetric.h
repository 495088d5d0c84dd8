#pragma once
// A collective whose ranks are interchangeable, timed by one rank's ops.
//
// Where a schedule folds by a turn of its ranks (schedule/quotient.h) and the same turn
// maps the network onto itself, the ops of one orbit run at the same times, and every
// link of an orbit carries, interval for interval, what any other does: each link
// sees exactly one image of each representative that crosses its orbit. So only the
// representatives are played, each over its orbit's canonical links and paying its
// overhead in the queue of its rank below the period; then every link and GPU of an
// orbit takes the canonical one's counters.
//
// Which links a turn maps onto which is read off the routes themselves: each
// representative transfer is routed with all its turns, and the i-th link of the route
// turned m times must be the i-th link of the first turned by m. The turn maps the
// network onto itself, as far as the collective can tell, when that holds as one map
// (no link is reached by two turns of the same link), every class of links it relates
// holds exactly one link per turn, its links alike (rate, latency, kind), and no route
// crosses a class twice; each class is then played on one of its links (its stand-in
// routes need not be chains: routing.h, add_stand_in). A switch's GPUs pass with a turn of
// one rank; a rail-optimised fat tree with a turn of the servers on one leaf of each
// rail, when every leaf holds as many (a turn of one server would send two turns of a
// transfer up one leaf's uplink). A leaf half full, a slow link, or ECMP sending the turns
// of transfers over spines in no common pattern fail the check, and the collective runs
// whole. A ring makes its fold a step at a time, and `collsim run` plays it as it is made
// (StreamedQuotient, simulate_quotient_streamed): it holds only the representatives in
// flight, and was faster than storing it at every size measured. Other algorithms' folds
// are stored while their representatives stay within 2^24 ops (widened, past 2^20 only
// within an eighth of the schedule).
//
// The result — times, every link's and GPU's counters, transfers and ops — is the full
// run's, bit for bit (tests/test_symmetry.cpp plays every algorithm's own fold against its
// streamed full run, itself checked against the stored one in tests/test_streamed.cpp);
// `events` counts those played, and there is no digest: the full schedule is never made.
// The flow model's max-min sums the rates on a link in the order its transfers came, and
// a turn can change that order among transfers of different sizes: its last bits then
// differ (measured on direct all-to-all in unequal blocks, which therefore does not fold).
// What the argument leaves to the fold: where ops become ready at one instant, a rank's
// overhead queue takes them in the order their events run, which the representatives'
// successor order must reproduce (a fold_by_rotation check of structure does not; the
// test does, for each algorithm with a fold).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "network/network_model.h"
#include "schedule/algorithms.h"
#include "schedule/quotient.h"
#include "simulate/streamed.h"

namespace collsim {

// The network as a fold sees it: every link a representative crosses replaced by its
// class's canonical one (the link it is played on).
struct NetworkFold {
  std::vector<LinkId> canonical;             // per link: its class's canonical link; -1 if none
  std::vector<std::vector<LinkId>> members;  // per class: its links, one per turn
  std::map<NodePair, std::vector<LinkId>> routes;  // per pair: its route's canonical links
};

// Why `model` cannot play a fold with `cost` (may be null), or "": it must time a
// transfer by its links alone, and (flow) not share a host's memory among its GPUs.
std::string fold_model_problem(NetworkModelKind model, const CostModel* cost);

// Whether `turns` turns of the network map it onto itself, as far as the transfers between
// `pairs` (those played) can tell: each pair is routed with its turns (`turned(pair, m)`,
// m in 1..turns-1), and the i-th link of the route turned m times must be the i-th link of
// the first turned by m, as one map, each class of links one link per turn, its links
// alike, and no route crossing a class twice (the comment at the top says why). "" and
// the fold in `out` (may be null) where it does; else what breaks it.
std::string fold_network(const Topology& topology, Router& router,
                         const std::vector<NodePair>& pairs, int turns,
                         const std::function<NodePair(const NodePair&, int)>& turned,
                         NetworkFold* out);

// A fold's successor graph: each representative's successors, with whether each needs
// only its bytes sent, and its dependency count. Its dependents' images finish with it, so
// each releases its dependent as the image would.
struct QuotientGraph {
  // 32-bit ids: a fold holds at most 2^24 representatives with a few dependencies each
  // (checked as it is made); 8 bytes a successor instead of 16.
  struct Successor {
    std::uint32_t op;
    bool only_sent;
  };
  std::vector<std::uint32_t> indegree;
  std::vector<std::uint32_t> succ_begin;  // op id -> its first successor in succ
  std::vector<Successor> succ;

  explicit QuotientGraph(const QuotientSchedule& q);
};

// Why the network does not let `collective`'s ranks be folded as `quotient` folds them (by
// a turn of quotient.period ranks) under `model`, or "" when it does. Routes every
// representative transfer with all its turns (the router keeps them).
std::string fold_problem(const Topology& topology, Router& router,
                         const StreamedCollective& collective, NetworkModelKind model,
                         const QuotientSchedule& quotient);

// `own`, a fold by one rank, as this network lets it be played: itself where a turn of one
// rank maps the network onto itself (GPUs on one switch), else widened (schedule/quotient.h)
// to the least turn that does (the GPUs of a server, of a leaf switch's servers) if one
// of at most half the ranks does within the representatives' budget (symmetric.cpp);
// nullopt and, in `why`, what breaks the turn by one (and the widest tried) otherwise.
// `at_period(p)` is `own` widened to p ranks (AlgorithmEntry::fold_at); null: widen.
// `most_stored`: the representatives a widened fold may hold; `unaffordable` (may be null):
// the first turn not tried because its fold would hold more, or 0.
std::optional<QuotientSchedule> fold_for_network(
    const Topology& topology, Router& router, const StreamedCollective& collective,
    NetworkModelKind model, const QuotientSchedule& own, std::string& why,
    const std::function<QuotientSchedule(int period)>& at_period = nullptr,
    std::size_t most_stored = kMostRepresentatives, int* unaffordable = nullptr);

// The same for a fold too large to store, made a step at a time (schedule/quotient.h):
// `own` is the algorithm's fold by its least turn, `at_period(p)` its fold by p ranks. Every
// turn of at most half the ranks is tried: streamed, any fold holds only the ops in flight;
// from turn `from` on only, after fold_for_network stopped there for its cost (`why` says
// what it found, and goes on).
std::optional<StreamedQuotient> fold_stream_for_network(
    const Topology& topology, Router& router, const StreamedCollective& collective,
    NetworkModelKind model, const StreamedQuotient& own, std::string& why,
    const std::function<std::optional<StreamedQuotient>(int period)>& at_period, int from = 0);

// Plays `quotient` as the full schedule would run; throws std::invalid_argument where
// fold_problem is not empty.
StreamedResult simulate_folded(const Topology& topology, Router& router, NetworkModel& model,
                               NetworkModelKind kind, const StreamedCollective& collective,
                               const QuotientSchedule& quotient);
// A collective folded as `collsim run` folds it, and what was played.
struct FoldedRun {
  StreamedResult result;
  int ranks = 1;
  int period = 1;
  std::uint64_t played = 0;  // representatives
  std::uint64_t ops = 0;     // of the full schedule
  bool as_made = false;      // played as the fold was made (not stored)
  // "folded: 16 groups of 256 ranks alike, 2096640 of 33546240 ops played"
  std::string note() const;
};

// `entry`'s collective of `shape` and `options` timed by its representatives: `own` (its
// stored fold by its least turn, or nullopt: none, or too large to store) widened as the
// network asks, within `most_stored` representatives; else, where the entry makes its fold a
// step at a time, that fold by the least turn the network keeps alike (the turns the stored
// search did not reach), played as it is made. nullopt, and why not in `why` (as it came
// with `own`, where no fold was tried), where neither folds.
std::optional<FoldedRun> simulate_folded(const Topology& topology, Router& router,
                                         NetworkModel& model, NetworkModelKind kind,
                                         const StreamedCollective& collective,
                                         const AlgorithmEntry& entry, const CollectiveShape& shape,
                                         const AlgorithmOptions& options,
                                         std::optional<QuotientSchedule> own, std::string& why,
                                         std::size_t most_stored = kMostRepresentatives);

// The same, as `quotient` makes its representatives (simulate_quotient_streamed, streamed.h):
// memory follows the ops in flight. `peak_held` counts the representatives held at once.
StreamedResult simulate_folded(const Topology& topology, Router& router, NetworkModel& model,
                               NetworkModelKind kind, const StreamedCollective& collective,
                               const StreamedQuotient& quotient);

}  // namespace collsim
