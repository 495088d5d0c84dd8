#pragma once
// The arithmetic of a reduction on machine numbers. The replayer, the shm transport
// and the CUDA reduction kernels all use these few lines, so the three round
// identically and a validation run can be compared with the replayer bit for bit.
// Kept free of the standard library beyond <cstdint>/<type_traits> so nvcc can
// compile it for the device.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "schedule/collective.h"

#ifdef __CUDACC__
#define COLLSIM_HOST_DEVICE __host__ __device__
#else
#define COLLSIM_HOST_DEVICE
#endif

namespace collsim {

// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  std::uint16_t bits = 0;

  COLLSIM_HOST_DEVICE static BFloat16 from_float(float f) {
    std::uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    if (f != f) return {static_cast<std::uint16_t>((u >> 16) | 0x40)};  // NaN stays quiet NaN
    u += 0x7fff + ((u >> 16) & 1);
    return {static_cast<std::uint16_t>(u >> 16)};
  }
  COLLSIM_HOST_DEVICE float to_float() const {
    const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
    float f = 0;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

namespace reduction {

// Integers wrap (as two's complement hardware does) instead of overflowing into UB.
struct SumOf {
  template <class T>
  COLLSIM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                            static_cast<std::make_unsigned_t<T>>(b));
    else
      return a + b;
  }
};
struct ProdOf {
  template <class T>
  COLLSIM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                            static_cast<std::make_unsigned_t<T>>(b));
    else
      return a * b;
  }
};
struct MaxOf {
  template <class T>
  COLLSIM_HOST_DEVICE T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct MinOf {
  template <class T>
  COLLSIM_HOST_DEVICE T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

// One reduction over every element type: bfloat16 is computed in float32 and rounded once.
template <class Arithmetic>
struct Reduction {
  template <class T>
  COLLSIM_HOST_DEVICE T operator()(const T& a, const T& b) const {
    if constexpr (std::is_same_v<T, BFloat16>)
      return BFloat16::from_float(Arithmetic{}(a.to_float(), b.to_float()));
    else
      return Arithmetic{}(a, b);
  }
};
using Sum = Reduction<SumOf>;
using Prod = Reduction<ProdOf>;
using Max = Reduction<MaxOf>;
using Min = Reduction<MinOf>;

// Calls f with the functor of `op`, chosen once so that f's loop can be specialised.
// Avg sums on the way; the division by K happens once, after the collective.
template <class F>
decltype(auto) with_reduction(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::Prod:
      return f(Prod{});
    case ReduceOp::Max:
      return f(Max{});
    case ReduceOp::Min:
      return f(Min{});
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      break;
  }
  return f(Sum{});
}

}  // namespace reduction
}  // namespace collsim
