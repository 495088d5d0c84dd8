#include "report/traffic.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>

#include "network/link_counters.h"
#include "topology/routing.h"

namespace collsim {
namespace traffic_detail {

// The length of a union of intervals added one by one in any order, exact in picoseconds.
// Intervals are merged from time to time; those ending at or before `settled` (no
// interval to come starts earlier: they can only touch what comes) are summed and let
// go, so a rank busy over millions of transfers holds a few intervals, not millions.
class BusyTime {
 public:
  void add(Time a, Time b, Time settled) {
    // Most intervals start within the latest (a rank's transfers follow one another): it
    // grows where it is, held apart from the rest (no pointer to follow).
    if (a >= latest_.first && a <= latest_.second) {
      latest_.second = std::max(latest_.second, b);
      return;
    }
    const bool had_one = latest_.second >= 0;
    if (had_one) open_.push_back(latest_);
    latest_ = {a, b};
    if (had_one && open_.size() >= compact_at_) compact(settled);
  }
  Time total() {
    compact(kTimeNever);
    return closed_;
  }

 private:
  void compact(Time settled) {
    if (latest_.second >= 0) open_.push_back(latest_), latest_ = kNone;
    std::sort(open_.begin(), open_.end());
    std::size_t kept = 0;
    for (std::size_t i = 0; i < open_.size();) {
      auto [a, b] = open_[i];
      for (++i; i < open_.size() && open_[i].first <= b; ++i) b = std::max(b, open_[i].second);
      if (b <= settled)
        closed_ += b - a;
      else
        open_[kept++] = {a, b};
    }
    open_.resize(kept);
    compact_at_ = std::max<std::size_t>(64, 2 * kept);
  }

