#pragma once
// Enum <-> name tables: the names users write in JSON for kinds, ops and types.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collsim {

template <class Table, class Key>
std::string_view name_in(const Table& table, Key key) {
  for (const auto& [k, name] : table)
    if (k == key) return name;
  return "?";
}

template <class Table>
auto key_in(const Table& table, std::string_view name)
    -> std::optional<typename Table::value_type::first_type> {
  for (const auto& [k, n] : table)
    if (n == name) return k;
  return std::nullopt;
}

template <class Table>
std::vector<std::string> names_in(const Table& table) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.emplace_back(entry.second);
  return out;
}

}  // namespace collsim
