// The collsim command as a user runs it.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.h"

namespace fs = std::filesystem;

using collsim::test::Outcome;
using collsim::test::run_collsim;
using collsim::test::slurp;
using collsim::test::temp_dir;

namespace {

const std::string kScenario =
    std::string(COLLSIM_SOURCE_DIR) + "/scenarios/dgx-h100-allreduce.json";

std::string write_file(const fs::path& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

}  // namespace

TEST_CASE("collsim run prints the table for the bundled scenario") {
  const Outcome o = run_collsim("run " + kScenario);
  CHECK(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("grads") && Catch::Contains("all_reduce") &&
                        Catch::Contains("ring") && Catch::Contains("1073741824") &&
                        Catch::Contains("busbw"));
  CHECK(o.err.empty());
}

TEST_CASE("same scenario, same output, byte for byte") {
  const fs::path a = temp_dir("det-a"), b = temp_dir("det-b");
  const Outcome first = run_collsim("run " + kScenario + " --out " + a.string());
  const Outcome second = run_collsim("run " + kScenario + " --out " + b.string());
  REQUIRE(first.status == 0);
  CHECK(first.out == second.out);
  for (const char* f : {"result.json", "links.csv", "timeline.json"}) {
    INFO(f);
    REQUIRE(fs::exists(a / f));
    CHECK(slurp(a / f) == slurp(b / f));
  }
  CHECK(run_collsim("run " + kScenario + " --format json").out ==
        run_collsim("run " + kScenario + " --format json").out);
}

TEST_CASE("restarting onto huge pages changes no output, exit status or argument") {
  // collsim restarts itself with glibc's heap on huge pages (tools/huge_pages.h); with
  // glibc.malloc.hugetlb set by the caller it does not. Both must say the same.
  const std::string off = "GLIBC_TUNABLES=glibc.malloc.hugetlb=0";
  const std::vector<std::string> commands = {"run " + kScenario + " --format json",
                                             "plan " + kScenario,
                                             "run no-such-scenario.json",
                                             "topo dgx-h100",
                                             "--version",
                                             "run"};
  for (const std::string& args : commands) {
    INFO(args);
    const Outcome restarted = run_collsim(args), as_started = run_collsim(args, off);
    CHECK(restarted.status == as_started.status);
    CHECK(restarted.out == as_started.out);
    CHECK(restarted.err == as_started.err);
  }
  CHECK(run_collsim("run no-such-scenario.json").status == 2);
  // `run` restarts only once its scenario is known to be large (a schedule that could
  // reach 2^18 ops: here 2 x 400 x 399), after reading it: the same again.
  const auto dir = temp_dir("huge-pages");
  {
    std::ofstream(dir / "large.json")
        << R"({"topology": {"preset": "switch", "gpus": 400, "bandwidth": "450GB/s"},
              "collectives": [{"name": "a", "op": "all_reduce", "algorithm": "ring",
                               "bytes": "4MiB"}]})";
  }
  const std::string large = "run " + (dir / "large.json").string() + " --format json";
  const Outcome restarted = run_collsim(large), as_started = run_collsim(large, off);
  CHECK(restarted.status == 0);
  CHECK(restarted.out == as_started.out);
  CHECK(restarted.err == as_started.err);
  std::filesystem::remove_all(dir);
}

TEST_CASE("run in json format carries the contract fields") {
  const Outcome o = run_collsim("run " + kScenario + " --format json");
  REQUIRE(o.status == 0);
  const auto j = nlohmann::json::parse(o.out);
  const auto& c = j["collectives"][0];
  for (const char* key : {"name", "op", "algorithm", "ranks", "bytes", "start_s", "end_s", "time_s",
                          "algbw_GBps", "busbw_GBps"})
    CHECK(c.contains(key));
  CHECK(c["time_s"].get<double>() == Approx(c["end_s"].get<double>() - c["start_s"].get<double>()));
  CHECK(c["busbw_GBps"].get<double>() == Approx(c["algbw_GBps"].get<double>() * 2 * 7 / 8));
  CHECK(j["links"].size() == 32);  // 8 GPU-NVSwitch and 8 GPU-NIC cables, both directions
  for (const auto& l : j["links"])
    for (const char* key : {"src", "dst", "kind", "bytes", "busy_s"}) CHECK(l.contains(key));
}