  static constexpr std::pair<Time, Time> kNone{0, -1};
  std::pair<Time, Time> latest_ = kNone;  // the latest interval, not in open_
  std::vector<std::pair<Time, Time>> open_;
  Time closed_ = 0;
  std::size_t compact_at_ = 64;
};

}  // namespace traffic_detail

using traffic_detail::BusyTime;

namespace {

// The share of a link's rate its bytes moved at, 1 unless a reducing switch's legs slowed
// them.
double share_of_rate(std::int64_t bytes, std::int64_t slowed) {
  return slowed > 0 ? static_cast<double>(bytes) / static_cast<double>(bytes + slowed) : 1.0;
}

// One link's total in a collective's own record: its utilisation over the collective's
// window, and the collective's bottleneck (the link needing longest at the rate it carries
// its bytes; the lower id on a tie, as links come in id order). `slowed`: bytes a reducing
// switch's legs add at its efficiency (bytes / efficiency - bytes).
void add_link_total(const Topology& t, LinkId l, std::int64_t bytes, std::int64_t slowed,
                    CollectiveTraffic& own, Bottleneck& whole) {
  const double capacity = t.link(l).bandwidth, window = own.duration_s();
  own.links.push_back({l, bytes, window > 0 ? bytes / (capacity * window) : 0.0});
  const double seconds = static_cast<double>(bytes + slowed) / capacity;
  if (seconds > whole.seconds)
    whole = {whole.collective, -1, l, seconds, bytes, share_of_rate(bytes, slowed)};
}

// A streamed run's collectives from their own totals (each counted alone):
// the same links, bytes and per-rank figures a stored run derives from its ops; no
// per-step bottlenecks (no steps are kept).
void add_streamed_collectives(const Topology& t, const ScenarioResult& r, TrafficReport& rep) {
  for (std::size_t c = 0; c < r.streamed_totals.size(); ++c) {
    const ScenarioResult::CollectiveTotals& totals = r.streamed_totals[c];
    CollectiveTraffic own;
    own.start_s = r.outcomes[c].start_s;
    own.end_s = r.outcomes[c].end_s;
    Bottleneck whole{c, -1};
    for (std::size_t k = 0; k < totals.link_bytes.size(); ++k)
      add_link_total(t, totals.link_bytes[k].first, totals.link_bytes[k].second,
                     totals.link_slowed[k], own, whole);
    for (std::size_t i = 0; i < totals.sent.size(); ++i)
      own.ranks.push_back({totals.sent[i], totals.received[i]});
    rep.collectives.push_back(std::move(own));
    rep.per_collective.push_back(whole);
  }
}

}  // namespace

double full_rate_seconds(const Topology& t, const Bottleneck& b) {
  return static_cast<double>(b.bytes) / t.link(b.link).bandwidth;
}

std::vector<CollectiveTraffic::LinkBytes> CollectiveTraffic::hottest(std::size_t n) const {
  std::vector<LinkBytes> out = links;
  std::stable_sort(out.begin(), out.end(), [](const LinkBytes& a, const LinkBytes& b) {
    return a.utilisation > b.utilisation;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

namespace {

// A rank's busy time (the union of its ops' intervals) and the rest of `window_s`, taken in
// whole picoseconds as the simulator keeps time: a rank busy all along is idle 0, not 5e-18.
void set_busy(RankTraffic& rt, Time busy, double window_s) {
  rt.busy_s = to_seconds(busy);
  rt.idle_s = to_seconds(std::max<Time>(0, from_seconds(window_s) - busy));
}

// The run's totals: per link (bytes, busy, peak, utilisation over the makespan) and per rank.
void add_run_totals(const Topology& t, const ScenarioResult& r, TrafficReport& rep) {
  const std::size_t L = t.links().size();
  rep.links.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    auto& lt = rep.links[l];
    lt.bytes = r.sim.links.bytes(l);
    lt.busy_s = to_seconds(r.sim.links.busy(l));
    lt.peak_transfers = r.sim.links.peak_in_flight(l);
    if (rep.makespan_s > 0)
      lt.utilisation = static_cast<double>(lt.bytes) / (t.link(l).bandwidth * rep.makespan_s);
    if (rep.timed) lt.bins.assign(rep.bins, 0.0f);
  }
  rep.ranks.resize(t.num_ranks());
  for (int rank = 0; rank < t.num_ranks(); ++rank) {
    rep.ranks[rank].sent = r.sim.node_sent[t.gpu_of_rank(rank)];
    rep.ranks[rank].received = r.sim.node_received[t.gpu_of_rank(rank)];
  }
}

}  // namespace

// A run's collectives, walked op by op in id order: bytes per link per step (each step's
// bottleneck) and per collective, per-rank bytes and, with per-op times, busy time and
// the links' utilisation bins. One walker serves every collective: its per-link arrays
// are cleared through the links each touched, so a collective costs its ops, not the
// topology's link count.
struct TrafficWalk::State final : RateListener {
  State(const Scenario& s, const ScenarioResult& r, TrafficReport& rep)
      : s_(s),
        t_(s.topology),
        r_(r),
        rep_(rep),
        step_bytes_(t_.links().size(), 0),
        coll_bytes_(t_.links().size(), 0),
        step_slowed_(t_.links().size(), 0),
        coll_slowed_(t_.links().size(), 0),
        rank_busy_(rep.timed ? t_.num_ranks() : 0),
        bins_(rep.timed ? t_.links().size() * rep.bins : 0, 0.0f) {}

  void collective(std::size_t c, const Schedule* whole) {
    c_ = c;
    whole_ = whole;
    step_ = -1;
    const CollectiveSpec& spec = r_.resolved[c];
    own_ = {};
    group_ends_.clear();
    own_.start_s = r_.outcomes[c].start_s;
    own_.end_s = r_.outcomes[c].end_s;
    own_.ranks.resize(spec.ranks.size());  // by its own rank index
    own_busy_.assign(rep_.timed ? spec.ranks.size() : 0, {});
  }

  void op(const RetiredOp& r) {
    const Op& op = *r.op;
    if (op.is_local()) return;
    if (op.is_switch()) return switch_op(r);
    own_.ranks[op.src_rank].sent += r.bytes;
    own_.ranks[op.dst_rank].received += r.bytes;
    account(r, r.route, op.dst_rank);
  }

  // Each link's bins into the report, each rank's busy time over the run: the union of
  // its ops' intervals.
  void finish() {
    const std::size_t L = rep_.links.size();
    if (rep_.timed && !r_.sim.link_rates.empty()) bins_from_rates();
    if (rep_.timed && rate_links_ == L) bins_ = std::move(rate_bins_);
    for (std::size_t l = 0; l < L && rep_.timed; ++l)
      for (int k = 0; k < rep_.bins; ++k) rep_.links[l].bins[k] = bins_[k * L + l];
    for (int rank = 0; rank < static_cast<int>(rank_busy_.size()); ++rank)
      set_busy(rep_.ranks[rank], rank_busy_[rank].total(), rep_.makespan_s);
  }

  // As the simulator times a switch op: a leg between the switch and a GPU of the group
  // per Schedule::switch_leg, in the network ending where SHARP reduces (sharp_leg_ends).
  void switch_op(const RetiredOp& r) {
    const Op& op = *r.op;
    const CollectiveSpec& spec = r_.resolved[c_];
    if (!whole_) throw std::logic_error("a switch op of a schedule not held whole");
    if (!router_) router_.emplace(t_, s_.network.routing);
    const GroupEnds& group = leg_ends(op, spec);
    const std::vector<NodeId>& ends = group.ends;
    if (ends.empty()) return;  // no switch: the simulator refused it already
    for (int leg = 0; leg < whole_->switch_legs(op); ++leg) {
      const auto [rank, up] = whole_->switch_leg(op, leg);
      const NodeId g = t_.gpu_of_rank(spec.ranks[rank]);
      (up ? own_.ranks[rank].sent : own_.ranks[rank].received) += r.bytes;
      const NodeId end = ends[static_cast<std::size_t>(member_index(op, rank))];
      const PathId route = up ? router_->route(g, end) : router_->route(end, g);
      account(r, router_->links(route), rank, rank, group.efficiency);
    }
  }

  // Which member of the op's group `rank` is.
  int member_index(const Op& op, int rank) const {
    return (rank - whole_->switch_member(op, 0)) /
           whole_->switch_groups(Schedule::in_network(op)).stride;
  }

  // Where each member's legs of the op's group end, found once per group of the collective
  // (none where the group has no switch), and the share of the link rate its switch
  // reaches.
  struct GroupEnds {
    std::vector<NodeId> ends;
    double efficiency = 1;
  };
  const GroupEnds& leg_ends(const Op& op, const CollectiveSpec& spec) {
    const bool network = Schedule::in_network(op);
    const std::pair key{network, whole_->switch_member(op, 0)};
    if (auto it = group_ends_.find(key); it != group_ends_.end()) return it->second;
    std::vector<NodeId> gpus;
    for (int j = 0; j < whole_->switch_group_size(op); ++j)
      gpus.push_back(t_.gpu_of_rank(spec.ranks[whole_->switch_member(op, j)]));
    auto group = sharp_group(t_, *router_, gpus, sharp_reach(network),
                             whole_->switch_group_index(network, key.second));
    if (!group) return group_ends_[key] = {};
    return group_ends_[key] = {std::move(group->ends), t_.node(group->root).sharp_efficiency};
  }

  // Bytes over one route, at the op's step and time, carried at `efficiency` of the links'
  // rate; ranks `src` and `dst` (the collective's own indices; the op's source unless
  // given) are busy meanwhile.
  void account(const RetiredOp& r, std::span<const LinkId> path, int dst, int src = -1,
               double efficiency = 1) {
    const Op& op = *r.op;
    const std::int64_t bytes = r.bytes;
    if (src < 0) src = op.src_rank;
    if (op.step != step_) {
      close_step();
      step_ = op.step;
    }
    const std::int64_t slowed = slowed_bytes(bytes, efficiency);
    for (LinkId l : path) {
      if (step_bytes_[l] == 0 && bytes > 0) step_touched_.push_back(l);
      if (coll_bytes_[l] == 0 && bytes > 0) coll_touched_.push_back(l);
      step_bytes_[l] += bytes;
      coll_bytes_[l] += bytes;
      if (slowed > 0) step_slowed_[l] += slowed, coll_slowed_[l] += slowed;
    }
    if (!rep_.timed) return;
    busy(src, r);
    if (dst != src) busy(dst, r);
    for (LinkId l : path) spread(l, bytes, to_seconds(r.start), to_seconds(r.end));
  }

  // The collective's own rank `i` busy over the op's lifetime, in its record and the run's.
  void busy(int i, const RetiredOp& r) {
    own_busy_[i].add(r.start, r.end, r.settled);
    rank_busy_[r_.resolved[c_].ranks[i]].add(r.start, r.end, r.settled);
  }

  // --- RateListener: each link's rate at every change (flow: a transfer's rate changes as
  // others come and go), handed over as the run goes (run --out streamed) or read from a
  // stored run's points (bins_from_rates). The bins hold what the links carried, interval by
  // interval: spread evenly over each transfer's life, a link shared by three flows and then
  // carrying one alone read 150% and then 83%. Each interval of one rate whole, from its
  // first point to the next that changes it: a point that changes nothing (a rate set and
  // set back at one instant) would cut an interval in two and round it otherwise. ---
  void links(std::size_t count) override {
    rate_links_ = count;
    if (rate_bins_.size() != bins_.size()) rate_bins_.assign(bins_.size(), 0.0f);
    open_.resize(count);
  }
  void rate(LinkId l, RatePoint p) override {
    std::optional<RatePoint>& open = open_[l];
    if (open && open->milli_Bps == p.milli_Bps) return;  // the interval goes on
    if (open) {
      const double a = to_seconds(open->at), b = to_seconds(p.at);
      if (b > a) add_rate(rate_bins_, l, static_cast<double>(open->milli_Bps) * 1e-3, a, b);
    }
    open = p;
  }

  // A stored run's kept points, as if handed over.
  void bins_from_rates() {
    links(r_.sim.link_rates.size());
    for (std::size_t l = 0; l < r_.sim.link_rates.size(); ++l)
      for (const RatePoint& p : r_.sim.link_rates[l]) rate(static_cast<LinkId>(l), p);
  }

  // `bytes` moved over [a, b] on link l, spread evenly into the utilisation bins it covers
  // (bin-major while walking: one step's transfers, in one bin, touch neighbouring
  // entries, not a line each; into the report's per-link bins at the end).
  void spread(LinkId l, std::int64_t bytes, double a, double b) {
    if (b > a) add_rate(bins_, l, bytes / (b - a), a, b);
  }

  // Link l at `rate` bytes/s over [a, b], into the utilisation bins it covers.
  void add_rate(std::vector<float>& bins, LinkId l, double rate, double a, double b) {
    if (rate <= 0) return;
    const double bin = rep_.bin_s, capacity = t_.link(l).bandwidth;
    const int first = std::min(rep_.bins - 1, static_cast<int>(a / bin));
    const int last = std::min(rep_.bins - 1, static_cast<int>(b / bin));
    const std::size_t L = t_.links().size();
    for (int k = first; k <= last; ++k) {
      const double lo = std::max(a, k * bin), hi = std::min(b, (k + 1) * bin);
      if (hi > lo) bins[k * L + l] += static_cast<float>(rate * (hi - lo) / (capacity * bin));
    }
  }

  // The step's bottleneck: the link needing longest at full rate (the lower id on a tie).
  void close_step() {
    if (step_ < 0) return;
    Bottleneck b{c_, step_};
    for (LinkId l : step_touched_) {
      const double capacity = t_.link(l).bandwidth;
      const double secs = static_cast<double>(step_bytes_[l] + step_slowed_[l]) / capacity;
      if (secs > b.seconds || (secs == b.seconds && l < b.link))
        b = {c_, step_, l, secs, step_bytes_[l], share_of_rate(step_bytes_[l], step_slowed_[l])};
      step_bytes_[l] = 0;
      step_slowed_[l] = 0;
    }
    step_touched_.clear();
    if (b.link >= 0) rep_.per_step.push_back(b);  // a barrier's steps carry no bytes
  }

  // The collective's links in id order (add_link_total breaks ties by it), its ranks' busy
  // and idle time over its own window, into the report.
  void collective_done() {
    close_step();
    std::sort(coll_touched_.begin(), coll_touched_.end());
    Bottleneck whole{c_, -1};
    for (LinkId l : coll_touched_) {
      add_link_total(t_, l, coll_bytes_[l], coll_slowed_[l], own_, whole);
      coll_bytes_[l] = 0;
      coll_slowed_[l] = 0;
    }
    coll_touched_.clear();
    const double window = own_.duration_s();
    for (std::size_t i = 0; i < own_busy_.size(); ++i)
      set_busy(own_.ranks[i], own_busy_[i].total(), window);
    own_busy_.clear();
    rep_.collectives.push_back(std::move(own_));
    rep_.per_collective.push_back(whole);
  }

  const Scenario& s_;
  const Topology& t_;
  const ScenarioResult& r_;
  TrafficReport& rep_;
  std::vector<std::int64_t> step_bytes_, coll_bytes_;  // per link; zero outside the touched
  // Per link, what a reducing switch's legs add (bytes / efficiency - bytes); zero outside
  // the touched.
  std::vector<std::int64_t> step_slowed_, coll_slowed_;
  std::vector<LinkId> step_touched_, coll_touched_;
  std::vector<BusyTime> rank_busy_;  // per topology rank, timed runs
  std::vector<float> bins_;          // per bin, each link's utilisation (timed runs)
  // The links' rates as handed over (rate_links_ links, 0: none): per link, the point its
  // open interval began at, and the bins they fill.
  std::size_t rate_links_ = 0;
  std::vector<std::optional<RatePoint>> open_;
  std::vector<float> rate_bins_;
  // By a switch group's kind (network or not) and first rank: where each member's legs end.
  std::map<std::pair<bool, int>, GroupEnds> group_ends_;
  std::optional<Router> router_;  // routes to NVLS switches, made when a schedule has switch ops
  std::size_t c_ = 0;             // the collective walked
  const Schedule* whole_ = nullptr;  // its schedule, where held whole
  int step_ = -1;                    // its step being summed
  CollectiveTraffic own_;
  std::vector<BusyTime> own_busy_;  // by its own rank index
};

TrafficWalk::TrafficWalk(const Scenario& s, const ScenarioResult& r, TrafficReport& rep)
    : state_(std::make_unique<State>(s, r, rep)) {}
TrafficWalk::~TrafficWalk() = default;
void TrafficWalk::collective(std::size_t c, const Schedule* whole) {
  state_->collective(c, whole);
}
void TrafficWalk::op(const RetiredOp& op) {
  state_->op(op);
}
void TrafficWalk::collective_done() {
  state_->collective_done();
}
void TrafficWalk::finish() {
  state_->finish();
}
RateListener* TrafficWalk::rates() {
  return state_->rep_.timed ? state_.get() : nullptr;
}

TrafficReport traffic_totals(const Scenario& s, const ScenarioResult& r, bool timed, int bins) {
  TrafficReport rep;
  for (const auto& o : r.outcomes) rep.makespan_s = std::max(rep.makespan_s, o.end_s);
  rep.timed = timed;
  rep.bins = rep.timed ? bins : 0;
  rep.bin_s = rep.makespan_s > 0 && bins > 0 ? rep.makespan_s / bins : 0;
  add_run_totals(s.topology, r, rep);
  return rep;
}

TrafficReport analyse_traffic(const Scenario& s, const ScenarioResult& r, int bins) {
  // Per-op timing was recorded (a streamed run holds no ops: nothing to time by).
  const bool timed = !r.sim.tasks.empty() && !r.schedules[0]->ops.empty() &&
                     r.sim.tasks[0].ops.size() == r.schedules[0]->size();
  TrafficReport rep = traffic_totals(s, r, timed, bins);
  if (!r.streamed_totals.empty()) {
    add_streamed_collectives(s.topology, r, rep);
    return rep;
  }
  TrafficWalk walk(s, r, rep);
  retire_recorded(r, walk);
  walk.finish();
  return rep;
}

}  // namespace collsim
