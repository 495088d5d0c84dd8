#pragma once
// The discrete-event engine: a clock and a queue of events ordered by
// (time, sequence number). The sequence number is the order of scheduling, so
// events at the same instant run first-scheduled-first and a run is a pure
// function of its input. The engine knows nothing of networks or collectives:
// an event is a small tagged value handed back to whoever runs the loop.
//
// Layout: a radix heap on time, in hexadecimal digits. Event times never go back past
// now(), so an event is filed by the highest digit in which its time differs from
// now() and that digit's value: bucket 0 holds the events of now() itself, in order of
// scheduling; the others hold, lowest first, ever later times. When bucket 0 runs dry,
// the lowest non-empty bucket is filed again around its earliest time, which sends
// each of its events to a lower bucket, in order: an event moves at most 16 times in
// all, usually two or three, and filing it is a bit scan, with no hash of times and no
// heap of them. Collective schedules are lock-step — thousands of transfers end at the
// very same picosecond — and there a tie costs an append and a read; packets, whose
// times rarely tie, cost little more. Buckets keep their capacity, so a run allocates
// only while it reaches sizes it has not reached before.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/time.h"

namespace collsim {

// Events of one time come out in the order they were scheduled: the buckets keep it,
// so an event carries no sequence number.
struct Event {
  Time time;
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
  // Inline, as pop(): every transfer and packet-hop costs a schedule and a pop, and a call
  // into another file spills the caller's registers around each.
  [[gnu::always_inline]] void schedule(Time at, std::uint32_t tag, std::uint64_t id) {
    file(Event{std::max(at, now_), id, tag});
    ++pending_;
  }

  // Pops the earliest event and advances the clock to it. The queue must not be empty.
  // Throws Interrupted (core/interrupt.h) when a stop was requested.
  Event pop() {
    if (next_ == buckets_[0].size()) refill_now();
    --pending_;
    // A few milliseconds of events between polls: Ctrl-C stops a run within a second.
    if ((++processed_ & kPollMask) == 0) poll();
    return buckets_[0][next_++];
  }

  // Runs until the queue is empty, handing each event to `handler(const Event&)`.
  template <class Handler>
  void run(Handler&& handler) {
    while (pending_ != 0) handler(pop());
  }

 private:
  static constexpr std::uint64_t kPollMask = (1 << 15) - 1;  // poll every 32,768 events
  static constexpr unsigned kDigitBits = 4;
  static constexpr unsigned kDigits = 1 << kDigitBits;
  static constexpr int kBuckets = 1 + 64 / kDigitBits * kDigits;  // now(), then (digit, value)

  // Later times file to higher buckets: a higher differing digit, or at the same digit a
  // higher value (a time after now() has the higher value where they first differ).
  // Unsigned throughout: the index is divided and shifted on every filing.
  unsigned bucket_of(Time at) const {
    const auto t = static_cast<std::uint64_t>(at);
    const std::uint64_t differ = t ^ static_cast<std::uint64_t>(now_);
    if (differ == 0) return 0;
    const unsigned digit = (63u - static_cast<unsigned>(__builtin_clzll(differ))) / kDigitBits;
    return 1 + digit * kDigits + static_cast<unsigned>((t >> (digit * kDigitBits)) & (kDigits - 1));
  }
  void refill_now();  // bucket 0 is empty: move the clock to the earliest event
  void poll();        // counts progress and throws Interrupted when a stop was requested

  [[gnu::always_inline]] void file(const Event& e) {
    const unsigned b = bucket_of(e.time);
    buckets_[b].push_back(e);
    filled_[b / 64] |= std::uint64_t{1} << (b % 64);
  }

  // A bucket: its events in order of filing, in storage that only grows. Not a std::vector:
  // its push_back keeps the reallocation inline, and every schedule paid for saving the
  // registers that path needs.
  class Bucket {
   public:
    std::size_t size() const { return size_; }
    const Event& operator[](std::size_t i) const { return events_[i]; }
    const Event* begin() const { return events_.data(); }
    const Event* end() const { return events_.data() + size_; }
    void clear() { size_ = 0; }
    [[gnu::always_inline]] void push_back(const Event& e) {
      if (size_ == capacity_) [[unlikely]]
        grow();
      events_[size_++] = e;
    }

   private:
    [[gnu::noinline]] void grow() {
      capacity_ = std::max<std::size_t>(16, 2 * size_);
      events_.resize(capacity_);
    }
    std::vector<Event> events_;
    std::size_t size_ = 0;
    std::size_t capacity_ = 0;  // events_.size(), kept: a vector's size of 24-byte events divides
  };

  std::array<Bucket, kBuckets> buckets_;
  std::array<std::uint64_t, (kBuckets + 63) / 64> filled_{};  // which buckets hold events
  std::size_t next_ = 0;  // bucket 0's first event not yet popped
  Time now_ = 0;
  std::uint64_t processed_ = 0;
  std::size_t pending_ = 0;
};

}  // namespace collsim
