#include "core/memory.h"

#include <unistd.h>

#include <fstream>
#include <limits>
#include <string>

namespace collsim {

std::uint64_t memory_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {  // "MemAvailable:   123456 kB"
    if (key == "MemAvailable:") return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

std::uint64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t total = 0, resident = 0;
  if (!(in >> total >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

MemoryBudget::MemoryBudget() {
  const std::uint64_t available = memory_available();
  if (available > 0) budget_ = resident_bytes() + available / 10 * 9;
}

bool MemoryBudget::over() const {
  return budget_ > 0 && resident_bytes() > budget_;
}

}  // namespace collsim
