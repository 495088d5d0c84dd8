#pragma once
// A request to stop a long run: Ctrl-C at the command line (a signal handler sets it)
// or in Python (the binding sets it when Python sees the signal). The engine polls it
// every few thousand events and unwinds with Interrupted, so whatever the run holds
// (an --out staging folder, threads of a sweep) is released on the way out. One flag
// for the process because a signal is for the process.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <utility>

namespace collsim {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

void request_interrupt() noexcept;  // async-signal-safe
void clear_interrupt() noexcept;
// The process's request, or the calling thread's stop token's (StopScope).
bool interrupt_requested() noexcept;

// A stop request for one piece of work beside the process's: Python stops the call that
// saw KeyboardInterrupt, not the calls other Python threads are running (one flag for the
// process stopped them all, and each call's start cleared another's pending stop). While a
// StopScope lives, its thread also obeys `token`; a thread the work starts takes its
// starter's token along (with_stop_token).
class StopScope {
 public:
  explicit StopScope(const std::atomic<bool>* token) noexcept;
  ~StopScope();
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};
const std::atomic<bool>* current_stop_token() noexcept;

// `f`, taking `Args`, to run on a thread the caller starts, under the caller's stop token.
template <class... Args, class F>
auto with_stop_token(F f) {
  return [token = current_stop_token(), f = std::move(f)](Args... args) mutable {
    const StopScope scope(token);
    return f(std::forward<Args>(args)...);
  };
}

inline void poll_interrupt() {
  if (interrupt_requested()) throw Interrupted();
}

// Events simulated so far in this process, over every engine and thread: what a
// progress line shows while a long run works (the CLI's, on a terminal).
void add_progress(std::uint64_t events) noexcept;
std::uint64_t progress() noexcept;

}  // namespace collsim
