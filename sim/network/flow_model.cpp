#include "network/flow_model.h"

#include <algorithm>
#include <cmath>

#include "core/slot_pool.h"

namespace collsim {
namespace {

enum : std::uint64_t { kActivate = 0, kResolve = 1, kComplete = 2 };

bool later_due(const auto& a, const auto& b) {
  return a.finish != b.finish ? a.finish > b.finish : a.slot > b.slot;
}

}  // namespace

FlowModel::FlowModel(const NetworkParams& params, const Topology& topology, Router& router)
    : alpha_(params.alpha), router_(router) {
  for (const Link& l : topology.links()) capacity_.push_back(l.bandwidth);
  real_links_ = capacity_.size();
  // One memory constraint per host, the last for nodes of no known host.
  int hosts = 0;
  for (const Node& n : topology.nodes()) hosts = std::max(hosts, n.host + 1);
  for (const Node& n : topology.nodes())
    memory_of_node_.push_back(static_cast<LinkId>(real_links_ + (n.host >= 0 ? n.host : hosts)));
  capacity_.resize(real_links_ + hosts + 1, 0.0);  // set per resolve from the flows on it
  topology_ = &topology;
  on_link_.resize(capacity_.size());
  link_seen_.assign(capacity_.size(), 0);
  local_index_.assign(capacity_.size(), -1);
}

FlowModel::Slot FlowModel::allocate(TransferId id, PathId path, double bytes) {
  const Slot s = take_slot(flows_, free_slots_);
  if (flow_seen_.size() < flows_.size()) flow_seen_.push_back(0);
  Flow& f = flows_[s];
  f.id = id;
  f.path = path;
  f.remaining = bytes;
  f.rate = 0;
  f.finish = kTimeNever;
  ++f.version;
  f.active = false;
  return s;
}

template <class F>
void FlowModel::each_constraint(Slot s, F&& f) const {
  for (LinkId l : router_.links(flows_[s].path)) f(l);
  for (LinkId m : flows_[s].memory)
    if (m >= 0) f(m);
}

void FlowModel::join_memory(Slot s, const TransferCost& cost) {
  Flow& f = flows_[s];
  f.memory = {-1, -1};
  const auto links = router_.links(f.path);
  if (!(cost.memory_Bps > 0) || links.empty()) return;
  f.memory_capacity = cost.memory_Bps * cost.stretch;
  f.memory[0] = memory_of_node_[topology_->link(links.front()).src];
  const LinkId to = memory_of_node_[topology_->link(links.back()).dst];
  if (to != f.memory[0]) f.memory[1] = to;  // across hosts: both memories
}

// A host's memory in solver units: the mean of what its flows say it is (see the header).
double FlowModel::capacity_of(LinkId l) const {
  if (static_cast<std::size_t>(l) < real_links_) return capacity_[l];
  const auto& on = on_link_[l];
  if (on.empty()) return 1.0;  // no flow to constrain
  double sum = 0;
  for (Slot s : on) sum += flows_[s].memory_capacity;
  return sum / static_cast<double>(on.size());
}

void FlowModel::start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                               const TransferCost& cost) {
  // A stretched transfer is, to the solver, a larger one on the same links.
  const Slot s = allocate(id, path, static_cast<double>(bytes) * cost.stretch);
  join_memory(s, cost);
  for (LinkId l : router_.links(path)) host.link_counters().enter(l, bytes, host.now());
  const Time delay = add_time(cost.start_up(alpha_), router_.info(path).latency);
  host.schedule_wakeup(add_time(host.now(), delay), make_cookie(kActivate, s));
}

void FlowModel::wakeup(NetworkHost& host, std::uint64_t c) {
  switch (cookie_kind(c)) {
    case kActivate:
      activate(host, static_cast<Slot>(cookie_index(c)));
      break;
    case kResolve:
      resolve_pending_ = false;
      resolve(host);
      arm_completion_timer(host);
      break;
    case kComplete:
      if (cookie_index(c) != timer_generation_) break;  // superseded by an earlier timer
      armed_at_ = kTimeNever;
      complete_due(host);
      arm_completion_timer(host);
      break;
  }
}

void FlowModel::activate(NetworkHost& host, Slot s) {
  Flow& f = flows_[s];
  f.active = true;
  f.last_update = host.now();
  each_constraint(s, [&](LinkId l) { on_link_[l].push_back(s); });
  mark_dirty(s);
  request_resolve(host);
}