TEST_CASE(
    "run with an output folder writes a Chrome trace: send and receive tracks, arrows, link "
    "counters") {
  const fs::path d = temp_dir("trace");
  REQUIRE(run_collsim("run " + kScenario + " --out " + d.string()).status == 0);
  const auto trace = nlohmann::json::parse(slurp(d / "timeline.json"));
  int slices = 0, tracks = 0, starts = 0, finishes = 0, counters = 0;
  std::vector<nlohmann::json> spans;  // the collectives as reported (pid 2)
  std::map<std::pair<int, int>, double>
      last_end;  // per (pid, tid): slices on one track must not overlap
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X" && e["pid"] == 2) spans.push_back(e);
    if (ph == "X" && e["pid"] == 0) {
      ++slices;
      CHECK(e["dur"].get<double>() > 0);
      const auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
      CHECK(e["ts"].get<double>() >= last_end[key] - 1e-9);
      last_end[key] = e["ts"].get<double>() + e["dur"].get<double>();
    }
    if (ph == "M" && e["name"] == "thread_name" && e["pid"] == 0) ++tracks;
    starts += ph == "s";
    finishes += ph == "f";
    counters += ph == "C";
  }
  const int transfers = 2 * 7 * 8;
  CHECK(slices == 2 * transfers);  // at the sender and at the receiver
  CHECK(tracks == 16);  // per rank: one send and one receive track (a ring never overlaps)
  CHECK(starts == transfers);
  CHECK(finishes == transfers);
  CHECK(counters == 16 * 101);  // 16 busy links, 100 bins and a closing zero
  // The collective from its start to its end, as result.json reports it.
  const auto result = nlohmann::json::parse(slurp(d / "result.json"));
  REQUIRE(spans.size() == 1);
  CHECK(spans[0]["name"] == result["collectives"][0]["name"]);
  CHECK(spans[0]["ts"].get<double>() ==
        Approx(result["collectives"][0]["start_s"].get<double>() * 1e6).margin(1e-6));
  CHECK(spans[0]["dur"].get<double>() ==
        Approx(result["collectives"][0]["time_s"].get<double>() * 1e6).margin(1e-6));
  CHECK(slurp(d / "links.csv")
            .starts_with("scope,collective,src,dst,kind,bandwidth_Bps,bytes,window_s,utilisation,"
                          "busy_s,peak_transfers\n"));
  for (const char* f : {"ranks.csv", "steps.csv", "utilisation.csv", "report.html", "result.json"})
    CHECK(fs::exists(d / f));
  CHECK(slurp(d / "utilisation.csv").starts_with("link,0s,"));
  // A run of no duration has one instant: 100 columns all named "0s" said nothing.
  const fs::path one = temp_dir("one-rank");
  const std::string scenario = write_file(one, "one.json", R"({"topology": "dgx-h100",
      "collectives": [{"name": "a", "op": "all_reduce", "bytes": "1MiB", "ranks": [0]}]})");
  REQUIRE(run_collsim("run " + scenario + " --out " + (one / "out").string()).status == 0);
  const std::string csv = slurp(one / "out" / "utilisation.csv");
  CHECK(csv.starts_with("link,0s\ngpu0->nvswitch,0\n"));
}

TEST_CASE("errors: one line, exit status 2, nothing written") {
  const fs::path dir = temp_dir("errors");
  const fs::path out = dir / "out";
  const std::string bad_cases[] = {
      write_file(dir, "malformed.json", "{\"topology\": \"dgx-h100\", \"collectives\": [}"),
      write_file(dir, "unknown.json",
                 R"({"topology": "dgx-h100", "collectives": [{"op": "all_reduce", "byte": 64}]})"),
      write_file(
          dir, "range.json",
          R"({"topology": "dgx-h100", "collectives": [{"op": "all_reduce", "bytes": 64, "ranks": [9]}]})"),
      (dir / "missing.json").string(),
  };
  for (const auto& file : bad_cases) {
    INFO(file);
    const Outcome o = run_collsim("run " + file + " --out " + out.string());
    CHECK(o.status == 2);
    CHECK(o.out.empty());
    CHECK(o.err.starts_with("collsim: error: "));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK((!fs::exists(out) || fs::is_empty(out)));
  }
}

