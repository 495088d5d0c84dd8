#pragma once
// What the machine can still give, and what this process holds: for the commands that
// would otherwise run out of memory part-way (the kernel kills such a process with no
// word) to say so up front, or as they grow.
#include <cstdint>

namespace collsim {

// MemAvailable (/proc/meminfo), in bytes; 0 where it cannot be read.
std::uint64_t memory_available();
// This process's resident set (/proc/self/statm), in bytes; 0 where it cannot be read.
std::uint64_t resident_bytes();

// A run that grows as it goes (a streamed all-to-all routes each of its K^2 pairs once and
// keeps the route): its budget is what it holds when made and 90% of what the machine has
// left; over() says whether it holds more now. No budget where /proc cannot be read.
class MemoryBudget {
 public:
  MemoryBudget();
  bool over() const;
  std::uint64_t budget() const { return budget_; }

 private:
  std::uint64_t budget_ = 0;
};

}  // namespace collsim
