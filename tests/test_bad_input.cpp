// Inputs found by fuzzing: each is refused with an InputError naming where the
// problem is and what was expected; none crashes, wraps or exits as an internal error.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/json_view.h"
#include "core/time.h"
#include "core/utf8.h"
#include "helpers.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

using namespace collsim;
using collsim::test::error_of;

using collsim::test::Outcome;
using collsim::test::run_collsim;
using collsim::test::slurp;
using collsim::test::temp_dir;

namespace {

const std::string kSwitch = R"({"preset": "switch", "gpus": 4, "bandwidth": "100GB/s"})";

std::string scenario(const std::string& topology, const std::string& collectives,
                     const std::string& network = "") {
  return R"({"topology": )" + topology + (network.empty() ? "" : R"(, "network": )" + network) +
         R"(, "collectives": [)" + collectives + "]}";
}

std::string all_reduce(const std::string& bytes) {
  return R"({"op": "all_reduce", "bytes": )" + bytes + "}";
}

}  // namespace

TEST_CASE("deep nesting is refused before the parser recurses") {
  const std::string deep(100000, '[');
  for (const auto& text :
       {scenario(kSwitch, all_reduce(deep)), scenario(deep, all_reduce("64")),
        scenario(kSwitch, R"({"op": "all_reduce", "bytes": 64, "name": )" + deep + "}")}) {
    const std::string e = error_of(text);
    CHECK_THAT(e, Catch::StartsWith("scenario.json: malformed JSON at line 1, column "));
    CHECK_THAT(e, Catch::EndsWith("nested deeper than 64 levels of arrays and objects"));
  }
  // 64 levels are still JSON (refused later, for what they mean).
  CHECK_THAT(error_of(scenario(kSwitch, all_reduce(std::string(61, '[') + std::string(61, ']')))),
             Catch::StartsWith("collectives[0].bytes: expected a size"));
}

TEST_CASE("a number beyond a double names its line and column") {
  CHECK(error_of("{\n  \"topology\": 1e400}") ==
        "scenario.json: malformed JSON at line 2, column 15: the number 1e400 is out of range "
        "(at most about 1.8e308)");
  CHECK_THAT(error_of(scenario(kSwitch, all_reduce("-1e400"))),
             Catch::Contains("the number -1e400 is out of range"));
  // Below the least double it would read as 0.
  CHECK(error_of("{\n  \"topology\": 1e-400}") ==
        "scenario.json: malformed JSON at line 2, column 15: the number 1e-400 is too small for "
        "a double (it would read as 0; the least is about 4.9e-324): write 0 if 0 is meant");
  CHECK_THAT(error_of(scenario(kSwitch, all_reduce("-0.0001e-330"))),
             Catch::Contains("the number -0.0001e-330 is too small"));
  // 0 written any way, and a number just above the least, read as written.
  for (const char* fine : {"0", "0.0e-400", "-0", "0e5", "5e-324"})
    CHECK_THAT(error_of(scenario(kSwitch, all_reduce(fine))),
               !Catch::Contains("too small for a double"));
  // Inside a string it is text, not a number.
  CHECK_THAT(error_of(scenario(kSwitch, all_reduce("\"1e400\""))),
             Catch::StartsWith("collectives[0].bytes: expected a size"));
}