TEST_CASE("command-line errors: one line, exit status 2, the option named") {
  const std::string scenario =
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/dgx-h100-allreduce.json";
  const fs::path out = temp_dir("cli-errors") / "out";
  const std::pair<std::string, std::string> cases[] = {
      {"run " + scenario + " --out " + out.string() + " --trace-transfers 0",
       "collsim: error: --trace-transfers: Value 0 not in range 1 to 1073741824\n"},
      // They shape timeline.json: without --out they were silently unused.
      {"run " + scenario + " --trace-gzip", "collsim: error: --trace-gzip requires --out\n"},
      {"run " + scenario + " --trace-transfers 5",
       "collsim: error: --trace-transfers requires --out\n"},
      {"sweep " + scenario + " -j x", "collsim: error: --jobs: Value x not in range 0 to 4096\n"},
      {"trace " + scenario + " --values bogus",
       "collsim: error: --values: bogus not in {auto,powers,symbolic}\n"},
      {"", "collsim: error: A subcommand is required (collsim --help lists them)\n"},
  };
  for (const auto& [args, message] : cases) {
    const Outcome o = run_collsim(args);
    CHECK(o.status == 2);
    CHECK(o.err == message);
    CHECK((!fs::exists(out) || fs::is_empty(out)));
  }
}

TEST_CASE("version and help flags") {
  CHECK_THAT(run_collsim("--version").out, Catch::StartsWith("collsim "));
  const Outcome help = run_collsim("run --help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("--out") && Catch::Contains("--format"));
}

TEST_CASE("collsim trace shows an average divided, a product and a max as what they are") {
  const fs::path d = temp_dir("trace-redops");
  const auto traced = [&](const std::string& collective, int ranks, const std::string& values) {
    std::ofstream(d / "t.json") << fmt::format(
        R"({{"topology": {{"preset": "switch", "gpus": {}, "bandwidth": "10GB/s"}},
            "collectives": [{}]}})",
        ranks, collective);
    return run_collsim("trace " + (d / "t.json").string() + values);
  };
  // avg: the sums of the last step, then their division by K (the trace stopped at the sums).
  const Outcome avg = traced(
      R"({"op": "all_reduce", "algorithm": "ring", "bytes": 32, "dtype": "int64", "redop": "avg"})",
      4, "");
  REQUIRE(avg.status == 0);
  CHECK_THAT(avg.out, Catch::Contains("after step 6:\nrank 0: 1111  1111  1111  1111\n") &&
                          Catch::Contains("after dividing the sums by 4 (avg):\n"
                                          "rank 0:  277   277   277   277\n"));
  // float32: the exact quotient, not int64's truncated one; symbols: the sum over K.
  const Outcome avg_float =
      traced(R"({"op": "all_reduce", "algorithm": "ring", "bytes": 16, "redop": "avg"})", 4, "");
  REQUIRE(avg_float.status == 0);
  CHECK_THAT(avg_float.out, Catch::Contains("after dividing the sums by 4 (avg):\n"
                                            "rank 0: 277.75  277.75  277.75  277.75\n"));
  const Outcome avg_symbols =
      traced(R"({"op": "all_reduce", "algorithm": "ring", "bytes": 16, "redop": "avg"})", 4,
             " --values symbolic");
  REQUIRE(avg_symbols.status == 0);
  CHECK_THAT(avg_symbols.out, Catch::Contains("after dividing the sums by 4 (avg):\nrank 0: "
                                              "(a0+b0+c0+d0)/4"));
  // prod: 10^(0+1+...+6) passes int64 at 7 ranks, so auto shows symbols (it printed a
  // wrapped-around 3875820019684212736).
  const Outcome prod = traced(
      R"({"op": "all_reduce", "algorithm": "ring", "bytes": 56, "dtype": "int64", "redop": "prod"})",
      7, "");
  REQUIRE(prod.status == 0);
  CHECK_THAT(prod.out, Catch::Contains("a0*b0*c0*d0*e0*f0*g0") && !Catch::Contains("10000000"));
  CHECK(traced(R"({"op": "all_reduce", "bytes": 56, "dtype": "int64", "redop": "prod"})", 7,
               " --values powers")
            .status == 2);
  // max: the terms it was taken of; labels of 11 ranks line up.
  const Outcome max =
      traced(R"({"op": "all_reduce", "algorithm": "ring", "bytes": 44, "redop": "max"})", 11,
             " --values symbolic");
  REQUIRE(max.status == 0);
  CHECK_THAT(max.out, Catch::Contains("max(a0,b0,c0,d0,e0,f0,g0,h0,i0,j0,k0)") &&
                          Catch::Contains("\nrank  9: ") && Catch::Contains("\nrank 10: "));
}

