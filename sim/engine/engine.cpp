#include "engine/engine.h"

#include "core/interrupt.h"

namespace collsim {

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
  Bucket& from = buckets_[b];
  // Its earliest time, found here rather than kept up to date at every filing: an event is
  // filed about three times for each refill that reads it.
  Time earliest = kTimeNever;
  for (const Event& e : from) earliest = std::min(earliest, e.time);
  now_ = earliest;
  for (const Event& e : from) file(e);
  from.clear();
}

void Engine::poll() {
  add_progress(kPollMask + 1);
  poll_interrupt();
}

}  // namespace collsim
