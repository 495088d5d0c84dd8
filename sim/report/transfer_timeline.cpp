#include "report/transfer_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "report/chrome_trace.h"
#include "report/trace_lanes.h"

namespace collsim {
namespace timeline_detail {

// The time bins that binned collectives share: `bins` equal ones over the run.
struct BinGrid {
  Time first = 0;
  double width = 1;
  int bins = 1;
};

}  // namespace timeline_detail

using timeline_detail::BinGrid;

namespace {

// Most collectives in flight at one instant (at least 1): they share each rank's
// tracks, in lanes, so the bin budget is split among that many.
int peak_overlap(std::span<const TimelineSpan> spans) {
  std::vector<std::pair<Time, int>> edges;  // (time, +1 start / -1 end); ends first at ties
  for (const TimelineSpan& s : spans) {
    if (s.first == kTimeNever) continue;
    edges.emplace_back(s.first, 1);
    edges.emplace_back(s.last, -1);
  }
  std::sort(edges.begin(), edges.end());
  int now = 0, most = 1;
  for (const auto& [t, d] : edges) most = std::max(most, now += d);
  return most;
}

// The grid over every collective's span, its bin budget split among those that overlap.
BinGrid bin_grid(std::span<const TimelineSpan> spans, int K, std::size_t max_transfers) {
  BinGrid grid;
  grid.first = kTimeNever;
  Time last = 0;
  for (const TimelineSpan& s : spans)
    if (s.first != kTimeNever)
      grid.first = std::min(grid.first, s.first), last = std::max(last, s.last);
  grid.bins = std::max(
      1, static_cast<int>(max_transfers / (2 * static_cast<std::size_t>(K) *
                                           static_cast<std::size_t>(peak_overlap(spans)))));
  grid.width = std::max<double>(1, static_cast<double>(last - grid.first) / grid.bins);
  return grid;
}

}  // namespace

std::vector<TimelineSpan> timeline_spans(const ScenarioResult& r) {
  std::vector<TimelineSpan> spans;
  for (std::size_t c = 0; c < r.resolved.size(); ++c) {
    TimelineSpan s;
    s.ops = r.op_count(c);
    s.ranks = &r.resolved[c].ranks;
    const TaskTiming& t = r.sim.tasks[c];
    if (s.ops > 0 && t.ops_start >= 0) s.first = t.ops_start, s.last = t.ops_end;
    spans.push_back(s);
  }
  return spans;
}

// Every transfer, or (past `max_transfers` in all) each collective's transfers, per rank
// and side, in the grid's time bins (clipped to the collective's own span), each with how
// busy the rank was, what it moved (spread over each transfer's lifetime) and how many
// transfers it touched. Empty bins are left out. A transfer adds its partial first and
// last bins directly and the whole bins between them as a difference (summed up once per
// bin at the end), so long transfers cost no more than short ones: the work is transfers
// + bins, not transfers x bins.
struct TraceGather::State {
  State(int K, std::size_t max_transfers, std::vector<TimelineSpan> spans)
      : K_(K), spans_(std::move(spans)) {
    std::uint64_t total = 0;
    for (const TimelineSpan& s : spans_) total += s.ops;
    binned_ = total > max_transfers;
    if (binned_)
      grid_ = bin_grid(spans_, K, max_transfers);
    else
      out_.reserve(total);
  }

  void collective(std::size_t c) {
    c_ = c;
    if (!binned_) return;
    const std::size_t n = static_cast<std::size_t>(K_) * 2 * grid_.bins;
    cells_.assign(n, Cell{});
    whole_.assign(n, Cell{});
  }

  void op(const RetiredOp& r) {
    const Op& op = *r.op;
    const std::vector<int>& ranks = *spans_[c_].ranks;
    if (!binned_) {
      out_.push_back(TraceTransfer{r.start, r.end, ranks[op.src_rank], ranks[op.dst_rank], op.step,
                                   r.bytes, op.kind, c_, id_++});
      return;
    }
    const int bins = grid_.bins;
    const double width = grid_.width;
    const Time first = grid_.first, start = r.start, end = r.end;
    const std::int64_t bytes = r.bytes;
    const int src = ranks[op.src_rank], dst = ranks[op.dst_rank];
    const int b0 = std::min(bins - 1, static_cast<int>((start - first) / width));
    const int b1 = std::min(bins - 1, static_cast<int>((end - first) / width));
    const double span = static_cast<double>(end - start);
    for (int side = 0; side < 2; ++side) {
      const int row = (side ? dst : src) * 2 + side;
      auto edge = [&](int b) {
        const double lo = std::max<double>(start - first, b * width);
        const double hi = std::min<double>(end - first, (b + 1) * width);
        Cell& cell = cells_[at(row, b)];
        cell.busy += hi - lo;
        cell.moved += span > 0 ? bytes * (hi - lo) / span : bytes;
        ++cell.touched;
      };
      edge(b0);
      if (b1 == b0) continue;
      edge(b1);
      if (b1 == b0 + 1) continue;
      Cell &from = whole_[at(row, b0 + 1)], &to = whole_[at(row, b1)];
      from.busy += width;
      to.busy -= width;
      from.moved += bytes * width / span;
      to.moved -= bytes * width / span;
      ++from.touched;
      --to.touched;
    }
  }

