#pragma once
// timeline.json: a Chrome/Perfetto trace of a run's transfers, gathered as its ops go by
// (simulate/op_sink.h) or from measured timings. Per rank, send and receive tracks with
// one slice per transfer at each end, an arrow from sender to receiver, and a counter
// track per busy link with its utilisation over time. Beyond `max_transfers` (what a
// viewer still opens: a transfer takes about 600 bytes of JSON) each rank's send and
// receive tracks hold time bins instead (max_transfers / 2K of them), each saying how
// busy the rank was, the bytes it moved and the transfers it touched.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/op_sink.h"
#include "simulate/run_scenario.h"

namespace collsim {

constexpr std::size_t kTraceTransfers = 200'000;

// One transfer, or (binned) a rank's sends or receives within one time bin.
struct TraceTransfer {
  Time start, end;
  int src, dst, step;
  std::int64_t bytes;
  OpKind kind;  // a copy, a reduce, or a switch's (NVLS, SHARP): named so on its slices
  std::size_t collective;
  std::uint64_t id;
  int side = -1;      // -1: a transfer, both ends; 0 / 1: a bin of the sender's / receiver's
  int transfers = 0;  // in a bin: transfers that overlap it
  double busy = 0;    // in a bin: the fraction of it spent in transfers (summed, at most 1)
};

// What the gathering must know of each collective before its ops come: when its first op
// began and its last ended (first = kTimeNever: it has none), its ops, and the topology
// ranks its schedule's ranks run on.
struct TimelineSpan {
  Time first = kTimeNever, last = 0;
  std::uint64_t ops = 0;
  const std::vector<int>* ranks = nullptr;
};
// A simulated run's spans, from its tasks' timings (TaskTiming::ops_start, ops_end).
std::vector<TimelineSpan> timeline_spans(const ScenarioResult& r);

// The timeline's transfers (or bins), from the ops as they go by.
class TraceGather final : public OpSink {
 public:
  TraceGather(int K, std::size_t max_transfers, std::vector<TimelineSpan> spans);
  ~TraceGather();
  void collective(std::size_t c, const Schedule* whole) override;
  void op(const RetiredOp& op) override;
  void collective_done() override;
  std::vector<TraceTransfer> take();  // in order of start

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The trace of gathered transfers, `names` by collective; link counter tracks when
// `traffic` is given, and a track of the collectives as the run reports them (each from its
// start to its end, what held it past its ops in it) when `result` is.
void write_transfer_timeline(std::ostream& out, const Topology& topology,
                             std::span<const std::string_view> names,
                             std::span<const TraceTransfer> transfers, const TrafficReport* traffic,
                             const ScenarioResult* result = nullptr);

// A simulated run's trace, its transfers gathered from its ops.
void write_chrome_trace(std::ostream& out, const Scenario& scenario, const ScenarioResult& result,
                        const TrafficReport& traffic, std::span<const TraceTransfer> transfers);

// The same from any timings (measured ones): one collective's ops' times (absolute, one
// per schedule op) and the topology ranks its schedule's ranks run on.
struct TimelineCollective {
  std::string_view name;
  const std::vector<int>* ranks = nullptr;
  const Schedule* schedule = nullptr;
  std::span<const OpTiming> ops;
};
void write_transfer_timeline(std::ostream& out, const Topology& topology,
                             std::span<const TimelineCollective> collectives,
                             const TrafficReport* traffic,
                             std::size_t max_transfers = kTraceTransfers);

}  // namespace collsim
