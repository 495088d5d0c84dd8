#pragma once
// One quoting rule for every CSV collsim writes (RFC 4180).
#include <string>
#include <string_view>

namespace collsim {

// A field for a CSV row: quoted when it holds a comma, quote or line break.
inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

}  // namespace collsim
