#include "simulate/symmetric.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>

#include "simulate/executor.h"

namespace collsim {
namespace {

bool alike(const Link& a, const Link& b) {
  return a.bandwidth == b.bandwidth && a.latency == b.latency && a.kind == b.kind;
}

// More route lookups than this (transfer pairs x turns) are not compared: a fold is for
// schedules whose ranks talk to few others (rings, trees); an all-to-all at scale has
// K^2 pairs, each a cached route.
constexpr std::uint64_t kMostRoutesCompared = 1 << 20;

// The links a turn of the ranks maps onto one another, found from the routes themselves:
// every representative transfer (a, b) is routed with all its turns (a + m p, b + m p),
// and the i-th link of the route turned m times is the i-th link of the first turned by
// m. Kept as a union-find in which each link knows its turn from its class's root (mod
// the number of turns): a link reached by two different turns, or by one turn from two
// links of different turns, means the turns do not act on the links as one map.
class LinkClasses {
 public:
  LinkClasses(std::size_t links, int turns) : parent_(links), turn_(links, 0), turns_(turns) {
    for (std::size_t l = 0; l < links; ++l) parent_[l] = static_cast<LinkId>(l);
  }

  struct Place {
    LinkId root;
    int turn;  // the link is its root turned this many times
  };
  Place find(LinkId l) {
    int turn = 0;
    LinkId at = l;
    while (parent_[at] != at) {
      turn = (turn + turn_[at]) % turns_;
      at = parent_[at];
    }
    // Point every link on the way at the root, with its turn from it.
    for (int left = turn; parent_[l] != l;) {
      const LinkId up = parent_[l];
      const int step = turn_[l];
      parent_[l] = at;
      turn_[l] = left;
      left = ((left - step) % turns_ + turns_) % turns_;
      l = up;
    }
    return {at, turn};
  }
  // Records that `a` is `b` turned `m` times; false when that contradicts what is known.
  bool join(LinkId a, LinkId b, int m) {
    const Place pa = find(a), pb = find(b);
    const int want = (pb.turn + m) % turns_;  // a's turn from b's root
    if (pa.root == pb.root) return pa.turn == want;
    parent_[pa.root] = pb.root;
    turn_[pa.root] = ((want - pa.turn) % turns_ + turns_) % turns_;
    return true;
  }