TEST_CASE("a key twice in one object is refused where it is written, not last-one-wins") {
  // nlohmann keeps the last: {"bytes": "1KiB", "bytes": "1GiB"} once ran 1 GiB.
  CHECK(
      error_of("{\"topology\": \"dgx-h100\",\n \"collectives\": [{\"op\": \"all_reduce\", "
               "\"bytes\": \"1KiB\", \"bytes\": \"1GiB\"}]}") ==
      "scenario.json: malformed JSON at line 2, column 56: the key \"bytes\" appears twice in its "
      "object (a JSON parser keeps one of the two): say it once");
  // The same key in two objects, or as a value, or inside a string, is fine.
  CHECK_THAT(
      error_of(scenario(kSwitch, all_reduce("64") + ", " +
                                     R"({"op": "all_reduce", "bytes": 64, "name": "bytes"})")),
      !Catch::Contains("twice"));
  CHECK_THAT(
      error_of(scenario(kSwitch, R"({"op": "all_reduce", "bytes": 64, "name": "a\"bytes\""})")),
      !Catch::Contains("twice"));
  // Deeper down too, after nested objects and arrays.
  CHECK_THAT(
      error_of(scenario(
          kSwitch,
          R"({"op": "all_reduce", "bytes": 64, "levels": [{"size": 2}, {"size": 2, "size": 4}]})")),
      Catch::Contains("the key \"size\" appears twice"));
  // Spelled with an escape, it is the same key: the last once won ("n\u0061me").
  CHECK_THAT(error_of(scenario(
                 kSwitch, R"({"op": "all_reduce", "bytes": 64, "name": "a", "n\u0061me": "z"})")),
             Catch::Contains("the key \"name\" appears twice"));
  CHECK_THAT(error_of(scenario(kSwitch, R"({"op": "all_reduce", "bytes": 64, "n\u0061me": "a", )"
                                        R"("\u006e\u0061me": "z"})")),
             Catch::Contains("the key \"name\" appears twice"));
  // An escaped key, then objects nested deeper than any before (the scopes' storage grows),
  // then its duplicate: the decoded key is still there to compare (the sanitizer pass once
  // found it freed).
  std::string nested = R"({"op": "all_reduce", "bytes": 64, "n\u0061me": "a", "levels": )";
  for (int i = 0; i < 25; ++i) nested += R"([{"size": 2, "x": )";
  nested += "1";
  for (int i = 0; i < 25; ++i) nested += "}]";
  nested += R"(, "name": "z"})";
  CHECK_THAT(error_of(scenario(kSwitch, nested)),
             Catch::Contains("the key \"name\" appears twice"));
  // Escapes that read as other keys are other keys.
  CHECK_THAT(error_of(scenario(kSwitch, R"({"op": "all_reduce", "bytes": 64, "name": "a", )"
                                        R"("n\u0061mes": "z"})")),
             !Catch::Contains("twice"));
}

TEST_CASE("a NUL byte is refused, not taken for the end of the text") {
  std::string text = scenario(kSwitch, all_reduce("64"));
  text += std::string(1, '\0') + "garbage";
  CHECK(error_of(text) == "scenario.json: malformed JSON at line 1, column " +
                              std::to_string(text.find('\0') + 1) +
                              ": a NUL byte; JSON text cannot contain one");
  // Escaped, it is valid JSON, and it reached report.html as a raw NUL byte.
  CHECK_THAT(error_of(R"({"topology": "dgx-h100", "description": "d\u0000e",
                          "collectives": [{"op": "all_reduce", "bytes": "1MiB"}]})"),
             Catch::StartsWith("description: expected a string without a NUL character"));
}

TEST_CASE("durations beyond an hour are refused where they are written") {
  const std::string ring = R"({"preset": "ring", "gpus": 4, "bandwidth": "100GB/s", "latency": )";
  CHECK(error_of(scenario(ring + "\"1us\"}", all_reduce("64"), R"({"alpha": "1e7s"})")) ==
        "network.alpha: expected a duration from 0 to 1 hour (3600 s), got \"1e7s\"");
  CHECK(error_of(scenario(ring + "\"5000000s\"}", all_reduce("64"))) ==
        "topology.latency: expected a duration from 0 to 1 hour (3600 s), got \"5000000s\"");
  CHECK(error_of(scenario(ring + "\"1h\"}", all_reduce("64"))) ==
        "topology.latency: expected a duration like \"5us\", \"1.5ms\" or \"100ns\", got \"1h\"");
}

TEST_CASE("a simulated time past the clock's range is refused, never wrapped") {
  // Each value is within its bound; their sum over 600 collectives in a row is not.
  std::string many = all_reduce("64");
  for (int i = 0; i < 600; ++i) many += ", " + all_reduce("64");
  const std::string ring =
      R"({"preset": "ring", "gpus": 4, "bandwidth": "100GB/s", "latency": "3000s"})";
  CHECK_THAT(error_of(scenario(ring, many, R"({"alpha": "3000s"})")),
             Catch::StartsWith("the simulated time passes 2^63 ps (about 106 days)"));
  // One transfer of 1 PiB at 1 B/s is 35 million years.
  CHECK_THAT(error_of(scenario(R"({"preset": "switch", "gpus": 2, "bandwidth": "1B/s"})",
                               all_reduce("\"1024TiB\""))),
             Catch::StartsWith("the simulated time passes 2^63 ps"));
  for (const char* network : {R"({"model": "flow"})", R"({"packet": "1TiB", "model": "packet"})"})
    CHECK_THAT(error_of(scenario(R"({"preset": "switch", "gpus": 2, "bandwidth": "1B/s"})",
                                 all_reduce("\"1024TiB\""), network)),
               Catch::StartsWith("the simulated time passes 2^63 ps"));
  // A packet size is the packet model's alone: under flow it was accepted and ignored.
  CHECK(error_of(scenario(R"({"preset": "switch", "gpus": 2, "bandwidth": "1B/s"})",
                          all_reduce("64"), R"({"packet": "1TiB", "model": "flow"})")) ==
        "network.packet: only the packet model cuts transfers into packets; the flow model "
        "ignores it: leave it out, or set \"model\": \"packet\"");
  CHECK_THROWS_AS(add_time(kTimeNever - 5, 10), InputError);
  CHECK_THROWS_AS(add_time(kTimeNever - 5, 5), InputError);  // kTimeNever is the sentinel
  CHECK(add_time(kTimeNever - 5, 4) == kTimeNever - 1);
  CHECK_THROWS_AS(transfer_time(std::int64_t{1} << 50, 1.0), InputError);
  CHECK_THROWS_AS(from_seconds(1e10), InputError);
}

