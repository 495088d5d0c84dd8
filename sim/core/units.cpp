#include "core/units.h"

#include <fmt/format.h>
#include <cctype>
#include <charconv>
#include <cmath>
#include <span>

namespace collsim {
namespace {

struct NumberAndUnit {
  double value;
  std::string_view unit;
};

std::optional<NumberAndUnit> split_number(std::string_view text) {
  text = trim(text);
  // No sign: from_chars reads "-0", and no size, rate or duration is negative.
  if (text.starts_with('-')) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || !std::isfinite(value)) return std::nullopt;
  return NumberAndUnit{value, trim(std::string_view(end, text.data() + text.size() - end))};
}

// Decimal (k, M, G, T) and binary (Ki, Mi, Gi, Ti) prefixes; consumes the prefix.
std::optional<double> take_prefix(std::string_view& unit) {
  static constexpr struct {
    std::string_view prefix;
    double factor;
  } kPrefixes[] = {{"Ki", 1024.0},
                   {"Mi", 1024.0 * 1024},
                   {"Gi", 1024.0 * 1024 * 1024},
                   {"Ti", 1024.0 * 1024 * 1024 * 1024},
                   {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024},
                   {"k", 1e3},
                   {"K", 1e3},
                   {"M", 1e6},
                   {"G", 1e9},
                   {"T", 1e12},
                   {"P", 1e15}};
  for (const auto& p : kPrefixes) {
    if (unit.starts_with(p.prefix) && unit.size() > p.prefix.size()) {
      unit.remove_prefix(p.prefix.size());
      return p.factor;
    }
  }
  return 1.0;
}

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<std::int64_t> parse_size(std::string_view text) {
  auto nu = split_number(text);
  if (!nu || nu->value < 0) return std::nullopt;
  std::string_view unit = nu->unit;
  double factor = 1;
  if (!unit.empty()) {
    factor = *take_prefix(unit);
    if (unit != "B") return std::nullopt;
  }
  const double bytes = nu->value * factor;
  if (bytes > 9.0e18 || std::floor(bytes) != bytes) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

std::optional<double> parse_bandwidth(std::string_view text) {
  auto nu = split_number(text);
  if (!nu || nu->value <= 0) return std::nullopt;
  std::string_view unit = nu->unit;
  const double factor = *take_prefix(unit);
  double bits_or_bytes;
  if (unit == "B/s" || unit == "Bps")
    bits_or_bytes = 1;
  else if (unit == "b/s" || unit == "bps")
    bits_or_bytes = 1.0 / 8;
  else
    return std::nullopt;
  return nu->value * factor * bits_or_bytes;
}

std::optional<double> parse_duration(std::string_view text) {
  auto nu = split_number(text);
  if (!nu || nu->value < 0) return std::nullopt;
  static constexpr struct {
    std::string_view unit;
    double seconds;
  } kUnits[] = {{"s", 1},     {"ms", 1e-3},  {"us", 1e-6}, {"\xC2\xB5s", 1e-6},
                {"ns", 1e-9}, {"ps", 1e-12}, {"min", 60}};
  for (const auto& u : kUnits) {
    if (nu->unit == u.unit) return nu->value * u.seconds;
  }
  return std::nullopt;
}

namespace {

// A value's figure in this unit is value x times / over: the operations figures were
// always computed with (seconds x 1e3, bytes/s / 1e9), so that they round as before.
struct DisplayUnit {
  std::string_view name;
  double times = 1, over = 1;
  double figure(double value) const { return value * times / over; }
};

// `value` in the first of `units` (smallest first) where it rounds below 10^digits, or
// in the last: each unit while its figure has at most `digits` digits before the point.
std::string in_units(double value, std::span<const DisplayUnit> units, int digits) {
  const double limit = std::pow(10.0, digits) - 0.5;
  std::size_t u = 0;
  while (u + 1 < units.size() && std::fabs(units[u].figure(value)) >= limit) ++u;
  return fmt::format("{} {}", format_significant(units[u].figure(value), digits), units[u].name);
}

}  // namespace

std::string format_significant(double value, int digits) {
  const double a = std::fabs(value);
  // Past 10^digits {:.Ng} switches to e-notation: a whole number, all its digits.
  if (a >= std::pow(10.0, digits) - 0.5) return fmt::format("{:.0f}", value);
  // Below 10^-4 too: as many decimals as the digits need. (NaN and 0 take {:.Ng}.)
  if (a > 0 && a < 1e-4) {
    const int decimals = digits - 1 - static_cast<int>(std::floor(std::log10(a)));
    std::string s = fmt::format("{:.{}f}", value, decimals);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  }
  return fmt::format("{:.{}g}", value, digits);
}

std::string format_bytes(std::int64_t bytes) {
  static constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  if (v == std::floor(v)) return fmt::format("{:.0f} {}", v, kUnits[u]);
  return fmt::format("{} {}", format_significant(v, 3), kUnits[u]);
}

std::string format_duration(double seconds) {
  static constexpr DisplayUnit kUnits[] = {{"ns", 1e9}, {"us", 1e6},    {"ms", 1e3},
                                           {"s", 1, 1}, {"min", 1, 60}, {"h", 1, 3600}};
  if (seconds == 0) return "0 s";
  return in_units(seconds, kUnits, 3);
}

std::string format_bandwidth(double bytes_per_second) {
  // GB/s the smallest: link rates read alike (0.125 GB/s beside 50 GB/s).
  static constexpr DisplayUnit kUnits[] = {{"GB/s", 1, 1e9}, {"TB/s", 1, 1e12}, {"PB/s", 1, 1e15}};
  return in_units(bytes_per_second, kUnits, 4);
}

}  // namespace collsim
