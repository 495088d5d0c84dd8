#pragma once
// What the cost model charges one op of a collective: shared by the stored simulator
// and the streamed one, so both time an op alike.
#include <algorithm>
#include <cstdint>
#include <span>

#include "network/cost_model.h"
#include "schedule/schedule.h"

namespace collsim {

// What held a collective past its last op (OpCosts::least_duration), if anything.
enum class HeldBy : std::uint8_t { Nothing, NcclModel, HostIssue };

// What held a collective that ran from `start` to `end`, its last op ending at `ops_end`,
// under `cost`: a least duration, when it outlasted the ops by more than 1% (NCCL's
// estimate also counts a few bytes' worth of its bandwidth term where the links took its
// latency alone).
inline HeldBy held_by(const CostModel* cost, Time start, Time ops_end, Time end) {
  if (!cost || to_seconds(end - ops_end) <= 0.01 * to_seconds(ops_end - start))
    return HeldBy::Nothing;
  return cost->nccl_floor >= cost->host_issue ? HeldBy::NcclModel : HeldBy::HostIssue;
}

class OpCosts {
 public:
  OpCosts() = default;  // plain α-β: every term free (the fast path)
  OpCosts(const CostModel* model, const CollectiveShape& shape) {
    if (!model || model->trivial()) return;
    model_ = model;
    reduce_ = model->reduce_rate(name_of(shape.dtype), name_of(shape.reduce_op));
    reduce_memory_ = model->memory_for_reduce(name_of(shape.dtype), name_of(shape.reduce_op));
  }

  bool any() const { return model_ != nullptr; }
  Time launch() const { return model_ ? model_->launch : 0; }
  // The least a collective lasts: the host's time to issue it, NCCL's own estimate.
  Time least_duration() const {
    return model_ ? std::max(model_->host_issue, model_->nccl_floor) : 0;
  }
  bool has_overhead() const { return model_ && model_->op_overhead > 0; }

  // The rank that completes an op (the receiver: it waits, wakes and reduces) handles
  // one op's overhead at a time, so a step's ops on one rank queue behind each other.
  // `busy_until` is that rank's queue; returns when this op, ready now, may begin.
  Time overhead_paid(Time& busy_until, Time now) const {
    busy_until = add_time(std::max(busy_until, now), model_->op_overhead);
    return busy_until;
  }

  // An op that never leaves its rank.
  Time local_time(const Op& op, std::int64_t bytes) const {
    return model_ ? local_op_time(*model_, bytes, reduce_of(op)) : 0;
  }

  // An op over `route`; a switch op's legs pass no reduction (the switch reduces).
  TransferCost transfer(const Topology& topology, std::span<const LinkId> route, const Op& op,
                        std::int64_t bytes) const {
    if (!model_) return {};
    const bool reduces = op.kind == OpKind::Reduce;
    return transfer_cost(*model_, topology, route, bytes, reduces ? reduce_ : nullptr,
                         reduces ? reduce_memory_ : nullptr);
  }

 private:
  const SizeCurve* reduce_of(const Op& op) const {
    return op.kind == OpKind::Reduce ? reduce_ : nullptr;
  }

  const CostModel* model_ = nullptr;
  const SizeCurve* reduce_ = nullptr;         // the pace of this collective's reductions
  const SizeCurve* reduce_memory_ = nullptr;  // the host memory as they see it
};

}  // namespace collsim
