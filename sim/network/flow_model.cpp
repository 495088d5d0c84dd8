#include "network/flow_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/interrupt.h"
#include "core/slot_pool.h"

namespace collsim {
namespace {

enum : std::uint64_t { kActivate = 0, kResolve = 1, kComplete = 2 };

// Two rates that differ by float rounding alone: the solver sums shares in an order that
// depends on where flows sit in their lists, so flows alike in every way (a turn of the
// ranks maps one onto the other) can get rates an ulp apart. A flow keeps its finish
// unless its rate really changed; 1e-12 of a rate moves a second-long transfer by a
// picosecond at most.
bool same_rate(double a, double b) {
  if (a == b) return true;
  if (std::isinf(a) || std::isinf(b)) return false;
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

// The whole bytes a flow still has to move. A millionth of a byte under a whole number
// is that number: the remainder after moving at rate r for t is r x t away from a whole
// number only by rounding, and ceil would turn that into a byte's time.
std::int64_t whole_bytes_left(double remaining) {
  return static_cast<std::int64_t>(std::ceil(remaining - 1e-6));
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
  f.instant = kTimeNever;
  ++f.version;
  f.active = false;
  f.rate_units = 0;
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
  for (const OnLink& o : on) sum += flows_[o.slot].memory_capacity;
  return sum / static_cast<double>(on.size());
}

void FlowModel::start_transfer(NetworkHost& host, TransferId id, PathId path, std::int64_t bytes,
                               const TransferCost& cost) {
  // A stretched transfer is, to the solver, a larger one on the same links.
  const Slot s = allocate(id, path, static_cast<double>(bytes) * cost.stretch);
  flows_[s].stretch = cost.stretch;
  flows_[s].ceiling = cost.ceiling_Bps > 0 ? cost.ceiling_Bps * cost.stretch
                                           : std::numeric_limits<double>::infinity();
  join_memory(s, cost);
  for (LinkId l : router_.links(path)) host.link_counters().enter(l, bytes, host.now());
  // Joins after the sender's start-up, by a wakeup even when that is now, so the flows
  // that start at one instant are solved together, once.
  host.schedule_wakeup(add_time(host.now(), cost.sender_start_up(alpha_)),
                       make_cookie(kActivate, s));
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
  bool alone = true;
  f.at.clear();
  each_constraint(s, [&](LinkId l) {
    alone = alone && on_link_[l].empty();
    const auto constraint = static_cast<std::uint32_t>(f.at.size());
    f.at.push_back(static_cast<std::uint32_t>(on_link_[l].size()));
    on_link_[l].push_back({s, constraint});
  });
  if (!alone) {
    mark_dirty(s);
    return request_resolve(host);
  }
  // Alone on its links: its rate is its bottleneck, as the solver would find, without
  // a resolve. A flow joining its links later (even at this instant) marks them dirty
  // and the resolve then sees both.
  double rate = f.ceiling;
  each_constraint(s, [&](LinkId l) { rate = std::min(rate, capacity_of(l)); });
  set_rate(s, rate, host.now());
  arm_completion_timer(host);
}

void FlowModel::keep_link_rates(RateListener* to) {
  keep_rates_ = true;
  link_units_.assign(real_links_, 0);
  link_rates_.start(real_links_, to);
}

std::vector<std::vector<RatePoint>> FlowModel::take_link_rates() {
  return link_rates_.take();
}

// The flow's links take its rate now (its bytes' rate: solver units / stretch; 0 once it
// has left), as a change point at `now`.
void FlowModel::note_rate(Slot s, Time now) {
  Flow& f = flows_[s];
  const std::int64_t units =
      f.active ? static_cast<std::int64_t>(std::llround(f.rate / f.stretch * 1e3)) : 0;
  const std::int64_t delta = units - f.rate_units;
  if (delta == 0) return;
  f.rate_units = units;
  for (LinkId l : router_.links(f.path)) {
    link_units_[l] += delta;
    link_rates_.note(l, now, link_units_[l], false);
  }
}

// A changed rate moves the flow's finish time.
void FlowModel::set_rate(Slot s, double rate, Time now) {
  Flow& f = flows_[s];

  if (f.instant != now) {
    f.instant = now;
    f.rate_before = f.rate;
    f.finish_before = f.finish;
  }
  if (same_rate(rate, f.rate_before) && f.finish_before != kTimeNever) {
    f.rate = f.rate_before;
    f.finish = f.finish_before;
  } else {
    f.rate = rate;
    f.finish = add_time(now, transfer_time(whole_bytes_left(f.remaining), rate));
  }
  ++f.version;
  due_.push(f.finish, {s, f.version, f.id});
  if (keep_rates_) note_rate(s, now);
}

// Each entry is replaced by the link's last one (as a search-and-swap would), whose
// recorded index then moves to the hole.
void FlowModel::leave_links(Slot s) {
  std::size_t k = 0;
  each_constraint(s, [&](LinkId l) {
    auto& v = on_link_[l];
    const std::uint32_t hole = flows_[s].at[k++];
    const OnLink moved = v.back();
    v[hole] = moved;
    v.pop_back();
    if (hole != v.size()) flows_[moved.slot].at[moved.constraint] = hole;
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
  // One resolve of many thousands of flows takes milliseconds, and the engine polls for a
  // stop only every 32,768 events: Ctrl-C took minutes to act on such runs.
  poll_interrupt();
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
    for (const OnLink& on : on_link_[comp_links_[i]]) {
      const Slot s = on.slot;
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
  // Disjoint components are separate max-min systems: each is solved on its own, so a
  // flow alone on its links takes its bottleneck without the solver, and small systems
  // skip the solver's heap. Local indices keep the order of the walk above, so ties
  // between equal shares break as they would in one system: the rates are the same.
  local_capacity_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    local_index_[comp_links_[i]] = static_cast<std::int32_t>(i);
    local_capacity_.push_back(capacity_of(comp_links_[i]));
  }
  split_components();
  for (std::size_t c = 0; c + 1 < group_first_flow_.size(); ++c) solve_group(c);
  update_flows(now);
}

// Labels each gathered link with its component (union-find over the flows' links),
// then lists flows group by group, each group's flows and links in gathered order.
void FlowModel::split_components() {
  const std::size_t L = comp_links_.size();
  parent_.resize(L);
  group_index_.resize(L);
  for (std::size_t i = 0; i < L; ++i) parent_[i] = static_cast<std::int32_t>(i);
  auto root = [&](std::int32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  };
  for (Slot s : comp_flows_) {
    std::int32_t first = -1;
    each_constraint(s, [&](LinkId l) {
      const std::int32_t r = root(local_index_[l]);
      if (first < 0)
        first = r;
      else if (r != first)
        parent_[r] = first;
    });
  }
  // Group numbers in order of first appearance among the flows; a flow of no links
  // (rate: infinite) is a group of its own.
  group_of_link_.assign(L, -1);
  flow_group_.clear();
  std::int32_t groups = 0;
  for (Slot s : comp_flows_) {
    const auto links = router_.links(flows_[s].path);
    const bool none = links.empty() && flows_[s].memory[0] < 0;
    std::int32_t g = groups;
    if (!none) {
      const LinkId l0 = links.empty() ? flows_[s].memory[0] : links.front();
      std::int32_t& label = group_of_link_[root(local_index_[l0])];
      if (label < 0) label = groups++;
      g = label;
    } else {
      ++groups;
    }
    flow_group_.push_back(g);
  }
  // Counting sort of flows (by position in comp_flows_) and links into their groups.
  group_first_flow_.assign(static_cast<std::size_t>(groups) + 1, 0);
  group_first_link_.assign(static_cast<std::size_t>(groups) + 1, 0);
  // A dirty link whose flows all left is in no group.
  auto group_of = [&](std::size_t i) { return group_of_link_[root(static_cast<std::int32_t>(i))]; };
  for (std::int32_t g : flow_group_) ++group_first_flow_[g + 1];
  for (std::size_t i = 0; i < L; ++i)
    if (group_of(i) >= 0) ++group_first_link_[group_of(i) + 1];
  for (std::int32_t g = 0; g < groups; ++g) {
    group_first_flow_[g + 1] += group_first_flow_[g];
    group_first_link_[g + 1] += group_first_link_[g];
  }
  group_flows_.resize(comp_flows_.size());
  group_links_.resize(L);
  cursor_.assign(group_first_flow_.begin(), group_first_flow_.end() - 1);
  for (std::size_t i = 0; i < comp_flows_.size(); ++i)
    group_flows_[cursor_[flow_group_[i]]++] = static_cast<std::int32_t>(i);
  cursor_.assign(group_first_link_.begin(), group_first_link_.end() - 1);
  for (std::size_t i = 0; i < L; ++i) {
    const std::int32_t g = group_of(i);
    if (g < 0) continue;
    group_index_[i] = static_cast<std::int32_t>(cursor_[g] - group_first_link_[g]);
    group_links_[cursor_[g]++] = static_cast<std::int32_t>(i);
  }
  rates_.assign(comp_flows_.size(), 0.0);
}

// Solves group c: rates_ of its flows, by position in comp_flows_.
void FlowModel::solve_group(std::size_t c) {
  const std::size_t f0 = group_first_flow_[c], f1 = group_first_flow_[c + 1];
  const std::size_t l0 = group_first_link_[c], l1 = group_first_link_[c + 1];
  if (f1 - f0 == 1) {  // alone on its links: its bottleneck or ceiling (+inf on none)
    const Slot s = comp_flows_[group_flows_[f0]];
    double rate = flows_[s].ceiling;
    each_constraint(s, [&](LinkId l) { rate = std::min(rate, local_capacity_[local_index_[l]]); });
    rates_[group_flows_[f0]] = rate;
    return;
  }
  group_capacity_.clear();
  for (std::size_t i = l0; i < l1; ++i) group_capacity_.push_back(local_capacity_[group_links_[i]]);
  local_paths_.clear();
  starts_.clear();
  for (std::size_t i = f0; i < f1; ++i) {
    starts_.push_back(local_paths_.size());
    const Slot s = comp_flows_[group_flows_[i]];
    each_constraint(s, [&](LinkId l) { local_paths_.push_back(group_index_[local_index_[l]]); });
    // A ceiling is a link of the flow's own, for the solver alone.
    if (std::isfinite(flows_[s].ceiling)) {
      local_paths_.push_back(static_cast<std::int32_t>(group_capacity_.size()));
      group_capacity_.push_back(flows_[s].ceiling);
    }
  }
  starts_.push_back(local_paths_.size());
  local_flows_.clear();
  for (std::size_t i = 0; i + 1 < starts_.size(); ++i)
    local_flows_.emplace_back(local_paths_.data() + starts_[i], starts_[i + 1] - starts_[i]);
  solver_.solve(group_capacity_, local_flows_, group_rates_);
  for (std::size_t i = f0; i < f1; ++i) rates_[group_flows_[i]] = group_rates_[i - f0];
}

// Brings the gathered flows up to date at their new rates.
void FlowModel::update_flows(Time now) {
  for (std::size_t i = 0; i < comp_flows_.size(); ++i) {
    Flow& f = flows_[comp_flows_[i]];
    const double rate = rates_[i];
    if (f.rate > 0)
      f.remaining = std::max(0.0, f.remaining - f.rate * to_seconds(now - f.last_update));
    f.last_update = now;
    if (same_rate(rate, f.rate) && f.finish != kTimeNever) continue;  // its finish stands
    set_rate(comp_flows_[i], rate, now);
  }
}

// The flows due now finish in the order of their transfers' ids: the same whichever
// slots they were given (a streamed run reuses other slots than a stored one), so the
// links they leave, and the resolve after, see them in the same order.
void FlowModel::complete_due(NetworkHost& host) {
  const Time now = host.now();
  while (!due_.empty() && due_.earliest() <= now) {
    due_.take_earliest(due_now_);
    for (const DueQueue::Entry d : due_now_) {
      if (!live(d)) continue;
      Flow& f = flows_[d.slot];
      f.active = false;
      leave_links(d.slot);
      if (keep_rates_) note_rate(d.slot, now);
      // Flows left on its links may speed up; links it had to itself need no resolve.
      each_constraint(d.slot, [&](LinkId l) {
        if (!on_link_[l].empty()) dirty_links_.push_back(l);
      });
      for (LinkId l : router_.links(f.path)) host.link_counters().leave(l, now);
      free_slots_.push_back(d.slot);
      host.transfer_finished(f.id);
    }
  }
  if (!dirty_links_.empty()) request_resolve(host);
}

void FlowModel::arm_completion_timer(NetworkHost& host) {
  if (!due_.drop_stale([this](DueQueue::Entry e) { return live(e); })) return;
  if (due_.earliest() >= armed_at_) return;
  // One live timer: a new, earlier one retires the one before (its wakeup is ignored).
  armed_at_ = due_.earliest();
  host.schedule_wakeup(armed_at_, make_cookie(kComplete, ++timer_generation_));
}

}  // namespace collsim
