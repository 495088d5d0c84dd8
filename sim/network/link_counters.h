#pragma once
// What each directed link carried during a run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/time.h"
#include "topology/topology.h"

namespace collsim {

// Every counter of one link in one cache line: a transfer touches each link of its path
// once, and with the counters in separate arrays that was a cache miss per counter
// (five for an ideal transfer's link) once the links outgrow the cache.
struct alignas(64) LinkCount {
  static constexpr Time kNoEnd = -1, kInHeap = -2;
  std::int64_t bytes = 0;  // payload bytes that crossed the link
  Time busy = 0;           // time with at least one transfer in flight on it
  Time busy_until = 0;     // add(): end of the latest interval seen so far
  // add(): the ends of the intervals in flight. Mostly one at a time (a ring's link
  // carries one transfer after another), kept here; a min-heap per link (LinkCounters::
  // ends) only while several overlap: kInHeap.
  Time only_end = kNoEnd;
  Time busy_since = 0;         // enter()/leave(): when in_flight last rose from 0
  Time changed_at = -1;        // enter()/leave(): the instant in_flight last changed
  std::int32_t in_flight = 0;  // enter()/leave(): transfers on the link now
  // The most transfers on the link at the end of an instant: one ending and one starting
  // at the same instant do not overlap, whichever order that instant's events ran in.
  std::int32_t peak_in_flight = 0;
  // What a reducing switch's legs add to the bytes at its efficiency (bytes / efficiency -
  // bytes, rounded per leg: whole bytes sum alike in any order): the link carries them
  // that much slower (the bottleneck reads it).
  std::int64_t slowed = 0;
};
static_assert(sizeof(LinkCount) == 64, "one link's counters, one cache line");

// What `bytes` moved at `efficiency` of a link's rate add to its bytes, in whole bytes (0 at
// the full rate).
inline std::int64_t slowed_bytes(std::int64_t bytes, double efficiency) {
  return efficiency < 1 ? std::llround(static_cast<double>(bytes) / efficiency) - bytes : 0;
}

// Every link's counters.
class LinkCounters {
 public:
  void resize(std::size_t links) {
    links_.assign(links, LinkCount{});
    ends_.assign(links, {});
  }
  std::size_t size() const { return links_.size(); }
  std::int64_t bytes(std::size_t link) const { return links_[link].bytes; }
  Time busy(std::size_t link) const { return links_[link].busy; }
  std::int32_t peak_in_flight(std::size_t link) const { return links_[link].peak_in_flight; }
  std::int64_t slowed(std::size_t link) const { return links_[link].slowed; }
  void add_slowed(LinkId link, std::int64_t extra) { links_[link].slowed += extra; }
  // Per link, in link order (for comparing two runs whole).
  std::vector<std::int64_t> bytes_per_link() const { return each(&LinkCount::bytes); }
  std::vector<Time> busy_per_link() const { return each(&LinkCount::busy); }
  std::vector<std::int32_t> peak_per_link() const { return each(&LinkCount::peak_in_flight); }

  // Another run's bytes and busy time added to this one's, its peaks joined (runs one
  // after another: their intervals do not overlap).
  void accumulate(const LinkCounters& from) {
    for (std::size_t l = 0; l < links_.size(); ++l) {
      links_[l].bytes += from.links_[l].bytes;
      links_[l].busy += from.links_[l].busy;
      links_[l].slowed += from.links_[l].slowed;
      links_[l].peak_in_flight = std::max(links_[l].peak_in_flight, from.links_[l].peak_in_flight);
    }
  }
  // Link `to` carried what `from` did, interval for interval (a folded run's orbit of
  // links, simulate/symmetric.h).
  void copy_link(LinkId from, LinkId to) {
    links_[to] = links_[from];
    ends_[to] = ends_[from];
  }
  // For models that see transfers come and go (flow, packet): exact busy time and
  // the most transfers sharing the link at once.
  void enter(LinkId link, std::int64_t n, Time now) {
    LinkCount& c = links_[link];
    c.bytes += n;
    settle(c, now);
    if (c.in_flight++ == 0) c.busy_since = now;
  }
  void leave(LinkId link, Time now) {
    LinkCount& c = links_[link];
    settle(c, now);
    if (--c.in_flight == 0) c.busy += now - c.busy_since;
  }
  // For models that know a transfer's whole interval when it starts (ideal).
  // Intervals arrive in order of their start time (simulated time never goes
  // back), so the union is the running sum of the parts beyond busy_until.
  void add(LinkId link, std::int64_t n, Time from, Time to) {
    LinkCount& c = links_[link];
    c.bytes += n;
    const Time begin = from > c.busy_until ? from : c.busy_until;
    if (to > begin) c.busy += to - begin;
    if (to > c.busy_until) c.busy_until = to;
    if (to <= from) return;  // ends as it starts: overlaps nothing
    // In flight now: the earlier intervals that end after `from`, and this one.
    Time& only = c.only_end;
    if (only >= 0 && only <= from) only = LinkCount::kNoEnd;  // the one in flight has ended
    if (only == LinkCount::kInHeap) {
      auto& heap = ends_[link];
      while (!heap.empty() && heap.front() <= from) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>());
        heap.pop_back();
      }
      if (!heap.empty()) return push_end(link, to);
      only = LinkCount::kNoEnd;
    }
    if (only == LinkCount::kNoEnd) {
      only = to;
      c.peak_in_flight = std::max(c.peak_in_flight, std::int32_t{1});
      return;
    }
    ends_[link].assign(1, only);  // a second one overlaps the one in flight: a heap of both
    only = LinkCount::kInHeap;
    push_end(link, to);
  }

 private:
  template <class T>
  std::vector<T> each(T LinkCount::*field) const {
    std::vector<T> out;
    out.reserve(links_.size());
    for (const LinkCount& c : links_) out.push_back(c.*field);
    return out;
  }

  void push_end(LinkId link, Time to) {
    auto& heap = ends_[link];
    heap.push_back(to);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
    links_[link].peak_in_flight =
        std::max(links_[link].peak_in_flight, static_cast<std::int32_t>(heap.size()));
  }

  // Before the first change of a new instant, the count the last instant left counts
  // towards the peak. After a run every transfer has left, so no count is missed.
  static void settle(LinkCount& c, Time now) {
    if (c.changed_at == now) return;
    c.peak_in_flight = std::max(c.peak_in_flight, c.in_flight);
    c.changed_at = now;
  }

  std::vector<LinkCount> links_;
  std::vector<std::vector<Time>> ends_;  // min-heaps, while more than one is in flight
};

}  // namespace collsim
