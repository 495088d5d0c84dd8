#pragma once
// The fluid model: every in-flight transfer is a flow whose rate is its max-min
// fair share of the links on its path. A transfer joins the network after the sender's
// start-up α; its latency (the path's link latencies, a protocol's per-hop latency) is
// paid after its last byte has left (delivery_delay), as propagation; rates are recomputed when
// flows join or leave, only for the flows and links connected to the change,
// and once per instant however many changes that instant brings.
//
// Shared resources: when the cost model has a host_memory curve, each host's memory
// is one more constraint for the solver, joined by every transfer from or to a GPU on
// that host. Its capacity is host_memory at the transfer's size; in the solver's units
// (stretched bytes, see TransferCost) that is memory_Bps x stretch, averaged over the
// transfers on it: exact when they move at the same per-byte cost (a step of one
// collective), a blend when they differ. GPUs of no known host share one memory.
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "network/due_queue.h"
#include "network/link_rates.h"
#include "network/maxmin.h"
#include "network/network_model.h"

namespace collsim {

class FlowModel final : public NetworkModel {
 public:
  FlowModel(const NetworkParams& params, const Topology& topology, Router& router);
  std::string_view name() const override { return "flow"; }
  void start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                      const TransferCost& cost) override;
  void wakeup(NetworkHost& host, std::uint64_t cookie) override;
  std::optional<Time> delivery_delay(PathId path, const TransferCost& cost) const override {
    return add_time(cost.latency, router_.info(path).latency);
  }

  std::uint64_t resolves() const { return resolves_; }
  void keep_link_rates(RateListener* to) override;
  std::vector<std::vector<RatePoint>> take_link_rates() override;

 private:
  using Slot = std::int32_t;
  struct Flow {
    TransferId id = 0;
    PathId path = -1;
    double remaining = 0;  // bytes still to move (stretched: see start_transfer)
    double rate = 0;       // bytes/s; 0 until first solved
    double stretch = 1;    // TransferCost::stretch: its link bytes move at rate / stretch
    std::int64_t rate_units = 0;  // keep_link_rates: what it adds to its links (milli_Bps)
    Time last_update = 0;  // when `remaining` was last brought up to date
    Time finish = kTimeNever;
    std::uint32_t version = 0;  // bumps when `finish` changes: stale heap entries are skipped
    // Its rate and finish as the instant of its latest rate change began. The changes of
    // one instant may reach the model in several resolves, in an order that depends on
    // how the ops were handed over (stored or streamed); a flow that ends the instant at
    // the rate it began it with (same_rate) keeps the finish it had, as one resolve would
    // leave it.
    Time instant = kTimeNever;
    double rate_before = 0;
    Time finish_before = kTimeNever;
    bool active = false;
    std::array<LinkId, 2> memory{-1, -1};  // the hosts' memory constraints it draws on
    double memory_capacity = 0;           // solver units: memory_Bps x stretch
    // The most it may take (TransferCost::ceiling_Bps), in solver units (x stretch): a
    // constraint of its own, +inf for none.
    double ceiling = std::numeric_limits<double>::infinity();
    // Its index in on_link_ of each constraint, in each_constraint's order: leaving a
    // link is O(1) even with 100,000 flows on it (a search there made many concurrent
    // collectives quadratic). Reused with the slot, so it allocates only once.
    std::vector<std::uint32_t> at;
  };

  Slot allocate(TransferId id, PathId path, double bytes);
  // Calls f on every constraint the flow is in: its links, then its hosts' memory.
  template <class F>
  void each_constraint(Slot s, F&& f) const;
  void join_memory(Slot s, const TransferCost& cost);
  double capacity_of(LinkId l) const;
  void activate(NetworkHost& host, Slot s);
  void set_rate(Slot s, double rate, Time now);
  void note_rate(Slot s, Time now);  // keep_link_rates: its links change with its rate
  void leave_links(Slot s);
  void mark_dirty(Slot s);
  void request_resolve(NetworkHost& host);
  void resolve(NetworkHost& host);
  void split_components();
  void solve_group(std::size_t group);
  void update_flows(Time now);
  void complete_due(NetworkHost& host);
  void arm_completion_timer(NetworkHost& host);
  bool live(DueQueue::Entry e) const {
    return flows_[e.slot].active && flows_[e.slot].version == e.version;
  }

  Time alpha_;
  Router& router_;
  std::vector<double> capacity_;
  std::size_t real_links_ = 0;           // constraints past this are hosts' memory
  std::vector<LinkId> memory_of_node_;   // a node's host memory constraint
  const Topology* topology_ = nullptr;
  std::vector<Flow> flows_;
  std::vector<Slot> free_slots_;
  // A flow on a link, and which of its constraints (each_constraint's order) that link
  // is: a flow moved within the list updates its `at` without walking its path.
  struct OnLink {
    Slot slot;
    std::uint32_t constraint;
  };
  std::vector<std::vector<OnLink>> on_link_;  // active flows per link
  std::vector<LinkId> dirty_links_;
  bool resolve_pending_ = false;
  DueQueue due_;                          // the active flows' finish times
  std::vector<DueQueue::Entry> due_now_;  // complete_due's scratch
  Time armed_at_ = kTimeNever;
  std::uint64_t timer_generation_ = 0;
  std::uint64_t resolves_ = 0;
  bool keep_rates_ = false;
  // Per link, its flows' rates summed now (RatePoint::milli_Bps).
  std::vector<std::int64_t> link_units_;
  LinkRates link_rates_;  // per link: every change

  // Scratch for resolve(), kept to avoid allocating per instant.
  std::vector<std::uint32_t> link_seen_, flow_seen_;
  std::uint32_t epoch_ = 0;
  std::vector<LinkId> comp_links_;
  std::vector<Slot> comp_flows_;
  std::vector<std::int32_t> local_index_;
  std::vector<double> local_capacity_;
  std::vector<std::int32_t> local_paths_;
  std::vector<std::size_t> starts_;
  std::vector<std::span<const std::int32_t>> local_flows_;
  std::vector<double> rates_;  // per gathered flow
  // resolve()'s components: union-find over local link indices, then per group its
  // flows (positions in comp_flows_) and links (local indices), and each link's index
  // within its group.
  std::vector<std::int32_t> parent_, group_of_link_, flow_group_, group_flows_, group_links_;
  std::vector<std::int32_t> group_index_;
  std::vector<std::size_t> group_first_flow_, group_first_link_, cursor_;
  std::vector<double> group_capacity_, group_rates_;
  MaxMinSolver solver_;
};

}  // namespace collsim