TEST_CASE("collsim trace prints the ring all-reduce tables of docs/models.md") {
  const Outcome o = run_collsim("trace " + std::string(COLLSIM_SOURCE_DIR) +
                                "/scenarios/ring-allreduce-trace.json");
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("after step 1:\nrank 0:    1     1     1  1001\n"));
  CHECK_THAT(o.out, Catch::Contains("after step 3:\n"
                                    "rank 0:    1  1111  1101  1001\n"
                                    "rank 1:   11    10  1111  1011\n"
                                    "rank 2:  111   110   100  1111\n"
                                    "rank 3: 1111  1110  1100  1000\n"));
  CHECK_THAT(o.out, Catch::Contains("after step 6:\n"
                                    "rank 0: 1111  1111  1111  1111\n"
                                    "rank 1: 1111  1111  1111  1111\n"
                                    "rank 2: 1111  1111  1111  1111\n"
                                    "rank 3: 1111  1111  1111  1111\n"));
  CHECK_THAT(o.out, Catch::Contains("symbolic (each contribution exactly once): OK"));
  const Outcome sym = run_collsim("trace " + std::string(COLLSIM_SOURCE_DIR) +
                                  "/scenarios/ring-allreduce-trace.json --values symbolic");
  // docs/models.md: rank 0 ends reduce-scatter with a0 | a1+b1+c1+d1 | a2+c2+d2 | a3+d3.
  CHECK_THAT(sym.out,
             Catch::Contains(
                 "after step 3:\nrank 0:          a0  a1+b1+c1+d1     a2+c2+d2        a3+d3\n"));
}

TEST_CASE("collsim trace keeps to what a reader reads and a machine holds") {
  // 64 ranks of 256 elements printed as symbols after each of 126 steps, each sum up to 64
  // terms: over a gigabyte of text. Refused, with what to do; --values auto prints a line
  // per step instead.
  const fs::path dir = temp_dir("trace-limits");
  const fs::path wide = dir / "wide.json";
  std::ofstream(wide) << R"({"topology": {"preset": "switch", "gpus": 64, "bandwidth": "25GB/s"},
      "collectives": [{"op": "all_reduce", "bytes": "1KiB", "redop": "max"}]})";
  const Outcome sym = run_collsim("trace " + wide.string() + " --values symbolic");
  CHECK(sym.status == 2);
  CHECK_THAT(sym.err, Catch::Contains("collectives[0]: a trace prints every element of every "
                                      "rank after every step") &&
                          Catch::Contains("--values auto"));
  CHECK(sym.out.empty());
  const Outcome lines = run_collsim("trace " + wide.string());
  REQUIRE(lines.status == 0);
  CHECK_THAT(lines.out, Catch::Contains("step  126:") &&
                            Catch::Contains("symbolic (each contribution exactly once): OK"));
  // 256 ranks of 1,024 elements: every output element names 256 contributions, 67 million
  // terms in all (768 ranks held gigabytes); the symbolic proof is left to the exact one, and
  // the output says so.
  const fs::path many = dir / "many.json";
  std::ofstream(many) << R"({"topology": {"preset": "switch", "gpus": 256, "bandwidth": "25GB/s"},
      "collectives": [{"op": "all_reduce", "bytes": "4KiB"}]})";
  const Outcome big = run_collsim("trace " + many.string());
  REQUIRE(big.status == 0);
  CHECK_THAT(big.out, Catch::Contains("exact (random int64 inputs") &&
                          Catch::Contains("symbolic: not run at this size") &&
                          !Catch::Contains("symbolic (each contribution"));
  fs::remove_all(dir);
}

