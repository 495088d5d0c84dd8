#include "simulate/streamed.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "core/error.h"
#include "core/memory.h"
#include "core/units.h"
#include "schedule/quotient.h"
#include "schedule/step_queue.h"
#include "schedule/stream.h"
#include "simulate/executor.h"

namespace collsim {
namespace {

enum StreamedEvent : EventTag { kStreamLaunched = kFirstSourceEvent };

constexpr std::uint32_t kNoSuccessor = std::numeric_limits<std::uint32_t>::max();
constexpr OpId kNoOp = std::numeric_limits<OpId>::max();

// An op between the oldest unfinished one and the newest generated. Its first
// successors sit inline (a ring's ops have one or two), as distances from its own id;
// more go to a shared pool, whose entries, recycled, end up scattered: every pool hop can
// be a cache miss. One cache line: a window of millions of ops is read at random as
// transfers end, and an op across two lines costs two misses.
struct alignas(64) HeldOp {
  static constexpr int kInline = 2;
  Op op;
  PathId path = -1;
  std::uint32_t waiting = 0;                // dependencies not yet done
  std::uint32_t more_first = kNoSuccessor;  // pool list, in order (its head holds the last)
  std::uint8_t inline_successors = 0;
  bool has_deps = false;
  bool sent = false;  // its last byte has left (ops needing only that have been released)
  bool done = false;
  // An inline successor's id - this op's id; folded, its top bit says whether the successor
  // needs only this op's bytes to have left (kOnlySentBit).
  std::uint32_t successor_after[kInline] = {};
};
constexpr std::uint32_t kOnlySentBit = std::uint32_t{1} << 31;
static_assert(sizeof(HeldOp) == 64, "a held op is one cache line");

// A fold's step as its maker thread hands it over (ThreadedSteps): owned, recycled.
using MadeStep = OwnedStep<QuotientStepView, QuotientSchedule::Dep>;
// A fold's steps of this many representatives or more are made on a thread of their own,
// at most kMostQueuedOps ahead of the simulator (at least one step): two such steps, which
// stay in cache (2^18, as a generator's stream, took 5.5 s where this took 5.2).
constexpr std::int64_t kWideStep = 1024;
constexpr std::size_t kMostQueuedOps = std::size_t{1} << 13;

// One entry of an op's pooled successor list; entries are recycled when the op finishes.
// The list's head also names its last entry, where the next successor is appended.
struct SuccessorLink {
  OpId op;
  std::uint32_t next;
  std::uint32_t last;  // the head's only
};
// Folded, a successor's need is the dependency's (a representative may wait on two turns of
// one op, one for its data, one only for its sending): kept with it.
struct FlaggedSuccessorLink : SuccessorLink {
  bool only_sent;
};

// The streamed source of the one executor (executor.h): one collective, task 0, whose
// ops are held in a window from the oldest unfinished to the newest generated. Folded
// (simulate/symmetric.h), the ops are a fold's representatives: each rank's slot, overhead
// queue and counters are those of its turn below the period, transfers go over the
// canonical links, and each dependency says what it needs of its op.
template <bool kFolded>
class StreamedSimulator final : private Executor<StreamedSimulator<kFolded>>, public StepSink {
  using Executor = collsim::Executor<StreamedSimulator<kFolded>>;
  using Executor::engine_;
  using Executor::play_executor_event;
  using Executor::router_;
  using Executor::start_op;
  using Executor::traffic_;
  using Link = std::conditional_t<kFolded, FlaggedSuccessorLink, SuccessorLink>;

 public:
  StreamedSimulator(const Topology& topology, Router& router, NetworkModel& model,
                    const StreamedCollective& collective, OpSink* sink)
      : Executor(topology, router, model), collective_(collective), sink_(sink) {}

  // Folded: the representatives of `q`, as it makes them, over `paths` (per pair of GPUs
  // below the period's turn: the route over canonical links).
  StreamedSimulator(const Topology& topology, Router& router, NetworkModel& model,
                    const StreamedCollective& collective, const std::map<NodePair, PathId>& paths)
      : Executor(topology, router, model),
        collective_(collective),
        sink_(nullptr),
        paths_(&paths) {}

