#pragma once
// What each directed link carried during a run.
#include <cstdint>
#include <vector>

#include "core/time.h"
#include "topology/topology.h"

namespace collsim {

struct LinkCounters {
  std::vector<std::int64_t> bytes;      // payload bytes that crossed the link
  std::vector<Time> busy;               // time with at least one transfer in flight on it
  std::vector<Time> busy_until;         // add(): end of the latest interval seen so far
  std::vector<std::int32_t> in_flight;  // enter()/leave(): transfers on the link now
  std::vector<std::int32_t> peak_in_flight;
  std::vector<Time> busy_since;

  void resize(std::size_t links) {
    bytes.assign(links, 0);
    busy.assign(links, 0);
    busy_until.assign(links, 0);
    in_flight.assign(links, 0);
    peak_in_flight.assign(links, 0);
    busy_since.assign(links, 0);
  }
  // For models that see transfers come and go (flow, packet): exact busy time and
  // the most transfers sharing the link at once.
  void enter(LinkId link, std::int64_t n, Time now) {
    bytes[link] += n;
    if (in_flight[link]++ == 0) busy_since[link] = now;
    if (in_flight[link] > peak_in_flight[link]) peak_in_flight[link] = in_flight[link];
  }
  void leave(LinkId link, Time now) {
    if (--in_flight[link] == 0) busy[link] += now - busy_since[link];
  }
  // For models that know a transfer's whole interval when it starts (ideal).
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