TEST_CASE("barrier scenario: ceil(log2 K) alpha, every report written, the trace proves it") {
  const std::string scenario = std::string(COLLSIM_SOURCE_DIR) + "/scenarios/barrier-scaling.json";
  const fs::path out = temp_dir("barrier");
  const Outcome o = run_collsim("run " + scenario + " --format json --out " + out.string());
  REQUIRE(o.status == 0);
  const auto result = nlohmann::json::parse(o.out);
  const std::map<std::string, double> expected_us{
      {"barrier-2", 5}, {"barrier-8", 15}, {"barrier-16", 20}, {"barrier-64", 30}};
  for (const auto& c : result["collectives"]) {
    INFO(c["name"]);
    CHECK(c["time_s"].get<double>() * 1e6 == Approx(expected_us.at(c["name"])));
    CHECK(c["bytes"] == 0);
  }
  for (const char* f : {"result.json", "links.csv", "steps.csv", "timeline.json", "report.html"})
    CHECK(fs::exists(out / f));
  const std::string steps = slurp(out / "steps.csv");
  CHECK(std::count(steps.begin(), steps.end(), '\n') == 1);  // no step carries bytes
  const Outcome t = run_collsim("trace " + scenario + " --collective barrier-16");
  CHECK(t.status == 0);
  CHECK_THAT(t.out, Catch::Contains("step 4: 0->8 1->9"));
  CHECK_THAT(t.out, Catch::Contains("barrier (no rank leaves before it has heard from every "
                                    "rank): OK, 16 ranks"));
  CHECK(run_collsim("sweep " + scenario + " --sizes 1KiB..2KiB").status == 2);
  fs::remove_all(out);
}

TEST_CASE("a trace of more transfers than --trace-transfers holds busy-time bins per rank") {
  const fs::path d = temp_dir("binned");
  // 112 transfers, room for 100: 100 / (2 x 8 ranks) = 6 bins per send or receive track.
  REQUIRE(
      run_collsim("run " + kScenario + " --out " + d.string() + " --trace-transfers 100").status ==
      0);
  const auto trace = nlohmann::json::parse(slurp(d / "timeline.json"));
  std::map<std::pair<int, int>, double> last_end;
  std::map<std::pair<int, int>, int> bins;
  double sent = 0, received = 0;
  int arrows = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    arrows += ph == "s" || ph == "f";
    if (ph != "X" || e["pid"] != 0) continue;  // the transfers' tracks
    CHECK(e["cat"] == "grads");  // binned, each slice still names its collective
    const double busy = e["args"]["busy"];
    CHECK(busy > 0);
    CHECK(busy <= 1);
    const auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
    CHECK(e["ts"].get<double>() >= last_end[key] - 1e-9);
    last_end[key] = e["ts"].get<double>() + e["dur"].get<double>();
    ++bins[key];
    const std::string name = e["name"];
    (name.starts_with("grads: sending") ? sent : received) += e["args"]["bytes"].get<double>();
  }
  CHECK(arrows == 0);
  CHECK(bins.size() == 16);                           // a send and a receive track per rank
  for (const auto& [track, n] : bins) CHECK(n == 6);  // a ring keeps every rank busy throughout
  const double total = 2.0 * 7 * (1 << 30);           // ring all-reduce: 2 (K - 1) N over all ranks
  CHECK(sent == Approx(total).epsilon(1e-6));
  CHECK(received == Approx(total).epsilon(1e-6));
  fs::remove_all(d);
}

