#pragma once
// The discrete-event engine: a clock and a queue of events ordered by
// (time, sequence number). The sequence number is the order of scheduling, so
// events at the same instant run first-scheduled-first and a run is a pure
// function of its input. The engine knows nothing of networks or collectives:
// an event is a small tagged value handed back to whoever runs the loop.
//
// Layout: two structures, one order.
// - Lanes: most events are scheduled a few fixed delays ahead (a packet's time on a link
//   of one bandwidth class; the steps of a lock-step collective), and events scheduled a
//   fixed delay after a clock that never goes back come in time order. A lane is a FIFO
//   of the events of one delay: scheduling appends, and the earliest event is at the
//   front of one of a few lanes. No sorting at all.
// - A radix heap on time, in hexadecimal digits, for every other event. Its times never
//   go back past its own clock (the time of its latest refill), so an event is filed by
//   the highest digit in which its time differs from that clock and that digit's value:
//   bucket 0 holds the events of that time itself, in order of scheduling; the others
//   hold, lowest first, ever later times. When bucket 0 runs dry, the lowest non-empty
//   bucket is filed again around its earliest time, which sends each of its events to a
//   lower bucket, in order: an event moves at most 16 times in all, usually two or three.
// A pop takes the least (time, sequence number) of the lanes' fronts and bucket 0's
// first. Buckets and lanes are FIFOs that keep their capacity, so a run allocates only while it
// reaches sizes it has not reached before.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/fifo.h"
#include "core/time.h"

namespace collsim {

// Which kind of event; the loop's handler dispatches on it. Eight bits, because the queue
// keeps a tag beside its sequence number in one word: an enumeration of tags whose
// underlying type is EventTag cannot name a 257th.
using EventTag = std::uint8_t;

struct Event {
  Time time;
  std::uint64_t id;  // meaning chosen by the tag's owner
  EventTag tag;
};

class Engine {
 public:
  Time now() const { return now_; }
  std::uint64_t events_processed() const { return processed_; }
  bool empty() const { return pending_ == 0; }
  std::size_t pending() const { return pending_; }

  // Schedules an event; a time before now() is a logic error and is clamped to now().
  // Inline, as pop(): every transfer and packet-hop costs a schedule and a pop, and a call
  // into another file spills the caller's registers around each.
  [[gnu::always_inline]] void schedule(Time at, EventTag tag, std::uint64_t id) {
    at = std::max(at, now_);
    const Queued e{at, id, (sequence_++ << kTagBits) | tag};
    ++pending_;
    const Time delay = at - now_;
    for (Lane& lane : lanes_)
      if (lane.delay == delay && !lane.events.empty()) return lane.events.push_back(e);
    for (Lane& lane : lanes_)
      if (lane.events.empty()) {
        lane.delay = delay;
        return lane.events.push_back(e);
      }
    // Neither a lane of its delay nor a free one: the heap, whose earliest it may lower.
    if (in_heap_++ == 0) {
      heap_min_ = at;
      heap_min_known_ = true;
    } else if (heap_min_known_) {
      heap_min_ = std::min(heap_min_, at);
    }
    file(e);
  }

  // Pops the earliest event and advances the clock to it. The queue must not be empty.
  // Throws Interrupted (core/interrupt.h) when a stop was requested.
  [[gnu::always_inline]] Event pop() {
    // A few milliseconds of events between polls: Ctrl-C stops a run within a second.
    // Counted once popped: a pop that throws there leaves the engine as it was.
    if (((processed_ + 1) & kPollMask) == 0) poll();
    ++processed_;
    --pending_;
    Lane* first = nullptr;
    for (Lane& lane : lanes_)
      if (!lane.events.empty() && (!first || before(lane.events.front(), first->events.front())))
        first = &lane;
    if (in_heap_ != 0 &&
        (!buckets_[0].empty() || !first || heap_earliest() <= first->events.front().time)) {
      if (buckets_[0].empty()) refill_now();
      const Queued& e = buckets_[0].front();
      if (!first || before(e, first->events.front())) {
        const Event out = take(e);
        buckets_[0].pop_front();
        --in_heap_;
        if (buckets_[0].empty()) heap_min_known_ = false;
        return out;
      }
    }
    const Event out = take(first->events.front());
    first->events.pop_front();
    return out;
  }