  // A fold of wide steps is made on a thread of its own, steps queued ahead of this one:
  // making them was a quarter of such a run on this thread (8,192 GPUs folded by 4,096:
  // 5.9 s, 5.2 s so). Narrow steps are made here: handing each over cost more than making
  // it (a 4,096-GPU cluster's ring folded by 256: 0.47 s here, 0.50 s threaded).
  StreamedResult play_quotient(const StreamedQuotient& q) {
    period_ = q.period;
    begin(q.shape, q.channels);
    const auto admit = [&](const QuotientStepView& step) {
      admit_step(step);
      play();
    };
    if (static_cast<std::int64_t>(q.period) * q.channels < kWideStep) {
      q.emit(admit);
      return finish(q.num_steps);
    }
    ThreadedSteps<MadeStep> made(kMostQueuedOps, [&q](StepQueue<MadeStep>& queue) {
      q.emit([&](const QuotientStepView& step) {
        queue.push(step.ops.size(), [&](MadeStep& s) { s.copy(step); });
      });
    });
    while (const MadeStep* step = made.next()) admit(step->view());
    return finish(q.num_steps);
  }

  // The generator writes into this simulator: steps are played as they come.
  StreamedResult run(const std::function<Schedule()>& generate) {
    audit_ = std::make_unique<StreamAudit>();
    Schedule header;
    {
      StreamScope scope(*this);
      header = generate();
    }
    audit_->finish(header);
    StreamedResult r = finish(header);
    r.digest = audit_->digest();
    return r;
  }

  // The generator runs on a thread of its own, steps queued ahead of this one.
  StreamedResult run_threaded(const std::function<Schedule()>& generate) {
    ThreadedStream stream(generate);
    int channels = 1;
    if (const Schedule* header = stream.header(channels)) start(*header, channels);
    while (const ThreadedStream::Step* step = stream.next()) {
      admit_step(step->view());
      play();
    }
    StreamedResult r = finish(stream.result());
    r.digest = stream.digest();
    return r;
  }

 private:
  StreamedResult finish(const Schedule& header) {
    if (!header.ops.empty())
      throw std::logic_error("the generator built its schedule outside the stream");
    return finish(header.num_steps);
  }

  StreamedResult finish(int steps) {
    result_.steps = steps;
    generated_all_ = true;
    play();
    if (finished_ != next_)
      throw std::logic_error("a streamed op never finished (dependency cycle?)");
    // A collective lasts at least the host's time to issue it, and what NCCL's own model
    // says of its pick (CostModel::host_issue, nccl_floor).
    result_.ops_end = result_.end;
    result_.end = std::max(result_.end, costs_.least_duration());
    result_.ops = next_;
    result_.events = engine_.events_processed();
    result_.links = std::move(traffic_.links);
    result_.node_sent = std::move(traffic_.node_sent);
    result_.node_received = std::move(traffic_.node_received);
    result_.transfers = traffic_.transfers;
    result_.held_bytes = result_.peak_held * sizeof(HeldOp) + successors_.capacity() * sizeof(Link);
    return std::move(result_);
  }

  // --- StepSink: the generator's side ---
  void start(const Schedule& header, int channels) override {
    if (audit_) audit_->start(header, channels);
    begin(header.shape, channels);
  }

  void begin(const CollectiveShape& shape, int channels) {
    if (static_cast<int>(collective_.rank_gpu.size()) != shape.ranks)
      throw std::invalid_argument(
          "streamed collective: rank placement does not match the schedule");
    ranks_ = shape.ranks;
    if (!kFolded) period_ = ranks_;
    if constexpr (kFolded) {  // a table, not a division per slot and per op begun
      below_period_.resize(ranks_);
      for (int r = 0; r < ranks_; ++r) below_period_[r] = r % period_;
    }
    element_bytes_ = element_size(shape.dtype);
    latest_.assign(static_cast<std::size_t>(channels) * period_, kNoOp);
    idle_slots_ = latest_.size();  // a rank with no op yet could start one at once
    memo_dst_.assign(ranks_, -1);
    memo_path_.assign(ranks_, -1);
    reserve_window(2 * static_cast<std::size_t>(ranks_));
    costs_ = OpCosts(collective_.cost.get(), shape);
    engine_.schedule(costs_.launch(), kStreamLaunched, 0);
  }

  void take_step(const StepView& step) override {
    audit_->take_step(step);
    admit_step(step);
    play();
  }

  template <class View>
  void admit_step(const View& step) {
    for (std::size_t i = 0; i < step.ops.size(); ++i)
      admit(step.first + i, step.ops[i], step.deps_of(i));
    check_memory(step.first + step.ops.size());
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      const OpId id = step.first + i;
      if (held(id).waiting != 0) continue;
      if (launched_)
        start_op(0, id);
      else
        waiting_for_launch_.push_back(id);
    }
  }

  // A dependency: an op's id, or (folded) a representative's, with what it needs of it.
  static OpId id_of(OpId d) { return d; }
  static OpId id_of(const QuotientSchedule::Dep& d) { return d.op; }
  static bool only_sent(OpId, const Op& dep, const Op& next) { return needs_only_sent(dep, next); }
  static bool only_sent(const QuotientSchedule::Dep& d, const Op&, const Op&) {
    return d.only_sent;
  }

