#pragma once
// Simulated time is an integer count of picoseconds.
//
// Integers rather than doubles because events that happen "at the same instant"
// must compare equal no matter which sums produced them (α + n/β computed along
// two paths must tie), which is what makes runs reproducible and lets the flow
// model batch simultaneous events. 2^63 ps is 106 days of simulated time; one
// picosecond is far below any link or software latency we model.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"

namespace collsim {

using Time = std::int64_t;

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr Time kTimeNever = std::numeric_limits<Time>::max();

// A time the picosecond clock cannot hold is an input problem (sizes, bandwidths or
// latencies beyond reason), never a wrapped, negative time.
[[noreturn]] inline void throw_time_overflow() {
  throw InputError("",
                   "the simulated time passes 2^63 ps (about 106 days), the clock's range; "
                   "check the sizes, bandwidths, latencies and alpha");
}

// a + b, refusing a sum past the clock's range (kTimeNever stays a sentinel).
inline Time add_time(Time a, Time b) {
  Time sum;
  if (__builtin_add_overflow(a, b, &sum) || sum == kTimeNever) throw_time_overflow();
  return sum;
}

inline constexpr double to_seconds(Time t) {
  return static_cast<double>(t) / 1e12;
}
inline Time from_seconds(double s) {
  const double ps = s * 1e12;
  // 9.2e18 < 2^63: the largest double that llround turns into a valid Time, with margin.
  if (!(std::fabs(ps) < 9.2e18)) throw_time_overflow();
  return static_cast<Time>(std::llround(ps));
}

// Time to push `bytes` through a pipe of `bytes_per_second`, rounded to the picosecond.
inline Time transfer_time(std::int64_t bytes, double bytes_per_second) {
  const double ps = static_cast<double>(bytes) / bytes_per_second * 1e12;
  if (!(ps >= 0 && ps < 9.2e18)) throw_time_overflow();
  return static_cast<Time>(std::llround(ps));
}

}  // namespace collsim
