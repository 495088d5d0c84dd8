#pragma once
// The one executor: what happens to an op from the moment its dependencies are done
// until its successors are released — its rank's overhead, its launch onto the
// network model (a local op, a transfer, or a switch op's legs), its delivery delay,
// the release of what needed only its bytes to have left, and the traffic counted.
// Written once for every source of ops: the stored schedules of Simulator (many
// tasks, compute tasks, switch ops, the per-op record) and the window of a schedule
// being generated (streamed.cpp). A source says where an op, its route, its
// successors and its dependency counts are kept; the executor decides what happens.
//
// A source is the class deriving from Executor<Source> (the executor calls it
// statically: no virtual call on the hot path). It provides, for an op named by its
// task and id:
//   decode(TransferId) -> TransferIds::Decoded      id(task, op, leg = 0) -> TransferId
//   op(task, op) -> const Op&                        bytes(task, op) -> std::int64_t
//   path(task, op) -> PathId (its route)             costs(task) -> const OpCosts&
//   gpu(task, rank) -> NodeId                        has_deps(task, op) -> bool
//   each_successor(task, op, f): f(next, only_sent) for each successor, in the order
//     linked; only_sent: whether next needs only op's bytes to have left (converts to
//     bool; LazyOnlySent asks needs_only_sent when it is read)
//   last_successors(task, op, f): the same once the op is done (the source may free them)
//   dependency_done(task, next) -> bool: one of next's dependencies is done; true if none is left
//   hooks: began(task, op), sent(task, op) (its last byte left, the data arrives later),
//          finishing(task, op, phase) (before its successors are released),
//          finished(task, op) (after)
// and, where it sets kSwitchOps (switch ops: NVLS), schedule(task) -> const Schedule&,
// switch_route(task, network, rank, up) -> PathId, switch_efficiency(task, network, rank) ->
// double, legs_left(task, op) -> std::uint16_t&.
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "network/network_model.h"
#include "schedule/schedule.h"
#include "simulate/op_costs.h"
#include "simulate/transfer_ids.h"

namespace collsim {

// needs_only_sent(dep, next), asked only where the executor reads it.
struct LazyOnlySent {
  const Op& dep;
  const Op& next;
  explicit operator bool() const { return needs_only_sent(dep, next); }
};

// How an op finishes: whole (a local op, a switch op, a transfer whose data arrived as
// it left), or delivered after it was first sent (what needed only that already went on).
enum class OpPhase : std::uint8_t { Whole, Delivered };

// The executor's own events; a source numbers its own from kFirstSourceEvent.
enum ExecutorEvent : EventTag {
  kNetworkWakeup,
  kOpReady,  // its rank's overhead is paid
  kLocalOpDone,
  kDelivered,     // a transfer's data has arrived, its delivery delay after it was sent
  kLegDelivered,  // the same for one leg of a switch op
  kFirstSourceEvent
};

// What the ops moved: per link (the model counts), per topology node, and in transfers.
struct Traffic {
  LinkCounters links;
  std::vector<std::int64_t> node_sent;
  std::vector<std::int64_t> node_received;
  std::uint64_t transfers = 0;
};

template <class Source>
class Executor : private NetworkHost {
 protected:
  Executor(const Topology& topology, Router& router, NetworkModel& model)
      : NetworkHost(engine_, kNetworkWakeup, traffic_.links),
        topology_(topology),
        router_(router),
        model_(model) {
    reset();
  }

  // Zero counters and overhead queues, for a new run.
  void reset() {
    traffic_ = Traffic{};
    traffic_.links.resize(topology_.links().size());
    traffic_.node_sent.assign(topology_.nodes().size(), 0);
    traffic_.node_received.assign(topology_.nodes().size(), 0);
    rank_busy_until_.assign(topology_.nodes().size(), 0);
  }

  // Handles the executor's own events; false for a source's.
  bool play_executor_event(const Event& e) {
    switch (e.tag) {
      case kNetworkWakeup:
        model_.wakeup(*this, e.id);
        return true;
      case kOpReady: {
        const auto k = source().decode(e.id);
        begin_op(k.task, k.op);
        return true;
      }
      case kLocalOpDone: {
        const auto k = source().decode(e.id);
        finish_op(k.task, k.op, OpPhase::Whole);
        return true;
      }
      case kDelivered: {
        const auto k = source().decode(e.id);
        finish_op(k.task, k.op, OpPhase::Delivered);
        return true;
      }
      case kLegDelivered:
        if constexpr (Source::kSwitchOps) {
          const auto k = source().decode(e.id);
          leg_delivered(k.task, k.op, k.leg);
          return true;
        }
        break;
    }
    return false;
  }

  // Its dependencies are done. The overhead is the wake-up after a dependency, paid by
  // the rank that runs the op (Op::executor, as the hardware runner has it): ops that
  // wait on none start with the collective (its launch covers them), as a real run's
  // first ops do.
  void start_op(std::size_t task, OpId id) {
    Source& src = source();
    const OpCosts& costs = src.costs(task);
    if (!costs.has_overhead() || !src.has_deps(task, id)) return begin_op(task, id);
    Time& busy = rank_busy_until_[src.gpu(task, src.op(task, id).executor())];
    engine_.schedule(costs.overhead_paid(busy, engine_.now()), kOpReady, src.id(task, id));
  }

  Engine engine_;
  const Topology& topology_;
  Router& router_;
  NetworkModel& model_;
  Traffic traffic_;

 private:
  Source& source() { return static_cast<Source&>(*this); }

