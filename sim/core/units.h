#pragma once
// Parsing and printing of sizes, bandwidths and durations.
// GB = 1e9 bytes, GiB = 2^30; "B" is bytes and "b" is bits (400Gbps = 50 GB/s).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace collsim {

// Each parser returns nullopt when the text is not of its form; callers turn that
// into an InputError naming the JSON path.
std::optional<std::int64_t> parse_size(std::string_view text);  // bytes
std::optional<double> parse_bandwidth(std::string_view text);   // bytes per second
std::optional<double> parse_duration(std::string_view text);    // seconds

std::string format_bytes(std::int64_t bytes);           // "16 MiB", "1000 B", "1.5 GiB"
std::string format_duration(double seconds);            // "85.9 us", "2.40 ms"
std::string format_bandwidth(double bytes_per_second);  // "450 GB/s"

}  // namespace collsim