  template <class Dep>
  void admit(OpId id, const Op& op, std::span<const Dep> deps) {
    if (op.is_switch()) throw std::invalid_argument("switch ops (nvls) are not streamed");
    if (id != next_) throw std::logic_error("streamed ops out of order");
    if (next_ - oldest_ == window_.size()) reserve_window(2 * window_.size());
    ++next_;
    result_.peak_held = std::max(result_.peak_held, next_ - oldest_);
    HeldOp& h = held(id);
    h = HeldOp{op};
    h.has_deps = !deps.empty();
    for (const Dep& dep : deps) {
      const OpId d = id_of(dep);
      if (d < oldest_ || held(d).done) continue;
      if (held(d).sent && only_sent(dep, held(d).op, op)) continue;
      ++h.waiting;
      // Unfolded, the executor asks needs_only_sent when it needs to (LazyOnlySent).
      link_successor(d, id, kFolded && only_sent(dep, held(d).op, op));
    }
    if (!op.is_local()) h.path = route(op);
    for (int slot : slots_of(op)) {
      if (slot_idle(slot)) --idle_slots_;
      latest_[slot] = id;
    }
  }

  // --- the event loop ---
  // Plays events while no op still to come could start before them.
  void play() {
    while (!engine_.empty() && (generated_all_ || idle_slots_ == 0)) handle(engine_.pop());
  }

  void handle(const Event& e) {
    if (this->play_executor_event(e)) return;
    if (e.tag != kStreamLaunched)
      throw std::logic_error("an event the streamed simulator never scheduled");
    launched_ = true;
    for (OpId id : waiting_for_launch_) start_op(0, id);
    waiting_for_launch_.clear();
  }

  // --- the source, as the executor reads it: task 0, an op named by its id ---
  friend Executor;
  static constexpr bool kSwitchOps = false;  // admit refuses them
  static TransferIds::Decoded decode(TransferId id) { return {0, id, 0}; }
  static TransferId id(std::size_t, OpId op) { return op; }
  const Op& op(std::size_t, OpId id) { return held(id).op; }
  std::int64_t bytes(std::size_t, OpId id) { return held(id).op.count * element_bytes_; }
  PathId path(std::size_t, OpId id) { return held(id).path; }
  const OpCosts& costs(std::size_t) const { return costs_; }
  NodeId gpu(std::size_t, int rank) const {
    return collective_.rank_gpu[kFolded ? below_period_[rank] : rank];
  }
  bool has_deps(std::size_t, OpId id) { return held(id).has_deps; }
  bool dependency_done(std::size_t, OpId next) { return --held(next).waiting == 0; }
  void began(std::size_t, OpId id) {
    if (result_.ops_start < 0) result_.ops_start = engine_.now();
    if (!sink_) return;
    times(id).start = engine_.now();
    begun_.emplace_back(engine_.now(), id);
  }

  // Its last byte has left: the slots of both its ranks may take ops to come (slot_idle).
  void sent(std::size_t, OpId id) {
    HeldOp& h = held(id);
    h.sent = true;
    for (int slot : slots_of(h.op))
      if (latest_[slot] == id) ++idle_slots_;
  }

  void finishing(std::size_t, OpId id, OpPhase phase) {
    HeldOp& h = held(id);
    const bool was_sent = phase == OpPhase::Delivered;
    h.done = true;
    ++finished_;
    result_.end = engine_.now();
    if (sink_) times(id).end = engine_.now();
    if (was_sent) return;            // its slots counted as idle when it was sent
    for (int slot : slots_of(h.op))  // its rank has no unfinished op left
      if (latest_[slot] == id) ++idle_slots_;
  }

  void finished(std::size_t, OpId) {
    if (sink_ && oldest_ < next_ && held(oldest_).done) retire_done();
    while (oldest_ < next_ && held(oldest_).done) ++oldest_;
  }

  // The done ops at the window's oldest end, in id order, to the sink. What is still to
  // come begins now or later, or has begun: no earlier than the earliest begun op not
  // yet retired (ops begin in time order: begun_ is sorted by time).
  void retire_done() {
    while (!begun_.empty() && begun_.front().second < oldest_) begun_.pop_front();
    const Time settled = begun_.empty() ? engine_.now() : begun_.front().first;
    for (OpId id = oldest_; id < next_ && held(id).done; ++id) {
      const HeldOp& h = held(id);
      RetiredOp r;
      r.id = id;
      r.op = &h.op;
      r.bytes = h.op.count * element_bytes_;
      r.start = times(id).start;
      r.end = times(id).end;
      r.settled = settled;
      if (!h.op.is_local()) r.route = router_.links(h.path);
      sink_->op(r);
    }
  }