  // A binned collective's bins that any transfer touched.
  void collective_done() {
    if (!binned_) return;
    const int bins = grid_.bins;
    const double width = grid_.width;
    const Time first = grid_.first, own_first = spans_[c_].first, own_last = spans_[c_].last;
    double run_busy = 0, run_moved = 0;
    // The bytes of a rank's side so far, exact and as the bins before printed them: each bin
    // prints what rounding the sum adds, so the bins add up to the bytes moved.
    double moved_so_far = 0;
    std::int64_t printed_so_far = 0;
    std::int64_t run_touched = 0;
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      const int b = static_cast<int>(i % bins), row = static_cast<int>(i / bins);
      const std::size_t here = at(row, b);
      if (b == 0) {  // a new rank and side
        run_busy = run_moved = moved_so_far = 0;
        run_touched = printed_so_far = 0;
      }
      run_busy += whole_[here].busy;
      run_moved += whole_[here].moved;
      run_touched += whole_[here].touched;
      const std::int64_t transfers = cells_[here].touched + run_touched;
      if (transfers == 0) continue;
      moved_so_far += cells_[here].moved + run_moved;
      TraceTransfer c{};
      c.src = c.dst = row / 2;
      c.side = row % 2;
      c.collective = c_;
      // The bin, clipped to the collective's span: collectives that run one after another
      // do not overlap on a track.
      c.start = std::max(own_first, first + static_cast<Time>(b * width));
      c.end = std::min(own_last, first + static_cast<Time>((b + 1) * width));
      if (c.end <= c.start) c.end = c.start + 1;
      c.bytes = std::llround(moved_so_far) - printed_so_far;
      printed_so_far += c.bytes;
      c.transfers = static_cast<int>(transfers);
      c.busy = std::min(1.0, (cells_[here].busy + run_busy) / static_cast<double>(c.end - c.start));
      out_.push_back(c);
    }
  }

  std::vector<TraceTransfer> take() {
    std::stable_sort(out_.begin(), out_.end(), [](const TraceTransfer& a, const TraceTransfer& b) {
      return a.start < b.start;
    });
    return std::move(out_);
  }

  const int K_;
  const std::vector<TimelineSpan> spans_;
  bool binned_ = false;
  BinGrid grid_;
  std::size_t c_ = 0;
  std::uint64_t id_ = 0;  // every op's number, across collectives
  std::vector<TraceTransfer> out_;
  // A binned collective's sums per (rank, side, bin), together (one cache line, not
  // three); whole_: differences per whole bin.
  struct Cell {
    double busy = 0, moved = 0;
    std::int64_t touched = 0;
  };
  std::vector<Cell> cells_, whole_;
  // A (rank and side, bin)'s cell: bin-major, so that one step's transfers (one bin, ranks
  // in order) touch neighbouring cells, not a line each.
  std::size_t at(int row, int b) const {
    return static_cast<std::size_t>(b) * (2 * static_cast<std::size_t>(K_)) + row;
  }
};

TraceGather::TraceGather(int K, std::size_t max_transfers, std::vector<TimelineSpan> spans)
    : state_(std::make_unique<State>(K, max_transfers, std::move(spans))) {}
TraceGather::~TraceGather() = default;
void TraceGather::collective(std::size_t c, const Schedule*) {
  state_->collective(c);
}
void TraceGather::op(const RetiredOp& op) {
  state_->op(op);
}
void TraceGather::collective_done() {
  state_->collective_done();
}
std::vector<TraceTransfer> TraceGather::take() {
  return state_->take();
}

namespace {

// The trace's threads: per rank, its send lanes then its receive lanes, ranks in order;
// each transfer on a lane of its sender and one of its receiver where it does not overlap
// another.
struct TimelineThreads {
  TraceLanes send_lanes, recv_lanes;
  std::vector<std::pair<int, int>> lane_of;  // per transfer: (send lane, receive lane)
  std::vector<int> first_tid;                // per rank, and one past the last