 private:
  std::vector<LinkId> parent_;
  std::vector<int> turn_;  // from its parent
  int turns_;
};

std::string model_problem(const StreamedCollective& c, NetworkModelKind model) {
  return fold_model_problem(model, c.cost.get());
}

// A fold's transfers, as the network check reads them: the distinct (source, destination)
// ranks of its representatives' transfers, folded by `period` ranks of `ranks`.
struct FoldPairs {
  int ranks = 0;
  int period = 1;
  std::vector<std::pair<int, int>> pairs;
};

FoldPairs pairs_of(const QuotientSchedule& q) {
  FoldPairs out{q.shape.ranks, q.period, {}};
  for (const Op& op : q.ops)
    if (op.src_rank != op.dst_rank) out.pairs.emplace_back(op.src_rank, op.dst_rank);
  std::sort(out.pairs.begin(), out.pairs.end());
  out.pairs.erase(std::unique(out.pairs.begin(), out.pairs.end()), out.pairs.end());
  return out;
}

FoldPairs pairs_of(const StreamedQuotient& q) {
  FoldPairs out{q.shape.ranks, q.period, {}};
  for (const auto& [a, b] : q.pairs)
    if (a != b) out.pairs.emplace_back(a, b);
  return out;
}

// The pairs of `own` turned by 0, own.period, ... below `period` (those of the fold widened
// to `period`, schedule/quotient.h, without widening it: a turn that does not fold costs its
// routes, not its ops).
std::vector<std::pair<int, int>> transfer_pairs(const FoldPairs& own, int period) {
  const int K = own.ranks;
  std::vector<std::pair<int, int>> pairs;
  pairs.reserve(own.pairs.size() * (period / own.period));
  for (int j = 0; j < period; j += own.period)
    for (const auto& [a, b] : own.pairs) pairs.emplace_back((a + j) % K, (b + j) % K);
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

// What no turn can fold: a placement that is not one GPU per rank.
std::string placement_problem(const Topology& t, const StreamedCollective& c, int K) {
  if (static_cast<int>(c.rank_gpu.size()) != K)
    return "the rank placement does not match the schedule";
  std::vector<char> taken(t.nodes().size(), 0);
  for (NodeId g : c.rank_gpu) {
    if (taken[g]) return "two ranks share a GPU";
    taken[g] = 1;
  }
  return "";
}

// The classes of the crossed links into `fold`: each must be one link turned 0 .. turns-1
// times, as many links, each at its own turn; its root is the link it is played on.
std::string fold_of_classes(const Topology& t, LinkClasses& classes,
                            const std::vector<char>& crossed, int turns, NetworkFold& fold) {
  std::map<LinkId, std::vector<LinkId>> by_root;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l)
    if (crossed[l]) by_root[classes.find(l).root].push_back(l);
  fold.canonical.assign(t.links().size(), -1);
  std::vector<LinkId> at_turn(turns);
  for (auto& [root, links] : by_root) {
    if (static_cast<int>(links.size()) != turns)
      return fmt::format("{} links are turned onto {} ({} turns of the ranks)", links.size(),
                         t.link_label(root), turns);
    std::fill(at_turn.begin(), at_turn.end(), LinkId{-1});
    for (LinkId l : links) {
      LinkId& seat = at_turn[classes.find(l).turn];
      if (seat >= 0)
        return fmt::format("{} and {} are both the same turn of {}", t.link_label(seat),
                           t.link_label(l), t.link_label(root));
      seat = l;
      fold.canonical[l] = root;
    }
    fold.members.push_back(std::move(links));
  }
  return "";
}

// Whether a turn of `p` ranks maps the network onto itself for the transfers of `own`
// (a fold by one rank, or already by p) widened to p; the fold's network in `out`.
std::string network_problem(const Topology& t, Router& router, const StreamedCollective& c,
                            const FoldPairs& own, int p, NetworkFold* out) {
  const int K = own.ranks, turns = K / p;
  if (p % own.period != 0) throw std::logic_error("a fold checked for a turn not of its own");
  if (std::string why = placement_problem(t, c, K); !why.empty()) return why;
  const std::vector<NodeId>& gpu = c.rank_gpu;
  std::vector<int> rank_of(t.nodes().size(), -1);
  for (int r = 0; r < K; ++r) rank_of[gpu[r]] = r;
  std::vector<NodePair> pairs;
  for (const auto& [a, b] : transfer_pairs(own, p)) pairs.emplace_back(gpu[a], gpu[b]);
  return fold_network(
      t, router, pairs, turns,
      [&](const NodePair& pair, int m) {
        return NodePair{gpu[(rank_of[pair.first] + m * p) % K],
                        gpu[(rank_of[pair.second] + m * p) % K]};
      },
      out);
}

}  // namespace

std::string fold_model_problem(NetworkModelKind model, const CostModel* cost) {
  if (!info_of(model).times_by_links)
    return fmt::format("the {} model is not shown to time turned links alike", name_of(model));
  if (info_of(model).shares_host_memory && cost &&
      (!cost->host_memory.empty() || !cost->reduce_memory.empty()))
    return fmt::format(
        "the {} model shares each host's memory among its GPUs' transfers, which the fold does "
        "not turn with the links",
        name_of(model));
  return "";
}

std::string fold_network(const Topology& t, Router& router, const std::vector<NodePair>& pairs,
                         int turns, const std::function<NodePair(const NodePair&, int)>& turned,
                         NetworkFold* out) {
  if (pairs.size() * static_cast<std::uint64_t>(turns) > kMostRoutesCompared)
    return fmt::format("{} transfers in {} turns are more routes than are compared", pairs.size(),
                       turns);
  LinkClasses classes(t.links().size(), turns);
  std::vector<char> crossed(t.links().size(), 0);
  std::vector<std::vector<LinkId>> first_routes;
  std::vector<PathId> images(turns);
  for (const NodePair& pair : pairs) {
    for (int m = 0; m < turns; ++m) {
      const NodePair image = m == 0 ? pair : turned(pair, m);
      images[m] = router.route(image.first, image.second);
    }
    const auto first = router.links(images[0]);
    for (int m = 0; m < turns; ++m) {
      const auto route = router.links(images[m]);
      if (route.size() != first.size()) {
        const NodePair image = turned(pair, m);
        return fmt::format("the routes from {} to {} and from {} to {} differ in length",
                           t.node(pair.first).name, t.node(pair.second).name,
                           t.node(image.first).name, t.node(image.second).name);
      }
      for (std::size_t i = 0; i < first.size(); ++i) {
        if (!alike(t.link(route[i]), t.link(first[i])))
          return fmt::format("the links {} and {} differ, which a turn maps onto each other",
                             t.link_label(route[i]), t.link_label(first[i]));
        if (!classes.join(route[i], first[i], m))
          return fmt::format(
              "turns of the ranks do not map {} onto one link each (two turns of "
              "a transfer share it, or it takes turns of two from different ones)",
              t.link_label(route[i]));
        crossed[route[i]] = 1;
      }
    }
    first_routes.emplace_back(first.begin(), first.end());
  }
  NetworkFold fold;
  if (std::string why = fold_of_classes(t, classes, crossed, turns, fold); !why.empty()) return why;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    std::vector<LinkId> route;
    for (LinkId l : first_routes[k]) {
      const LinkId canonical = fold.canonical[l];
      if (std::find(route.begin(), route.end(), canonical) != route.end())
        return fmt::format("the route from {} to {} crosses two links a turn maps onto each other",
                           t.node(pairs[k].first).name, t.node(pairs[k].second).name);
      route.push_back(canonical);
    }
    fold.routes.emplace(pairs[k], std::move(route));
  }
  if (out) *out = std::move(fold);
  return "";
}

