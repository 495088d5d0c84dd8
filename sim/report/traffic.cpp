#include "report/traffic.h"

#include <algorithm>
#include <optional>
#include <span>

#include "topology/routing.h"

namespace collsim {
namespace {

// Total length of the union of intervals.
double union_length(std::vector<std::pair<Time, Time>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  Time total = 0, start = 0, end = -1;
  for (auto [a, b] : intervals) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  if (end > start) total += end - start;
  return to_seconds(total);
}

// One link's total in a collective's own record: its utilisation over the collective's
// window, and the collective's bottleneck (the link needing longest at full rate; the
// lower id on a tie, as links come in id order).
void add_link_total(const Topology& t, LinkId l, std::int64_t bytes, CollectiveTraffic& own,
                    Bottleneck& whole) {
  const double capacity = t.link(l).bandwidth, window = own.duration_s();
  own.links.push_back({l, bytes, window > 0 ? bytes / (capacity * window) : 0.0});
  if (bytes / capacity > whole.seconds) whole = {whole.collective, -1, l, bytes / capacity, bytes};
}

// A streamed run's collectives from their own totals (they ran one after another):
// the same links, bytes and per-rank figures a stored run derives from its ops; no
// per-step bottlenecks (no steps are kept).
void add_streamed_collectives(const Topology& t, const ScenarioResult& r, TrafficReport& rep) {
  for (std::size_t c = 0; c < r.streamed_totals.size(); ++c) {
    const ScenarioResult::CollectiveTotals& totals = r.streamed_totals[c];
    CollectiveTraffic own;
    own.start_s = r.outcomes[c].start_s;
    own.end_s = r.outcomes[c].end_s;
    Bottleneck whole{c, -1};
    for (const auto& [l, bytes] : totals.link_bytes) add_link_total(t, l, bytes, own, whole);
    for (std::size_t i = 0; i < totals.sent.size(); ++i)
      own.ranks.push_back({totals.sent[i], totals.received[i]});
    rep.collectives.push_back(std::move(own));
    rep.per_collective.push_back(whole);
  }
}

}  // namespace

std::vector<CollectiveTraffic::LinkBytes> CollectiveTraffic::hottest(std::size_t n) const {
  std::vector<LinkBytes> out = links;
  std::stable_sort(out.begin(), out.end(), [](const LinkBytes& a, const LinkBytes& b) {
    return a.utilisation > b.utilisation;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

TrafficReport analyse_traffic(const Scenario& s, const ScenarioResult& r, int bins) {
  const Topology& t = s.topology;
  TrafficReport rep;
  for (const auto& o : r.outcomes) rep.makespan_s = std::max(rep.makespan_s, o.end_s);
  // Per-op timing was recorded (a streamed run holds no ops: nothing to time by).
  rep.timed = !r.sim.tasks.empty() && !r.schedules[0]->ops.empty() &&
              r.sim.tasks[0].ops.size() == r.schedules[0]->size();
  rep.bins = rep.timed ? bins : 0;
  rep.bin_s = rep.makespan_s > 0 && bins > 0 ? rep.makespan_s / bins : 0;
  const std::size_t L = t.links().size();
  rep.links.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    auto& lt = rep.links[l];
    lt.bytes = r.sim.links.bytes[l];
    lt.busy_s = to_seconds(r.sim.links.busy[l]);
    lt.peak_transfers = r.sim.links.peak_in_flight[l];
    if (rep.makespan_s > 0)
      lt.utilisation = static_cast<double>(lt.bytes) / (t.link(l).bandwidth * rep.makespan_s);
    if (rep.timed) lt.bins.assign(bins, 0.0f);
  }
  rep.ranks.resize(t.num_ranks());
  for (int rank = 0; rank < t.num_ranks(); ++rank) {
    rep.ranks[rank].sent = r.sim.node_sent[t.gpu_of_rank(rank)];
    rep.ranks[rank].received = r.sim.node_received[t.gpu_of_rank(rank)];
  }

  if (!r.streamed_totals.empty()) {
    add_streamed_collectives(t, r, rep);
    return rep;
  }
  std::vector<std::vector<std::pair<Time, Time>>> rank_busy(t.num_ranks());
  std::optional<Router> router;  // routes to NVLS switches, made when a schedule has switch ops
  for (std::size_t c = 0; c < r.resolved.size(); ++c) {
    const auto& spec = r.resolved[c];
    const Schedule& sched = *r.schedules[c];
    const std::vector<PathId>& paths = r.sim.tasks[c].paths;
    // Ops come in step order: bytes per link for the current step, and which links they touched.
    std::vector<std::int64_t> step_bytes(L, 0), coll_bytes(L, 0);
    std::vector<LinkId> touched;
    int step = -1;
    auto close_step = [&] {
      if (step < 0) return;
      Bottleneck b{c, step};
      for (LinkId l : touched) {
        const double secs = step_bytes[l] / t.link(l).bandwidth;
        if (secs > b.seconds || (secs == b.seconds && l < b.link))
          b = {c, step, l, secs, step_bytes[l]};
        step_bytes[l] = 0;
      }
      touched.clear();
      if (b.link >= 0) rep.per_step.push_back(b);  // a barrier's steps carry no bytes
    };
    // This collective's own record, by its rank index (spec.ranks[i] is topology rank i).
    CollectiveTraffic own;
    own.start_s = r.outcomes[c].start_s;
    own.end_s = r.outcomes[c].end_s;
    own.ranks.resize(spec.ranks.size());
    std::vector<std::vector<std::pair<Time, Time>>> own_busy(spec.ranks.size());
    // Bytes over one route, at the op's step and time; ranks `src` and `dst` (its own
    // indices) are busy meanwhile.
    auto account = [&](OpId id, std::span<const LinkId> path, std::int64_t bytes, int src,
                       int dst) {
      const Op& op = sched.ops[id];
      if (op.step != step) {
        close_step();
        step = op.step;
      }
      for (LinkId l : path) {
        if (step_bytes[l] == 0 && bytes > 0) touched.push_back(l);
        step_bytes[l] += bytes;
        coll_bytes[l] += bytes;
      }
      if (!rep.timed) return;
      const OpTiming& ot = r.sim.tasks[c].ops[id];
      own_busy[src].emplace_back(ot.start, ot.end);
      if (dst != src) own_busy[dst].emplace_back(ot.start, ot.end);
      const double a = to_seconds(ot.start), b = to_seconds(ot.end);
      for (LinkId l : path) {
        // Spread the bytes evenly over [a, b] into the bins they cover.
        const double rate = b > a ? bytes / (b - a) : 0;
        const int first = std::min(bins - 1, static_cast<int>(a / rep.bin_s));
        const int last = std::min(bins - 1, static_cast<int>(b / rep.bin_s));
        for (int k = first; k <= last && rate > 0; ++k) {
          const double lo = std::max(a, k * rep.bin_s), hi = std::min(b, (k + 1) * rep.bin_s);
          if (hi > lo)
            rep.links[l].bins[k] +=
                static_cast<float>(rate * (hi - lo) / (t.link(l).bandwidth * rep.bin_s));
        }
      }
    };
    for (OpId id = 0; id < sched.size(); ++id) {
      const Op& op = sched.ops[id];
      if (op.is_local()) continue;
      const std::int64_t bytes = sched.bytes(op);
      if (op.is_switch()) {
        // As the simulator times it: a leg between the switch and each GPU of the group
        // (up for a reduce, down for a multicast), and one the other way for the issuer.
        if (!router) router.emplace(t, s.network.routing);
        const int n = sched.switch_group_size(), first = sched.switch_group_first(op);
        std::vector<NodeId> gpus;
        for (int m = first; m < first + n; ++m) gpus.push_back(t.gpu_of_rank(spec.ranks[m]));
        const auto sw = sharp_switch_of(t, gpus);
        if (!sw) continue;  // the simulator refused it already
        const bool reduce = op.kind == OpKind::SwitchReduce;
        for (int leg = 0; leg <= n; ++leg) {
          const int rank = leg < n ? first + leg : op.src_rank;
          const NodeId g = t.gpu_of_rank(spec.ranks[rank]);
          const bool up = reduce == (leg < n);
          (up ? own.ranks[rank].sent : own.ranks[rank].received) += bytes;
          account(id, router->links(up ? router->route(g, *sw) : router->route(*sw, g)), bytes,
                  rank, rank);
        }
        continue;
      }
      own.ranks[op.src_rank].sent += bytes;
      own.ranks[op.dst_rank].received += bytes;
      account(id, r.sim.routes[paths[id]], bytes, op.src_rank, op.dst_rank);
    }
    const double window = own.duration_s();
    Bottleneck whole{c, -1};
    for (std::size_t l = 0; l < L; ++l)
      if (coll_bytes[l] > 0) add_link_total(t, static_cast<LinkId>(l), coll_bytes[l], own, whole);
    if (rep.timed)
      for (std::size_t i = 0; i < own.ranks.size(); ++i) {
        auto& busy = rank_busy[spec.ranks[i]];
        busy.insert(busy.end(), own_busy[i].begin(), own_busy[i].end());
        own.ranks[i].busy_s = union_length(own_busy[i]);
        own.ranks[i].idle_s = std::max(0.0, window - own.ranks[i].busy_s);
        std::vector<std::pair<Time, Time>>().swap(own_busy[i]);  // memory back as we go
      }
    rep.collectives.push_back(std::move(own));
    rep.per_collective.push_back(whole);
    close_step();
  }
  if (rep.timed) {
    for (int rank = 0; rank < t.num_ranks(); ++rank) {
      rep.ranks[rank].busy_s = union_length(rank_busy[rank]);
      rep.ranks[rank].idle_s = rep.makespan_s - rep.ranks[rank].busy_s;
    }
  }
  return rep;
}

}  // namespace collsim
