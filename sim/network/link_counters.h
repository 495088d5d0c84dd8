#pragma once
// What each directed link carried during a run.
#include <cstdint>
#include <vector>

#include "core/time.h"
#include "topology/topology.h"

namespace collsim {

struct LinkCounters {
  std::vector<std::int64_t> bytes;  // payload bytes that crossed the link
  std::vector<Time> busy;           // time with at least one transfer in flight on it
  std::vector<Time> busy_until;     // end of the latest such interval seen so far

  void resize(std::size_t links) {
    bytes.assign(links, 0);
    busy.assign(links, 0);
    busy_until.assign(links, 0);
  }
  // Intervals arrive in order of their start time (simulated time never goes
  // back), so the union is the running sum of the parts beyond busy_until.
  void add(LinkId link, std::int64_t n, Time from, Time to) {
    bytes[link] += n;
    const Time begin = from > busy_until[link] ? from : busy_until[link];
    if (to > begin) busy[link] += to - begin;
    if (to > busy_until[link]) busy_until[link] = to;
  }
};

}  // namespace collsim