TEST_CASE("sizes and bandwidths whose products would overflow are refused at load") {
  CHECK(error_of(scenario(kSwitch, all_reduce("\"8000000000000000000B\""))) ==
        "collectives[0].bytes: expected a size of at most 1 PiB (2^50 bytes), got "
        "\"8000000000000000000B\"");
  CHECK(error_of(scenario(kSwitch, all_reduce("18446744073709551615"))) ==
        "collectives[0].bytes: expected a size of at most 1 PiB (2^50 bytes), got "
        "18446744073709551615");
  CHECK(error_of(scenario(kSwitch, all_reduce("\"1025TiB\""))) ==
        "collectives[0].bytes: expected a size of at most 1 PiB (2^50 bytes), got \"1025TiB\"");
  for (const char* bw : {"1e-300B/s", "0.5B/s", "2000TB/s"})
    CHECK(error_of(scenario(
              std::string(R"({"preset": "switch", "gpus": 4, "bandwidth": ")") + bw + "\"}",
              all_reduce("64"))) ==
          std::string("topology.bandwidth: expected a bandwidth between 1 B/s and 1 PB/s (1e15 "
                      "B/s), got \"") +
              bw + "\"");
  // 1 TiB on 1024 ranks is 2^50 bytes x ranks; seventeen of them pass 2^54.
  std::string many = all_reduce("\"1TiB\"");
  for (int i = 1; i < 17; ++i) many += ", " + all_reduce("\"1TiB\"");
  CHECK(error_of(scenario(R"({"preset": "switch", "gpus": 1024, "bandwidth": "100GB/s"})", many)) ==
        "collectives[16]: the scenario's data, bytes x ranks summed over its collectives, passes "
        "2^54 bytes (16 PiB), more than collsim counts");
  CHECK(
      error_of(scenario(
          kSwitch,
          R"({"op": "all_to_all", "routing": {"tokens_per_rank": 1099511627776, "experts": 4, "bytes_per_token": "1TiB"}})")) ==
      "collectives[0].routing: the routed data, tokens x bytes_per_token summed, passes 1 PiB "
      "(2^50 bytes), the largest size collsim takes");
}

