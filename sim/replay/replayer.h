#pragma once
// Executes a Schedule on real buffers, to prove it computes the collective it
// claims before anything is timed.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "core/interrupt.h"
#include "replay/values.h"
#include "schedule/layout.h"
#include "schedule/schedule.h"

namespace collsim {

template <class T>
class Buffers {
 public:
  explicit Buffers(const Schedule& s) : ranks_(s.shape.ranks), per_rank_(s.num_buffers) {
    data_.resize(s.buffer_counts.size());
    for (std::size_t i = 0; i < data_.size(); ++i)
      data_[i].resize(static_cast<std::size_t>(s.buffer_counts[i]));
  }
  std::vector<T>& at(int rank, int buffer) {
    return data_[static_cast<std::size_t>(rank) * per_rank_ + buffer];
  }
  const std::vector<T>& at(int rank, int buffer) const {
    return data_[static_cast<std::size_t>(rank) * per_rank_ + buffer];
  }
  int ranks() const { return ranks_; }

 private:
  int ranks_;
  int per_rank_;
  std::vector<std::vector<T>> data_;
};

// Switch ops act on the ranks first, first + stride, ... (n of them) of the issuer's group.
template <class T>
void apply_op(const Op& op, ReduceOp reduce, Buffers<T>& bufs, int first = 0, int n = 0,
              int stride = 1) {
  if (op.kind == OpKind::SwitchReduce || op.kind == OpKind::SwitchAllReduce) {
    // The group's ranks folded in rank order, as expected_element folds all ranks:
    // for one group of every rank, bitwise the reference. Every element is read from all
    // ranks before it is written (the issuer's range may be an input).
    const int last = first + (n - 1) * stride;
    for (std::int64_t i = 0; i < op.count; ++i) {
      T acc = bufs.at(first, op.src_buffer)[op.src_offset + i];
      for (int r = first + stride; r <= last; r += stride)
        acc = combine(reduce, acc, bufs.at(r, op.src_buffer)[op.src_offset + i]);
      if (op.kind == OpKind::SwitchReduce) {
        bufs.at(op.dst_rank, op.dst_buffer)[op.dst_offset + i] = acc;
        continue;
      }
      for (int r = first; r <= last; r += stride)
        bufs.at(r, op.dst_buffer)[op.dst_offset + i] = acc;
    }
    return;
  }
  if (op.kind == OpKind::Multicast) {
    const auto& from = bufs.at(op.src_rank, op.src_buffer);
    for (int j = 0; j < n; ++j) {
      const int r = first + j * stride;
      if (r != op.src_rank || op.src_buffer != op.dst_buffer || op.src_offset != op.dst_offset)
        std::copy_n(from.begin() + op.src_offset, op.count,
                    bufs.at(r, op.dst_buffer).begin() + op.dst_offset);
    }
    return;
  }
  const auto& src = bufs.at(op.src_rank, op.src_buffer);
  auto& dst = bufs.at(op.dst_rank, op.dst_buffer);
  for (std::int64_t i = 0; i < op.count; ++i) {
    const T& from = src[op.src_offset + i];
    T& to = dst[op.dst_offset + i];
    to = op.kind == OpKind::Copy ? from : combine(reduce, to, from);
  }
}

// Ops in step order (a valid dependency order for every builder-made schedule,
// which check_schedule enforces); `after_step(step)` runs once each step is done.
template <class T>
void apply_op(const Schedule& s, const Op& op, Buffers<T>& bufs) {
  if (op.is_switch())
    apply_op(op, s.shape.reduce_op, bufs, s.switch_member(op, 0), s.switch_group_size(op),
             s.switch_groups(Schedule::in_network(op)).stride);
  else
    apply_op(op, s.shape.reduce_op, bufs);
}

// A replay looks for a stop request every this many ops + 1 (a few milliseconds of them).
inline constexpr std::size_t kPollOps = (1 << 12) - 1;

template <class T>
void replay_by_step(const Schedule& s, Buffers<T>& bufs,
                    const std::function<void(int)>& after_step = {}) {
  std::vector<OpId> order(s.size());
  for (OpId i = 0; i < s.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](OpId a, OpId b) { return s.ops[a].step < s.ops[b].step; });
  std::size_t i = 0;
  for (int step = 0; step < s.num_steps; ++step) {
    poll_interrupt();  // Ctrl-C stops a replay of many steps (trace, validate) between them
    for (; i < order.size() && s.ops[order[i]].step == step; ++i) {
      if ((i & kPollOps) == 0) poll_interrupt();
      apply_op(s, s.ops[order[i]], bufs);
    }
    if (after_step) after_step(step);
  }
  finish_average(s, bufs);
}