TEST_CASE("collsim topo takes a scenario file: its topology, with its placement", "[topo]") {
  const fs::path dir = temp_dir("topo-scenario");
  const std::string file = write_file(dir, "case.json", R"({"topology": "cluster-8x8-2to1",
      "collectives": [{"op": "all_reduce", "bytes": "1MiB"}]})");
  const Outcome o = run_collsim("topo " + file + " --format json");
  REQUIRE(o.status == 0);
  const auto doc = nlohmann::json::parse(o.out);
  CHECK(doc["name"] == "cluster-8x8-2to1");
  CHECK(doc["tiers"][0]["oversubscription"] == 2.0);
  CHECK(doc["injection"]["scale_out_Bps"] == 50e9);
  // The scenario's placement moves rank 0.
  const std::string placed = write_file(dir, "placed.json", R"({"topology": "dgx-h100",
      "placement": ["gpu7", "gpu6", "gpu5", "gpu4", "gpu3", "gpu2", "gpu1", "gpu0"],
      "collectives": [{"op": "all_reduce", "bytes": "1MiB"}]})");
  const Outcome p = run_collsim("topo " + placed);
  CHECK(p.status == 0);
  CHECK_THAT(p.out, Catch::Contains("per-GPU injection (rank 0, gpu7): nvlink 450 GB/s"));
  // A bad scenario is reported like `run` reports it, not as a bad topology.
  const std::string bad = write_file(dir, "bad.json", R"({"topology": "dgx-h100",
      "collectives": [{"op": "all_reduce", "bytes": -5}]})");
  const Outcome e = run_collsim("topo " + bad);
  CHECK(e.status == 2);
  CHECK_THAT(e.err, Catch::Contains("collectives[0].bytes: expected a size"));
  // A training step's scenario (a "workload", no "collectives") is a scenario too.
  const std::string step = write_file(dir, "step.json", R"({"topology": "cluster-8x8-2to1",
      "workload": {"gradients": "64MiB", "compute": "1ms"}})");
  const Outcome w = run_collsim("topo " + step + " --format json");
  INFO(w.err);
  REQUIRE(w.status == 0);
  CHECK(nlohmann::json::parse(w.out)["name"] == "cluster-8x8-2to1");
}

TEST_CASE("collsim topo --svg draws without Graphviz, one drawing at a time", "[topo]") {
  const Outcome o = run_collsim("topo cluster-128x8 --svg");
  REQUIRE(o.status == 0);
  CHECK(o.out.starts_with("<?xml"));
  CHECK_THAT(o.out, Catch::Contains("servers 96-127</text>"));  // the 4th pod, grouped
  const Outcome both = run_collsim("topo dgx-h100 --svg --dot");
  CHECK(both.status == 2);
  CHECK(both.out.empty());
}

TEST_CASE("an empty --out and an unknown command are refused, naming what is wrong") {
  // '' from an unset shell variable: the run wrote nothing and exited 0.
  for (const std::string& command : {"run " + kScenario, "sweep " + kScenario + " --sizes 1MiB"}) {
    const Outcome o = run_collsim(command + " --out ''");
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains("--out: an empty path"));
    CHECK(o.out.empty());
  }
  const Outcome o = run_collsim("bogus " + kScenario);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("no command \"bogus\""));
  // A folder or a device where the scenario should be is said to be one ("no such file" sent
  // users looking for a typo).
  const fs::path dir = test::temp_dir("scenario-folder");
  CHECK_THAT(run_collsim("run " + dir.string()).err,
             Catch::Contains(dir.string() + ": a folder, not a scenario file"));
  CHECK_THAT(run_collsim("run /dev/null").err, Catch::Contains("/dev/null: not a regular file"));
  CHECK_THAT(run_collsim("run " + (dir / "none.json").string()).err,
             Catch::Contains("none.json: no such scenario file"));
}
