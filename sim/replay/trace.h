#pragma once
// The step-by-step trace: every rank's data buffers after every step, computed
// by the replayer on inputs whose values show who contributed what.
#include <string>

#include "schedule/schedule.h"

namespace collsim {

enum class TraceValues {
  Powers,    // rank r's elements all start at 10^r: a sum's digits show its contributors
  Symbolic,  // element i of rank r is a letter and an index: a0, b3, ...
};

inline constexpr std::int64_t kMaxTracedElements = 256;

// Whether every value of a Powers trace fits an int64: 10^r for up to 18 ranks, and a
// product of them (10^(0+1+...+K-1)) for up to 6.
bool powers_fit(const CollectiveShape& shape);

// Throws std::invalid_argument when the buffers are too large to print (per buffer, or
// kMaxTracedValues in all, symbols counted by their terms), or when a Powers trace would
// not fit (powers_fit). An average's sums are followed by their division by K.
std::string format_trace(const Schedule& s, TraceValues values);

// One line per step (transfers, bytes, copies and reductions, who sends to whom):
// the trace of a collective whose buffers are too large to print element by element.
std::string format_step_summary(const Schedule& s);

// Elements the replayer holds to prove a schedule (every buffer of every rank), and
// the most `trace` replays.
std::int64_t replay_elements(const Schedule& s);
inline constexpr std::int64_t kMaxReplayedElements = std::int64_t{1} << 26;

// What a trace prints: every element of every rank, after every step, a symbol counted by
// its terms (a reduction's, up to one per rank); and the most it prints: past it, the
// output is gigabytes no reader reads.
std::int64_t printed_values(const Schedule& s, TraceValues values);
inline constexpr std::int64_t kMaxTracedValues = std::int64_t{1} << 20;

// Terms the symbolic check holds at most: a reduction's output element names each of the
// K ranks' contributions, so every element of every rank may hold K of them. The check
// runs up to kMaxSymbolicTerms (about 128 MB of terms); the exact check proves the rest.
std::int64_t symbolic_terms(const Schedule& s);
inline constexpr std::int64_t kMaxSymbolicTerms = std::int64_t{1} << 24;

// A closing summary: symbolic and exact checks, and float32 numerics.
std::string format_verification(const Schedule& s);

}  // namespace collsim
