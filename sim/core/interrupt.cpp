#include "core/interrupt.h"

#include <atomic>

namespace collsim {
namespace {

// Lock-free, so that a signal handler may set it.
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);
std::atomic<std::uint64_t> events_done{0};

}  // namespace

void request_interrupt() noexcept {
  stop_requested.store(true, std::memory_order_relaxed);
}

void clear_interrupt() noexcept {
  stop_requested.store(false, std::memory_order_relaxed);
}

bool interrupt_requested() noexcept {
  return stop_requested.load(std::memory_order_relaxed);
}

}  // namespace collsim

namespace collsim {

void add_progress(std::uint64_t events) noexcept {
  events_done.fetch_add(events, std::memory_order_relaxed);
}

std::uint64_t progress() noexcept {
  return events_done.load(std::memory_order_relaxed);
}

}  // namespace collsim