namespace {

enum FoldedEvent : EventTag { kLaunched = kFirstSourceEvent };

// The full run's figures from its representatives' (`r`, a fold by `period` ranks): each
// orbit's counters on every one of its links and GPUs, its ops and transfers as many times
// as the orbit has members.
void unfold(StreamedResult& r, const NetworkFold& fold, const std::vector<NodeId>& gpus,
            int period) {
  const auto orbit = static_cast<std::uint64_t>(gpus.size() / period);
  r.ops *= orbit;
  r.transfers *= orbit;
  for (const std::vector<LinkId>& links : fold.members)
    for (LinkId l : links)
      if (l != fold.canonical[l]) r.links.copy_link(fold.canonical[l], l);
  for (std::size_t k = period; k < gpus.size(); ++k) {
    r.node_sent[gpus[k]] = r.node_sent[gpus[k % period]];
    r.node_received[gpus[k]] = r.node_received[gpus[k % period]];
  }
}

// Each pair of GPUs of a fold's transfers, routed over its classes' canonical links.
std::map<NodePair, PathId> stand_in_paths(Router& router, const NetworkFold& fold) {
  std::map<NodePair, PathId> paths;
  for (const auto& [pair, links] : fold.routes) paths.emplace(pair, router.add_stand_in(links));
  return paths;
}

// The folded source of the one executor (executor.h): the representatives, stored.
class FoldedSimulator final : private Executor<FoldedSimulator> {
 public:
  FoldedSimulator(const Topology& topology, Router& router, NetworkModel& model,
                  const StreamedCollective& collective, const QuotientSchedule& q, NetworkFold fold)
      : Executor(topology, router, model),
        collective_(collective),
        q_(q),
        fold_(std::move(fold)),
        graph_(q) {
    const std::map<NodePair, PathId> paths = stand_in_paths(router, fold_);
    const std::vector<NodeId>& gpu = collective.rank_gpu;
    path_.reserve(q.size());
    for (const Op& op : q.ops)
      path_.push_back(op.src_rank == op.dst_rank ? PathId{-1}
                                                 : paths.at({gpu[op.src_rank], gpu[op.dst_rank]}));
    waiting_ = graph_.indegree;
  }

