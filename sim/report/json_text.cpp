#include "report/json_text.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace collsim {

void append_json(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  std::array<char, 64> digits;  // nlohmann's own shortest round-trip form
  char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), v);
  out.append(digits.data(), end);
}

template <class Integer>
void append_integer(std::string& out, Integer v) {
  std::array<char, 24> digits;
  const auto [end, error] = std::to_chars(digits.data(), digits.data() + digits.size(), v);
  out.append(digits.data(), end);
}

void append_json(std::string& out, std::int64_t v) {
  append_integer(out, v);
}
void append_json(std::string& out, std::uint64_t v) {
  append_integer(out, v);
}
void append_json(std::string& out, std::nullptr_t) {
  out += "null";
}

void append_json(std::string& out, std::string_view v) {
  // Printable ASCII without quotes or backslashes is written as it is; anything else
  // (control characters, UTF-8, which nlohmann checks) as nlohmann writes it.
  const bool plain = std::all_of(
      v.begin(), v.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    out += nlohmann::json(std::string(v)).dump();
    return;
  }
  out += '"';
  out += v;
  out += '"';
}

void JsonObjectText::append_to(std::string& out) {
  if (members_.empty()) {
    out += "{}";
    return;
  }
  std::ranges::sort(members_, {}, &Member::key);
  const auto twice = std::ranges::adjacent_find(members_, {}, &Member::key);
  if (twice != members_.end())
    throw std::logic_error("result.json: key \"" + std::string(twice->key) + "\" written twice");
  out += "{\n";
  for (std::size_t i = 0; i < members_.size(); ++i) {
    append_indent(out, inner());
    append_json(out, members_[i].key);
    out += ": ";
    out.append(values_, members_[i].begin, members_[i].end - members_[i].begin);
    out += i + 1 < members_.size() ? ",\n" : "\n";
  }
  append_indent(out, depth_);
  out += '}';
}

}  // namespace collsim
