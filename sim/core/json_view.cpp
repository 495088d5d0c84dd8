#include "core/json_view.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "core/input_file.h"
#include "core/units.h"

namespace collsim {
namespace {

std::string child_path(const std::string& parent, std::string_view key) {
  if (parent.empty() || parent.back() == ':') return parent + std::string(key);
  return parent + "." + std::string(key);
}

std::string describe(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::optional<std::string> nearest_word(std::string_view word,
                                        const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(3, word.size() / 2) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d && d < word.size()) {  // replacing every letter is no suggestion
      best_d = d;
      best = c;
    }
  }
  return best;
}

bool JsonView::has(std::string_view key) const {
  return value_->is_object() && value_->contains(key);
}

JsonView JsonView::operator[](std::string_view key) const {
  if (!value_->is_object()) fail("an object");
  auto it = value_->find(key);
  if (it == value_->end())
    throw InputError(path_, fmt::format("missing required field \"{}\"", key));
  return JsonView(*it, child_path(path_, key));
}

std::optional<JsonView> JsonView::find(std::string_view key) const {
  if (!value_->is_object()) fail("an object");
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonView(*it, child_path(path_, key));
}

std::size_t JsonView::size() const {
  if (!value_->is_array()) fail("an array");
  return value_->size();
}

JsonView JsonView::operator[](std::size_t index) const {
  return JsonView((*value_)[index], fmt::format("{}[{}]", path_, index));
}

void JsonView::allow_only(std::initializer_list<std::string_view> known) const {
  allow_only(std::span<const std::string_view>(known.begin(), known.size()));
}

void JsonView::allow_only(std::span<const FieldDoc> known) const {
  allow_only(field_names(known));
}

void JsonView::allow_only(std::span<const std::string_view> known) const {
  if (!value_->is_object()) fail("an object");
  for (const auto& [key, value] : value_->items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) {
      // "$schema": the file's JSON Schema, for editors; a string, as the schema says.
      if (key.starts_with('$') && !value.is_string())
        (*this)[key].fail("a string (the address of the file's JSON Schema, for editors)");
      continue;
    }
    std::vector<std::string> names;  // offered in messages: not "$schema", which is for editors
    for (std::string_view k : known)  // each once: lists joined from several tables repeat some
      if (!k.starts_with('$') && std::find(names.begin(), names.end(), k) == names.end())
        names.emplace_back(k);
    const std::string where = child_path(path_, key);
    if (auto near = nearest_word(key, names))
      throw InputError(where, fmt::format("unknown field; did you mean \"{}\"?", *near));
    throw InputError(where, fmt::format("unknown field; known fields: {}", join(names)));
  }
}

std::string JsonView::as_string() const {
  if (!value_->is_string()) fail("a string");
  std::string s = value_->get<std::string>();
  // An escaped NUL (\u0000) passed the raw-byte check and ended up in report.html.
  if (s.find('\0') != std::string::npos) fail("a string without a NUL character (\\u0000)");
  return s;
}

std::string JsonView::as_name() const {
  constexpr const char* kExpected = "a name of 1 to 256 characters without control characters";
  if (!value_->is_string()) fail(kExpected);
  std::string s = value_->get<std::string>();
  const bool control = std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (s.empty() || s.size() > kMaxNameLength || control) fail(kExpected);
  return s;
}

std::string JsonView::as_choice(const std::vector<std::string>& choices) const {
  if (!value_->is_string()) fail(fmt::format("one of {}", join(choices)));
  std::string s = value_->get<std::string>();
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  if (auto near = nearest_word(s, choices))
    fail_message(fmt::format("unknown value \"{}\"; did you mean \"{}\"? (one of {})", s, *near,
                             join(choices)));
  fail(fmt::format("one of {}", join(choices)));
}