void FlowModel::leave_links(Slot s) {
  each_constraint(s, [&](LinkId l) {
    auto& v = on_link_[l];
    auto it = std::find(v.begin(), v.end(), s);
    *it = v.back();
    v.pop_back();
  });
}

void FlowModel::mark_dirty(Slot s) {
  each_constraint(s, [&](LinkId l) { dirty_links_.push_back(l); });
}

// Changes at one instant are solved together: the resolve wakeup is queued behind
// every event already scheduled for this instant.
void FlowModel::request_resolve(NetworkHost& host) {
  if (resolve_pending_) return;
  resolve_pending_ = true;
  host.schedule_wakeup(host.now(), make_cookie(kResolve));
}

void FlowModel::resolve(NetworkHost& host) {
  ++resolves_;
  const Time now = host.now();
  // The part of the network the changes touch: links and flows reachable from the
  // dirty links through shared flows.
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  for (LinkId l : dirty_links_) {
    if (link_seen_[l] == epoch_) continue;
    link_seen_[l] = epoch_;
    comp_links_.push_back(l);
  }
  dirty_links_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (Slot s : on_link_[comp_links_[i]]) {
      if (flow_seen_[s] == epoch_) continue;
      flow_seen_[s] = epoch_;
      comp_flows_.push_back(s);
      each_constraint(s, [&](LinkId l) {
        if (link_seen_[l] == epoch_) return;
        link_seen_[l] = epoch_;
        comp_links_.push_back(l);
      });
    }
  }
  // Solve on local indices.
  local_capacity_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    local_index_[comp_links_[i]] = static_cast<std::int32_t>(i);
    local_capacity_.push_back(capacity_of(comp_links_[i]));
  }
  local_paths_.clear();
  starts_.clear();
  for (Slot s : comp_flows_) {
    starts_.push_back(local_paths_.size());
    each_constraint(s, [&](LinkId l) { local_paths_.push_back(local_index_[l]); });
  }
  starts_.push_back(local_paths_.size());
  local_flows_.clear();
  for (std::size_t i = 0; i < comp_flows_.size(); ++i)
    local_flows_.emplace_back(local_paths_.data() + starts_[i], starts_[i + 1] - starts_[i]);
  solver_.solve(local_capacity_, local_flows_, rates_);

  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    Flow& f = flows_[comp_flows_[i]];
    const double rate = rates_[i];
    if (f.rate > 0)
      f.remaining = std::max(0.0, f.remaining - f.rate * to_seconds(now - f.last_update));
    f.last_update = now;
    if (rate == f.rate && f.finish != kTimeNever) continue;  // unchanged: its finish time stands
    f.rate = rate;
    f.finish =
        add_time(now, transfer_time(static_cast<std::int64_t>(std::ceil(f.remaining)), rate));
    ++f.version;
    due_.push_back({f.finish, comp_flows_[i], f.version});
    std::push_heap(due_.begin(), due_.end(),
                   [](const Due& a, const Due& b) { return later_due(a, b); });
  }
}

void FlowModel::complete_due(NetworkHost& host) {
  const Time now = host.now();
  auto cmp = [](const Due& a, const Due& b) { return later_due(a, b); };
  while (!due_.empty() && due_.front().finish <= now) {
    std::pop_heap(due_.begin(), due_.end(), cmp);
    const Due d = due_.back();
    due_.pop_back();
    Flow& f = flows_[d.slot];
    if (!f.active || d.version != f.version) continue;
    f.active = false;
    mark_dirty(d.slot);
    leave_links(d.slot);
    for (LinkId l : router_.links(f.path)) host.link_counters().leave(l, now);
    free_slots_.push_back(d.slot);
    host.transfer_finished(f.id);
  }
  if (!dirty_links_.empty()) request_resolve(host);
}

void FlowModel::arm_completion_timer(NetworkHost& host) {
  auto cmp = [](const Due& a, const Due& b) { return later_due(a, b); };
  while (!due_.empty()) {  // drop stale entries from the top
    const Due& d = due_.front();
    if (flows_[d.slot].active && flows_[d.slot].version == d.version) break;
    std::pop_heap(due_.begin(), due_.end(), cmp);
    due_.pop_back();
  }
  if (due_.empty() || due_.front().finish >= armed_at_) return;
  // One live timer: a new, earlier one retires the one before (its wakeup is ignored).
  armed_at_ = due_.front().finish;
  host.schedule_wakeup(armed_at_, make_cookie(kComplete, ++timer_generation_));
}

}  // namespace collsim
