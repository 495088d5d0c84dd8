#pragma once
// Parsing and printing of sizes, bandwidths and durations.
// GB = 1e9 bytes, GiB = 2^30; "B" is bytes and "b" is bits (400Gbps = 50 GB/s).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace collsim {

// `s` without the white space at either end.
std::string_view trim(std::string_view s);

// The largest values an input may give, so that every product and sum the simulator
// forms stays inside int64 bytes and the picosecond clock (2^63 ps, about 106 days).
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;  // one size: 1 PiB
inline constexpr double kMinBandwidth = 1;                        // bytes/s
inline constexpr double kMaxBandwidth = 1e15;                     // bytes/s: 1 PB/s
inline constexpr double kMaxDuration = 3600;                      // seconds: alpha, latencies

// Each parser returns nullopt when the text is not of its form; callers turn that
// into an InputError naming the JSON path.
std::optional<std::int64_t> parse_size(std::string_view text);  // bytes
std::optional<double> parse_bandwidth(std::string_view text);   // bytes per second
std::optional<double> parse_duration(std::string_view text);    // seconds

// Each figure in the unit that keeps it short, never in e-notation.
std::string format_bytes(std::int64_t bytes);           // "16 MiB", "1000 B", "1.5 GiB"
std::string format_duration(double seconds);            // "85.9 us", "2.4 ms", "21.3 min"
std::string format_bandwidth(double bytes_per_second);  // "450 GB/s", "51.2 TB/s"
// `value` to `digits` significant digits as {:.Ng} prints it (trailing zeros dropped),
// but in plain notation: 51200 rather than 5.12e+04, 0.00001 rather than 1e-05.
std::string format_significant(double value, int digits);

}  // namespace collsim
