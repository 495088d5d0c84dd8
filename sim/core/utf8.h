#pragma once
// UTF-8 as JSON needs it: what is well formed, and text made so. Names can come from file
// names, which are bytes: a scenario file named with a 0xFF byte gave its scenario a name
// that no JSON output could hold (an internal error at the end of the run).
#include <string>
#include <string_view>
#include <utility>

namespace collsim {

// The code point of the UTF-8 sequence at text[i] and its length, or length 0 when the
// bytes there are not well-formed UTF-8 (overlong, surrogate, truncated, > U+10FFFF).
std::pair<char32_t, int> decode_utf8(std::string_view text, std::size_t i);

// `text` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace collsim
