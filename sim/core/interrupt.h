#pragma once
// A request to stop a long run: Ctrl-C at the command line (a signal handler sets it)
// or in Python (the binding sets it when Python sees the signal). The engine polls it
// every few thousand events and unwinds with Interrupted, so whatever the run holds
// (an --out staging folder, threads of a sweep) is released on the way out. One flag
// for the process because a signal is for the process.
#include <cstdint>
#include <stdexcept>

namespace collsim {

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted") {}
};

void request_interrupt() noexcept;  // async-signal-safe
void clear_interrupt() noexcept;
bool interrupt_requested() noexcept;

inline void poll_interrupt() {
  if (interrupt_requested()) throw Interrupted();
}

// Events simulated so far in this process, over every engine and thread: what a
// progress line shows while a long run works (the CLI's, on a terminal).
void add_progress(std::uint64_t events) noexcept;
std::uint64_t progress() noexcept;

}  // namespace collsim