  // Runs until the queue is empty, handing each event to `handler(const Event&)`.
  template <class Handler>
  void run(Handler&& handler) {
    while (pending_ != 0) handler(pop());
  }

 private:
  static constexpr std::uint64_t kPollMask = (1 << 15) - 1;  // poll every 32,768 events
  static constexpr int kTagBits = 8;                         // an EventTag's
  static_assert(sizeof(EventTag) * 8 == kTagBits);
  // Lanes, each scanned at every schedule and pop: a packet network's few link classes
  // and its deliveries. More were slower on the packet benchmark.
  static constexpr int kLanes = 4;
  static constexpr unsigned kDigitBits = 4;
  static constexpr unsigned kDigits = 1 << kDigitBits;
  static constexpr int kBuckets = 1 + 64 / kDigitBits * kDigits;  // now(), then (digit, value)

  // An event as queued: its tag below its sequence number, so that one comparison of
  // `order` is the order of scheduling (2^56 events before it wraps).
  struct Queued {
    Time time;
    std::uint64_t id;
    std::uint64_t order;
  };
  struct Lane {
    Time delay = 0;  // what its events were scheduled after: they come in time order
    Fifo<Queued> events;
  };

  static bool before(const Queued& a, const Queued& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);
  }
  Event take(const Queued& e) {
    now_ = e.time;
    return {e.time, e.id, static_cast<EventTag>(e.order)};
  }

  // Later times file to higher buckets: a higher differing digit, or at the same digit a
  // higher value (a time after the heap's clock has the higher value where they first differ).
  // Unsigned throughout: the index is divided and shifted on every filing.
  unsigned bucket_of(Time at) const {
    const auto t = static_cast<std::uint64_t>(at);
    const std::uint64_t differ = t ^ static_cast<std::uint64_t>(heap_now_);
    if (differ == 0) return 0;
    const unsigned digit = (63u - static_cast<unsigned>(__builtin_clzll(differ))) / kDigitBits;
    return 1 + digit * kDigits + static_cast<unsigned>((t >> (digit * kDigitBits)) & (kDigits - 1));
  }
  // Bucket 0 is empty: the heap's earliest time, found in its lowest bucket and kept
  // until the heap's first event is taken (filing an earlier one lowers it).
  Time heap_earliest();
  void refill_now();  // bucket 0 is empty: move the heap's clock to its earliest event
  void poll();        // counts progress and throws Interrupted when a stop was requested

  [[gnu::always_inline]] void file(const Queued& e) {
    const unsigned b = bucket_of(e.time);
    buckets_[b].push_back(e);
    filled_[b / 64] |= std::uint64_t{1} << (b % 64);
  }

  std::array<Lane, kLanes> lanes_;
  // A bucket is a FIFO, as a lane is: filled in order of filing, emptied from the front.
  std::array<Fifo<Queued>, kBuckets> buckets_;
  std::array<std::uint64_t, (kBuckets + 63) / 64> filled_{};  // which buckets hold events
  // The heap's clock: no later than now() or any of its events. Its buckets are sound only
  // around such a clock, and a lane's event may be due before the heap's earliest: the
  // heap is refilled (its clock moved) only when its earliest is the next event.
  Time heap_now_ = 0;
  // The heap's earliest time, once found (a flag, not a sentinel time: any time may be
  // scheduled, kTimeNever too, and a sentinel would send every pop to look again).
  Time heap_min_ = 0;
  bool heap_min_known_ = false;
  Time now_ = 0;
  std::uint64_t sequence_ = 0;
  std::uint64_t processed_ = 0;
  std::size_t pending_ = 0;
  std::size_t in_heap_ = 0;
};

}  // namespace collsim
