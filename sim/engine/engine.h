#pragma once
// The discrete-event engine: a clock and a queue of events ordered by
// (time, sequence number). The sequence number is the order of scheduling, so
// events at the same instant run first-scheduled-first and a run is a pure
// function of its input. The engine knows nothing of networks or collectives:
// an event is a small tagged value handed back to whoever runs the loop.
//
// Layout: events are grouped into one FIFO bucket per distinct time, and a heap
// orders the buckets. Collective schedules are lock-step: thousands of transfers
// end at the very same picosecond, and a plain heap spends its time breaking
// those ties. Here a tie costs an append and a read: schedule is O(1) for a time
// already queued (O(log B) for a new one, B = distinct pending times) and pop is
// O(1) within a bucket. Buckets and their vectors are recycled, so a run
// allocates only while it reaches sizes it has not reached before.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/time.h"

namespace collsim {

struct Event {
  Time time;
  std::uint64_t seq;
  std::uint64_t id;   // meaning chosen by the tag's owner
  std::uint32_t tag;  // which kind of event; the loop's handler dispatches on it
};

class Engine {
 public:
  Time now() const { return now_; }
  std::uint64_t events_processed() const { return processed_; }
  bool empty() const { return pending_ == 0; }
  std::size_t pending() const { return pending_; }

  // Schedules an event; a time before now() is a logic error and is clamped to now().
  void schedule(Time at, std::uint32_t tag, std::uint64_t id);

  // Pops the earliest event and advances the clock to it. The queue must not be empty.
  // Throws Interrupted (core/interrupt.h) when a stop was requested.
  Event pop();

  // Runs until the queue is empty, handing each event to `handler(const Event&)`.
  template <class Handler>
  void run(Handler&& handler) {
    while (pending_ != 0) handler(pop());
  }

 private:
  static constexpr std::uint64_t kPollMask = (1 << 15) - 1;  // poll every 32,768 events
  using BucketId = std::uint32_t;
  static constexpr BucketId kNone = ~BucketId{0};
  struct Bucket {
    Time time = 0;
    std::vector<Event> events;
    std::size_t next = 0;  // first event not yet popped
  };

  BucketId bucket_for(Time at);
  void heap_push(BucketId b);
  BucketId heap_pop();

  std::vector<Bucket> buckets_;
  std::vector<BucketId> free_;
  std::vector<BucketId> heap_;  // min-heap of bucket ids by time; times are distinct
  std::unordered_map<Time, BucketId> by_time_;
  BucketId current_ = kNone;  // the bucket being drained (its time is now())
  BucketId last_ = kNone;     // the bucket most recently appended to: the usual next target
  Time now_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
  std::size_t pending_ = 0;
};

}  // namespace collsim
