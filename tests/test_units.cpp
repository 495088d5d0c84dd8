#include <catch2/catch.hpp>

#include "core/time.h"
#include "core/units.h"
#include "core/utf8.h"

using namespace collsim;

TEST_CASE("sizes: decimal and binary prefixes differ") {
  CHECK(parse_size("1GB") == 1'000'000'000);
  CHECK(parse_size("1GiB") == 1073741824);
  CHECK(parse_size("64MiB") == 64 * 1048576);
  CHECK(parse_size("64MB") == 64'000'000);
  CHECK(parse_size("1KiB") == 1024);
  CHECK(parse_size("1kB") == 1000);
  CHECK(parse_size("512") == 512);
  CHECK(parse_size("512B") == 512);
  CHECK(parse_size(" 1.5 KiB ") == 1536);
}

TEST_CASE("sizes: malformed or negative text is rejected") {
  CHECK_FALSE(parse_size("-5"));
  CHECK_FALSE(parse_size("-0"));  // from_chars reads the sign; no size has one
  CHECK_FALSE(parse_duration("-0us"));
  CHECK_FALSE(parse_size("1Gb"));  // bits are not a size
  CHECK_FALSE(parse_size("abc"));
  CHECK_FALSE(parse_size("1.3B"));  // not a whole byte
  CHECK_FALSE(parse_size("10 parsecs"));
  CHECK_FALSE(parse_size(""));
}

TEST_CASE("bandwidth: bits and bytes per second") {
  CHECK(*parse_bandwidth("25GB/s") == Approx(25e9));
  CHECK(*parse_bandwidth("400Gbps") == Approx(50e9));
  CHECK(*parse_bandwidth("400Gb/s") == Approx(50e9));
  CHECK(*parse_bandwidth("450GBps") == Approx(450e9));
  CHECK(*parse_bandwidth("1GiB/s") == Approx(1073741824.0));
  CHECK(*parse_bandwidth("100Mbps") == Approx(12.5e6));
  CHECK_FALSE(parse_bandwidth("0GB/s"));
  CHECK_FALSE(parse_bandwidth("-1GB/s"));
  CHECK_FALSE(parse_bandwidth("25GB"));
  CHECK_FALSE(parse_bandwidth("fast"));
}

TEST_CASE("durations: s, ms, us, ns, ps") {
  CHECK(*parse_duration("5us") == Approx(5e-6));
  CHECK(*parse_duration("5\xC2\xB5s") == Approx(5e-6));
  CHECK(*parse_duration("1.5ms") == Approx(1.5e-3));
  CHECK(*parse_duration("100ns") == Approx(100e-9));
  CHECK(*parse_duration("2s") == Approx(2.0));
  CHECK(*parse_duration("7ps") == Approx(7e-12));
  CHECK_FALSE(parse_duration("5"));  // a string needs its unit
  CHECK_FALSE(parse_duration("5 hours"));
  CHECK_FALSE(parse_duration("-1us"));
}

TEST_CASE("time: picoseconds round-trip and transfer time rounding") {
  CHECK(from_seconds(5e-6) == 5'000'000);
  CHECK(to_seconds(from_seconds(85.9e-6)) == Approx(85.9e-6));
  // 1 MiB at 450 GB/s = 2330.168... ns
  CHECK(transfer_time(1 << 20, 450e9) == 2'330'169);
}

TEST_CASE("formatting names its units") {
  CHECK(format_bytes(16 * 1048576) == "16 MiB");
  CHECK(format_bytes(1000) == "1000 B");
  CHECK(format_duration(85.9e-6) == "85.9 us");
  CHECK(format_duration(2.4e-3) == "2.4 ms");
}

TEST_CASE("formatting: every figure in plain notation, the unit growing with it") {
  CHECK(format_duration(319) == "319 s");
  CHECK(format_duration(1280) == "21.3 min");
  CHECK(format_duration(999.7e-3) == "1 s");  // rounds up into the next unit
  CHECK(format_duration(999.7e-9) == "1 us");
  CHECK(format_duration(90'000) == "25 h");
  CHECK(format_duration(9e6) == "2500 h");  // the largest unit takes every digit
  CHECK(format_duration(5e-10) == "0.5 ns");
  CHECK(format_duration(2e-14) == "0.00002 ns");  // ns the smallest unit
  CHECK(format_bandwidth(450e9) == "450 GB/s");
  CHECK(format_bandwidth(3.2e12) == "3200 GB/s");
  CHECK(format_bandwidth(5.12e13) == "51.2 TB/s");
  CHECK(format_bandwidth(0.125e9) == "0.125 GB/s");
  CHECK(format_bandwidth(1) == "0.000000001 GB/s");
  CHECK(format_bytes(std::int64_t{1000} * 1048576 + 524288) == "1000 MiB");
  CHECK(format_bytes(std::int64_t{3} << 50) == "3 PiB");
  CHECK(format_significant(51234, 3) == "51234");
  CHECK(format_significant(2.5, 3) == "2.5");
  CHECK(format_significant(1.234e-5, 3) == "0.0000123");
  CHECK(format_significant(-2e-6, 3) == "-0.000002");
  CHECK(format_significant(0, 3) == "0");
}

TEST_CASE("UTF-8: well-formed text is kept, each stray byte becomes U+FFFD") {
  CHECK(valid_utf8("ring \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80") ==
        "ring \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80");
  CHECK(valid_utf8("sc\xff") == "sc\xef\xbf\xbd");
  // Overlong, a surrogate, truncated: each byte replaced.
  CHECK(valid_utf8("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(valid_utf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(valid_utf8("a\xe2\x82") == "a\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(decode_utf8("\xe2\x82\xac", 0) == std::pair<char32_t, int>{0x20AC, 3});
}
