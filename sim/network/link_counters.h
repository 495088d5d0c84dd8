#pragma once
// What each directed link carried during a run.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/time.h"
#include "topology/topology.h"

namespace collsim {

struct LinkCounters {
  std::vector<std::int64_t> bytes;      // payload bytes that crossed the link
  std::vector<Time> busy;               // time with at least one transfer in flight on it
  std::vector<Time> busy_until;         // add(): end of the latest interval seen so far
  std::vector<std::int32_t> in_flight;  // enter()/leave(): transfers on the link now
  // The most transfers on the link at the end of an instant: one ending and one starting
  // at the same instant do not overlap, whichever order that instant's events ran in.
  std::vector<std::int32_t> peak_in_flight;
  std::vector<Time> busy_since;
  std::vector<Time> changed_at;         // enter()/leave(): the instant in_flight last changed
  // add(): the ends of the intervals in flight. Mostly one at a time (a ring's link
  // carries one transfer after another), kept in a flat slot; a min-heap per link
  // only while several overlap. The heaps live apart, so touching one is a cache
  // miss the flat slot avoids.
  static constexpr Time kNoEnd = -1, kInHeap = -2;
  std::vector<Time> only_end;           // the one interval's end; kNoEnd, or kInHeap
  std::vector<std::vector<Time>> ends;  // min-heaps, while more than one is in flight

  void resize(std::size_t links) {
    bytes.assign(links, 0);
    busy.assign(links, 0);
    busy_until.assign(links, 0);
    in_flight.assign(links, 0);
    peak_in_flight.assign(links, 0);
    busy_since.assign(links, 0);
    changed_at.assign(links, -1);
    only_end.assign(links, kNoEnd);
    ends.assign(links, {});
  }
  // Link `to` carried what `from` did, interval for interval (a folded run's orbit of
  // links, simulate/symmetric.h).
  void copy_link(LinkId from, LinkId to) {
    bytes[to] = bytes[from];
    busy[to] = busy[from];
    busy_until[to] = busy_until[from];
    in_flight[to] = in_flight[from];
    peak_in_flight[to] = peak_in_flight[from];
    busy_since[to] = busy_since[from];
    changed_at[to] = changed_at[from];
    only_end[to] = only_end[from];
    ends[to] = ends[from];
  }
  // For models that see transfers come and go (flow, packet): exact busy time and
  // the most transfers sharing the link at once.
  void enter(LinkId link, std::int64_t n, Time now) {
    bytes[link] += n;
    settle(link, now);
    if (in_flight[link]++ == 0) busy_since[link] = now;
  }
  void leave(LinkId link, Time now) {
    settle(link, now);
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
    if (to <= from) return;  // ends as it starts: overlaps nothing
    // In flight now: the earlier intervals that end after `from`, and this one.
    Time& only = only_end[link];
    if (only >= 0 && only <= from) only = kNoEnd;  // the one in flight has ended
    if (only == kInHeap) {
      auto& heap = ends[link];
      while (!heap.empty() && heap.front() <= from) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>());
        heap.pop_back();
      }
      if (!heap.empty()) return push_end(link, to);
      only = kNoEnd;
    }
    if (only == kNoEnd) {
      only = to;
      peak_in_flight[link] = std::max(peak_in_flight[link], std::int32_t{1});
      return;
    }
    ends[link].assign(1, only);  // a second one overlaps the one in flight: a heap of both
    only = kInHeap;
    push_end(link, to);
  }

 private:
  void push_end(LinkId link, Time to) {
    auto& heap = ends[link];
    heap.push_back(to);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
    peak_in_flight[link] = std::max(peak_in_flight[link], static_cast<std::int32_t>(heap.size()));
  }

  // Before the first change of a new instant, the count the last instant left counts
  // towards the peak. After a run every transfer has left, so no count is missed.
  void settle(LinkId link, Time now) {
    if (changed_at[link] == now) return;
    peak_in_flight[link] = std::max(peak_in_flight[link], in_flight[link]);
    changed_at[link] = now;
  }
};

}  // namespace collsim