  StreamedResult run() {
    costs_ = OpCosts(collective_.cost.get(), q_.shape);
    engine_.schedule(costs_.launch(), kLaunched, 0);
    while (!engine_.empty()) {
      const Event e = engine_.pop();
      if (play_executor_event(e)) continue;
      for (OpId id = 0; id < q_.size(); ++id)
        if (!has_deps(0, id)) start_op(0, id);
    }
    if (finished_ != q_.size())
      throw std::logic_error("a folded op never finished (dependency cycle?)");
    return unfolded();
  }

 private:
  // The representatives' figures (unfold makes them the full run's).
  StreamedResult unfolded() {
    StreamedResult r;
    r.ops_start = ops_start_;
    r.ops_end = end_;
    r.end = std::max(end_, costs_.least_duration());
    r.ops = q_.size();
    r.transfers = traffic_.transfers;
    r.events = engine_.events_processed();
    r.steps = q_.num_steps;
    r.peak_held = q_.size();
    r.links = std::move(traffic_.links);
    r.node_sent = std::move(traffic_.node_sent);
    r.node_received = std::move(traffic_.node_received);
    unfold(r, fold_, collective_.rank_gpu, q_.period);
    return r;
  }

  // --- the source, as the executor reads it: task 0, a representative named by its id ---
  friend class Executor<FoldedSimulator>;
  static constexpr bool kSwitchOps = false;  // folds refuse them (quotient.h)
  static TransferIds::Decoded decode(TransferId id) { return {0, id, 0}; }
  static TransferId id(std::size_t, OpId op) { return op; }
  const Op& op(std::size_t, OpId id) const { return q_.ops[id]; }
  std::int64_t bytes(std::size_t, OpId id) const { return q_.bytes(q_.ops[id]); }
  PathId path(std::size_t, OpId id) const { return path_[id]; }  // over canonical links
  const OpCosts& costs(std::size_t) const { return costs_; }
  // Every rank's overhead queue and counters are those of its turn below the period.
  NodeId gpu(std::size_t, int rank) const { return collective_.rank_gpu[rank % q_.period]; }
  bool has_deps(std::size_t, OpId id) const { return q_.dep_begin[id] != q_.dep_begin[id + 1]; }
  bool dependency_done(std::size_t, OpId next) { return --waiting_[next] == 0; }
  void began(std::size_t, OpId) {
    if (ops_start_ < 0) ops_start_ = engine_.now();
  }
  void sent(std::size_t, OpId) {}
  void finishing(std::size_t, OpId, OpPhase) {
    ++finished_;
    end_ = engine_.now();
  }
  void finished(std::size_t, OpId) {}
  // A representative's successors, one per dependency on one of its images: the turned
  // images finish together, so each releases its dependent as the image would.
  template <class F>
  void each_successor(std::size_t, OpId id, F&& f) const {
    for (std::uint32_t i = graph_.succ_begin[id]; i < graph_.succ_begin[id + 1]; ++i)
      f(graph_.succ[i].op, graph_.succ[i].only_sent);
  }
  template <class F>
  void last_successors(std::size_t task, OpId id, F&& f) const {
    each_successor(task, id, f);
  }

  const StreamedCollective& collective_;
  const QuotientSchedule& q_;
  NetworkFold fold_;
  std::vector<PathId> path_;  // per representative: its route over canonical links
  OpCosts costs_;
  QuotientGraph graph_;
  std::vector<std::uint32_t> waiting_;
  std::uint64_t finished_ = 0;
  Time ops_start_ = -1;  // when the first op began
  Time end_ = 0;
};

}  // namespace

