#pragma once
// A request to stop a long run: Ctrl-C at the command line (a signal handler sets it)
// or in Python (the binding sets it when Python sees the signal). The engine polls it
// every few thousand events and unwinds with Interrupted, so whatever the run holds
// (an --out staging folder, threads of a sweep) is released on the way out. One flag
// for the process because a signal is for the process.
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

}  // namespace collsim