TEST_CASE("calibration files are held to a scenario's bounds, naming file and field") {
  Scenario s = parse_scenario(nlohmann::json::parse(scenario(kSwitch, all_reduce("64"))), ".");
  auto error = [&](const char* text) {
    try {
      apply_calibration(s, nlohmann::json::parse(text), "cal.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string bw = "expected a bandwidth between 1 B/s and 1 PB/s (1e15 B/s), got ";
  CHECK(error(R"({"bandwidth_Bps": 0})") == "cal.json:bandwidth_Bps: " + bw + "0");
  CHECK(error(R"({"bandwidth_Bps": -3e9})") == "cal.json:bandwidth_Bps: " + bw + "-3000000000.0");
  CHECK(error(R"({"links": {"nvlink": {"bandwidth_Bps": 0}}})") ==
        "cal.json:links.nvlink.bandwidth_Bps: " + bw + "0");
  CHECK(error(R"({"alpha_s": -1e-6})") ==
        "cal.json:alpha_s: expected a duration from 0 to 1 hour (3600 s), got -1e-06");
  CHECK(error(R"({"alpha_s": 1e300})") ==
        "cal.json:alpha_s: expected a duration from 0 to 1 hour (3600 s), got 1e+300");
  CHECK(error(R"([1, 2])").starts_with("cal.json: expected a calibration object"));
  // A file that states nothing (an empty object, or an empty "links") changes nothing: the
  // wrong file, most likely; it was taken silently.
  for (const char* nothing : {R"({})", R"({"links": {}})", R"({"provenance": "x", "fit": {}})"})
    CHECK(error(nothing).starts_with("cal.json: states no term of the cost model"));
  CHECK(error(R"({"links": {"nvlink": {"efficiency": 0.9}}})") == "no error");
  CHECK(error(R"({"alpha_s": 2e-6, "bandwidth_Bps": 5e10})") == "no error");
  CHECK(s.network.alpha == from_seconds(2e-6));
}

TEST_CASE("names that reach the outputs carry no control characters") {
  const std::string expected = "expected a name of 1 to 256 characters without control characters";
  for (const std::string& bad : std::vector<std::string>{R"("a\nb")", R"("a\u0000b")", R"("tab\there")", R"("")",
                                "\"" + std::string(257, 'x') + "\""}) {
    INFO(bad);
    CHECK_THAT(error_of(scenario(kSwitch, R"({"name": )" + bad + R"(, "op": "all_reduce", "bytes": 64})")),
               Catch::StartsWith("collectives[0].name: " + expected));
  }
  CHECK(error_of(scenario(kSwitch, R"({"name": "ok </script> \"q\" \u00fc", "op": "all_reduce", "bytes": 64})")) ==
        "no error");
}

TEST_CASE("rank counts whose schedules would not fit in memory are refused before generating") {
  CHECK(error_of(scenario(R"({"preset": "switch", "gpus": 1048576, "bandwidth": "100GB/s"})",
                          all_reduce("64"))) ==
        "collectives[0]: 1048576 ranks x 1 segments x 1 channels: a schedule of up to "
        "2199023255552 ops, more than the 2^26 collsim holds in memory (about 230 TiB at "
        "115 bytes an op); use fewer ranks, segments or channels, or run it streamed (collsim run "
        "does so by itself for a collective that overlaps no other; an \"auto\", NVLS or "
        "pipelined one, in more than one segment, is stored all the same)");
  // 10,000 ranks in a ring: 2 x 10^8 ops, some 23 GB; it once passed the bound and then
  // ran out of memory.
  CHECK_THAT(error_of(scenario(R"({"preset": "switch", "gpus": 10000, "bandwidth": "100GB/s"})",
                               all_reduce("1073741824"))),
             Catch::Contains("a schedule of up to 200000000 ops, more than the 2^26"));
  CHECK_THAT(
      error_of(scenario(
          R"({"preset": "multidim", "dims": [{"shape": "fully_connected", "size": 65536, "bandwidth": "1GB/s"}]})",
          all_reduce("64"))),
      Catch::StartsWith(
          "topology: this preset would build 2147450880 links, more than the 16777216"));
  CHECK_THAT(error_of(scenario(
                 R"({"preset": "cluster", "nodes": 4, "gpus_per_node": 1024, "spines": 65536})",
                 all_reduce("64"))),
             Catch::StartsWith("topology: this preset would build"));
}

TEST_CASE("packet counts that would not fit in memory are refused at load") {
  CHECK(
      error_of(scenario(kSwitch, all_reduce("\"1TiB\""), R"({"model": "packet", "packet": 1})")) ==
      "network.packet: packets of 1 bytes make up to 8796093022208 packets of this scenario's "
      "data, more than the 2^28 collsim holds in memory; use larger packets or the flow model");
  CHECK_THAT(error_of(scenario(kSwitch, all_reduce("\"4TiB\""), R"({"model": "packet"})")),
             Catch::StartsWith("network.model: packets of 65536 bytes make up to 536870912"));
}

TEST_CASE("duplicate links and switches without links are refused") {
  const std::string nodes =
      R"("nodes": [{"name": "a", "kind": "gpu"}, {"name": "b", "kind": "gpu"}, {"name": "x", "kind": "switch"}])";
  auto link = [](const char* src, const char* dst, bool duplex = true) {
    return std::string(R"({"src": ")") + src + R"(", "dst": ")" + dst +
           R"(", "bandwidth": "1GB/s", "kind": "nvlink", "duplex": )" +
           (duplex ? "true" : "false") + "}";
  };
  auto topo = [&](const std::string& links) {
    return "{" + nodes + R"(, "links": [)" + links + "]}";
  };
  CHECK(error_of(scenario(topo(link("a", "x") + ", " + link("b", "x") + ", " + link("x", "a")),
                          all_reduce("64"))) ==
        "topology.links[2]: duplicate of links[0] (x -> a)");
  CHECK(error_of(scenario(topo(link("a", "b")), all_reduce("64"))) ==
        "topology.nodes[2]: switch \"x\" has no links");
  // One direction each way is two links, not a duplicate.
  CHECK(error_of(scenario(
            topo(link("a", "x", false) + ", " + link("x", "a", false) + ", " + link("b", "x")),
            all_reduce("64"))) == "no error");
  CHECK(
      error_of(scenario(topo(link("a", "x", false) + ", " + link("a", "x") + ", " + link("b", "x")),
                        all_reduce("64"))) == "topology.links[1]: duplicate of links[0] (a -> x)");
}

TEST_CASE("loading is linear in the number of collectives") {
  auto load_seconds = [](int n) {
    nlohmann::json doc = nlohmann::json::parse(scenario(kSwitch, all_reduce("64")));
    auto& list = doc["collectives"];
    list.clear();
    auto name = [](int i) { return fmt::format("c{}", i); };
    for (int i = 0; i < n; ++i) {
      nlohmann::json c = {{"name", name(i)}, {"op", "all_reduce"}, {"bytes", 64}};
      if (i > 0) c["after"] = {name(i - 1)};
      if (i > 2) c["after"].push_back(name(i / 2));  // another one: each is listed once
      list.push_back(std::move(c));
    }
    double best = 1e9;
    for (int trial = 0; trial < 2; ++trial) {
      const auto t0 = std::chrono::steady_clock::now();
      const Scenario s = parse_scenario(doc, ".");
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      REQUIRE(s.collectives.size() == static_cast<std::size_t>(n));
      CHECK(s.collectives.back().after == std::vector<int>{n - 2, (n - 1) / 2});
    }
    return best;
  };
  // Eight times the collectives: about eight times the time when linear (a little more
  // for caches), 64 times when quadratic (as it was: 16k took 0.7 s, 32k 2.9 s).
  // Under the sanitizers a quarter of the size: the same ratio, a quarter of the time.
  const int n = collsim::test::kSanitized ? 2500 : 10000;
  const double small = load_seconds(n), large = load_seconds(8 * n);
  INFO(n << ": " << small << " s, " << 8 * n << ": " << large << " s");
  CHECK(large < 24 * small);
}

// ---- The command line: exit status 2, one line, nothing written.

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;

fs::path write(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

}  // namespace

TEST_CASE("cli: bad calibration files exit 2 naming file and field") {
  const fs::path dir = temp_dir("calibration");
  write(dir, "zero.json", R"({"alpha_s": 1e-6, "bandwidth_Bps": 0})");
  write(dir, "kinds.json", R"({"links": {"nvlink": {"bandwidth_Bps": -5}}})");
  const fs::path with_cal = write(
      dir, "scenario.json", scenario(kSwitch, all_reduce("64"), R"({"calibration": "zero.json"})"));
  Outcome o = run_collsim("run " + with_cal.string() + " --out " + (dir / "out").string());
  CHECK(o.status == 2);
  CHECK(o.err == "collsim: error: " + (dir / "zero.json").string() +
                     ":bandwidth_Bps: expected a bandwidth between 1 B/s and 1 PB/s (1e15 B/s), "
                     "got 0\n");
  CHECK((!fs::exists(dir / "out") || fs::is_empty(dir / "out")));
  const fs::path plain = write(dir, "plain.json", scenario(kSwitch, all_reduce("64")));
  o = run_collsim("compare " + plain.string() + " --measured none.json --calibration " +
                  (dir / "kinds.json").string());
  CHECK(o.status == 2);
  CHECK(o.err == "collsim: error: " + (dir / "kinds.json").string() +
                     ":links.nvlink.bandwidth_Bps: expected a bandwidth between 1 B/s and 1 PB/s "
                     "(1e15 B/s), got -5\n");
}

TEST_CASE("cli: --out is all-or-nothing when a destination cannot be replaced") {
  const fs::path dir = temp_dir("outdir");
  const fs::path out = dir / "out";
  fs::create_directories(out / "steps.csv");  // a folder where a file goes
  write(out, "result.json", "old result");
  write(out, "links.csv", "old links");
  const fs::path file = write(dir, "s.json", scenario(kSwitch, all_reduce("64")));
  const Outcome o = run_collsim("run " + file.string() + " --out " + out.string());
  CHECK(o.status == 2);
  CHECK(o.err == "collsim: error: --out: cannot replace \"" + (out / "steps.csv").string() +
                     "\": it is a folder, not a file\n");
  // Nothing replaced, nothing left over.
  CHECK(slurp(out / "result.json") == "old result");
  CHECK(slurp(out / "links.csv") == "old links");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(out)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"links.csv", "result.json", "steps.csv"});
  // With the folder gone, every file is replaced and no staging folder stays.
  fs::remove(out / "steps.csv");
  CHECK(run_collsim("run " + file.string() + " --out " + out.string()).status == 0);
  CHECK(slurp(out / "result.json") != "old result");
  CHECK(fs::is_regular_file(out / "steps.csv"));
  for (const auto& e : fs::directory_iterator(out))
    CHECK_FALSE(e.path().filename().string().starts_with("."));
}

