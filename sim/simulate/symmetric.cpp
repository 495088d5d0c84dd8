#include "simulate/symmetric.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

#include "simulate/executor.h"

namespace collsim {
namespace {

// Every rank's GPU and its one link up to, and down from, the switch they all hang off.
struct Star {
  std::vector<LinkId> up, down;  // per rank
};

bool alike(const Link& a, const Link& b) {
  return a.bandwidth == b.bandwidth && a.latency == b.latency && a.kind == b.kind;
}

// The links of each rank, or why the ranks do not form a star of alike links.
std::optional<Star> star_of(const Topology& t, const std::vector<NodeId>& gpus, std::string& why) {
  const int K = static_cast<int>(gpus.size());
  std::vector<int> rank_on(t.nodes().size(), -1);
  for (int r = 0; r < K; ++r) {
    if (rank_on[gpus[r]] >= 0) return why = "two ranks share a GPU", std::nullopt;
    rank_on[gpus[r]] = r;
  }
  Star s{std::vector<LinkId>(K, -1), std::vector<LinkId>(K, -1)};
  NodeId hub = -1;
  for (LinkId l = 0; l < static_cast<LinkId>(t.links().size()); ++l) {
    const Link& link = t.link(l);
    const int from = rank_on[link.src], to = rank_on[link.dst];
    if (from < 0 && to < 0) continue;
    if (from >= 0 && to >= 0) return why = "the ranks' GPUs are linked to each other", std::nullopt;
    const NodeId other = from >= 0 ? link.dst : link.src;
    if (hub < 0) hub = other;
    if (other != hub) return why = "the ranks' GPUs are not all on one switch alone", std::nullopt;
    LinkId& slot = from >= 0 ? s.up[from] : s.down[to];
    if (slot >= 0) return why = "a GPU has several links to its switch", std::nullopt;
    slot = l;
  }
  if (hub >= 0 && t.node(hub).kind == NodeKind::Gpu)
    return why = "the ranks' GPUs hang off another GPU", std::nullopt;
  for (int r = 0; r < K; ++r) {
    if (s.up[r] < 0 || s.down[r] < 0)
      return why = t.node(gpus[r]).name + " has no link each way", std::nullopt;
    if (!alike(t.link(s.up[r]), t.link(s.up[0])) || !alike(t.link(s.down[r]), t.link(s.down[0])))
      return why = fmt::format("the links of {} differ from those of {}", t.node(gpus[r]).name,
                               t.node(gpus[0]).name),
             std::nullopt;
  }
  return s;
}

std::string star_problem(const Topology& t, const StreamedCollective& c, NetworkModelKind model,
                         int period, std::optional<Star>* star = nullptr) {
  if (!info_of(model).times_by_links)
    return fmt::format("the {} model is not shown to time turned links alike", name_of(model));
  const CostModel* cost = c.cost.get();
  if (info_of(model).shares_host_memory && cost &&
      (!cost->host_memory.empty() || !cost->reduce_memory.empty()))
    return fmt::format(
        "the {} model shares each host's memory among its GPUs' transfers, which the fold does "
        "not turn with the links",
        name_of(model));
  if (period != 1) return "only turns by one rank are folded";
  std::string why;
  std::optional<Star> s = star_of(t, c.rank_gpu, why);
  if (star) *star = std::move(s);
  return why;
}

enum FoldedEvent : std::uint32_t { kLaunched = kFirstSourceEvent };

// The folded source of the one executor (executor.h): the representatives, stored.
class FoldedSimulator final : private Executor<FoldedSimulator> {
 public:
  FoldedSimulator(const Topology& topology, Router& router, NetworkModel& model,
                  const StreamedCollective& collective, const QuotientSchedule& q, Star star)
      : Executor(topology, router, model), collective_(collective), q_(q), star_(std::move(star)) {
    const LinkId canonical[] = {star_.up[0], star_.down[0]};
    canonical_path_ = router.add_path(canonical);
    waiting_.resize(q.size());
    succ_begin_.assign(q.size() + 1, 0);
    for (OpId id = 0; id < q.size(); ++id) {
      waiting_[id] = static_cast<std::uint32_t>(q.deps_of(id).size());
      for (const auto& d : q.deps_of(id)) ++succ_begin_[d.op + 1];
    }
    for (std::size_t i = 1; i < succ_begin_.size(); ++i) succ_begin_[i] += succ_begin_[i - 1];
    succ_.resize(q.deps.size());
    std::vector<DepIndex> fill(succ_begin_.begin(), succ_begin_.end() - 1);
    for (OpId id = 0; id < q.size(); ++id)
      for (const auto& d : q.deps_of(id)) succ_[fill[d.op]++] = {id, d.only_sent};
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
  // The full run's figures: each orbit's counters on every one of its links and GPUs.
  StreamedResult unfolded() {
    const std::uint64_t orbit = static_cast<std::uint64_t>(q_.orbit_size());
    StreamedResult r;
    r.ops_end = end_;
    r.end = std::max(end_, costs_.least_duration());
    r.ops = q_.full_size();
    r.transfers = traffic_.transfers * orbit;
    r.events = engine_.events_processed();
    r.steps = q_.num_steps;
    r.peak_held = q_.size();
    r.links = std::move(traffic_.links);
    r.node_sent = std::move(traffic_.node_sent);
    r.node_received = std::move(traffic_.node_received);
    const NodeId gpu0 = collective_.rank_gpu[0];
    for (std::size_t k = 1; k < collective_.rank_gpu.size(); ++k) {
      r.links.copy_link(star_.up[0], star_.up[k]);
      r.links.copy_link(star_.down[0], star_.down[k]);
      r.node_sent[collective_.rank_gpu[k]] = r.node_sent[gpu0];
      r.node_received[collective_.rank_gpu[k]] = r.node_received[gpu0];
    }
    return r;
  }

  // --- the source, as the executor reads it: task 0, a representative named by its id ---
  friend class Executor<FoldedSimulator>;
  static constexpr bool kSwitchOps = false;  // folds refuse them (quotient.h)
  static TransferIds::Decoded decode(TransferId id) { return {0, id, 0}; }
  static TransferId id(std::size_t, OpId op) { return op; }
  const Op& op(std::size_t, OpId id) const { return q_.ops[id]; }
  std::int64_t bytes(std::size_t, OpId id) const { return q_.bytes(q_.ops[id]); }
  PathId path(std::size_t, OpId) const { return canonical_path_; }  // every transfer: up, down
  const OpCosts& costs(std::size_t) const { return costs_; }
  // Every rank's overhead queue and counters are rank 0's: its orbit's canonical GPU.
  NodeId gpu(std::size_t, int) const { return collective_.rank_gpu[0]; }
  bool has_deps(std::size_t, OpId id) const { return q_.dep_begin[id] != q_.dep_begin[id + 1]; }
  bool dependency_done(std::size_t, OpId next) { return --waiting_[next] == 0; }
  void began(std::size_t, OpId) {}
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
    for (DepIndex i = succ_begin_[id]; i < succ_begin_[id + 1]; ++i)
      f(succ_[i].op, succ_[i].only_sent);
  }
  template <class F>
  void last_successors(std::size_t task, OpId id, F&& f) const {
    each_successor(task, id, f);
  }