QuotientGraph::QuotientGraph(const QuotientSchedule& q) {
  if (q.size() >= UINT32_MAX || q.deps.size() >= UINT32_MAX)
    throw std::invalid_argument("a fold of more than 2^32 ops or dependencies");
  indegree.resize(q.size());
  succ_begin.assign(q.size() + 1, 0);
  for (OpId id = 0; id < q.size(); ++id) {
    indegree[id] = static_cast<std::uint32_t>(q.deps_of(id).size());
    for (const auto& d : q.deps_of(id)) ++succ_begin[d.op + 1];
  }
  for (std::size_t i = 1; i < succ_begin.size(); ++i) succ_begin[i] += succ_begin[i - 1];
  succ.resize(q.deps.size());
  std::vector<std::uint32_t> fill(succ_begin.begin(), succ_begin.end() - 1);
  for (OpId id = 0; id < q.size(); ++id)
    for (const auto& d : q.deps_of(id))
      succ[fill[d.op]++] = {static_cast<std::uint32_t>(id), d.only_sent};
}

std::string fold_problem(const Topology& topology, Router& router,
                         const StreamedCollective& collective, NetworkModelKind model,
                         const QuotientSchedule& quotient) {
  if (std::string why = model_problem(collective, model); !why.empty()) return why;
  return network_problem(topology, router, collective, pairs_of(quotient), quotient.period,
                         nullptr);
}

namespace {

// The least turn, a multiple of own.period dividing the ranks, of at most half of them and
// `affordable`, by which the network keeps the ranks of `own`'s transfers alike; 0 and why
// not in `why` where there is none. From 0, every turn from own.period on is tried; from a
// turn `from` (where an earlier search, with `why`, stopped for its cost), the turns from it.
// `unaffordable` (may be null): the first turn not tried for its cost, or 0.
int folding_period(const Topology& topology, Router& router, const StreamedCollective& collective,
                   NetworkModelKind model, const FoldPairs& own, std::string& why,
                   const std::function<bool(int period)>& affordable, int from = 0,
                   int* unaffordable = nullptr) {
  if (unaffordable) *unaffordable = 0;
  const int K = own.ranks;
  if (from == 0) {
    if (why = model_problem(collective, model); !why.empty()) return 0;
    if (why = placement_problem(topology, collective, K); !why.empty()) return 0;
    // Packets that reach a queue at one instant queue in the order their events run, which
    // a turn of several ranks need not keep where turns of different transfers share links
    // (measured: pairwise all-to-all on a cluster, turned by two servers, ends 0.7% early).
    if (model == NetworkModelKind::Packet && own.period > 1) {
      why = "the packet model is folded by turns of one rank only";
      return 0;
    }
    why = network_problem(topology, router, collective, own, own.period, nullptr);
    if (why.empty()) return own.period;
    if (model == NetworkModelKind::Packet) {
      why += "; the packet model is folded by turns of one rank only";
      return 0;
    }
    from = 2 * own.period;
  }
  std::string wider;  // why the widest turn tried does not fold either
  for (int period = from; period <= K / 2; period += own.period) {
    if (K % period != 0) continue;
    if (!affordable(period)) {
      if (unaffordable) *unaffordable = period;
      break;
    }
    wider = network_problem(topology, router, collective, own, period, nullptr);
    if (wider.empty()) {
      why.clear();
      return period;
    }
    wider = fmt::format("{} ranks: {}", period, wider);
  }
  if (!wider.empty()) why += fmt::format("; nor a turn of {}", wider);
  return 0;
}

}  // namespace

std::optional<QuotientSchedule> fold_for_network(
    const Topology& topology, Router& router, const StreamedCollective& collective,
    NetworkModelKind model, const QuotientSchedule& own, std::string& why,
    const std::function<QuotientSchedule(int period)>& at_period, std::size_t most_stored,
    int* unaffordable) {
  // A wide turn holds many representatives: past most_stored ops (2^24: about 2.7 GB with
  // their dependencies), or past a sixteenth of that and an eighth of the schedule, streaming
  // costs less.
  const auto affordable = [&](int period) {
    const double representatives = static_cast<double>(own.size()) / own.period * period;
    return representatives <= static_cast<double>(most_stored) &&
           (representatives <= static_cast<double>(most_stored) / 16 ||
            representatives <= own.full_size() / 8.0);
  };
  const int period = folding_period(topology, router, collective, model, pairs_of(own), why,
                                    affordable, 0, unaffordable);
  if (period == 0) return std::nullopt;
  if (period == own.period) return own;
  return at_period ? at_period(period) : widen(own, period);
}

