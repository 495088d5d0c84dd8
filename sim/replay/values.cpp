#include "replay/values.h"

#include <fmt/format.h>

namespace collsim {

std::string Symbol::to_string(int ranks, ReduceOp op) const {
  if (terms.empty()) return "_";
  const bool extreme = op == ReduceOp::Max || op == ReduceOp::Min;
  const char separator = extreme ? ',' : op == ReduceOp::Prod ? '*' : '+';
  std::string out;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const int rank = static_cast<int>(terms[i] >> 40);
    const auto index = static_cast<std::int64_t>(terms[i] & ((std::uint64_t{1} << 40) - 1));
    if (i) out += separator;
    if (ranks <= 26)
      out += fmt::format("{}{}", static_cast<char>('a' + rank), index);
    else
      out += fmt::format("r{}[{}]", rank, index);
  }
  if (extreme && terms.size() > 1) return fmt::format("{}({})", name_of(op), out);
  return out;
}

}  // namespace collsim