TEST_CASE("cli: each fuzzing reproducer exits 2 with one line") {
  const fs::path dir = temp_dir("repro");
  std::string nul = scenario(kSwitch, all_reduce("64"));
  nul += std::string(1, '\0') + "{{{";
  const std::string cases[] = {
      scenario(kSwitch, all_reduce(std::string(100000, '['))),
      scenario(kSwitch, all_reduce("1e400")),
      scenario(R"({"preset": "ring", "gpus": 4, "bandwidth": "1GB/s", "latency": "5000000s"})",
               all_reduce("64")),
      scenario(kSwitch, all_reduce("\"8000000000000000000B\"")),
      scenario(R"({"preset": "switch", "gpus": 1048576, "bandwidth": "100GB/s"})",
               all_reduce("64")),
      nul,
      // A topology name longer than a file name may be (the file system's error, not ours).
      scenario('"' + std::string(300, 'x') + '"', all_reduce("64")),
      scenario(R"({"preset": "cluster", "nodes": 2, "oversubscription": 1e15})", all_reduce("64")),
  };
  // A scenario named as a topology says so, under the file's name (one colon).
  write(dir, "other.json", scenario(kSwitch, all_reduce("64")));
  CHECK_THROWS_WITH(
      parse_scenario(parse_json_text(scenario("\"other.json\"", all_reduce("64")), "s.json"), dir),
      "other.json: expected a topology, got a scenario: name its topology (or the scenario's "
      "\"topology\" value) instead");
  for (const auto& text : cases) {
    const fs::path file = write(dir, "s.json", text);
    const Outcome o = run_collsim("run " + file.string() + " --out " + (dir / "out").string());
    INFO(o.err);
    CHECK(o.status == 2);
    CHECK(o.err.starts_with("collsim: error: "));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK((!fs::exists(dir / "out") || fs::is_empty(dir / "out")));
  }
}

