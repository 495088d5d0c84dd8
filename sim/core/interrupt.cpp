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

namespace {
thread_local const std::atomic<bool>* stop_token = nullptr;  // StopScope's
}  // namespace

bool interrupt_requested() noexcept {
  return stop_requested.load(std::memory_order_relaxed) ||
         (stop_token && stop_token->load(std::memory_order_relaxed));
}

StopScope::StopScope(const std::atomic<bool>* token) noexcept : previous_(stop_token) {
  stop_token = token;
}

StopScope::~StopScope() {
  stop_token = previous_;
}

const std::atomic<bool>* current_stop_token() noexcept {
  return stop_token;
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
