#pragma once
// The element types a real run supports, and a dispatch from the schedule's dtype
// to the C++ type that stores it.
#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "replay/scalar_ops.h"
#include "validate/measure/validation_error.h"

namespace collsim {

// Whether a real run stores `t` (with_element_type dispatches it).
inline bool runs_for_real(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::I32 || t == DType::I64 ||
         t == DType::BF16;
}
inline std::string real_run_types_problem(DType t) {
  return fmt::format("real runs support float32, float64, int32, int64 and bfloat16, not {}",
                     name_of(t));
}

template <class F>
decltype(auto) with_element_type(DType t, F&& f) {
  switch (t) {
    case DType::F32:
      return f(float{});
    case DType::F64:
      return f(double{});
    case DType::I32:
      return f(std::int32_t{});
    case DType::I64:
      return f(std::int64_t{});
    case DType::BF16:
      return f(BFloat16{});
    default:
      throw ValidationError(real_run_types_problem(t));
  }
}

}  // namespace collsim