std::int64_t JsonView::as_int(std::int64_t min, std::int64_t max) const {
  const std::string expected = fmt::format("an integer in {}..{}", min, max);
  if (value_->is_number_float()) {  // "got 1.0" read as if 1.0 were one
    const double v = value_->get<double>();
    if (std::isfinite(v) && std::trunc(v) == v && std::abs(v) < 1e18)
      fail_message(
          fmt::format("expected {}, got {}: write it as {}, without a decimal point or "
                      "exponent",
                      expected, describe(*value_), static_cast<std::int64_t>(v)));
  }
  // Past int64 (an unsigned 2^63 or more) is out of any range, not wrapped to a negative.
  if (!value_->is_number_integer() ||
      (value_->is_number_unsigned() &&
       value_->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
    fail(expected);
  const std::int64_t v = value_->get<std::int64_t>();
  if (v < min || v > max) fail(fmt::format("an integer in {}..{}", min, max));
  return v;
}

double JsonView::as_number() const {
  if (!value_->is_number()) fail("a number");
  return value_->get<double>();
}

bool JsonView::as_bool() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

std::int64_t JsonView::as_size() const {
  constexpr std::string_view kWhat = "a size like \"64MiB\", \"1GB\" or a byte count";
  std::optional<std::int64_t> v;
  if (value_->is_number_integer() && value_->get<std::int64_t>() >= 0)
    v = value_->get<std::int64_t>();
  else if (value_->is_number_unsigned())
    v = kMaxBytes + 1;  // beyond int64: refused as too large below
  else if (value_->is_string())
    v = parse_size(value_->get<std::string>());
  if (!v) fail(kWhat);
  if (*v > kMaxBytes) fail("a size of at most 1 PiB (2^50 bytes)");
  return *v;
}

double JsonView::as_bandwidth() const {
  std::optional<double> v;
  if (value_->is_string()) v = parse_bandwidth(value_->get<std::string>());
  if (!v) fail("a positive bandwidth like \"450GB/s\" or \"400Gbps\"");
  check_bandwidth(*v);
  return *v;
}

double JsonView::as_duration() const {
  std::optional<double> v;
  if (value_->is_number() && value_->get<double>() >= 0)
    v = value_->get<double>();
  else if (value_->is_string())
    v = parse_duration(value_->get<std::string>());
  if (!v) fail("a duration like \"5us\", \"1.5ms\" or \"100ns\"");
  check_duration(*v);
  return *v;
}

void JsonView::check_bandwidth(double bytes_per_second) const {
  // A transfer time must be a number of picoseconds the clock can hold.
  if (!(bytes_per_second >= kMinBandwidth && bytes_per_second <= kMaxBandwidth))
    fail("a bandwidth between 1 B/s and 1 PB/s (1e15 B/s)");
}

void JsonView::check_duration(double seconds) const {
  if (!(seconds >= 0 && seconds <= kMaxDuration)) fail("a duration from 0 to 1 hour (3600 s)");
}

std::vector<int> JsonView::as_int_list(std::int64_t min, std::int64_t max) const {
  if (!value_->is_array()) fail("an array of integers");
  std::vector<int> out;
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.push_back(static_cast<int>((*this)[i].as_int(min, max)));
  return out;
}

std::vector<std::string> JsonView::as_string_list() const {
  if (!value_->is_array()) fail("an array of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < value_->size(); ++i) out.push_back((*this)[i].as_string());
  return out;
}

void JsonView::fail(std::string_view expectation) const {
  throw InputError(path_, fmt::format("expected {}, got {}", expectation, describe(*value_)));
}

void JsonView::fail_message(std::string_view message) const {
  throw InputError(path_, std::string(message));
}

namespace {

struct TextPosition {
  std::size_t line = 1, column = 1;
};

TextPosition position_at(std::string_view text, std::size_t offset) {
  TextPosition p;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

[[noreturn]] void fail_at(std::string_view text, std::size_t offset, const std::string& source,
                          std::string_view problem) {
  const TextPosition p = position_at(text, offset);
  throw InputError(
      source, fmt::format("malformed JSON at line {}, column {}: {}", p.line, p.column, problem));
}

// A key written with escapes (`quoted`, its quotes included), as it reads, kept in `store`;
// as written where it is no valid JSON string (the parser then says why).
std::string_view decoded_key(std::string_view quoted, std::deque<std::string>& store) {
  const nlohmann::json key = nlohmann::json::parse(quoted, nullptr, false);
  store.push_back(key.is_string() ? key.get<std::string>()
                                  : std::string(quoted.substr(1, quoted.size() - 2)));
  return store.back();
}

// What nlohmann's parser does not refuse by itself, found before it runs: a NUL byte
// (its lexer takes one for the end of the text and ignores the rest), nesting deeper
// than kMaxJsonDepth (its parser recurses, so 100k brackets overflow the stack), numbers
// beyond a double (it throws out_of_range with no position), and a key an object already
// has (it keeps the last silently: {"bytes": "1KiB", "bytes": "1GiB"} ran 1 GiB). One
// linear pass; keys are compared as they read, escapes decoded ("n\u0061me" is "name").
void prescan_json(std::string_view text, const std::string& source) {
  struct Scope {
    bool object = false;
    bool expect_key = false;  // objects: after { or ,
    std::unordered_set<std::string_view> keys;
  };
  // The keys written with escapes, as they read: here, not in a Scope, whose copies (the
  // vector growing) would leave the views of `keys` pointing at freed strings.
  std::deque<std::string> decoded;
  std::vector<Scope> scopes;  // kept as the parse goes, so few allocations
  std::size_t open = 0;
  bool in_string = false, string_is_key = false;
  std::size_t string_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\0') fail_at(text, i, source, "a NUL byte; JSON text cannot contain one");
    if (in_string) {
      if (ch == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (ch == '"') {
        in_string = false;
        std::string_view key = text.substr(string_start + 1, i - string_start - 1);
        if (string_is_key && key.find('\\') != std::string_view::npos)
          key = decoded_key(text.substr(string_start, i - string_start + 1), decoded);
        if (string_is_key && !scopes[open - 1].keys.insert(key).second)
          fail_at(text, string_start, source,
                  fmt::format("the key \"{}\" appears twice in its object (a JSON parser keeps "
                              "one of the two): say it once",
                              key));
      }
      continue;
    }
    Scope* scope = open > 0 ? &scopes[open - 1] : nullptr;
    if (ch == '"') {
      in_string = true;
      string_start = i;
      string_is_key = scope && scope->object && scope->expect_key;
      if (string_is_key) scope->expect_key = false;
    } else if (ch == '[' || ch == '{') {
      if (open + 1 > static_cast<std::size_t>(kMaxJsonDepth))
        fail_at(text, i, source,
                fmt::format("nested deeper than {} levels of arrays and objects", kMaxJsonDepth));
      if (open == scopes.size()) scopes.emplace_back();
      Scope& s = scopes[open++];
      s.object = ch == '{';
      s.expect_key = s.object;
      s.keys.clear();
    } else if (ch == ']' || ch == '}') {
      if (open > 0) --open;
    } else if (ch == ',') {
      if (scope && scope->object) scope->expect_key = true;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
      std::size_t end = i;
      while (end < text.size() && std::strchr("+-0123456789.eE", text[end]) && text[end] != '\0')
        ++end;
      const std::string number(text.substr(i, end - i));
      const double v = std::strtod(number.c_str(), nullptr);
      if (!std::isfinite(v))
        fail_at(text, i, source,
                fmt::format("the number {} is out of range (at most about 1.8e308)", number));
      // 1e-400 would read as 0 and be reported, used or refused as 0: not what was written.
      const std::string_view mantissa =
          std::string_view(number).substr(0, number.find_first_of("eE"));
      if (v == 0 && mantissa.find_first_of("123456789") != std::string_view::npos)
        fail_at(text, i, source,
                fmt::format("the number {} is too small for a double (it would read as 0; the "
                            "least is about 4.9e-324): write 0 if 0 is meant",
                            number));
      i = end - 1;
    }
  }
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& source_name) {
  prescan_json(text, source_name);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; people want line and column.
    std::string what = e.what();
    if (auto p = what.find("syntax error while parsing"); p != std::string::npos)
      what = what.substr(p);
    fail_at(text, e.byte == 0 ? 0 : e.byte - 1, source_name, what);
  } catch (const nlohmann::json::exception& e) {
    // The prescan should leave nothing else (out_of_range 406 is a number overflow);
    // still an input problem, not an internal one.
    throw InputError(source_name, fmt::format("malformed JSON: {}", e.what()));
  }
}

nlohmann::json read_json_file(const std::string& path, const std::string& where) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError(where, fmt::format("cannot open file \"{}\"", path));
  // A regular file of bounded size: a FIFO would block, /dev/zero never end.
  return parse_json_text(read_input_file(path, kMaxJsonFileBytes, "a JSON file"), path);
}

}  // namespace collsim