  TimelineThreads(std::span<const TraceTransfer> transfers, int K)
      : send_lanes(K), recv_lanes(K), lane_of(transfers.size()), first_tid(K + 1, 0) {
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      const TraceTransfer& x = transfers[i];
      lane_of[i] = {x.side != 1 ? send_lanes.place(x.src, x.start, x.end) : -1,
                    x.side != 0 ? recv_lanes.place(x.dst, x.start, x.end) : -1};
    }
    for (int rank = 0; rank < K; ++rank)
      first_tid[rank + 1] = first_tid[rank] + sends(rank) + recv_lanes.count(rank);
  }
  int sends(int rank) const { return std::max(1, send_lanes.count(rank)); }
  int send_tid(std::size_t i, int rank) const { return first_tid[rank] + lane_of[i].first; }
  int recv_tid(std::size_t i, int rank) const {
    return first_tid[rank] + sends(rank) + lane_of[i].second;
  }
};

// Formats a name into one reused buffer: no allocation per event.
class NameBuffer {
 public:
  template <class... Args>
  std::string_view operator()(fmt::format_string<Args...> format, Args&&... args) {
    name_.clear();
    fmt::format_to(std::back_inserter(name_), format, std::forward<Args>(args)...);
    return {name_.data(), name_.size()};
  }

 private:
  fmt::memory_buffer name_;
};

void write_thread_names(ChromeTrace& trace, const Topology& topology,
                        const TimelineThreads& threads, NameBuffer& named) {
  for (int rank = 0; rank < topology.num_ranks(); ++rank) {
    const std::string& gpu = topology.node(topology.gpu_of_rank(rank)).name;
    const int sends = threads.sends(rank);
    for (int lane = 0; lane < sends + threads.recv_lanes.count(rank); ++lane) {
      const bool recv = lane >= sends;
      const int n = recv ? lane - sends : lane;
      const int tid = threads.first_tid[rank] + lane;
      if (n)
        trace.thread_name(0, tid,
                          named("rank {} ({}) {} {}", rank, gpu, recv ? "recv" : "send", n + 1));
      else
        trace.thread_name(0, tid, named("rank {} ({}) {}", rank, gpu, recv ? "recv" : "send"));
      trace.thread_sort_index(0, tid, tid);
    }
  }
}

// One transfer: a slice on its sender's lane and one on its receiver's, with an arrow
// between them; or one time bin of a rank's sends or receives.
void write_transfer(ChromeTrace& trace, const TraceTransfer& x, int send_tid, int recv_tid,
                    std::string_view collective, NameBuffer& named) {
  const double ts = x.start / 1e6, dur = (x.end - x.start) / 1e6;
  if (x.side >= 0) {
    trace
        .complete(
            0, x.side ? recv_tid : send_tid, ts, dur,
            named("{}: {} {:.0f}%", collective, x.side ? "receiving" : "sending", x.busy * 100),
            collective)
        .arg("collective", collective)
        .arg("busy", x.busy, "{:.4f}")
        .arg("bytes", x.bytes)
        .arg("transfers", x.transfers);
    return;
  }
  for (int side = 0; side < 2; ++side)
    trace
        .complete(0, side ? recv_tid : send_tid, ts, dur,
                  named("{} {}\u2192{}", op_kind_name(x.kind), x.src, x.dst), collective)
        .arg("collective", collective)
        .arg("step", x.step)
        .arg("bytes", x.bytes)
        .arg("src_rank", x.src)
        .arg("dst_rank", x.dst);
  if (x.src != x.dst && x.end > x.start) {
    // An arrow from the send slice to the receive slice. Flow events bind to the
    // slice with the same pid, tid, ts and cat (Chrome's rule), or to the slice
    // enclosing them ("bp": "e", the Trace Event Format's): both hold here.
    trace.flow_start(0, send_tid, ts, x.id, collective, "transfer");
    trace.flow_end(0, recv_tid, ts, x.id, collective, "transfer");
  }
}

// Counter tracks: each busy link's utilisation per time bin.
void write_link_counters(ChromeTrace& trace, const Topology& topology,
                         const TrafficReport& traffic) {
  for (LinkId l = 0; l < static_cast<LinkId>(traffic.links.size()); ++l) {
    const LinkTraffic& lt = traffic.links[l];
    if (lt.bytes == 0 || lt.bins.empty()) continue;
    const std::string link = "link " + topology.link_label(l);
    for (int k = 0; k <= traffic.bins; ++k)
      trace.counter(1, k * traffic.bin_s * 1e6, link)
          .arg("utilisation", k < traffic.bins ? lt.bins[k] : 0.0, "{:.4g}");
  }
}