  // Calls f on each successor of op `id`, in the order they were linked (id order), as
  // Simulator starts them.
  template <class F>
  void each_successor(std::size_t, OpId id, F&& f) {
    const HeldOp& h = held(id);
    const int n = h.inline_successors;
    constexpr std::uint32_t distance = kFolded ? ~kOnlySentBit : ~std::uint32_t{0};
    const OpId first[HeldOp::kInline] = {id + (h.successor_after[0] & distance),
                                         id + (h.successor_after[1] & distance)};
    std::uint32_t more = h.more_first;
    for (int i = 0; i < n; ++i) {
      if constexpr (kFolded)
        f(first[i], (h.successor_after[i] & kOnlySentBit) != 0);
      else
        f(first[i], LazyOnlySent{h.op, held(first[i]).op});
    }
    while (more != kNoSuccessor) {
      const Link link = successors_[more];
      more = link.next;
      if constexpr (kFolded)
        f(link.op, link.only_sent);
      else
        f(link.op, LazyOnlySent{h.op, held(link.op).op});
    }
  }

  // The same, for the last time: the lists are recycled.
  template <class F>
  void last_successors(std::size_t task, OpId id, F&& f) {
    HeldOp& h = held(id);
    const std::uint32_t more_first = h.more_first;
    each_successor(task, id, f);
    h.inline_successors = 0;
    h.more_first = kNoSuccessor;
    for (std::uint32_t more = more_first; more != kNoSuccessor;) {
      const std::uint32_t next = successors_[more].next;
      successors_[more].next = free_successor_;
      free_successor_ = more;
      more = next;
    }
  }

  // Whether an op to come on `slot` could start now: the slot's latest op is done, or has
  // been sent. Ops needing only that may follow a transfer on the rank that receives it as
  // well as on the one that sends it (a pairwise all-to-all's next send, from another
  // buffer, after a receive): counting only the sender's slot let the simulator play on
  // past the instant such an op could start, and start it late.
  bool slot_idle(int slot) {
    const OpId latest = latest_[slot];
    if (latest == kNoOp || held_done(latest)) return true;
    return held(latest).sent;
  }

  // --- the window of held ops: a ring indexed by op id ---
  HeldOp& held(OpId id) { return window_[id & (window_.size() - 1)]; }
  OpTiming& times(OpId id) { return times_[id & (times_.size() - 1)]; }
  bool held_done(OpId id) { return id < oldest_ || held(id).done; }

  void reserve_window(std::size_t at_least) {
    std::size_t size = 1024;
    while (size < at_least) size *= 2;
    if (size <= window_.size()) return;
    std::vector<HeldOp> bigger(size);
    for (OpId id = oldest_; id < next_; ++id) bigger[id & (size - 1)] = held(id);
    window_ = std::move(bigger);
    if (!sink_) return;
    std::vector<OpTiming> more(size);
    for (OpId id = oldest_; id < next_; ++id) more[id & (size - 1)] = times(id);
    times_ = std::move(more);
  }

  void link_successor(OpId of, OpId successor, bool only_sent) {
    HeldOp& h = held(of);
    if (h.inline_successors < HeldOp::kInline) {
      // Both are held: 2^31 ops apart would be a window of 128 GiB.
      constexpr std::uint32_t most = kFolded ? ~kOnlySentBit : ~std::uint32_t{0};
      if (successor - of > most)
        throw std::length_error("a streamed op's successor more than 2^31 ops after it");
      h.successor_after[h.inline_successors++] =
          static_cast<std::uint32_t>(successor - of) | (kFolded && only_sent ? kOnlySentBit : 0);
      return;
    }
    std::uint32_t s = free_successor_;
    if (s != kNoSuccessor) {
      free_successor_ = successors_[s].next;
    } else {
      s = static_cast<std::uint32_t>(successors_.size());
      if (s == kNoSuccessor) throw std::length_error("more than 2^32 dependencies in flight");
      successors_.emplace_back();
    }
    successors_[s].op = successor;
    successors_[s].next = kNoSuccessor;
    successors_[s].last = s;
    if constexpr (kFolded) successors_[s].only_sent = only_sent;
    if (h.more_first == kNoSuccessor) {
      h.more_first = s;
    } else {
      SuccessorLink& head = successors_[h.more_first];
      successors_[head.last].next = s;
      head.last = s;
    }
  }

