#pragma once
// Slices on one Chrome-trace thread must nest, but a rank's work overlaps (transfers,
// collectives on different streams): each rank gets as many lanes (threads) as it has
// intervals in flight at once, and each interval the first lane free when it starts.
#include <cstddef>
#include <vector>

#include "core/time.h"

namespace collsim {

class TraceLanes {
 public:
  explicit TraceLanes(int ranks) : free_at_(ranks) {}
  // The lane index for an interval [start, end) of `rank`; intervals must come in start order.
  int place(int rank, Time start, Time end) {
    auto& lanes = free_at_[rank];
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i] <= start) {
        lanes[i] = end;
        return static_cast<int>(i);
      }
    lanes.push_back(end);
    return static_cast<int>(lanes.size() - 1);
  }
  int count(int rank) const { return static_cast<int>(free_at_[rank].size()); }

 private:
  std::vector<std::vector<Time>> free_at_;
};

}  // namespace collsim
