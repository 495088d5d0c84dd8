#pragma once
// The axes a training job is split along (tensor, context, expert, pipeline and data
// parallelism): an enum, so placement and grouping switch on it instead of comparing
// names, and one table of the names JSON and reports use.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace collsim {

enum class ParallelAxis : std::uint8_t { Tp, Cp, Ep, Pp, Dp };

inline constexpr std::array<std::string_view, 5> kParallelAxisNames = {"tp", "cp", "ep", "pp",
                                                                       "dp"};

inline std::string_view name_of(ParallelAxis a) {
  return kParallelAxisNames[static_cast<std::size_t>(a)];
}

inline std::optional<ParallelAxis> parallel_axis_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kParallelAxisNames.size(); ++i)
    if (kParallelAxisNames[i] == name) return static_cast<ParallelAxis>(i);
  return std::nullopt;
}

}  // namespace collsim