  // The (channel, rank) slots an op takes part in: its source's and its destination's.
  struct Slots {
    int slot[2];
    int n;
    const int* begin() const { return slot; }
    const int* end() const { return slot + n; }
  };
  Slots slots_of(const Op& op) const {
    const int base = op.channel * period_;
    const int src = kFolded ? below_period_[op.src_rank] : op.src_rank;
    const int dst = kFolded ? below_period_[op.dst_rank] : op.dst_rank;
    if (src == dst) return {{base + src, 0}, 1};
    return {{base + src, base + dst}, 2};
  }

  // Every 2^20 ops admitted: a run that outgrows the machine stops with a word, before the
  // kernel kills it with none (a 16,384-GPU pairwise all-to-all keeps a route for each of
  // its 2^28 pairs).
  void check_memory(OpId admitted) {
    if (admitted < next_memory_check_) return;
    next_memory_check_ = admitted + (OpId{1} << 20);
    if (memory_.over())
      throw InputError(
          "", fmt::format("this streamed run holds more than the {} it allows itself (what "
                          "it held when it began and 90% of the memory the machine had left) "
                          "after {} of its ops (an all-to-all keeps a route for each of its K^2 "
                          "pairs of ranks); run it on fewer ranks, or where there is more memory",
                          format_bytes(static_cast<std::int64_t>(memory_.budget())), admitted));
  }

  // A rank mostly sends to the peer it sent to last: a one-entry memo per source.
  PathId route(const Op& op) {
    if (memo_dst_[op.src_rank] == op.dst_rank) return memo_path_[op.src_rank];
    memo_dst_[op.src_rank] = op.dst_rank;
    const NodePair pair{collective_.rank_gpu[op.src_rank], collective_.rank_gpu[op.dst_rank]};
    if constexpr (kFolded) {
      const auto found = paths_->find(pair);
      if (found == paths_->end())
        throw std::logic_error("a folded representative's transfer was not checked");
      return memo_path_[op.src_rank] = found->second;
    }
    return memo_path_[op.src_rank] = router_.route(pair.first, pair.second);
  }

  const StreamedCollective& collective_;
  StreamedResult result_;
  std::unique_ptr<StreamAudit> audit_;  // generated on this thread: the digest is ours
  int ranks_ = 0;
  int period_ = 0;  // slots per channel: the ranks, or (folded) the period
  std::vector<int> below_period_;  // folded: per rank, its turn below the period
  std::int64_t element_bytes_ = 1;
  OpCosts costs_;

  MemoryBudget memory_;
  OpId next_memory_check_ = OpId{1} << 20;
  std::vector<HeldOp> window_;
  OpId oldest_ = 0;  // every op before it is done
  OpId next_ = 0;    // the next op to arrive
  std::uint64_t finished_ = 0;
  std::vector<Link> successors_;
  std::uint32_t free_successor_ = kNoSuccessor;

  std::vector<OpId> latest_;    // per (channel, rank): its latest op, or kNoOp
  std::size_t idle_slots_ = 0;  // slots whose latest op is done, or that have none
  bool generated_all_ = false;
  bool launched_ = false;
  std::vector<OpId> waiting_for_launch_;
  std::vector<int> memo_dst_;
  std::vector<PathId> memo_path_;

  OpSink* sink_;                             // null: nothing retires to anyone
  std::vector<OpTiming> times_;              // with a sink: each held op's times, as window_
  std::deque<std::pair<Time, OpId>> begun_;  // with a sink: begun, not yet retired (some)
  const std::map<NodePair, PathId>* paths_ = nullptr;  // folded: routes over canonical links
};

}  // namespace

StreamedResult simulate_streamed(const Topology& topology, Router& router, NetworkModel& model,
                                 const StreamedCollective& collective,
                                 const std::function<Schedule()>& generate, GenerateOn where,
                                 OpSink* sink) {
  // The files a sink feeds read each link's rate over time, as a stored run's do: kept, or
  // handed to the sink as the run goes.
  if (sink) model.keep_link_rates(sink->rates());
  StreamedSimulator<false> sim(topology, router, model, collective, sink);
  StreamedResult r =
      where == GenerateOn::OwnThread ? sim.run_threaded(generate) : sim.run(generate);
  r.link_rates = model.take_link_rates();
  return r;
}

StreamedResult simulate_quotient_streamed(const Topology& topology, Router& router,
                                          NetworkModel& model, const StreamedCollective& collective,
                                          const StreamedQuotient& quotient,
                                          const std::map<NodePair, PathId>& paths) {
  StreamedSimulator<true> sim(topology, router, model, collective, paths);
  return sim.play_quotient(quotient);
}

}  // namespace collsim