// A track of the collectives as the run reports them, each from its start to its end (its
// ops may begin later, after its launch, and end sooner, where NCCL's estimate or the host's
// issue held it): a slice each, on as few lanes as keep overlapping ones apart, and in it
// the time it was held past its ops.
void write_collective_spans(ChromeTrace& trace, const ScenarioResult& r, NameBuffer& named) {
  constexpr int kPid = 2;
  trace.process_name(kPid, "collectives (as reported)");
  std::vector<double> lane_end;  // per lane: when its last collective ends
  for (std::size_t c = 0; c < r.outcomes.size(); ++c) {
    const CollectiveOutcome& o = r.outcomes[c];
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > o.start_s) ++lane;
    if (lane == lane_end.size()) {
      lane_end.push_back(0);
      trace.thread_name(kPid, static_cast<int>(lane), named("lane {}", lane + 1));
    }
    lane_end[lane] = o.end_s;
    const std::string_view name = r.resolved[c].name;
    trace
        .complete(kPid, static_cast<int>(lane), o.start_s * 1e6, o.time_s * 1e6, name, "collective")
        .arg("plan", r.labels[c])
        .arg("time_s", o.time_s, "{:.12g}")
        .arg("ops_time_s", o.ops_time_s, "{:.12g}");
    if (o.held_by != HeldBy::Nothing && o.time_s > o.ops_time_s)
      trace
          .complete(kPid, static_cast<int>(lane), (o.start_s + o.ops_time_s) * 1e6,
                    (o.time_s - o.ops_time_s) * 1e6, named("held: {}", name_of(o.held_by)),
                    "collective")
          .arg("collective", name);
  }
}

}  // namespace

void write_transfer_timeline(std::ostream& out, const Topology& topology,
                             std::span<const std::string_view> names,
                             std::span<const TraceTransfer> transfers, const TrafficReport* traffic,
                             const ScenarioResult* result) {
  const int K = topology.num_ranks();
  const TimelineThreads threads(transfers, K);
  // Timestamps are microseconds; printed with 6 decimals they keep every picosecond.
  ChromeTrace trace(out);
  trace.process_name(0, "ranks");
  if (traffic) trace.process_name(1, "link utilisation");
  NameBuffer named;
  write_thread_names(trace, topology, threads, named);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const TraceTransfer& x = transfers[i];
    write_transfer(trace, x, threads.send_tid(i, x.src), threads.recv_tid(i, x.dst),
                   names[x.collective], named);
  }
  if (traffic) write_link_counters(trace, topology, *traffic);
  if (result) write_collective_spans(trace, *result, named);
  trace.finish();
}

void write_chrome_trace(std::ostream& out, const Scenario& s, const ScenarioResult& r,
                        const TrafficReport& traffic, std::span<const TraceTransfer> transfers) {
  std::vector<std::string_view> names;
  for (const CollectiveSpec& c : r.resolved) names.push_back(c.name);
  write_transfer_timeline(out, s.topology, names, transfers, &traffic, &r);
}

void write_transfer_timeline(std::ostream& out, const Topology& topology,
                             std::span<const TimelineCollective> collectives,
                             const TrafficReport* traffic, std::size_t max_transfers) {
  std::vector<TimelineSpan> spans;
  std::vector<std::string_view> names;
  for (const TimelineCollective& tc : collectives) {
    TimelineSpan s{.ops = tc.ops.size(), .ranks = tc.ranks};
    for (const OpTiming& o : tc.ops)
      s.first = std::min(s.first, o.start), s.last = std::max(s.last, o.end);
    spans.push_back(s);
    names.push_back(tc.name);
  }
  TraceGather gather(topology.num_ranks(), max_transfers, std::move(spans));
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    const TimelineCollective& tc = collectives[c];
    gather.collective(c, tc.schedule);
    for (OpId id = 0; id < tc.ops.size(); ++id) {
      RetiredOp r;
      r.id = id;
      r.op = &tc.schedule->ops[id];
      r.bytes = tc.schedule->bytes(*r.op);
      r.start = tc.ops[id].start;
      r.end = tc.ops[id].end;
      gather.op(r);
    }
    gather.collective_done();
  }
  const std::vector<TraceTransfer> transfers = gather.take();
  write_transfer_timeline(out, topology, names, transfers, traffic);
}

}  // namespace collsim
