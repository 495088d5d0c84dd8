#pragma once
// Names a transfer (task, op, switch-op leg) in one 64-bit word, the id the network
// model hands back when the transfer ends. The low 56 bits are the op's index among
// every task's ops laid end to end (task t's ops start at base[t]); the top 8 bits
// are the leg. Op ids are 64-bit, so no fixed split of the word between task and op
// would hold both a 100k-rank schedule and a workload of many tasks; a running total
// holds 2^56 ops in all. Decoding is one binary search over the tasks (none for one).
#include <algorithm>
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
  static constexpr std::uint64_t kOpMask = (std::uint64_t{1} << (64 - kLegBits)) - 1;

  struct Decoded {
    std::size_t task;
    OpId op;
    int leg;
  };

  // Lays the tasks' ops end to end; throws std::length_error past 2^56 ops in all.
  void assign(std::span<const std::size_t> ops_per_task) {
    base_.assign(1, 0);
    for (std::size_t n : ops_per_task) {
      if (n > kOpMask - base_.back())
        throw std::length_error("the tasks have more than 2^56 ops in all");
      base_.push_back(base_.back() + n);
    }
  }
  TransferId id(std::size_t task, OpId op, int leg = 0) const {
    return (static_cast<TransferId>(leg) << (64 - kLegBits)) | (base_[task] + op);
  }
  Decoded decode(TransferId id) const {
    const std::uint64_t global = id & kOpMask;
    // The last task starting at or before `global` (tasks without ops share a base).
    const auto first = base_.begin() + 1, last = base_.end() - 1;
    const std::size_t task =
        static_cast<std::size_t>(std::upper_bound(first, last, global) - first);
    return {task, global - base_[task], static_cast<int>(id >> (64 - kLegBits))};
  }

 private:
  std::vector<std::uint64_t> base_{0};  // base_[t]: task t's first global index; then the total
};

}  // namespace collsim