  // An op starts when it begins to move data, after any overhead it paid: a real run
  // stamps its ops there too (after the wake-up), so the two timelines compare op for op.
  void begin_op(std::size_t task, OpId id) {
    Source& src = source();
    src.began(task, id);
    const Op& op = src.op(task, id);
    if constexpr (Source::kSwitchOps)
      if (op.is_switch()) return begin_switch_op(task, id);
    const std::int64_t bytes = src.bytes(task, id);
    const OpCosts& costs = src.costs(task);
    if (op.is_local())
      return engine_.schedule(add_time(engine_.now(), costs.local_time(op, bytes)), kLocalOpDone,
                              src.id(task, id));
    traffic_.node_sent[src.gpu(task, op.src_rank)] += bytes;
    ++traffic_.transfers;
    const PathId path = src.path(task, id);
    const TransferCost cost = costs.transfer(topology_, router_.links(path), op, bytes);
    model_.start_transfer(*this, src.id(task, id), path, bytes, cost);
  }

  // A switch op is its legs (Schedule::switch_leg) at once. SwitchReduce
  // (multimem.ld_reduce): the switch reads the range from each of the group's n GPUs (n
  // legs up) and returns the result to the issuer (one leg down). Multicast (multimem.st):
  // the issuer stores the range once (one leg up), the switch writes it to all n GPUs (n
  // legs down). SwitchAllReduce (InfiniBand SHARP): each GPU sends its range up and
  // receives the result (n up, n down), streamed through the switch. The switch moves
  // payload at its sharp_efficiency of the link rate: each leg's time is stretched by
  // 1 / efficiency (on top of the cost model's terms for its links; the reduction is the
  // switch's, so no GPU reduction rate applies).
  void begin_switch_op(std::size_t task, OpId id) {
    Source& src = source();
    const Schedule& s = src.schedule(task);
    const Op& op = s.ops[id];
    const int legs = s.switch_legs(op), issuer = op.src_rank;
    const std::int64_t bytes = s.bytes(op);
    src.legs_left(task, id) = static_cast<std::uint16_t>(legs);
    traffic_.transfers += static_cast<std::uint64_t>(legs);
    for (int leg = 0; leg < legs; ++leg) {
      const auto [r, up] = s.switch_leg(op, leg);
      const PathId path = src.switch_route(task, Schedule::in_network(op), r, up);
      if (up) traffic_.node_sent[src.gpu(task, r)] += bytes;
      TransferCost cost = src.costs(task).transfer(topology_, router_.links(path), op, bytes);
      const double efficiency = src.switch_efficiency(task, Schedule::in_network(op), issuer);
      cost.stretch /= efficiency;
      model_.start_transfer(*this, src.id(task, id, leg), path, bytes, cost);
      if (const std::int64_t extra = slowed_bytes(bytes, efficiency); extra > 0)
        for (LinkId l : router_.links(path)) traffic_.links.add_slowed(l, extra);
    }
  }

  PathId leg_path(std::size_t task, OpId id, int leg) {
    const Schedule& s = source().schedule(task);
    const Op& op = s.ops[id];
    const auto [r, up] = s.switch_leg(op, leg);
    return source().switch_route(task, Schedule::in_network(op), r, up);
  }

  // What arrives at a GPU is a leg down to it; the switch op is done when its last leg has
  // arrived.
  void leg_delivered(std::size_t task, OpId id, int leg) {
    Source& src = source();
    const Schedule& s = src.schedule(task);
    const Op& o = s.ops[id];
    if (const auto [r, up] = s.switch_leg(o, leg); !up)
      traffic_.node_received[src.gpu(task, r)] += s.bytes(o);
    if (--src.legs_left(task, id) > 0) return;
    finish_op(task, id, OpPhase::Whole);
  }

  // The network model is done with a transfer: its data has arrived, or (a model that
  // times a delivery delay) its last byte has left.
  void transfer_finished(TransferId transfer) override {
    Source& src = source();
    const auto [task, id, leg] = src.decode(transfer);
    const Op& op = src.op(task, id);
    PathId path = src.path(task, id);
    if constexpr (Source::kSwitchOps)
      if (op.is_switch()) path = leg_path(task, id, leg);
    const std::optional<Time> delay = model_.delivery_delay(
        path, src.costs(task).transfer(topology_, router_.links(path), op, src.bytes(task, id)));
    const bool in_flight = delay && *delay > 0;  // else it arrived as it left
    if constexpr (Source::kSwitchOps) {
      if (op.is_switch()) {
        if (!in_flight) return leg_delivered(task, id, leg);
        return engine_.schedule(add_time(engine_.now(), *delay), kLegDelivered, transfer);
      }
    }
    if (!in_flight) return finish_op(task, id, OpPhase::Whole);
    // Sent: what needs only that goes on now; the rest waits for the data to arrive. The
    // arrival is queued first: an op released now may reach a streamed source only later
    // (ties at one instant go in the order scheduled).
    engine_.schedule(add_time(engine_.now(), *delay), kDelivered, src.id(task, id));
    release_sent(task, id);
  }

  void release_sent(std::size_t task, OpId id) {
    Source& src = source();
    src.sent(task, id);
    src.each_successor(task, id, [&](OpId next, auto only_sent) {
      if (only_sent && src.dependency_done(task, next)) start_op(task, next);
    });
  }

  void finish_op(std::size_t task, OpId id, OpPhase phase) {
    Source& src = source();
    const Op& op = src.op(task, id);
    if (!op.is_local() && !op.is_switch())
      traffic_.node_received[src.gpu(task, op.dst_rank)] += src.bytes(task, id);
    src.finishing(task, id, phase);
    src.last_successors(task, id, [&](OpId next, auto only_sent) {
      if (phase == OpPhase::Delivered && only_sent) return;  // released when sent
      if (src.dependency_done(task, next)) start_op(task, next);
    });
    src.finished(task, id);
  }

  std::vector<Time> rank_busy_until_;  // per topology node: CostModel::op_overhead's queue
};

}  // namespace collsim
