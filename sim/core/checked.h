#pragma once
// Narrowing a count to a smaller type, refused instead of wrapped: a schedule, a
// route table or a shared-memory segment that outgrows its index type fails with a
// message naming what overflowed, never with silently corrupted ids.
#include <stdexcept>
#include <string>
#include <utility>

namespace collsim {

template <class To, class From>
To checked_count(From value, const char* what) {
  if (!std::in_range<To>(value))
    throw std::length_error(std::string(what) + ": " + std::to_string(value) + " does not fit in " +
                            std::to_string(sizeof(To) * 8) + " bits");
  return static_cast<To>(value);
}

}  // namespace collsim
