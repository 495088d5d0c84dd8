#pragma once
// A run's ops handed, as they retire, to whatever reports on them (report/op_reports.h):
// each collective's in id order, with when each ran and the links it took. The stored
// run hands over its per-op record after the run; the streamed run hands each op over
// once it and every op before it are done (the oldest end of its window), so per-op
// reports need no per-op record at any scale, and both read the ops in one order (sums
// of doubles come out the same, bit for bit).
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/time.h"
#include "network/network_model.h"
#include "schedule/schedule.h"
#include "topology/topology.h"

namespace collsim {

struct RetiredOp {
  OpId id = 0;
  const Op* op = nullptr;
  std::int64_t bytes = 0;
  Time start = -1, end = -1;      // -1: a run without per-op times (SimulationOptions::record_ops)
  std::span<const LinkId> route;  // a transfer's links; empty for local and switch ops
  // Every op of the collective still to come starts at or after this (a reader may close
  // what ends before it); 0 where the source cannot say.
  Time settled = 0;
};

class OpSink {
 public:
  // The ops that follow are collective c's (the plan's index); `whole` is its schedule
  // where it is held whole (switch ops need its groups), null where it is streamed.
  virtual void collective(std::size_t c, const Schedule* whole) = 0;
  virtual void op(const RetiredOp& op) = 0;
  virtual void collective_done() = 0;
  // Where the run hands each link's rate over time as it goes (network/link_rates.h), one
  // rate for the whole run, instead of keeping every point: null, kept.
  virtual RateListener* rates() { return nullptr; }

 protected:
  ~OpSink() = default;
};

// Forwards to another sink with every time `offset` later: a collective simulated from
// time 0 that ran from `offset` in the scenario; its links' rates to `rates` (which shifts
// them itself), where given.
class ShiftedSink final : public OpSink {
 public:
  ShiftedSink(OpSink& to, Time offset, RateListener* rates = nullptr)
      : to_(to), offset_(offset), rates_(rates) {}
  RateListener* rates() override { return rates_; }
  void collective(std::size_t c, const Schedule* whole) override { to_.collective(c, whole); }
  void op(const RetiredOp& op) override {
    RetiredOp shifted = op;
    if (op.start >= 0) shifted.start += offset_, shifted.end += offset_;
    shifted.settled += offset_;
    to_.op(shifted);
  }
  void collective_done() override { to_.collective_done(); }

 private:
  OpSink& to_;
  Time offset_;
  RateListener* rates_;
};

}  // namespace collsim
