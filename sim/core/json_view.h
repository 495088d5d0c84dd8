#pragma once
// Reading user JSON with errors that name the exact place: every accessor knows
// its JSON path (`collectives[2].bytes`) and failures say what was expected.
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/field_doc.h"

namespace collsim {

class JsonView {
 public:
  JsonView(const nlohmann::json& value, std::string path)
      : value_(&value), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return *value_; }
  const std::string& path() const { return path_; }

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_string() const { return value_->is_string(); }
  bool has(std::string_view key) const;
  JsonView operator[](std::string_view key) const;  // required member
  std::optional<JsonView> find(std::string_view key) const;
  std::size_t size() const;  // array length (fails on non-arrays)
  JsonView operator[](std::size_t index) const;

  // Fails naming the nearest known key when the object has a member not in `known`.
  void allow_only(std::initializer_list<std::string_view> known) const;
  void allow_only(std::span<const std::string_view> known) const;
  void allow_only(std::span<const FieldDoc> known) const;

  std::string as_string() const;
  // A name that reaches the outputs (tables, CSV, HTML, traces): 1 to kMaxNameLength
  // bytes, no control characters (a newline or a NUL would break a table row or a file).
  std::string as_name() const;
  // One of `choices`; the error lists them.
  std::string as_choice(const std::vector<std::string>& choices) const;
  std::int64_t as_int(std::int64_t min, std::int64_t max) const;
  double as_number() const;
  bool as_bool() const;
  // Each within the bounds in core/units.h (kMaxBytes, kMinBandwidth..kMaxBandwidth,
  // kMaxDuration), so simulated byte counts and times cannot overflow.
  std::int64_t as_size() const;  // bytes: 1048576, "64MiB", "1GB"
  double as_bandwidth() const;   // bytes/s: "450GB/s", "400Gbps"
  double as_duration() const;    // seconds: "5us", "1.5ms"; a plain number is seconds
  // The same bounds on a plain number (a calibration file's bandwidth_Bps, alpha_s).
  void check_bandwidth(double bytes_per_second) const;
  void check_duration(double seconds) const;
  std::vector<int> as_int_list(std::int64_t min, std::int64_t max) const;
  std::vector<std::string> as_string_list() const;

  [[noreturn]] void fail(std::string_view expectation) const;      // "path: expected X, got Y"
  [[noreturn]] void fail_message(std::string_view message) const;  // "path: message"

 private:
  const nlohmann::json* value_;
  std::string path_;
};

inline constexpr std::size_t kMaxNameLength = 256;

// Deepest nesting of arrays and objects a JSON input may have; scenarios need a handful.
inline constexpr int kMaxJsonDepth = 64;

// Parses JSON text; a syntax error, a NUL byte, nesting deeper than kMaxJsonDepth or a
// number beyond a double becomes an InputError with line and column.
nlohmann::json parse_json_text(std::string_view text, const std::string& source_name);
// At most kMaxJsonFileBytes, from a regular file (core/input_file.h).
nlohmann::json read_json_file(const std::string& path, const std::string& where);
inline constexpr std::uintmax_t kMaxJsonFileBytes = std::uintmax_t{256} << 20;

// The candidate nearest to `word` by edit distance, if any is reasonably close.
std::optional<std::string> nearest_word(std::string_view word,
                                        const std::vector<std::string>& candidates);

}  // namespace collsim
