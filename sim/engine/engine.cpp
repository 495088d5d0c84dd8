#include "engine/engine.h"

#include "core/interrupt.h"

namespace collsim {

void Engine::schedule(Time at, std::uint32_t tag, std::uint64_t id) {
  if (at < now_) at = now_;
  file(Event{at, id, tag});
  ++pending_;
}

// The lowest non-empty bucket holds the earliest events (they agree with now() on more
// high digits than any other's, or on as many with a lower value where they differ). Filed again
// around the earliest of them, each goes to a lower bucket, in the order it was in: events of one
// time stay in order of scheduling.
void Engine::refill_now() {
  buckets_[0].clear();
  next_ = 0;
  filled_[0] &= ~std::uint64_t{1};
  std::size_t word = 0;
  while (filled_[word] == 0) ++word;
  const auto b =
      static_cast<int>(word * 64 + static_cast<std::size_t>(__builtin_ctzll(filled_[word])));
  filled_[word] &= ~(std::uint64_t{1} << (b % 64));
  std::vector<Event>& from = buckets_[b];
  now_ = earliest_[b];
  earliest_[b] = kTimeNever;
  for (const Event& e : from) file(e);
  from.clear();
}

Event Engine::pop() {
  if (next_ == buckets_[0].size()) refill_now();
  --pending_;
  // A few milliseconds of events between polls: Ctrl-C stops a run within a second.
  if ((++processed_ & kPollMask) == 0) {
    add_progress(kPollMask + 1);
    poll_interrupt();
  }
  return buckets_[0][next_++];
}

}  // namespace collsim