// Any order that respects the dependencies; with a different seed each time a
// missing dependency (a race) shows up as a different result.
std::vector<OpId> random_dependency_order(const Schedule& s, std::uint64_t seed);

// Averages are sums on the way; each result is divided by K once it is complete
// (what NCCL's ncclAvg does after the last reduction).
template <class T>
T divide_by(const T& v, int k) {
  if constexpr (std::is_same_v<T, Symbol>)
    return v;  // symbolically an average has the same terms
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16::from_float(v.to_float() / static_cast<float>(k));
  else
    return static_cast<T>(v / static_cast<T>(k));
}

template <class T>
void finish_average(const Schedule& s, Buffers<T>& bufs) {
  if (s.shape.reduce_op != ReduceOp::Avg || !is_reducing(s.shape.op)) return;
  for (int r = 0; r < s.shape.ranks; ++r)
    for (const Region& reg : output_regions(s.shape, r))
      for (std::int64_t i = 0; i < reg.count; ++i) {
        T& v = bufs.at(r, reg.buffer)[reg.offset + i];
        v = divide_by(v, s.shape.ranks);
      }
}

template <class T>
void replay_in_order(const Schedule& s, Buffers<T>& bufs, const std::vector<OpId>& order) {
  for (std::size_t i = 0; i < order.size(); ++i) {
    if ((i & kPollOps) == 0) poll_interrupt();
    apply_op(s, s.ops[order[i]], bufs);
  }
  finish_average(s, bufs);
}

// Inputs: `value(rank, element)` for every element of each rank's input regions.
template <class T, class Fn>
void fill_inputs(const Schedule& s, Buffers<T>& bufs, Fn&& value) {
  for (int r = 0; r < s.shape.ranks; ++r)
    for (const Region& reg : input_regions(s.shape, r))
      for (std::int64_t i = 0; i < reg.count; ++i)
        bufs.at(r, reg.buffer)[reg.offset + i] = value(r, reg.offset + i);
}

// What rank `rank`'s output element `index` of `region` must equal, by the
// collective's definition, given the inputs: reductions fold ranks 0..K-1 in order.
template <class T>
T expected_element(const CollectiveShape& s, const Buffers<T>& inputs, int rank,
                   const Region& region, std::int64_t index) {
  const std::int64_t at = region.offset + index;
  auto reduce_all = [&](std::int64_t element) {
    T acc = inputs.at(0, 0)[element];
    for (int r = 1; r < s.ranks; ++r) acc = combine(s.reduce_op, acc, inputs.at(r, 0)[element]);
    return acc;
  };
  switch (s.op) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::Reduce:
      return s.reduce_op == ReduceOp::Avg ? divide_by(reduce_all(at), s.ranks) : reduce_all(at);
    case CollectiveOp::Broadcast:
    case CollectiveOp::Scatter:
      return inputs.at(s.root, 0)[at];
    case CollectiveOp::AllGather:
    case CollectiveOp::Gather: {
      const Partition p{s.count, s.ranks};
      int owner = 0;
      while (owner + 1 < s.ranks && p.begin(owner + 1) <= at) ++owner;
      return inputs.at(owner, 0)[at];
    }
    case CollectiveOp::AllToAll: {
      int src = 0;
      while (src + 1 < s.ranks && a2a_recv_offset(s, src + 1, rank) <= at) ++src;
      return inputs.at(src,
                       0)[a2a_send_offset(s, src, rank) + (at - a2a_recv_offset(s, src, rank))];
    }
    case CollectiveOp::SendRecv:
      return inputs.at((rank + s.ranks - 1) % s.ranks, 0)[at];
    case CollectiveOp::Barrier:
      break;
  }
  return T{};
}

}  // namespace collsim
