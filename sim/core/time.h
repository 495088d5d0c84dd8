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

namespace collsim {

using Time = std::int64_t;

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr Time kTimeNever = std::numeric_limits<Time>::max();

inline constexpr double to_seconds(Time t) {
  return static_cast<double>(t) / 1e12;
}
inline Time from_seconds(double s) {
  return static_cast<Time>(std::llround(s * 1e12));
}

// Time to push `bytes` through a pipe of `bytes_per_second`, rounded to the picosecond.
inline Time transfer_time(std::int64_t bytes, double bytes_per_second) {
  return static_cast<Time>(std::llround(static_cast<double>(bytes) / bytes_per_second * 1e12));
}

}  // namespace collsim
