#pragma once
// Element types the replayer computes with: machine numbers (float32, float64,
// int32, int64, bfloat16) and symbolic terms that remember who contributed what.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "schedule/collective.h"

namespace collsim {

// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  std::uint16_t bits = 0;

  static BFloat16 from_float(float f) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if (std::isnan(f)) return {static_cast<std::uint16_t>((u >> 16) | 0x40)};
    u += 0x7fff + ((u >> 16) & 1);
    return {static_cast<std::uint16_t>(u >> 16)};
  }
  float to_float() const { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

// A reduction of input elements, kept as the sorted multiset of its terms.
// A term is (rank, element index); "a0+b0+c0" is elements 0 of ranks 0, 1, 2.
struct Symbol {
  std::vector<std::uint64_t> terms;

  static std::uint64_t term(int rank, std::int64_t index) {
    return (static_cast<std::uint64_t>(rank) << 40) | static_cast<std::uint64_t>(index);
  }
  static Symbol of(int rank, std::int64_t index) { return {{term(rank, index)}}; }
  friend bool operator==(const Symbol& a, const Symbol& b) { return a.terms == b.terms; }
  std::string to_string(int ranks) const;  // "a1+b1+c1"; ranks > 26 print as r12[3]
};

// Combines two elements the way the collective's reduction does.
template <class T>
T combine(ReduceOp op, const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Symbol>) {
    Symbol out;
    out.terms.resize(a.terms.size() + b.terms.size());
    std::merge(a.terms.begin(), a.terms.end(), b.terms.begin(), b.terms.end(), out.terms.begin());
    return out;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16::from_float(combine(op, a.to_float(), b.to_float()));
  } else {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:  // summed on the way, divided by K at the end
        if constexpr (std::is_integral_v<T>)
          return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                                static_cast<std::make_unsigned_t<T>>(b));
        else
          return a + b;
      case ReduceOp::Prod:
        if constexpr (std::is_integral_v<T>)
          return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                                static_cast<std::make_unsigned_t<T>>(b));
        else
          return a * b;
      case ReduceOp::Max:
        return a < b ? b : a;
      case ReduceOp::Min:
        return b < a ? b : a;
    }
    return a;
  }
}

}  // namespace collsim