TEST_CASE("identical collectives share a schedule but still count against the memory bound") {
  // A 1,024-rank ring all-reduce is 2,095,104 ops; 33 of them pass 2^26 even though they
  // share one schedule, since the simulator keeps state per op of every task.
  std::string collectives;
  for (int i = 0; i < 33; ++i)
    collectives += std::string(i ? ", " : "") + R"({"op": "all_reduce", "algorithm": "ring", )" +
                   R"("bytes": 4096, "after": []})";
  CHECK_THAT(error_of(scenario(R"({"preset": "switch", "gpus": 1024, "bandwidth": "100GB/s"})",
                               collectives)),
             Catch::StartsWith("collectives[32]: the scenario's schedules hold 69138432 ops up "
                               "to this collective"));
}

TEST_CASE("an error quoting a huge value leaves its middle out, between UTF-8 characters") {
  // A 100,000-character nccl_algo once came back whole in a 100,223-byte error line.
  const std::string huge(100000, 'x');
  const std::string e =
      error_of(scenario(kSwitch, R"({"op": "all_reduce", "bytes": 64, "algorithm": "nccl", )"
                                 R"("nccl_algo": ")" +
                                     huge + "\"}"));
  CHECK(e.size() < 1100);
  CHECK_THAT(e, Catch::StartsWith("collectives[0].nccl_algo: \"xxx") &&
                    Catch::Contains("xxx [... ") && Catch::Contains(" bytes left out ...] xxx") &&
                    Catch::Contains("per collective as"));
  // Two-byte characters: the cut falls between them, so the text stays UTF-8.
  std::string wide;
  for (int i = 0; i < 5000; ++i) wide += "\xC3\xA9";  // é
  const collsim::InputError cut("x", "\"" + wide + "\"");
  CHECK(collsim::valid_utf8(cut.message()) == cut.message());
  CHECK(cut.message().size() < 1100);
  const collsim::InputError small("x", "short");
  CHECK(small.message() == "short");
}