  struct Successor {
    OpId op;
    bool only_sent;
  };
  const StreamedCollective& collective_;
  const QuotientSchedule& q_;
  Star star_;
  PathId canonical_path_ = -1;
  OpCosts costs_;
  std::vector<std::uint32_t> waiting_;
  std::vector<DepIndex> succ_begin_;
  std::vector<Successor> succ_;
  std::uint64_t finished_ = 0;
  Time end_ = 0;
};

}  // namespace

std::string fold_problem(const Topology& topology, const StreamedCollective& collective,
                         NetworkModelKind model, int period) {
  return star_problem(topology, collective, model, period);
}

StreamedResult simulate_folded(const Topology& topology, Router& router, NetworkModel& model,
                               NetworkModelKind kind, const StreamedCollective& collective,
                               const QuotientSchedule& quotient) {
  if (static_cast<int>(collective.rank_gpu.size()) != quotient.shape.ranks)
    throw std::invalid_argument("folded collective: rank placement does not match the schedule");
  std::optional<Star> star;
  if (std::string why = star_problem(topology, collective, kind, quotient.period, &star);
      !why.empty())
    throw std::invalid_argument("cannot fold this collective: " + why);
  FoldedSimulator sim(topology, router, model, collective, quotient, std::move(*star));
  return sim.run();
}

}  // namespace collsim
