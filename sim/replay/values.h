#pragma once
// Element types the replayer computes with: machine numbers (float32, float64,
// int32, int64, bfloat16) and symbolic terms that remember who contributed what.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/scalar_ops.h"
#include "schedule/collective.h"

namespace collsim {

// A reduction of input elements, kept as the sorted multiset of its terms.
// A term is (rank, element index); "a0+b0+c0" is elements 0 of ranks 0, 1, 2.
struct Symbol {
  std::vector<std::uint64_t> terms;

  static std::uint64_t term(int rank, std::int64_t index) {
    return (static_cast<std::uint64_t>(rank) << 40) | static_cast<std::uint64_t>(index);
  }
  static Symbol of(int rank, std::int64_t index) { return {{term(rank, index)}}; }
  friend bool operator==(const Symbol& a, const Symbol& b) { return a.terms == b.terms; }
  // "a1+b1+c1" (sum, avg), "a1*b1*c1" (prod), "max(a1,b1,c1)" (max, min); ranks > 26
  // print as r12[3].
  std::string to_string(int ranks, ReduceOp op = ReduceOp::Sum) const;
};

// Combines two elements the way the collective's reduction does.
template <class T>
T combine(ReduceOp op, const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Symbol>) {
    Symbol out;
    out.terms.resize(a.terms.size() + b.terms.size());
    std::merge(a.terms.begin(), a.terms.end(), b.terms.begin(), b.terms.end(), out.terms.begin());
    return out;
  } else {
    return reduction::with_reduction(op, [&](auto f) { return f(a, b); });
  }
}

}  // namespace collsim
