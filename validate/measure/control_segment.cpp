#include "validate/measure/control_segment.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace collsim {

std::uint64_t Segment::rank_bytes(int rank) const {
  const SegmentHeader& h = header();
  const std::uint64_t end = rank + 1 < static_cast<int>(h.ranks)
                                ? buffer_offset(rank + 1, 0)
                                : layout().size - layout().off_data;
  return end - buffer_offset(rank, 0);
}

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_ns) {
  timespec ts{0, timeout_ns};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr,
          0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

void sleep_on(const Segment& seg, std::atomic<std::uint32_t>& word, std::uint32_t seen,
              long timeout_ns) {
  // Sequentially consistent on both sides (here: count, then re-read the word; in wake:
  // change the word, then read the count): one of the two sees the other's write, so a
  // waker never skips a sleeper that missed its change.
  auto& sleepers = seg.header().sleepers;
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (word.load(std::memory_order_seq_cst) == seen) futex_wait(word, seen, timeout_ns);
  sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

void wake(const Segment& seg, std::atomic<std::uint32_t>& word) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (seg.header().sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(word);
}

bool wait_for(const Segment& seg, std::atomic<std::uint32_t>& word, std::uint32_t target) {
  // Spin briefly before sleeping in the kernel, as communication libraries do: waking a
  // sleeping rank cost 5-7 us here, and small-message times flipped between that and
  // 0.3 us. Not when ranks outnumber cores (spin_ns 0): spinners would starve workers.
  const std::int64_t spin_until = monotonic_ns() + seg.header().spin_ns;
  while (word.load(std::memory_order_acquire) < target && monotonic_ns() < spin_until) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  for (std::uint32_t v; (v = word.load(std::memory_order_acquire)) < target;) {
    if (seg.header().abort.load()) return false;
    sleep_on(seg, word, v, 50'000'000);
  }
  return true;
}

void arrive(const Segment&, std::atomic<std::uint32_t>& word) {
  word.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(word);  // barriers between phases: the runner sleeps on them uncounted
}

}  // namespace collsim
