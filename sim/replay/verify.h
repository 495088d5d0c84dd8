#pragma once
// Proof that a schedule computes its collective: replay it on inputs whose
// results the collective's definition fixes, and compare every output element.
#include <cstdint>
#include <string>

#include "schedule/schedule.h"

namespace collsim {

struct Verdict {
  std::int64_t checked = 0;  // output elements compared
  std::int64_t wrong = 0;    // nccl-tests' #wrong
  std::string first_problem;
  bool ok() const { return wrong == 0 && first_problem.empty(); }
};

// Symbolic inputs (a0, b0, ...): every output element must be exactly the terms
// the definition names, each once — no contribution lost, none counted twice.
Verdict verify_symbolic(const Schedule& s);

// Random 64-bit integer inputs (sums wrap, so they are exact), replayed in step
// order and in `orders` random dependency orders: all must match the definition,
// which also shows the dependencies leave no race. A barrier has no data: for it,
// this is verify_barrier.
Verdict verify_exact(const Schedule& s, std::uint64_t seed, int orders = 2);

// A barrier's definition: no rank finishes before every rank has started. Follows
// what each message tells its receiver — that its sender had arrived, and everything
// the sender had heard by then (the dependencies the op waited for) — and checks that
// every rank, after its last op, has heard from all. `checked` counts ranks.
Verdict verify_barrier(const Schedule& s);

struct FloatNumerics {
  std::int64_t elements = 0;                // output elements of the first output rank
  std::int64_t differ_from_sequential = 0;  // vs folding ranks 0..K-1 in order
  bool replicas_identical = true;           // every rank holding a replicated result agrees bitwise
};

// float32 inputs uniform in [-1, 1): rounding differences from the sequential
// order are expected; ranks disagreeing with each other are a bug.
FloatNumerics float_numerics(const Schedule& s, std::uint64_t seed);

}  // namespace collsim
