// report/json_text.h writes what nlohmann's dump(2) writes, without a document: every
// value kind result.json holds, checked against nlohmann itself.
#include "report/json_text.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

using namespace collsim;

namespace {

template <class T>
std::string written(const T& v) {
  std::string out;
  append_json(out, v);
  return out;
}

}  // namespace

TEST_CASE("json_text: numbers as nlohmann writes them", "[json_text]") {
  // Doubles of every magnitude and shape: integral ones keep their ".0", the exponent
  // form starts where nlohmann's does, the shortest digits that read back.
  std::vector<double> doubles = {0.0,
                                 -0.0,
                                 1.0,
                                 -2.0,
                                 0.1,
                                 1e-5,
                                 1e-4,
                                 1e15,
                                 1e16,
                                 1e17,
                                 123456789012345678.0,
                                 4.5e11,
                                 1e300,
                                 -1e-300,
                                 5e-324,
                                 std::numeric_limits<double>::max(),
                                 1.0 / 3,
                                 2.0 / 3e9,
                                 0.5};
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) {
    std::uint64_t bits = random();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d)) doubles.push_back(d);
    doubles.push_back(static_cast<double>(random() % 1000000) / std::pow(10.0, random() % 24));
  }
  for (double d : doubles) {
    INFO(d);
    REQUIRE(written(d) == nlohmann::json(d).dump());
  }
  // Not finite: null, as nlohmann writes it.
  CHECK(written(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(written(std::numeric_limits<double>::infinity()) == nlohmann::json(HUGE_VAL).dump());
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::int64_t>::max()})
    CHECK(written(v) == nlohmann::json(v).dump());
  CHECK(written(std::numeric_limits<std::uint64_t>::max()) ==
        nlohmann::json(std::numeric_limits<std::uint64_t>::max()).dump());
  CHECK(written(-7) == "-7");  // an int is an integer, not a double
  CHECK(written(std::size_t{7}) == "7");
}

TEST_CASE("json_text: strings escaped as nlohmann escapes them", "[json_text]") {
  for (const std::string& s :
       {std::string(""), std::string("ring/Simple/24ch"), std::string("a \"quoted\" name"),
        std::string("back\\slash"), std::string("tab\there\nnewline\r\b\f"),
        std::string("\x01\x1f\x7f"), std::string("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80"),
        std::string("nul\0byte", 8)}) {
    INFO(s);
    CHECK(written(s) == nlohmann::json(s).dump());
  }
  // Not UTF-8: refused as nlohmann refuses it, not written half-escaped.
  CHECK_THROWS_AS(written(std::string("\xff")), nlohmann::json::type_error);
}

TEST_CASE("json_text: objects sorted by key and indented as dump(2)", "[json_text]") {
  const std::vector<std::int64_t> ints = {3, -1, 2};
  const std::vector<double> none;
  JsonObjectText inner(1);
  inner.add("zeta", 1.5).add("alpha", nullptr);
  JsonObjectText outer(0);
  outer.add("name", "c0")
      .add_array<std::int64_t>("ranks", ints)
      .add_array<double>("empty", none)
      .add_text("inner", inner.text())
      .add_text("nothing", JsonObjectText(1).text())
      .add("bytes", std::int64_t{4096})
      .add("Bytes", 2.0)  // capitals sort first, as std::map orders them
      .add("b", std::uint64_t{1});
  const nlohmann::json expected = {{"name", "c0"},
                                   {"ranks", ints},
                                   {"empty", nlohmann::json::array()},
                                   {"inner", {{"zeta", 1.5}, {"alpha", nullptr}}},
                                   {"nothing", nlohmann::json::object()},
                                   {"bytes", std::int64_t{4096}},
                                   {"Bytes", 2.0},
                                   {"b", std::uint64_t{1}}};
  CHECK(outer.text() == expected.dump(2));
  CHECK(JsonObjectText(3).text() == "{}");
  // A key twice would be written twice, where a document keeps one: refused.
  CHECK_THROWS_AS(JsonObjectText(0).add("x", 1).add("x", 2.0).text(), std::logic_error);
  // An empty optional is null.
  CHECK(JsonObjectText(0).add("d", std::optional<std::string>()).text() == "{\n  \"d\": null\n}");

  // An array of objects, inside an object.
  JsonArrayText links(1);
  for (int i = 0; i < 2; ++i)
    links.add_text(JsonObjectText(links.inner()).add("link", i).add("bytes", 0.25 * i).text());
  JsonObjectText holder(0);
  holder.add_text("hottest_links", links.text()).add_text("none", JsonArrayText(1).text());
  const nlohmann::json listed = {
      {"hottest_links", {{{"link", 0}, {"bytes", 0.0}}, {{"link", 1}, {"bytes", 0.25}}}},
      {"none", nlohmann::json::array()}};
  CHECK(holder.text() == listed.dump(2));
}