std::optional<StreamedQuotient> fold_stream_for_network(
    const Topology& topology, Router& router, const StreamedCollective& collective,
    NetworkModelKind model, const StreamedQuotient& own, std::string& why,
    const std::function<std::optional<StreamedQuotient>(int period)>& at_period, int from) {
  // Streamed, a fold holds only the ops in flight: every turn below all the ranks saves.
  const int period = folding_period(
      topology, router, collective, model, pairs_of(own), why, [](int) { return true; }, from);
  if (period == 0) return std::nullopt;
  if (period == own.period) return own;
  return at_period(period);
}

namespace {

// The network as a fold by own.period ranks plays it; throws std::invalid_argument where the
// model or the network does not keep the ranks alike.
NetworkFold checked_fold(const Topology& topology, Router& router,
                         const StreamedCollective& collective, NetworkModelKind kind,
                         const FoldPairs& own) {
  NetworkFold fold;
  std::string why = model_problem(collective, kind);
  if (why.empty()) why = network_problem(topology, router, collective, own, own.period, &fold);
  if (!why.empty()) throw std::invalid_argument("cannot fold this collective: " + why);
  return fold;
}

}  // namespace

StreamedResult simulate_folded(const Topology& topology, Router& router, NetworkModel& model,
                               NetworkModelKind kind, const StreamedCollective& collective,
                               const QuotientSchedule& quotient) {
  FoldedSimulator sim(topology, router, model, collective, quotient,
                      checked_fold(topology, router, collective, kind, pairs_of(quotient)));
  return sim.run();
}

StreamedResult simulate_folded(const Topology& topology, Router& router, NetworkModel& model,
                               NetworkModelKind kind, const StreamedCollective& collective,
                               const StreamedQuotient& quotient) {
  const NetworkFold fold = checked_fold(topology, router, collective, kind, pairs_of(quotient));
  StreamedResult r = simulate_quotient_streamed(topology, router, model, collective, quotient,
                                                stand_in_paths(router, fold));
  unfold(r, fold, collective.rank_gpu, quotient.period);
  return r;
}

std::string FoldedRun::note() const {
  const std::string alike =
      period == 1 ? fmt::format("{} ranks alike", ranks)
                  : fmt::format("{} groups of {} ranks alike", ranks / period, period);
  return fmt::format("folded: {}, {} of {} ops played{}", alike, played, ops,
                     as_made ? " as they were made" : "");
}

std::optional<FoldedRun> simulate_folded(const Topology& topology, Router& router,
                                         NetworkModel& model, NetworkModelKind kind,
                                         const StreamedCollective& collective,
                                         const AlgorithmEntry& entry, const CollectiveShape& shape,
                                         const AlgorithmOptions& options,
                                         std::optional<QuotientSchedule> own, std::string& why,
                                         std::size_t most_stored) {
  int from = 0;  // where the stored search stopped for its cost: the streamed one goes on there
  if (own) {
    std::optional<QuotientSchedule> q = fold_for_network(
        topology, router, collective, kind, *own, why,
        [&](int period) { return entry.fold_at(shape, options, *own, period); }, most_stored,
        &from);
    if (q)
      return FoldedRun{simulate_folded(topology, router, model, kind, collective, *q),
                       shape.ranks,
                       q->period,
                       q->size(),
                       q->full_size(),
                       false};
    if (from == 0) return std::nullopt;  // every turn was tried
  }
  // Too large to store, or the network asks a turn wider than a stored fold may take.
  if (!entry.quotient_stream) return std::nullopt;
  const auto at = [&](int period) { return entry.quotient_stream(shape, options, period); };
  const std::optional<StreamedQuotient> streamed_own = at(0);
  if (!streamed_own) return std::nullopt;
  const std::optional<StreamedQuotient> q =
      fold_stream_for_network(topology, router, collective, kind, *streamed_own, why, at, from);
  if (!q) return std::nullopt;
  return FoldedRun{simulate_folded(topology, router, model, kind, collective, *q),
                   shape.ranks,
                   q->period,
                   q->size,
                   q->full_size(),
                   true};
}

}  // namespace collsim
