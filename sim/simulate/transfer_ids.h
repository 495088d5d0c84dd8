#pragma once
// Names a transfer (task, op, switch-op leg) in one 64-bit word, the id the network
// model hands back when the transfer ends. The top 8 bits are the leg. Op ids are
// 64-bit, so no fixed split of the low 56 bits between task and op would hold both a
// 100k-rank schedule and a workload of millions of tasks: the split is chosen per run,
// as many bits for the op as the largest task needs and the rest for the task, and
// decoding is a shift and a mask. Where the two do not fit in 56 bits together, the low
// bits are the op's index among every task's ops laid end to end (task t's ops start
// at base[t]; 2^56 ops in all), decoded by a binary search over the tasks. Either way
// ids order as (leg, task, op) do, so whatever a model orders by id is the same.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "network/network_model.h"
#include "schedule/schedule.h"

namespace collsim {

class TransferIds {
 public:
  static constexpr int kLegBits = 8;
  static constexpr int kMaxLegs = 1 << kLegBits;
  static_assert(kMaxLegs == kMaxSwitchLegs);
  static constexpr std::uint64_t kOpMask = (std::uint64_t{1} << (64 - kLegBits)) - 1;

  struct Decoded {
    std::size_t task;
    OpId op;
    int leg;
  };

  // Lays the tasks' ops end to end; throws std::length_error past 2^56 ops in all.
  void assign(std::span<const std::size_t> ops_per_task) {
    std::uint64_t total = 0, most = 0;
    for (std::size_t n : ops_per_task) {
      if (n > kOpMask - total) throw std::length_error("the tasks have more than 2^56 ops in all");
      total += n;
      most = std::max<std::uint64_t>(most, n);
    }
    op_bits_ = std::bit_width(most);  // op ids below `most`: most - 1 needs at most this
    const int task_bits = std::bit_width(ops_per_task.size());
    split_ = op_bits_ + task_bits <= 64 - kLegBits;
    std::vector<std::uint64_t>().swap(base_);
    if (split_) return;  // the split says all: no table of bases
    base_.reserve(ops_per_task.size() + 1);
    base_.push_back(0);
    for (std::size_t n : ops_per_task) base_.push_back(base_.back() + n);
  }
  TransferId id(std::size_t task, OpId op, int leg = 0) const {
    const std::uint64_t low =
        split_ ? (static_cast<std::uint64_t>(task) << op_bits_) | op : base_[task] + op;
    return (static_cast<TransferId>(leg) << (64 - kLegBits)) | low;
  }
  Decoded decode(TransferId id) const {
    const std::uint64_t global = id & kOpMask;
    const int leg = static_cast<int>(id >> (64 - kLegBits));
    if (split_)
      return {static_cast<std::size_t>(global >> op_bits_),
              global & ((std::uint64_t{1} << op_bits_) - 1), leg};
    // The last task starting at or before `global` (tasks without ops share a base).
    const auto first = base_.begin() + 1, last = base_.end() - 1;
    const std::size_t task =
        static_cast<std::size_t>(std::upper_bound(first, last, global) - first);
    return {task, global - base_[task], leg};
  }

 private:
  bool split_ = true;  // task and op each in bits of their own; else base_
  int op_bits_ = 0;
  std::vector<std::uint64_t> base_{0};  // base_[t]: task t's first global index; then the total
};

}  // namespace collsim
