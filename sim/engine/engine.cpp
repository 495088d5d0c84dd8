#include "engine/engine.h"

#include "core/interrupt.h"

namespace collsim {

// The lowest non-empty bucket but bucket 0 holds the earliest events (they agree with the
// heap's clock on more high digits than any other's, or on as many with a lower value where
// they differ).
Time Engine::heap_earliest() {
  if (heap_min_known_) return heap_min_;
  std::size_t word = 0;
  auto filled = [&](std::size_t w) { return w == 0 ? filled_[0] & ~std::uint64_t{1} : filled_[w]; };
  while (filled(word) == 0) ++word;
  const auto b = word * 64 + static_cast<std::size_t>(__builtin_ctzll(filled(word)));
  heap_min_ = kTimeNever;
  const Fifo<Queued>& lowest = buckets_[b];
  for (std::size_t i = 0; i < lowest.size(); ++i) heap_min_ = std::min(heap_min_, lowest[i].time);
  heap_min_known_ = true;
  return heap_min_;
}

// Filed again around the heap's earliest time, each event of the lowest bucket goes to a
// lower one, in the order it was in: events of one time stay in order of scheduling.
void Engine::refill_now() {
  const Time earliest = heap_earliest();
  filled_[0] &= ~std::uint64_t{1};  // bucket 0 is empty
  std::size_t word = 0;
  while (filled_[word] == 0) ++word;
  const auto b = word * 64 + static_cast<std::size_t>(__builtin_ctzll(filled_[word]));
  filled_[word] &= ~(std::uint64_t{1} << (b % 64));
  Fifo<Queued>& from = buckets_[b];
  heap_now_ = earliest;
  for (; !from.empty(); from.pop_front()) file(from.front());
}

void Engine::poll() {
  add_progress(kPollMask + 1);
  poll_interrupt();
}

}  // namespace collsim
