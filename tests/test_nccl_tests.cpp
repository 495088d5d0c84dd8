// nccl-tests logs: the parser on the published logs in data/nccl-tests and on
// broken input, compare's arithmetic against a log, and the issue's target: the file
// `calibrate --nccl-tests` fits on the 8x H100 forced-ring log predicts that log.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "helpers.h"
#include "validate/compare/nccl_compare.h"
#include "validate/compare/nccl_tests_log.h"
#include "validate/fit/nccl_fit.h"

using namespace collsim;

namespace nccl_tests_test {

namespace fs = std::filesystem;

// A published log in data/nccl-tests (data/README.md), as printed.
std::string published_log(const std::string& name) {
  return test::data_file(fs::path("nccl-tests") / name).string();
}

// The published log `name` for a fit through the CLI: as printed, or under the sanitizers
// its sizes up to 256 MiB, in `dir` under its own name (which names its collective). A fit
// simulates every size many times, and a multi-node log's largest sizes took 150 s of the
// sanitized suite in one case (the 8 x 8 curve fit: 1.3 s of 13.8 s left here).
std::string log_to_fit(const std::string& name, const fs::path& dir) {
  if (!test::kSanitized) return published_log(name);
  std::ifstream in(published_log(name));
  const fs::path out = dir / name;
  std::ofstream kept(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    long long bytes = 0;
    if (words >> bytes && bytes > (std::int64_t{1} << 28)) continue;  // a row past 256 MiB
    kept << line << "\n";
  }
  return out.string();
}

// `collsim calibrate --nccl-tests LOGS --topology TOPOLOGY [ARGS] --out OUT`, which must
// succeed: the file it wrote.
nlohmann::json calibrated(const std::string& logs, const std::string& topology,
                          const std::string& out, const std::string& args = "") {
  const auto fit = test::run_collsim("calibrate --nccl-tests " + logs + " --topology " + topology +
                                     args + " --out " + out);
  INFO(fit.out << fit.err);
  REQUIRE(fit.status == 0);
  return nlohmann::json::parse(test::slurp(out));
}

std::string parse_error(const std::string& text, const std::string& file = "bad.txt") {
  try {
    parse_nccl_tests_log(text, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string fit_error(const NcclFitRequest& req) {
  try {
    fit_nccl_tests(req);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const std::string kHeader =
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 4 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5\n";

}  // namespace nccl_tests_test

TEST_CASE("nccl-tests parser reads the forced-ring H100 log as printed", "[nccl-tests]") {
  const std::string file = nccl_tests_test::published_log("h100x8_all_reduce_ring.txt");
  const NcclTestsLog log = read_nccl_tests_log(file);
  CHECK(log.op == CollectiveOp::AllReduce);
  CHECK(log.op_source == "the log's header");
  CHECK(log.ranks == 8);  // "#  Rank  0..7 ..."
  CHECK(log.ranks_source == "the log's Rank lines");
  CHECK(log.threads == 1);
  CHECK(log.gpus_per_thread == 8);
  CHECK(log.min_bytes == 8);
  CHECK(log.max_bytes == 8589934592);
  CHECK(log.nccl_version == "2.26.2");
  CHECK(log.tests_version == "2.17.9");
  REQUIRE(log.rows.size() == 31);  // 8 B .. 8 GiB by 2
  const NcclTestsRow& kib = log.rows[7];
  CHECK(kib.bytes == 1024);
  CHECK(kib.count == 256);
  CHECK(kib.type == "float");
  CHECK(kib.redop == "sum");
  CHECK(kib.root == -1);
  CHECK(kib.out_of_place.time_us == 37.38);
  CHECK(kib.out_of_place.busbw_GBps == 0.05);
  CHECK(kib.out_of_place.wrong == 0);
  REQUIRE(kib.in_place);
  CHECK(kib.in_place->time_us == 36.55);
  CHECK(log.rows.back().out_of_place.time_us == 40848.8);
  CHECK(log.rows.back().in_place->busbw_GBps == 368.06);
}

TEST_CASE("nccl-tests parser reads the default H100 and the A100 logs", "[nccl-tests]") {
  const std::string h100 = nccl_tests_test::published_log("h100x8_all_reduce_default.txt");
  const std::string a100 = nccl_tests_test::published_log("a100x8_all_reduce_default.txt");
  const NcclTestsLog h = read_nccl_tests_log(h100);
  CHECK(h.op == CollectiveOp::AllReduce);
  CHECK(h.op_source == "the file name");  // no "Collective test starting" line
  CHECK(h.ranks == 8);                    // eight "#  Rank r" lines, nGpus 1 each
  CHECK(h.gpus_per_thread == 1);
  REQUIRE(h.rows.size() == 32);                    // 8 B .. 16 GiB
  CHECK(h.rows[2].out_of_place.time_us == 68.14);  // the outlier, as printed
  CHECK(h.rows[2].in_place->time_us == 13.52);
  CHECK(h.rows.back().bytes == 17179869184);
  CHECK(h.rows.back().out_of_place.time_us == 62648);

  const NcclTestsLog a = read_nccl_tests_log(a100);
  CHECK(a.ranks == 8);  // no Rank lines, nGpus 1: busbw / algbw = 2(K-1)/K says 8
  CHECK(a.ranks_source == "busbw / algbw (the log has no Rank lines)");
  CHECK(a.nccl_version.empty());
  REQUIRE(a.rows.size() == 30);  // 8 B .. 4 GiB; the MPI warning lines are skipped
  CHECK(a.rows.back().bytes == 4294967296);
  CHECK(a.rows.back().out_of_place.busbw_GBps == 232.81);
  CHECK(a.rows[28].bytes == 2147483648);
}

TEST_CASE("nccl-tests parser accepts N/A, rows without in-place columns and CRLF", "[nccl-tests]") {
  const std::string text =
      "# Collective test starting: alltoall_perf\r\n"
      "#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] GPU\r\n"
      "#  Rank  1 Group  0 Pid 1 on h device  1 [0x2] GPU\r\n"
      "        1024           256     float    none      -1    10.5    0.10    "
      "0.05     N/A\r\n"
      "        2048           512     float    none      -1    11.5    0.18    "
      "0.09       0\r\n";
  const NcclTestsLog log = parse_nccl_tests_log(text, "a2a.txt");
  CHECK(log.op == CollectiveOp::AllToAll);
  CHECK(log.ranks == 2);
  REQUIRE(log.rows.size() == 2);
  CHECK(!log.rows[0].out_of_place.wrong);
  CHECK(!log.rows[0].in_place);
  CHECK(log.rows[1].out_of_place.wrong == 0);
  // A hint fills in a log that names no collective; the header, when there, wins.
  const std::string bare = "#  Rank  0..1 Group 0\n  128 16 float none -1 5.0 0.03 0.01 0\n";
  CHECK(parse_nccl_tests_log(bare, "x.txt", {.op = CollectiveOp::AllGather}).op ==
        CollectiveOp::AllGather);
  CHECK(parse_nccl_tests_log(text, "a2a.txt", {.op = CollectiveOp::AllGather}).op ==
        CollectiveOp::AllToAll);
}

TEST_CASE("nccl-tests parser names file and line of what it cannot read", "[nccl-tests]") {
  const std::string row =
      "        1024           256     float     sum      -1    37.38    0.03"
      "    0.05       0    36.55    0.03    0.05       0\n";
  CHECK_THAT(nccl_tests_test::parse_error(
                 nccl_tests_test::kHeader +
                 "        1024           256     float     sum      -1    37.38\n"),
             Catch::Contains("bad.txt:3") &&
                 Catch::Contains("out of place and optionally in place") &&
                 Catch::Contains("got 6 fields"));
  CHECK_THAT(
      nccl_tests_test::parse_error(nccl_tests_test::kHeader +
                                   "  1024  256  floaty  sum  -1  37.38  0.03  0.05  0\n"),
      Catch::Contains("bad.txt:3") && Catch::Contains("element type") && Catch::Contains("floaty"));
  CHECK_THAT(nccl_tests_test::parse_error(nccl_tests_test::kHeader +
                                          "  1024  256  float  sum  -1  fast  0.03  0.05  0\n"),
             Catch::Contains("bad.txt:3") && Catch::Contains("out-of-place time (us)"));
  CHECK_THAT(nccl_tests_test::parse_error(nccl_tests_test::kHeader +
                                          "  1024  256  float  sum  -1  1.0  0.03  0.05  x\n"),
             Catch::Contains("#wrong as a count, an error or N/A"));
  const std::string row_2k =
      "        2048           512     float     sum      -1    37.38    0.05"
      "    0.08       0    36.55    0.06    0.08       0\n";
  const std::string row_512 =
      "         512           128     float     sum      -1    37.38    0.01"
      "    0.02       0    36.55    0.01    0.02       0\n";
  CHECK_THAT(nccl_tests_test::parse_error(nccl_tests_test::kHeader + row + row_2k + row_512),
             Catch::Contains("bad.txt:5") && Catch::Contains("sizes must increase") &&
                 Catch::Contains("512 follows 2048 at line 4"));
  CHECK_THAT(nccl_tests_test::parse_error(nccl_tests_test::kHeader),
             Catch::Contains("bad.txt") && Catch::Contains("no result rows"));
  CHECK_THAT(nccl_tests_test::parse_error("#  Rank  x Group 0\n" + row),
             Catch::Contains("bad.txt:1") && Catch::Contains("range like 0..7"));
  CHECK_THAT(nccl_tests_test::parse_error("# nThread 1 nGpus eight minBytes 8\n" + row),
             Catch::Contains("bad.txt:1") && Catch::Contains("after \"nGpus\""));
  CHECK_THAT(nccl_tests_test::parse_error("# Collective test starting: frobnicate_perf\n" + row),
             Catch::Contains("bad.txt:1") && Catch::Contains("frobnicate_perf"));
  CHECK_THAT(nccl_tests_test::parse_error("#  Rank  0..7 Group 0\n" + row, "unknown.txt"),
             Catch::Contains("cannot tell which collective"));
  CHECK_THAT(nccl_tests_test::parse_error(std::string("# x\n") + '\0' + "\n"),
             Catch::Contains("NUL"));
  // Neither Rank lines, nor a usable busbw / algbw, nor nThread x nGpus > 1.
  CHECK_THAT(nccl_tests_test::parse_error("# Collective test starting: broadcast_perf\n"
                                          "  1024 256 float none 0 10.0 0.10 0.10 0\n"),
             Catch::Contains("how many GPUs"));
  // Noise that does not start like a row is skipped, not an error.
  CHECK(nccl_tests_test::parse_error(nccl_tests_test::kHeader +
                                     "8 more processes have sent help message\n" + row) ==
        "no error");
  // A lone number among the rows is a row cut short; ahead of them, a script's output.
  CHECK_THAT(nccl_tests_test::parse_error(nccl_tests_test::kHeader + row + "  1024\n"),
             Catch::Contains("bad.txt:4") && Catch::Contains("got 1 field"));
  CHECK(nccl_tests_test::parse_error("8\n" + nccl_tests_test::kHeader + row) == "no error");
}

TEST_CASE("nccl-tests parser: zero-byte rows and a reduced maxBytes, as nccl-tests prints them",
          "[nccl-tests]") {
  // all_gather_perf -b 8 on 8 GPUs: the per-rank count of the small sizes rounds to 0, so
  // nccl-tests prints several rows of 0 bytes before the first real size.
  const std::string text =
      "# Collective test starting: all_gather_perf\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5\n"
      "# Reducing maxBytes to 11453246122 due to memory limitation\n"
      "#  Rank  0..7 Group  0 Pid 1 on host device 0..7 NVIDIA H100 80GB HBM3\n"
      "           0             0     float    none      -1     0.20    0.00    0.00      0     "
      "0.19    0.00    0.00      0\n"
      "           0             0     float    none      -1     0.19    0.00    0.00      0     "
      "0.19    0.00    0.00      0\n"
      "          32             1     float    none      -1    10.50    0.00    0.00      0    "
      "10.40    0.00    0.00      0\n"
      "          64             2     float    none      -1    10.60    0.01    0.01      0    "
      "10.50    0.01    0.01      0\n";
  const NcclTestsLog log = parse_nccl_tests_log(text, "ag.txt");
  CHECK(log.op == CollectiveOp::AllGather);
  CHECK(log.max_bytes == 11453246122);  // the reduced limit, not the one asked for
  REQUIRE(log.rows.size() == 4);
  CHECK(log.rows[0].bytes == 0);
  CHECK(log.rows[2].bytes == 32);
  // A size after 0 rows that goes down again, not to the first size, is refused.
  CHECK_THAT(nccl_tests_test::parse_error(
                 text + "          32             1     float    none      -1    10.60    0.00    "
                        "0.00      0    10.50    0.00    0.00      0\n"),
             Catch::Contains("sizes must increase") && Catch::Contains("32 follows 64"));
  // nccl-tests -N: the sweep again, its zero-byte rows those of the first.
  const NcclTestsLog again =
      parse_nccl_tests_log(text + text.substr(text.find("           0 ")), "ag.txt");
  CHECK(again.rows.size() == 4);
  CHECK_THAT(again.notes.back(), Catch::Contains("in 2 sweeps"));
  CHECK_THAT(nccl_tests_test::parse_error("# Reducing maxBytes to lots due to memory limitation\n"),
             Catch::Contains("bad.txt:1") && Catch::Contains("Reducing maxBytes to"));
}

TEST_CASE("nccl-tests parser refuses implausible numbers, naming file and line", "[nccl-tests]") {
  using nccl_tests_test::kHeader;
  using nccl_tests_test::parse_error;
  const auto row = [](const std::string& size, const std::string& time,
                      const std::string& wrong = "0") {
    return "  " + size + "  256  float  sum  -1  " + time + "  0.03  0.05  " + wrong + "\n";
  };
  CHECK(parse_error(kHeader + row("1024", "37.38")) == "no error");
  // A note above the header that names the keys in prose is not the header.
  const NcclTestsLog noted = parse_nccl_tests_log(
      "# machine: 8 x H100, one process per GPU (nGpus 1), maxBytes as printed\n" + kHeader +
          row("1024", "37.38"),
      "noted.txt");
  CHECK(noted.rows.size() == 1);
  CHECK(noted.gpus_per_thread == 4);  // the header's, where the note's "1)," was an error
  CHECK(noted.max_bytes == 4096);
  // nThread x nGpus once overflowed an int (65537 x 65537), and each is bounded alone too.
  CHECK(parse_error("# nThread 65537 nGpus 65537 minBytes 8\n" + row("1024", "37.38")) ==
        "bad.txt:1: nThread 65537 x nGpus 65537 is 4295098369 GPUs in one process; expected at "
        "most 1048576");
  CHECK_THAT(parse_error("# nThread 1 nGpus 4294967297\n" + row("1024", "37.38")),
             Catch::StartsWith("bad.txt:1: expected a count from 1 to 1048576 after \"nGpus\""));
  CHECK_THAT(parse_error("# nThread 0 nGpus 8\n" + row("1024", "37.38")),
             Catch::StartsWith("bad.txt:1: expected a count from 1 to 1048576 after \"nThread\""));
  CHECK_THAT(parse_error("# nThread 1 nGpus 8 minBytes 8 maxBytes 9999999999999999999\n"),
             Catch::StartsWith("bad.txt:1: expected a count from 0 to 1125899906842624 after "
                               "\"maxBytes\""));
  CHECK(parse_error(kHeader + row("1024", "1e30")) ==
        "bad.txt:3: expected the out-of-place time (us) as a number from 0 to 3.6e+09, got "
        "\"1e30\"");
  CHECK_THAT(parse_error(kHeader + row("1024", "nan")), Catch::StartsWith("bad.txt:3: expected"));
  CHECK_THAT(parse_error(kHeader + row("1024", "-0.5")), Catch::StartsWith("bad.txt:3: expected"));
  CHECK(parse_error(kHeader + row("2251799813685248", "37.38")) ==
        "bad.txt:3: expected a size and a count from 0 to 2^50 (1 PiB), got 2251799813685248 and "
        "256");
  // Beyond 64 bits it is still a row (it was skipped, and a log of one such row had none).
  CHECK(parse_error(kHeader + row("99999999999999999999999", "37.38")) ==
        "bad.txt:3: expected a size and a count from 0 to 2^50 (1 PiB), got "
        "99999999999999999999999 and 256");
  // A size that is not the count's elements (or a multiple: a count per rank) was compared as
  // given.
  CHECK(parse_error(kHeader + row("1000", "37.38")) ==
        "bad.txt:3: 1000 bytes is not 256 float elements of 4 bytes, nor a whole multiple of them "
        "(a count per rank)");
  CHECK(parse_nccl_tests_log(kHeader + row("8192", "37.38"), "ok.txt").rows.size() == 1);
  CHECK_THAT(parse_error(kHeader + row("1024", "37.38", "1e30")),
             Catch::StartsWith("bad.txt:3: expected the out-of-place #wrong as a count"));
  CHECK_THAT(parse_error(kHeader + "  1024  256  float  sum  -1  37.38  1e7  0.05  0\n"),
             Catch::StartsWith("bad.txt:3: expected the out-of-place algbw (GB/s) as a number "
                               "from 0 to 1e+06"));
}

TEST_CASE("nccl-tests parser takes only version words for versions", "[nccl-tests]") {
  // Found by fuzz_nccl_log: "NCCL version 2.18.3+cuda12\xb2" inside a Rank line made
  // compare --format json (and calibrate --nccl-tests) throw nlohmann's invalid-UTF-8
  // type_error, exit 3.
  const std::string row = "  1024  256  float  sum  -1  37.38  0.03  0.05  0\n";
  const NcclTestsLog odd = parse_nccl_tests_log(
      nccl_tests_test::kHeader + "#  Rank  0 Group 0 on host NCCL version 2.18.3+cuda12\xb2 x\n" +
          "# nccl-tests version \xff\xfe\n" + row,
      "all_reduce.txt");
  CHECK(odd.nccl_version.empty());
  CHECK(odd.tests_version.empty());
  CHECK_NOTHROW(nlohmann::json{{"v", odd.nccl_version}, {"t", odd.tests_version}}.dump());
  const NcclTestsLog plain = parse_nccl_tests_log(
      nccl_tests_test::kHeader + "NCCL version 2.18.3+cuda12.2\n" + row, "all_reduce.txt");
  CHECK(plain.nccl_version == "2.18.3+cuda12.2");
  // The 4 x 8 log's provenance line says it has none.
  const NcclTestsLog none = parse_nccl_tests_log(
      "# 4 nodes, -g 1, default env; NCCL version not printed\n" + nccl_tests_test::kHeader + row,
      "all_reduce.txt");
  CHECK(none.nccl_version.empty());
}

TEST_CASE("nccl-tests: the NCCL_ALGO a log was forced to is read, and calibrate fits under it",
          "[nccl-tests]") {
  const std::string row = "  1024  256  float  sum  -1  37.38  0.03  0.05  0\n";
  auto algo_of = [&](const std::string& line) {
    return parse_nccl_tests_log(nccl_tests_test::kHeader + line + row, "all_reduce.txt").nccl_algo;
  };
  CHECK(algo_of("host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n") == "Ring");
  CHECK(algo_of("# env: NCCL_ALGO=^NVLS,Tree NCCL_PROTO=Simple\n") == "^NVLS,Tree");
  CHECK(algo_of("# env: NCCL_ALGO=ring;allreduce:tree,nvls\n") == "ring;allreduce:tree,nvls");
  CHECK(algo_of("# env: NCCL_IB_HCA=mlx5 (no NCCL_ALGO)\n").empty());
  CHECK(algo_of("# NCCL_ALGO=\xff\n").empty());  // not a list NCCL reads
  // NCCL_PROTO likewise, beside it or alone.
  auto proto_of = [&](const std::string& line) {
    return parse_nccl_tests_log(nccl_tests_test::kHeader + line + row, "all_reduce.txt").nccl_proto;
  };
  CHECK(proto_of("# env: NCCL_ALGO=^NVLS,Tree NCCL_PROTO=Simple\n") == "Simple");
  CHECK(proto_of("host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to ^LL128\n") == "^LL128");
  CHECK(proto_of("# env: NCCL_PROTOCOL=Simple NCCL_ALGO=Ring\n").empty());

  // The forced-ring log, with the line NCCL_DEBUG=INFO prints: fitted as with --nccl-algo.
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-algo");
  const std::string text =
      collsim::test::slurp(nccl_tests_test::published_log("h100x8_all_reduce_ring.txt"));
  std::ofstream(dir / "ring-info.txt")
      << "gpu:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
      << text;
  const auto from_log =
      collsim::test::run_collsim("calibrate --nccl-tests " + (dir / "ring-info.txt").string() +
                                 " --topology dgx-h100 --out " + (dir / "a.json").string());
  const auto from_option = collsim::test::run_collsim(
      "calibrate --nccl-tests " + nccl_tests_test::published_log("h100x8_all_reduce_ring.txt") +
      " --topology dgx-h100 --nccl-algo ring --out " + (dir / "b.json").string());
  INFO(from_log.out << from_log.err);
  REQUIRE(from_log.status == 0);
  REQUIRE(from_option.status == 0);
  CHECK_THAT(from_log.out, Catch::Contains("NCCL_ALGO=Ring (from the log)"));
  const auto a = nlohmann::json::parse(collsim::test::slurp(dir / "a.json"));
  const auto b = nlohmann::json::parse(collsim::test::slurp(dir / "b.json"));
  CHECK(a["provenance"]["logs"][0]["nccl_algo"] == "Ring");
  CHECK(a["fit"]["mape_pct"] == b["fit"]["mape_pct"]);
  CHECK(a["fit"]["defaults_mape_pct"] == b["fit"]["defaults_mape_pct"]);

  // A log that also says NCCL_PROTO=Simple is fitted with NCCL held to Simple: its small sizes
  // (LL there without it) come out otherwise, and compare says what the log ran with.
  std::ofstream(dir / "ring-simple.txt")
      << "gpu:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
      << "gpu:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
      << text;
  const auto simple =
      collsim::test::run_collsim("calibrate --nccl-tests " + (dir / "ring-simple.txt").string() +
                                 " --topology dgx-h100 --out " + (dir / "c.json").string());
  INFO(simple.out << simple.err);
  REQUIRE(simple.status == 0);
  CHECK_THAT(simple.out, Catch::Contains("NCCL_PROTO=Simple (from the log)"));
  const auto c = nlohmann::json::parse(collsim::test::slurp(dir / "c.json"));
  CHECK(c["provenance"]["logs"][0]["nccl_proto"] == "Simple");
  CHECK(c["fit"]["defaults_mape_pct"] != a["fit"]["defaults_mape_pct"]);
  // The same as --nccl-proto on the log that does not say.
  const auto proto_option = collsim::test::run_collsim(
      "calibrate --nccl-tests " + nccl_tests_test::published_log("h100x8_all_reduce_ring.txt") +
      " --topology dgx-h100 --nccl-algo ring --nccl-proto simple --out " +
      (dir / "d.json").string());
  REQUIRE(proto_option.status == 0);
  const auto d = nlohmann::json::parse(collsim::test::slurp(dir / "d.json"));
  CHECK(d["provenance"]["nccl_proto"] == "simple");
  CHECK(d["fit"]["defaults_mape_pct"] == c["fit"]["defaults_mape_pct"]);
  CHECK_THAT(collsim::test::run_collsim(
                 "calibrate --nccl-tests " + (dir / "ring-simple.txt").string() +
                 " --topology dgx-h100 --algorithm ring --nccl-proto simple --out " +
                 (dir / "e.json").string())
                 .err,
             Catch::Contains("--nccl-proto: only with --algorithm nccl"));
  std::ofstream(dir / "ring.json")
      << R"({"topology": "dgx-h100", "collectives": [{"name": "ar", "op": "all_reduce",
             "algorithm": "nccl", "nccl_algo": "ring", "bytes": "1MiB"}]})";
  const auto compared =
      collsim::test::run_collsim("compare " + (dir / "ring.json").string() + " --nccl-tests " +
                                 (dir / "ring-simple.txt").string());
  CHECK_THAT(compared.out, Catch::Contains("# the log ran with NCCL_PROTO=Simple; the scenario's "
                                           "collective lets NCCL pick from all (set "
                                           "\"nccl_proto\""));
}

TEST_CASE("nccl-tests parser bounds the rows and the Rank lines a log may have", "[nccl-tests]") {
  const auto log_of = [](std::int64_t rows) {
    std::string text = nccl_tests_test::kHeader;
    for (std::int64_t i = 1; i <= rows; ++i)
      text += fmt::format("{} {} float sum -1 10.0 0.1 0.2 0\n", 4 * i, i);
    return text;
  };
  CHECK(parse_nccl_tests_log(log_of(kMaxLogRows), "ok.txt").rows.size() == kMaxLogRows);
  // Refused with the count and the bound, at the first row past it, before any simulation.
  CHECK(nccl_tests_test::parse_error(log_of(kMaxLogRows + 5)) ==
        fmt::format("bad.txt:{}: {} result rows; a log may have at most {} (nccl-tests prints "
                    "one per size, and each is simulated): split the log or trim its sizes",
                    kMaxLogRows + 3, kMaxLogRows + 5, kMaxLogRows));
  // A Rank range counts its ranks without listing them: 100 000 lines naming 2^20 GPUs.
  std::string ranks;
  for (int i = 0; i < 100000; ++i) ranks += "#  Rank  0..1048575 Group 0\n";
  const NcclTestsLog many = parse_nccl_tests_log(ranks + log_of(1), "all_reduce.txt");
  CHECK(many.ranks == 1048576);
  // Rank 9 is the highest named: ten GPUs, rank 8's line left out of the post.
  CHECK(parse_nccl_tests_log("#  Rank 4..7\n#  Rank 0..3\n#  Rank 2\n#  Rank 9\n" + log_of(1),
                             "all_reduce.txt")
            .ranks == 10);
  CHECK_THAT(nccl_tests_test::parse_error("#  Rank  0..1048576 Group 0\n" + log_of(1)),
             Catch::StartsWith("bad.txt:1: expected a rank or a range like 0..7"));
}

TEST_CASE("nccl-tests logs are read from regular files of bounded size only", "[nccl-tests]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("collsim-log-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto error = [](const fs::path& p) {
    try {
      read_nccl_tests_log(p.string());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE(::mkfifo((dir / "fifo.txt").c_str(), 0600) == 0);  // opening it would block
  CHECK(error(dir / "fifo.txt") ==
        (dir / "fifo.txt").string() + ": expected an nccl-tests log in a regular file, got a FIFO");
  CHECK(error("/dev/zero") ==
        "/dev/zero: expected an nccl-tests log in a regular file, got a device");
  CHECK(error(dir) ==
        dir.string() + ": expected an nccl-tests log in a regular file, got a directory");
  CHECK(error(dir / "none.txt") ==
        (dir / "none.txt").string() + ": no such file: expected an nccl-tests log");
  std::ofstream(dir / "big.txt").close();
  fs::resize_file(dir / "big.txt", kMaxLogBytes + 1);  // sparse: no disk
  CHECK(error(dir / "big.txt") == (dir / "big.txt").string() +
                                      ": expected an nccl-tests log of at most 256 MiB, got "
                                      "268435457 bytes");
  fs::remove_all(dir);
}

TEST_CASE("every published log in data/nccl-tests parses, with its GPU count", "[nccl-tests]") {
  // data/README.md: the machine of each log, and so how many GPUs took part.
  const std::pair<const char*, int> logs[] = {
      {"h100x8_all_reduce_default.txt", 8},    {"h100x8_all_reduce_ring.txt", 8},
      {"a100x8_all_reduce_default.txt", 8},    {"h100_2x8_all_reduce_default.txt", 16},
      {"h100_4x8_all_reduce_default.txt", 32}, {"h100_4x8_vm_all_reduce_default.txt", 32},
      {"h100_8x8_all_reduce_default.txt", 64}};
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::data_file("nccl-tests"))) {
    INFO(entry.path().filename().string());
    const auto it = std::find_if(std::begin(logs), std::end(logs),
                                 [&](const auto& l) { return entry.path().filename() == l.first; });
    REQUIRE(it != std::end(logs));  // a new log gets a line here and in data/README.md
    const NcclTestsLog log = read_nccl_tests_log(entry.path().string());
    CHECK(log.op == CollectiveOp::AllReduce);
    CHECK(log.ranks == it->second);
    CHECK(log.rows.size() >= 14);
    ++files;
  }
  CHECK(files == static_cast<int>(std::size(logs)));
}

TEST_CASE("compare against an nccl-tests log: per-size errors, MAPE overall and by range",
          "[nccl-tests]") {
  // A 4-rank ring all-reduce on a 10 GB/s switch, alpha 1 us: 6 (alpha + N/4/beta).
  const Scenario s = parse_scenario(
      {{"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "10GB/s"}}},
       {"network", {{"model", "ideal"}, {"alpha", "1us"}}},
       {"collectives",
        {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"bytes", 1024}}}}},
      ".");
  const std::int64_t sizes[] = {1024, 1 << 20, 16 << 20};
  const double factor[] = {0.5, 1.25, 2.0};  // measured = simulated x factor
  std::string text = "# Collective test starting: all_reduce_perf\n#  Rank  0..3 Group 0\n";
  for (int i = 0; i < 3; ++i) {
    const double sim_us = 6 * (1.0 + static_cast<double>(sizes[i]) / 4 / 1e10 * 1e6);
    // Bandwidths under 1 GB/s: rounded too coarsely for the parser to hold them to size / time.
    text += fmt::format("  {} {} float sum -1 {:.6f} 0.80 1.20 0\n", sizes[i], sizes[i] / 4,
                        sim_us * factor[i]);
  }
  const NcclTestsLog log = parse_nccl_tests_log(text, "synthetic.txt");
  const NcclComparison c = compare_nccl_log(s, s.collectives[0], log, 0, INT64_MAX);
  REQUIRE(c.rows.size() == 3);
  // error = (sim - meas) / meas = 1 / factor - 1: +100%, -20%, -50%.
  CHECK(c.rows[0].error_pct == Approx(100).epsilon(1e-6));
  CHECK(c.rows[1].error_pct == Approx(-20).epsilon(1e-6));
  CHECK(c.rows[2].error_pct == Approx(-50).epsilon(1e-6));
  CHECK(c.rows[2].measured_busbw_GBps == 1.2);
  CHECK(c.mape_pct == Approx((100 + 20 + 50) / 3.0).epsilon(1e-6));
  REQUIRE(c.ranges.size() == 3);
  CHECK(c.ranges[0].mape_pct == Approx(100).epsilon(1e-6));
  CHECK(c.ranges[1].label == "64 KiB to 4 MiB");
  CHECK(c.ranges[2].mape_pct == Approx(50).epsilon(1e-6));
  // --sizes keeps the rows inside; a log of another GPU count or collective is refused.
  CHECK(compare_nccl_log(s, s.collectives[0], log, 2048, INT64_MAX).rows.size() == 2);
  std::string eight_text = text;
  for (auto [from, to] : {std::pair{"0..3", "0..7"}, std::pair{"0.80 1.20", "0.80 1.40"}})
    for (auto at = eight_text.find(from); at != std::string::npos; at = eight_text.find(from))
      eight_text.replace(at, std::string_view(from).size(), to);
  const NcclTestsLog eight = parse_nccl_tests_log(eight_text, "synthetic.txt");
  REQUIRE(eight.ranks == 8);
  CHECK_THROWS_WITH(compare_nccl_log(s, s.collectives[0], eight, 0, INT64_MAX),
                    Catch::Contains("ran on 8 GPUs") && Catch::Contains("has 4 ranks"));
  // --ranks is the count of a log that does not say it: against its Rank lines, refused.
  CHECK_THROWS_WITH(parse_nccl_tests_log(text, "synthetic.txt", {.ranks = 8}),
                    Catch::Contains("ran on 4 GPUs") && Catch::Contains("--ranks"));
  const NcclTestsLog bcast =
      parse_nccl_tests_log(text, "bcast.txt", {.op = CollectiveOp::Broadcast, .ranks = 4});
  CHECK(bcast.op == CollectiveOp::AllReduce);  // the header wins over the hint
  CHECK(parse_size_range("1KiB:8GB", "--sizes") ==
        std::pair<std::int64_t, std::int64_t>(1024, 8000000000));
  CHECK_THROWS_WITH(parse_size_range("1KiB", "--sizes"), Catch::Contains("MIN:MAX"));
}

TEST_CASE(
    "calibrate --nccl-tests fits the machine under NCCL's model, the network model and "
    "the log's launch mode, and judges itself on sizes it did not see",
    "[nccl-tests]") {
  const std::string log = nccl_tests_test::published_log("h100x8_all_reduce_ring.txt");
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-fit");
  const std::string cal = (dir / "h100-ring.json").string();
  ::setenv("SOURCE_DATE_EPOCH", "1767225600", 1);  // the same bytes on every run
  const std::string fit_command =
      "calibrate --nccl-tests " + log + " --topology dgx-h100 --nccl-algo ring --out ";
  const auto fit = collsim::test::run_collsim(fit_command + cal);
  INFO(fit.out << fit.err);
  REQUIRE(fit.status == 0);
  CHECK_THAT(fit.out, Catch::Contains("launch_s") && Catch::Contains("held out") &&
                          Catch::Contains("uncalibrated") && Catch::Contains("kept") &&
                          Catch::Contains("one process drives 8 GPUs"));
  const auto doc = nlohmann::json::parse(collsim::test::slurp(cal));
  CHECK(doc["provenance"]["logs"][0]["file"] == "h100x8_all_reduce_ring.txt");
  CHECK(doc["provenance"]["logs"][0]["nccl_version"] == "2.26.2");
  CHECK(doc["provenance"]["logs"][0]["gpus"] == 8);
  CHECK(doc["provenance"]["date"] == "2026-01-01");
  CHECK(doc["provenance"]["algorithm"] == "nccl");
  CHECK(doc["provenance"]["nccl_algo"] == "ring");
  CHECK(doc["provenance"]["network"] == "flow");  // the default model, as the scenario's
  CHECK(doc["fit"]["residuals"].size() == 31);
  CHECK(doc["alpha_s"] == 0);
  // No worse than the defaults on its own log (else nothing is written), and a held-out
  // error from fitting half the sizes that is not the in-sample one.
  const double in_sample = doc["fit"]["mape_pct"], defaults = doc["fit"]["defaults_mape_pct"],
               heldout = doc["fit"]["heldout_mape_pct"];
  CHECK(in_sample <= defaults);
  CHECK(heldout > 0);
  CHECK(heldout != in_sample);
  CHECK(heldout < 10);

  // compare under the same model reproduces the fit's residuals.
  const std::string scenario = (dir / "nccl-ring.json").string();
  std::ofstream(scenario) << R"({"topology": "dgx-h100", "collectives": [{"name": "ar",
      "op": "all_reduce", "algorithm": "nccl", "nccl_algo": "ring", "bytes": "1GiB"}]})";
  const auto cmp = collsim::test::run_collsim("compare " + scenario + " --nccl-tests " + log +
                                              " --calibration " + cal + " --format json");
  INFO(cmp.out << cmp.err);
  REQUIRE(cmp.status == 0);
  const auto c = nlohmann::json::parse(cmp.out);
  CHECK(c["rows"].size() == 31);
  CHECK(c["mape_pct"].get<double>() == Approx(in_sample).epsilon(1e-9));
  // The log given to --measured, as `sweep --measured` takes one (and as a user who has only
  // logs types it): the same comparison, byte for byte. It was refused as malformed JSON.
  const auto as_measured = collsim::test::run_collsim("compare " + scenario + " --measured " + log +
                                                      " --calibration " + cal + " --format json");
  CHECK(as_measured.status == 0);
  CHECK(as_measured.out == cmp.out);

  // Under another network model the terms would mean something else: refused.
  const std::string ideal = (dir / "nccl-ring-ideal.json").string();
  std::ofstream(ideal) << R"({"topology": "dgx-h100", "network": {"model": "ideal"},
      "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring", "bytes": "1GiB"}]})";
  const auto refused = collsim::test::run_collsim("compare " + ideal + " --nccl-tests " + log +
                                                  " --calibration " + cal);
  CHECK(refused.status == 2);
  CHECK_THAT(refused.err, Catch::Contains("provenance.network") &&
                              Catch::Contains("fitted under the flow network model") &&
                              Catch::Contains("the scenario uses ideal"));
  // A model that does not exist is named as such, not offered to the scenario.
  {
    nlohmann::json doc = nlohmann::json::parse(collsim::test::slurp(cal));
    doc["provenance"]["network"] = "bogus";
    std::ofstream(dir / "bogus.json") << doc.dump();
  }
  const auto bogus = collsim::test::run_collsim("compare " + scenario + " --nccl-tests " + log +
                                                " --calibration " + (dir / "bogus.json").string());
  CHECK(bogus.status == 2);
  CHECK_THAT(bogus.err, Catch::Contains("provenance.network: expected one of") &&
                            !Catch::Contains("\"model\": \"bogus\""));

  // Where the defaults are far off (an A100: 18%, its floor above NCCL's table), the kept
  // terms close most of it, on the sizes the fit saw and on those it did not.
  const auto a100_doc = nccl_tests_test::calibrated(
      nccl_tests_test::published_log("a100x8_all_reduce_default.txt"),
      "'{\"preset\": \"dgx-h100\", \"nvlink\": \"300GB/s\"}'", (dir / "a100.json").string());
  CHECK(a100_doc["fit"]["defaults_mape_pct"].get<double>() > 15);
  CHECK(a100_doc["fit"]["mape_pct"].get<double>() < 8);
  CHECK(a100_doc["fit"]["heldout_mape_pct"].get<double>() < 10);
  CHECK(a100_doc["launch_s"].get<double>() > 8.4e-6);  // slower than NCCL's table says

  // The same inputs write the same file, byte for byte.
  const std::string again = (dir / "again.json").string();
  REQUIRE(collsim::test::run_collsim(fit_command + again).status == 0);
  CHECK(collsim::test::slurp(again) == collsim::test::slurp(cal));
}

TEST_CASE("compare and calibrate with nccl-tests logs refuse what does not fit", "[nccl-tests]") {
  const std::string log = nccl_tests_test::published_log("h100x8_all_reduce_ring.txt");
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-refuse");
  const std::string four = (dir / "four.json").string();
  std::ofstream(four) << R"({"topology": "dgx-h100", "collectives": [
      {"name": "ar", "op": "all_reduce", "algorithm": "ring", "bytes": "1MiB", "ranks": [0, 1, 2, 3]}]})";
  auto o = collsim::test::run_collsim("compare " + four + " --nccl-tests " + log);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("ran on 8 GPUs") && Catch::Contains("4 ranks"));
  const std::string bcast = (dir / "bcast.json").string();
  std::ofstream(bcast) << R"({"topology": "dgx-h100", "collectives": [
      {"name": "b", "op": "broadcast", "bytes": "1MiB"}]})";
  o = collsim::test::run_collsim("compare " + bcast + " --nccl-tests " + log);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("measured all_reduce") && Catch::Contains("broadcast"));
  // A log given as --measured is compared as --nccl-tests compares it (sweep --measured
  // takes a log too), and its errors name --measured; neither flag, or both, is refused.
  o = collsim::test::run_collsim("compare " + bcast + " --measured " + log);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::StartsWith("collsim: error: --measured: ") &&
                        Catch::Contains("measured all_reduce") && Catch::Contains("broadcast"));
  o = collsim::test::run_collsim("compare " + bcast);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--measured measured.json") && Catch::Contains("--nccl-tests"));
  o = collsim::test::run_collsim("compare " + bcast + " --measured m.json --nccl-tests " + log);
  CHECK(o.status != 0);
  CHECK_THAT(o.err, Catch::Contains("excludes"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + log + " --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--topology"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + log +
                                 " --topology dgx-h100 --collective broadcast --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("measured all_reduce"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + log +
                                 " --topology dgx-h100 --algorithm auto --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--algorithm") && Catch::Contains("not auto"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + log +
                                 " --topology dgx-h100 --algorithm ring --nccl-algo ring --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err,
             Catch::Contains("--nccl-algo") && Catch::Contains("only with --algorithm nccl"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + log +
                                 " --topology dgx-h100 --terms launch,speed --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--terms") && Catch::Contains("speed"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + log +
                                 " --topology dgx-h100 --iters 3 --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--iters"));
  o = collsim::test::run_collsim("calibrate --topology dgx-h100 --out " +
                                 (dir / "x.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--topology") && Catch::Contains("only with --nccl-tests"));
  CHECK(!std::filesystem::exists(dir / "x.json"));
  // Without the curve (it holds this machine's bandwidths), on an inline topology, with
  // collsim's plain ring standing for NCCL's, under the ideal model.
  o = collsim::test::run_collsim(
      "calibrate --nccl-tests " + log +
      " --topology '{\"preset\": \"switch\", \"gpus\": 8, \"bandwidth\": \"450GB/s\", "
      "\"kind\": \"nvlink\"}' --algorithm ring --network ideal "
      "--terms launch,latency,efficiency --out " +
      (dir / "y.json").string());
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  const auto doc = nlohmann::json::parse(collsim::test::slurp(dir / "y.json"));
  CHECK(!doc["links"]["nvlink"].contains("bandwidth_curve"));
  CHECK(doc["links"]["nvlink"]["efficiency"].get<double>() < 0.9);
  CHECK(doc["fit"]["mape_pct"].get<double>() < doc["fit"]["defaults_mape_pct"].get<double>());
  CHECK(doc["provenance"]["network"] == "ideal");
  CHECK(doc["provenance"]["algorithm"] == "ring");
  // The -g 8 launch hides the floor (its issue time binds): launch is not fitted, and
  // the notes say why.
  CHECK(!doc.contains("launch_s"));
  CHECK_THAT(o.out, Catch::Contains("launch and latency are not fitted"));
}

TEST_CASE("compare takes the collective from the log, the scenario's only where the log is silent",
          "[nccl-tests]") {
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-log-says");
  const std::string gather = (dir / "gather.json").string();
  std::ofstream(gather) << R"({"topology": "dgx-h100", "collectives": [
      {"name": "g", "op": "all_gather", "algorithm": "nccl", "bytes": "1MiB"}]})";
  // The log names no test in its header but runs all_reduce_perf: an all-gather scenario
  // was once compared with it as if it were one.
  const std::string row =
      "  1048576  262144  float  sum  -1  60.0  17.48  30.59  0  59.0  17.77  31.10  0\n";
  const std::string runs = (dir / "log.txt").string();
  std::ofstream(runs) << "$ mpirun -np 8 ./build/all_reduce_perf -b 1M -e 1M\n" + row;
  auto o = collsim::test::run_collsim("compare " + gather + " --nccl-tests " + runs);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("measured all_reduce (from the test binary the log names)"));
  // A log that says nothing of its collective is the compared one's, and says so, where
  // its rows fit it: an all-reduce's rows (a reduction, the whole count, busbw / algbw 1.75)
  // were compared as an all-gather's.
  const std::string silent = (dir / "silent.txt").string();
  std::ofstream(silent) << row;
  o = collsim::test::run_collsim("compare " + gather + " --nccl-tests " + silent + " --ranks 8");
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("its rows do not fit all_gather (from the compared "
                                    "collective): line 1 prints the reduction \"sum\""));
  std::ofstream(silent)
      << "  1048576  32768  float  none  -1  60.0  17.48  15.29  0  59.0  17.77  15.55  0\n";
  o = collsim::test::run_collsim("compare " + gather + " --nccl-tests " + silent +
                                 " --ranks 8 --format json");
  INFO(o.err);
  REQUIRE(o.status == 0);
  CHECK(nlohmann::json::parse(o.out)["log"]["op_from"] ==
        "the compared collective (the log does not say)");
  // A log of zero-byte rows only: nothing to compare or fit, said as such (not --sizes,
  // not the topology).
  const std::string zero = (dir / "all_gather_zero.txt").string();
  std::ofstream(zero)
      << "#  Rank  0..7\n  0  0  float  none  -1  5.0  0.00  0.00  0  5.0  0.00  0.00  0\n";
  o = collsim::test::run_collsim("compare " + gather + " --nccl-tests " + zero);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("every row is of zero bytes") && !Catch::Contains("--sizes"));
  o = collsim::test::run_collsim("calibrate --nccl-tests " + zero + " --topology dgx-h100 --out " +
                                 (dir / "z.json").string());
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--nccl-tests") && Catch::Contains("sizes above zero bytes"));
  // Two logs of one file name in two folders: the fit names each by its path. (Two runs:
  // the same text twice is refused.)
  const std::string log = nccl_tests_test::published_log("h100x8_all_reduce_ring.txt");
  for (const char* run : {"a", "b"}) {
    std::filesystem::create_directories(dir / run);
    std::ofstream(dir / run / "all_reduce.txt") << test::slurp(log) << "# run " << run << "\n";
  }
  const auto doc = nccl_tests_test::calibrated(
      (dir / "a" / "all_reduce.txt").string() + " " + (dir / "b" / "all_reduce.txt").string(),
      "dgx-h100", (dir / "ab.json").string(), " --nccl-algo ring");
  std::set<std::string> files;
  for (const auto& r : doc["fit"]["residuals"]) files.insert(r["file"].get<std::string>());
  CHECK(files == std::set<std::string>{(dir / "a" / "all_reduce.txt").string(),
                                       (dir / "b" / "all_reduce.txt").string()});
}

TEST_CASE("launch mode: one process driving N GPUs floors a collective at N issue times",
          "[nccl-tests][launch]") {
  // 4 ranks, 10 GB/s, alpha 1 us: a 1 KiB ring all-reduce takes 6 (1 us + 256 B / 10 GB/s)
  // = 6.15 us on the GPUs; one process issuing 4 GPUs' kernels at 4.4 us each takes 17.6 us.
  const auto scenario = [](const nlohmann::json& launch, std::int64_t bytes) {
    nlohmann::json doc = {
        {"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "10GB/s"}}},
        {"network", {{"model", "flow"}, {"alpha", "1us"}}},
        {"collectives",
         {{{"name", "ar"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"bytes", bytes}}}}};
    if (!launch.is_null()) doc["launch"] = launch;
    return parse_scenario(doc, ".");
  };
  const double device = 6 * (1e-6 + 256 / 10e9);
  CHECK(run_scenario(scenario(nullptr, 1024)).outcomes[0].time_s == Approx(device));
  CHECK(run_scenario(scenario("process_per_gpu", 1024)).outcomes[0].time_s == Approx(device));
  const Scenario driven = scenario({{"gpus_per_process", 4}}, 1024);
  CHECK(driven.launch.value().describe() ==
        "one process drives 4 GPUs (17.6 us to issue a collective)");
  CHECK(run_scenario(driven).outcomes[0].time_s == Approx(4 * 4.4e-6));
  CHECK(run_scenario_streamed(driven).outcomes[0].time_s == Approx(4 * 4.4e-6));
  // Longer on the GPUs than the host takes to issue it: the floor is hidden.
  const double big = 6 * (1e-6 + (1 << 20) / 4 / 10e9);
  CHECK(run_scenario(scenario({{"gpus_per_process", 4}}, 1 << 20)).outcomes[0].time_s ==
        Approx(big));
  CHECK(run_scenario(scenario({{"gpus_per_process", 4}, {"issue_per_gpu", "10us"}}, 1024))
            .outcomes[0]
            .time_s == Approx(40e-6));
  CHECK_THAT(test::error_of(R"({"topology": "dgx-h100", "launch": {"gpus_per_proces": 8},
      "collectives": [{"op": "all_reduce", "bytes": "1MiB"}]})"),
             Catch::Contains("launch") && Catch::Contains("gpus_per_process"));
  // One process cannot drive more GPUs than the machine has: 65536 on 4 GPUs ran, 288 ms.
  CHECK_THROWS_WITH(scenario({{"gpus_per_process", 5}}, 1024),
                    Catch::Contains("launch.gpus_per_process") && Catch::Contains("1..4"));
  CHECK_THAT(test::error_of(R"({"topology": "dgx-h100", "launch": "one_process",
      "collectives": [{"op": "all_reduce", "bytes": "1MiB"}]})"),
             Catch::Contains("launch") && Catch::Contains("process_per_gpu"));
}

TEST_CASE("compare takes the launch mode from the log's header and says so",
          "[nccl-tests][launch]") {
  // The forced-ring log ran -g 8 (nThread 1 nGpus 8): one process issued all 8 kernels.
  const NcclTestsLog log =
      read_nccl_tests_log(nccl_tests_test::published_log("h100x8_all_reduce_ring.txt"));
  CHECK(launch_of(log).gpus_per_process == 8);
  CHECK(launch_of(log).source == "the log's header (nThread 1 nGpus 8)");
  const Scenario s = parse_scenario({{"topology", "dgx-h100"},
                                     {"collectives",
                                      {{{"name", "ar"},
                                        {"op", "all_reduce"},
                                        {"algorithm", "nccl"},
                                        {"nccl_algo", "ring"},
                                        {"bytes", "1GiB"}}}}},
                                    ".");
  const NcclComparison c = compare_nccl_log(s, s.collectives[0], log, 0, 64 << 10);
  CHECK(c.launch.gpus_per_process == 8);
  CHECK_THAT(nccl_comparison_table(c),
             Catch::Contains("# launch: one process drives 8 GPUs (35.2 us to issue a "
                             "collective), from the log's header (nThread 1 nGpus 8)"));
  // Every small size is the host's 35.2 us to issue, against 35-40 us measured; each row
  // says so, in its label and (JSON) in held_by.
  const auto json_rows = nccl_comparison_json(c)["rows"];
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const auto& row = c.rows[i];
    CHECK(row.simulated_s == Approx(35.2e-6));
    CHECK(std::abs(row.error_pct) < 15);
    CHECK(row.held_by == HeldBy::HostIssue);
    CHECK_THAT(row.plan, Catch::EndsWith(" (host issue)"));
    CHECK(json_rows[i]["held_by"] == "host_issue");
  }
  CHECK(c.mape_pct < 5);  // 58% with the launch mode left out
  // A scenario that says how it launches keeps its own.
  Scenario own = s;
  set_launch(own, LaunchMode{.gpus_per_process = 1, .source = "the scenario"});
  CHECK(compare_nccl_log(own, own.collectives[0], log, 0, 64 << 10).launch.gpus_per_process == 1);
  // -G 100: the timed collectives are replayed from a CUDA graph, which issues nothing per
  // collective: the small sizes are no longer held at 35.2 us.
  std::string text = test::slurp(nccl_tests_test::published_log("h100x8_all_reduce_ring.txt"));
  text.replace(text.find("graph: 0"), 8, "graph: 100");
  const NcclTestsLog graphs = parse_nccl_tests_log(text, "all_reduce_graph.txt");
  CHECK(graphs.graph_launches == 100);
  CHECK(launch_of(graphs).issue_time() == 0);
  CHECK_THAT(launch_of(graphs).source, Catch::Contains("graph: 100: CUDA graphs replay"));
  const NcclComparison g = compare_nccl_log(s, s.collectives[0], graphs, 0, 64 << 10);
  CHECK_THAT(
      nccl_comparison_table(g),
      Catch::Contains("# launch: one process drives 8 GPUs (nothing to issue per collective)"));
  for (const auto& row : g.rows) CHECK(row.held_by != HeldBy::HostIssue);
}

TEST_CASE("nccl-tests: every test binary's name is a collective collsim simulates",
          "[nccl-tests]") {
  const std::pair<const char*, CollectiveOp> binaries[] = {
      {"all_reduce_perf", CollectiveOp::AllReduce},
      {"all_gather_perf", CollectiveOp::AllGather},
      {"reduce_scatter_perf", CollectiveOp::ReduceScatter},
      {"broadcast_perf", CollectiveOp::Broadcast},
      {"reduce_perf", CollectiveOp::Reduce},
      {"alltoall_perf", CollectiveOp::AllToAll},
      {"sendrecv_perf", CollectiveOp::SendRecv},
      {"gather_perf", CollectiveOp::Gather},
      {"scatter_perf", CollectiveOp::Scatter},
      {"hypercube_perf", CollectiveOp::AllGather}};
  for (const auto& [binary, op] : binaries) {
    INFO(binary);
    REQUIRE(nccl_tests_op(binary).has_value());
    CHECK(*nccl_tests_op(binary) == op);
  }
  CHECK(!nccl_tests_op("frobnicate_perf"));
}

TEST_CASE("calibrate tries the floor and the plateau each alone", "[nccl-tests]") {
  // A launch stated alone replaces NCCL's estimate as the floor; an efficiency alone keeps
  // it. A 2 x 8 fit kept launch, latency and efficiency (its launch standing in for the
  // floor, 21% high at the smallest sizes) until efficiency alone was tried, which
  // predicted its held-out sizes and the other logs better.
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-fit-alone");
  const auto doc =
      nccl_tests_test::calibrated(nccl_tests_test::published_log("h100x8_all_reduce_default.txt"),
                                  "dgx-h100", (dir / "default.json").string());
  std::vector<std::string> tried;
  for (const auto& t : doc["fit"]["trials"]) tried.push_back(t["terms"]);
  CHECK_THAT(tried, Catch::VectorContains(std::string("none")) &&
                        Catch::VectorContains(std::string("launch")) &&
                        Catch::VectorContains(std::string("efficiency")));
  // The curve was read from the transfers of what NCCL ran at the sizes it was read at (ring
  // up to 1 MiB, NVLS from 2 MiB): another algorithm's transfers take its last rate.
  CHECK(doc["links"]["nvlink"]["bandwidth_curve_algorithms"] == nlohmann::json{"nvls", "ring"});
}

TEST_CASE("calibrate describes every link kind a multi-node log crosses", "[nccl-tests]") {
  // 4 x 8 H100: all-reduces over NVLink and InfiniBand. A fit that asked only the largest
  // size (NVLSTree, whose NVLink stage hides the network) left InfiniBand out; the kept
  // efficiency must describe both kinds.
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-fit-4x8");
  const std::string log = nccl_tests_test::published_log("h100_4x8_all_reduce_default.txt");
  // The whole log (its largest sizes are where an efficiency shows; up to 1 GiB none is
  // kept), fitting the efficiency alone: fewer trials, as under the sanitizers they cost.
  const std::string cluster = "'{\"preset\": \"cluster\", \"nodes\": 4}'";
  const auto doc =
      nccl_tests_test::calibrated(log, cluster, (dir / "4x8.json").string(), " --terms efficiency");
  CHECK(doc["fit"]["link_kinds"] == nlohmann::json({"nvlink", "ib"}));
  CHECK(doc["fit"]["terms"] == "efficiency");
  CHECK(doc["links"].contains("nvlink"));
  CHECK(doc["links"].contains("ib"));
  // Two logs of one machine at two node counts, fitted together: each log's launch mode is
  // recorded with it, and the note names a mode the logs share once. Not under the
  // sanitizers: the fit above reaches the same code, and this one is the suite's costliest
  // there (the Release run covers it).
  if (collsim::test::kSanitized) return;
  const std::string note = nccl_tests_test::calibrated(
      nccl_tests_test::published_log("h100_2x8_all_reduce_default.txt") + " " + log, cluster,
      (dir / "2x8-4x8.json").string(), " --terms efficiency")["fit"]["notes"][0];
  CHECK(note.find("one process per GPU") != std::string::npos);
  CHECK(note.find("one process per GPU") == note.rfind("one process per GPU"));
}

TEST_CASE("a bandwidth curve fitted across nodes describes the network, in its own rate",
          "[nccl-tests]") {
  // 8 x 8 H100: NVLink at 450 GB/s, InfiniBand at 50, the network bounding the logged
  // sizes. The curve is the slowest kind's: a share of its nominal rate by transfer size,
  // written in its B/s; NVLink keeps its usable share. It was once in B/s of the slowest
  // kind applied to every kind (NVLink at network speed: the curve's trials 230-300% off
  // held out), and then one share for every kind (a 10 x 8 fit slowed one node's NVLS by
  // the network's shape: 2.3% -> 23%).
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-fit-curve-kinds");
  const auto doc = nccl_tests_test::calibrated(
      nccl_tests_test::log_to_fit("h100_8x8_all_reduce_default.txt", dir),
      "'{\"preset\": \"cluster\", \"nodes\": 8}'", (dir / "8x8.json").string(), " --terms curve");
  REQUIRE(doc["fit"]["terms"] == "curve");
  CHECK_FALSE(doc["links"]["nvlink"].contains("bandwidth_curve"));
  const auto& ib = doc["links"]["ib"]["bandwidth_curve"];
  REQUIRE(ib.size() >= 2);
  for (std::size_t i = 0; i < ib.size(); ++i) {
    CHECK(ib[i][1].get<double>() <= 50e9 / 0.96 * 1.000001);  // no faster than nominal
    // Transfer sizes a quarter octave apart or closer share one point.
    if (i > 0) CHECK(ib[i][0].get<double>() > ib[i - 1][0].get<double>() * 1.15);
  }
  CHECK(doc["fit"]["heldout_mape_pct"].get<double>() < 10);
}

TEST_CASE("a size whose two times disagree is flagged as disturbed, and left out of fits",
          "[nccl-tests]") {
  NcclTestsRow row;
  row.out_of_place.time_us = 100;
  CHECK_FALSE(row.disturbed());  // no in-place column: nothing to compare with
  row.in_place = NcclTestsResult{124, 0, 0, {}};
  CHECK_FALSE(row.disturbed());  // within kColumnsAgree
  row.in_place->time_us = 126;
  CHECK(row.disturbed());
  row.in_place->time_us = 79;
  CHECK(row.disturbed());  // either way round

  // The 8x H100 default log: 32 B (68.14 out of place, 13.52 us in place) and 4 KiB (23.59,
  // 16.46); every other size's two times agree within 1.19x.
  const NcclTestsLog log =
      read_nccl_tests_log(nccl_tests_test::published_log("h100x8_all_reduce_default.txt"));
  std::vector<std::int64_t> disturbed;
  for (const NcclTestsRow& r : log.rows)
    if (r.disturbed()) disturbed.push_back(r.bytes);
  CHECK(disturbed == std::vector<std::int64_t>{32, 4096});

  // compare keeps every size in its MAPE, and gives the MAPE of the others beside it.
  const Scenario s =
      parse_scenario(nlohmann::json::parse(R"({"topology": "dgx-h100", "collectives": [
          {"name": "ar", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB"}]})"),
                     ".");
  const NcclComparison c =
      compare_nccl_log(s, s.collectives[0], log, 0, std::numeric_limits<std::int64_t>::max());
  REQUIRE(c.rows.size() == log.rows.size());
  double sum = 0;
  for (const NcclCompareRow& r : c.rows) {
    CHECK(r.disturbed == (r.bytes == 32 || r.bytes == 4096));
    if (!r.disturbed) sum += std::fabs(r.error_pct);
  }
  CHECK(c.steady_sizes == static_cast<int>(c.rows.size()) - 2);
  CHECK(c.steady_mape_pct == Approx(sum / c.steady_sizes));
  const nlohmann::json doc = nccl_comparison_json(c);
  CHECK(doc["rows"][2]["disturbed"] == true);
  CHECK(doc["rows"][2]["in_place_s"] == Approx(13.52e-6));
  CHECK(doc["steady"]["sizes"] == c.steady_sizes);
  CHECK(nccl_comparison_table(c).find("[disturbed: in place 13.52 us]") != std::string::npos);

  // The fit is the fit of the log without them, and says which it left out. Under the
  // sanitizers, of the log up to 1 MiB (both disturbed sizes among 18): each fit simulates
  // every size many times, which takes 80 s there.
  NcclTestsLog fitted = log;
  if (kSanitized)
    std::erase_if(fitted.rows, [](const NcclTestsRow& r) { return r.bytes > (1 << 20); });
  NcclFitRequest with;
  with.logs = {fitted};
  with.topology = "dgx-h100";
  NcclTestsLog clean = fitted;
  std::erase_if(clean.rows, [](const NcclTestsRow& r) { return r.disturbed(); });
  NcclFitRequest without = with;
  without.logs = {clean};
  const NcclFit a = fit_nccl_tests(with), b = fit_nccl_tests(without);
  CHECK(a.values.launch_s == b.values.launch_s);
  CHECK(a.values.efficiency == b.values.efficiency);
  CHECK(a.values.curve == b.values.curve);
  CHECK(a.mape_pct == b.mape_pct);
  CHECK(a.heldout_mape_pct == b.heldout_mape_pct);
  const auto note = std::find_if(a.notes.begin(), a.notes.end(), [](const std::string& n) {
    return n.find("left out") != std::string::npos;
  });
  REQUIRE(note != a.notes.end());
  CHECK(note->find("at 32 B (68.14 / 13.52 us)") != std::string::npos);
  CHECK(std::none_of(b.notes.begin(), b.notes.end(),
                     [](const std::string& n) { return n.find("left out") != std::string::npos; }));
}

TEST_CASE(
    "compare takes a send/recv log's GPU count from the compared collective when the "
    "log does not say",
    "[nccl-tests]") {
  // One process per GPU without Rank lines: a send/recv's busbw is its algbw, so nothing in
  // the log counts the GPUs. The parser alone refuses it; compare runs it on the scenario's
  // 8 ranks and says where the count came from.
  const std::string text =
      "# Collective test starting: sendrecv_perf\n"
      "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 67108864 step: 2(factor) warmup iters: 5\n"
      "    33554432       8388608     float     sum      -1    100.00  335.54  335.54      0   "
      " 100.00  335.54  335.54      0\n"
      "    67108864      16777216     float     sum      -1    190.00  353.21  353.21      0   "
      " 190.00  353.21  353.21      0\n";
  CHECK_THAT(nccl_tests_test::parse_error(text), Catch::Contains("cannot tell how many GPUs"));
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-sendrecv");
  std::ofstream(dir / "sendrecv.txt") << text;
  const Scenario s = parse_scenario(
      nlohmann::json::parse(R"({"topology": "dgx-h100", "collectives": [{"name": "sr",
        "op": "send_recv", "algorithm": "nccl", "bytes": "32MiB"}]})"),
      ".");
  NcclCompareRequest request;
  request.log = (dir / "sendrecv.txt").string();
  const NcclComparison c = compare_with_nccl_log(s, request);
  CHECK(c.log->ranks == 8);
  CHECK(c.log->ranks_source == "the compared collective (the log does not say)");
  REQUIRE(c.rows.size() == 2);
  // A count given for the log is still held against the scenario's.
  request.ranks = 4;
  CHECK_THROWS_WITH(compare_with_nccl_log(s, request),
                    Catch::StartsWith("--nccl-tests: ") &&
                        Catch::Contains("ran on 4 GPUs (from given)") &&
                        Catch::Contains("has 8 ranks"));
}

namespace nccl_tests_test {

// A send/recv table (one process per GPU, no Rank lines) at `gbps` from `from` to `to` bytes.
std::string sendrecv_table(std::int64_t from, std::int64_t to, double gbps) {
  std::string text = fmt::format(
      "# Collective test starting: sendrecv_perf\n"
      "# nThread 1 nGpus 1 minBytes {} maxBytes {} step: 2(factor) warmup iters: 5\n",
      from, to);
  for (std::int64_t bytes = from; bytes <= to; bytes *= 2) {
    const double us = static_cast<double>(bytes) / (gbps * 1e3);
    text += fmt::format(
        "{:>12} {:>12} float sum -1 {:>9.1f} {:>6.2f} {:>6.2f} 0 {:>9.1f} "
        "{:>6.2f} {:>6.2f} 0\n",
        bytes, bytes / 4, us, gbps, gbps, us, gbps, gbps);
  }
  return text;
}

}  // namespace nccl_tests_test

TEST_CASE("calibrate says what point-to-point logs alone tell of the links", "[nccl-tests]") {
  const std::filesystem::path dir = collsim::test::temp_dir("nccl-fit-p2p");
  // Across two hosts at 20 GB/s, where NCCL's two channels of a network peer give 28 (14
  // each, docs/nccl.md §12) on 48 GB/s of NIC: the channels' ceiling sets every size's time,
  // so no link term can be read, and calibrate says why and writes nothing.
  std::ofstream(dir / "hosts.txt") << nccl_tests_test::sendrecv_table(32 << 20, 1 << 30, 20);
  const auto hosts = collsim::test::run_collsim(
      "calibrate --nccl-tests " + (dir / "hosts.txt").string() +
      " --ranks 16 --topology '{\"preset\": \"cluster\", \"nodes\": 2}' --out " +
      (dir / "hosts.json").string());
  CHECK(hosts.status == 2);
  CHECK_THAT(hosts.err, Catch::Contains("these logs are NCCL's point-to-point sends"));
  CHECK_FALSE(std::filesystem::exists(dir / "hosts.json"));
  // One host at 300 GB/s from 512 MiB, where 32 channels ask for more than NVLink carries:
  // an NVLink efficiency is fitted from these sizes, with a note that only they tell it.
  std::ofstream(dir / "host.txt") << nccl_tests_test::sendrecv_table(512 << 20, 4LL << 30, 300);
  const nlohmann::json doc = nccl_tests_test::calibrated(
      (dir / "host.txt").string(), "dgx-h100", (dir / "host.json").string(), " --ranks 8");
  const auto& notes = doc["fit"]["notes"];
  CHECK(std::any_of(notes.begin(), notes.end(), [](const nlohmann::json& n) {
    return n.get<std::string>().starts_with("fitted from NCCL's point-to-point sends alone");
  }));
  CHECK(doc["links"].contains("nvlink"));
}

TEST_CASE("nccl-tests logs as launchers and old nccl-tests print them", "[nccl-tests]") {
  // Old nccl-tests: no root column (all-reduce), no reduction either (all-to-all), a root and
  // no reduction (broadcast); the error column a magnitude, not a count of wrong elements.
  const NcclTestsLog old_ar = parse_nccl_tests_log(
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor)\n"
      "  8  2  float  sum  30.5  0.00  0.00  1e-07  30.1  0.00  0.00  0e+00\n"
      "  16  4  float  sum  31.0  0.00  0.00  2e+00  30.9  0.00  0.00  0e+00\n",
      "old_all_reduce.txt", {.ranks = 4});
  REQUIRE(old_ar.rows.size() == 2);
  CHECK(old_ar.rows[1].out_of_place.time_us == 31.0);
  CHECK(old_ar.rows[1].in_place->time_us == 30.9);
  CHECK(old_ar.rows[1].redop == "sum");
  CHECK(old_ar.rows[1].root == -1);
  CHECK(old_ar.rows[1].wrong() == 0);  // an error of 2: a magnitude, not a count
  const NcclTestsLog old_a2a = parse_nccl_tests_log(
      "  1048576  16384  float  800.0  1.31  1.15  0e+00  801.0  1.31  1.15  0e+00\n",
      "old_alltoall.txt", {.ranks = 8});
  CHECK(old_a2a.op == CollectiveOp::AllToAll);
  CHECK(old_a2a.rows[0].out_of_place.time_us == 800.0);
  CHECK(old_a2a.rows[0].redop == "none");
  const NcclTestsLog old_bcast =
      parse_nccl_tests_log("  1024  256  float  0  40.0  0.03  0.03  N/A  39.0  0.03  0.03  N/A\n",
                           "broadcast.txt", {.ranks = 2});
  CHECK(old_bcast.rows[0].root == 0);
  CHECK(old_bcast.rows[0].out_of_place.time_us == 40.0);

  // Open MPI's --tag-output, srun --label and rank tags, even where two ranks' output met
  // inside a row; a binary built with MPI=1 (all_reduce_perf_mpi).
  const std::string row = "  1024  256  float  sum  -1  37.0  0.03  0.05  0  36.0  0.03  0.05  0";
  for (const std::string& marked :
       {"[1,0]<stdout>:# Collective test starting: all_reduce_perf_mpi\n[1,0]<stdout>:" + row,
        " 0: # Collective test starting: all_reduce_perf\n 0: " + row,
        std::string("[0] # Collective test starting: all_reduce_perf\n[0]  1024  256  float  sum  "
                    "-1[0]  37.0  0.03  0.05  0[0]  36.0  0.03  0.05  0")}) {
    INFO(marked);
    const NcclTestsLog log = parse_nccl_tests_log(marked + "\n", "x.txt", {.ranks = 4});
    CHECK(log.op_source == "the log's header");
    REQUIRE(log.rows.size() == 1);
    CHECK(log.rows[0].out_of_place.time_us == 37.0);
    CHECK(log.rows[0].in_place->time_us == 36.0);
  }
  // What each launcher adds comes off; device names in brackets stay.
  CHECK(without_launcher_marks("#  Rank  0 Pid 1 on host device  0 [0x1a] Tesla V100") ==
        "#  Rank  0 Pid 1 on host device  0 [0x1a] Tesla V100");
  CHECK(without_launcher_marks("#  Rank  1 Pid 1 on host device  1 [0000:02:00] NVIDIA") ==
        "#  Rank  1 Pid 1 on host device  1 [0000:02:00] NVIDIA");
  CHECK(without_launcher_marks("[1,12]<stdout>:  8  2") == "  8  2");
  CHECK(without_launcher_marks(" 13: # nThread 1") == " # nThread 1");
  CHECK(without_launcher_marks("[0]  8  2 float sum -1[0]  1.0") ==
        "     8  2 float sum -1     1.0");
  CHECK(without_launcher_marks("2024-05-01T12:00:00.1Z [1,0]<stdout>:# Rank 0") == "# Rank 0");
  CHECK(without_launcher_marks("2024-05-01T12:00:00.1Z  0:   8  2") == "   8  2");
}

TEST_CASE(
    "nccl-tests: sizes that failed the check, zero-byte rows and a GPU count from "
    "small bandwidths are said",
    "[nccl-tests]") {
  // busbw / algbw at two decimals: 1.00 (all-reduce on 2 GPUs), 1.50 (4) from bandwidths
  // under 1 GB/s; 1.94 / 1.00 bounds K only to 26..40, so it is not taken for a count.
  const auto ranks_of = [](const std::string& algbw, const std::string& busbw) {
    const double time_us = 65536 / (std::stod(algbw) * 1e3);  // algbw is size / time
    const NcclTestsLog log = parse_nccl_tests_log(
        fmt::format("  65536  16384  float  sum  -1  {:.1f}  {}  {}  0\n", time_us, algbw, busbw),
        "all_reduce.txt", {.ranks_otherwise = 16});
    return std::make_pair(log.ranks, log.ranks_source);
  };
  CHECK(ranks_of("0.65", "0.65").first == 2);
  CHECK(ranks_of("0.96", "1.44").first == 4);
  const auto [k, from] = ranks_of("1.00", "1.94");
  CHECK(k == 16);
  CHECK_THAT(from, Catch::Contains("the compared collective"));

  const std::string log_text =
      "# Collective test starting: reduce_scatter_perf\n"
      "#  Rank  0..3 Group 0\n"
      "        0          0     float     sum      -1     5.0    0.00    0.00      0     "
      "5.0    0.00    0.00      0\n"
      "     1024         64     float     sum      -1    20.0    0.05    0.04      0    "
      "20.0    0.05    0.04      0\n"
      "     2048        128     float     sum      -1    21.0    0.10    0.07     17    "
      "21.0    0.10    0.07      0\n"
      "     4096        256     float     sum      -1    22.0    0.19    0.14      0    "
      "22.0    0.19    0.14      0\n";
  const NcclTestsLog log = parse_nccl_tests_log(log_text, "rs.txt");
  CHECK(log.rows[2].wrong() == 17);
  const Scenario s = parse_scenario(
      nlohmann::json::parse(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "100GB/s"},
          "collectives": [{"name": "rs", "op": "reduce_scatter", "bytes": "1KiB"}]})"),
      ".");
  const NcclComparison c =
      compare_nccl_log(s, s.collectives[0], log, 0, std::numeric_limits<std::int64_t>::max());
  REQUIRE(c.rows.size() == 3);
  CHECK(c.zero_byte_rows == 1);
  CHECK(c.rows[1].wrong == 17);
  CHECK(c.steady_sizes == 2);
  CHECK(c.steady_mape_pct ==
        Approx((std::fabs(c.rows[0].error_pct) + std::fabs(c.rows[2].error_pct)) / 2));
  const std::string table = nccl_comparison_table(c);
  CHECK_THAT(table, Catch::Contains("[failed nccl-tests' check: 17 wrong]") &&
                        Catch::Contains("1 failed the check") &&
                        Catch::Contains("1 zero-byte row left out"));
  const nlohmann::json doc = nccl_comparison_json(c);
  CHECK(doc["rows"][1]["wrong"] == 17);
  CHECK(doc["zero_byte_rows_left_out"] == 1);
}

TEST_CASE(
    "nccl-tests: posted logs that show some of their Rank lines, every element type, "
    "timestamps",
    "[nccl-tests]") {
  const std::string row = "  1048576  262144  float  sum  -1  60.0  17.48  32.77  0\n";
  // Two of 16 Rank lines: the highest names 16 GPUs, as busbw / algbw (1.875) does.
  const NcclTestsLog shown = parse_nccl_tests_log(
      "#  Rank  7 Group 0 Pid 1 on a device 7\n#  Rank 15 Group 0 Pid 2 on b device 7\n" + row,
      "all_reduce.txt");
  CHECK(shown.ranks == 16);
  CHECK(shown.ranks_source == "the log's Rank lines");
  // One line of 16 where busbw / algbw says 16: the bandwidths win, and say so.
  const NcclTestsLog one =
      parse_nccl_tests_log("#  Rank  3 Group 0 Pid 1 on a device 3\n" + row, "all_reduce.txt");
  CHECK(one.ranks == 16);
  CHECK_THAT(one.ranks_source, Catch::Contains("Rank lines name 4"));
  // Gather and scatter: (K-1)/K, as all-gather.
  CHECK(parse_nccl_tests_log("  1048576  65536  float  none  0  60.0  17.48  16.39  0\n",
                             "scatter.txt")
            .ranks == 16);

  // -d all, -o all, -r all: every element type, reduction or root in turn, each run from
  // the smallest size; the first run is read, the others named in a note.
  const struct {
    const char* text;
    const char* file;
    const char* note;
  } several_runs[] = {
      {"#  Rank 0..7 Group 0\n"
       "  1024  1024  int8  sum  -1  20.0  0.05  0.09  0\n"
       "  2048  2048  int8  sum  -1  21.0  0.10  0.17  0\n"
       "  1024  1024  uint8  sum  -1  20.5  0.05  0.09  0\n"
       "  2048  1024  half  sum  -1  21.5  0.10  0.17  0\n",
       "all_reduce.txt", "read: int8 sum, left out: uint8 sum, half sum"},
      {"#  Rank 0..7 Group 0\n"
       "  1024  256  float  sum  -1  20.0  0.05  0.09  0\n"
       "  2048  512  float  sum  -1  21.0  0.10  0.17  0\n"
       "  1024  256  float  prod  -1  20.5  0.05  0.09  0\n"
       "  1024  256  float  max  -1  20.5  0.05  0.09  0\n",
       "all_reduce.txt", "read: float sum, left out: float prod, float max"},
      {"#  Rank 0..3 Group 0\n"
       "  1024  256  float  none  0  20.0  0.05  0.05  0\n"
       "  2048  512  float  none  0  21.0  0.10  0.10  0\n"
       "  1024  256  float  none  1  20.5  0.05  0.05  0\n"
       "  2048  512  float  none  1  21.5  0.10  0.10  0\n",
       "broadcast.txt", "read: float none root 0, left out: float none root 1"},
  };
  for (const auto& [text, file, note] : several_runs) {
    INFO(file << ": " << note);
    const NcclTestsLog log = parse_nccl_tests_log(text, file);
    CHECK(log.rows.size() == 2);
    REQUIRE(log.notes.size() == 1);
    CHECK_THAT(log.notes[0], Catch::Contains(note));
  }

  // One GPU's in-place run copies nothing: its bandwidth, printed as 1.4 PB/s, is not
  // a reason to refuse the log (its out-of-place columns are still bounded).
  const NcclTestsLog single = parse_nccl_tests_log(
      "#  Rank 0 Group 0\n  268435456  67108864  float  sum  0  1005.5  266.97  266.97  0  "
      "0.19  1397737.34  1397737.34  0\n",
      "reduce.txt");
  CHECK(single.rows[0].in_place->algbw_GBps == Approx(1397737.34));
  CHECK_THAT(nccl_tests_test::parse_error("#  Rank 0 Group 0\n  268435456  67108864  float  sum  "
                                          "0  0.19  1397737.34  1397737.34  0\n",
                                          "reduce.txt"),
             Catch::Contains("out-of-place algbw"));

  // kubectl logs --timestamps.
  const NcclTestsLog stamped = parse_nccl_tests_log(
      "2024-05-01T12:00:00.123456789Z # Collective test starting: all_reduce_perf\n"
      "2024-05-01T12:00:00.223456789Z #  Rank 0..15 Group 0\n"
      "2024-05-01T12:00:01.000000000Z " +
          row,
      "x.txt");
  CHECK(stamped.op_source == "the log's header");
  CHECK(stamped.rows.size() == 1);
}

TEST_CASE(
    "nccl-tests: a count of wrong elements in any form nccl-tests prints it, one run "
    "a log",
    "[nccl-tests]") {
  const std::string rank = "#  Rank 0..7 Group 0\n";
  const auto wrong_of = [&](const std::string& header, const std::string& wrong) {
    return parse_nccl_tests_log(rank + header +
                                    "  8388608  2097152  float  sum  -1  200.0  41.94  "
                                    "73.40  " +
                                    wrong + "\n",
                                "all_reduce.txt")
        .rows[0]
        .wrong();
  };
  const std::string counts = "#  size count type redop root time algbw busbw #wrong\n";
  const std::string errors = "#  size count type redop root time algbw busbw  error\n";
  CHECK(wrong_of(counts, "1.04858e+06") == 1048580);  // "%g" past a million
  CHECK(wrong_of(counts, "1e+06") == 1000000);
  CHECK(wrong_of(counts, "17") == 17);
  CHECK(wrong_of(errors, "2e+00") == 0);  // old nccl-tests: the largest error
  CHECK(wrong_of(errors, "1.5") == 0);
  CHECK(wrong_of("", "1.04858e+06") == 1048580);  // no column headers: by its form
  CHECK(wrong_of("", "2e-06") == 0);
  CHECK(wrong_of("", "3") == 3);

  // Two tests in one file are two runs: refused, not read as the last one's.
  CHECK_THAT(nccl_tests_test::parse_error("# Collective test starting: all_reduce_perf\n" + rank +
                                              "  1024  256  float  sum  -1  20.0  0.05  0.09  0\n"
                                              "# Collective test starting: all_gather_perf\n"
                                              "  1024  32  half  none  -1  20.0  0.05  0.04  0\n",
                                          "two.txt"),
             Catch::Contains("two.txt:4") && Catch::Contains("a second test starts"));
}

TEST_CASE(
    "calibrate says when a log and its topology cannot be the same machine, and what a "
    "log names",
    "[nccl-tests]") {
  // A 2-GPU all-reduce at a fixed busbw; the log's collective comes from the command line
  // it prints (the file name names none).
  const auto log_at = [](double busbw_GBps) {
    std::string text =
        "# mpirun -np 2 ./build/all_reduce_perf -b 1M -e 128M -f 2 -g 1\n"
        "#  Rank 0..1 Group 0\n"
        "        0          0  float  sum  -1    5.00    0.00    0.00  0\n";
    for (int i = 0; i < 8; ++i) {
      const std::int64_t bytes = std::int64_t{1 << 20} << i;
      text += fmt::format("{} {} float sum -1 {:.2f} {:.2f} {:.2f} 0\n", bytes, bytes / 4,
                          static_cast<double>(bytes) / (busbw_GBps * 1e3), busbw_GBps, busbw_GBps);
    }
    return parse_nccl_tests_log(text, "log.txt");
  };
  const auto warnings = [](const NcclFit& f) {
    return fmt::format("{}", fmt::join(f.warnings, "|"));
  };
  NcclFitRequest req;
  req.topology =
      nlohmann::json::parse(R"({"preset": "switch", "gpus": 2, "bandwidth": "100GB/s"})");
  req.logs = {log_at(2)};  // 2 GB/s on 100 GB/s links
  CHECK(req.logs[0].op_source == "the test binary the log names");
  const NcclFit slow = fit_nccl_tests(req);
  CHECK_THAT(warnings(slow), Catch::Contains("nvlink links keep 2.0% of their nominal rate at "
                                             "the largest transfers"));
  CHECK_THAT(nccl_fit_report(req, slow), Catch::Contains("8 sizes (1 zero-byte left out)"));
  req.logs = {log_at(400)};  // four times what the links carry: refused, nothing to write
  CHECK_THAT(nccl_tests_test::fit_error(req),
             Catch::Contains("--topology: 7 of the 7 bandwidth-bound sizes ran faster than the "
                             "fit can simulate them"));  // 1 MiB: more launch than bandwidth
  // A log whose Rank lines name another GPU than the topology's: refused, naming both.
  NcclTestsLog a100 = log_at(2);
  a100.device = "NVIDIA A100-SXM4-80GB";
  req.logs = {a100};
  req.topology = nlohmann::json::parse(R"({"preset": "dgx", "gpu": "h100", "gpus_per_node": 2})");
  CHECK_THAT(nccl_tests_test::fit_error(req),
             Catch::Contains("the log ran on NVIDIA A100-SXM4-80GB (a100); the topology's GPUs "
                             "are h100"));
  req.topology =
      nlohmann::json::parse(R"({"preset": "switch", "gpus": 2, "bandwidth": "100GB/s"})");
  // A binary named in prose is not the log's; the user's word wins over one it runs.
  const std::string row = "  1048576  262144  float  sum  -1  60.0  17.48  17.48  0\n";
  CHECK_THAT(
      nccl_tests_test::parse_error(
          "# compared with all_gather_perf from the same node\n#  Rank 0..1\n" + row, "log.txt"),
      Catch::Contains("cannot tell which collective"));
  const NcclTestsLog given = parse_nccl_tests_log("$ ./all_gather_perf -b 1M\n#  Rank 0..1\n" + row,
                                                  "log.txt", {.op = CollectiveOp::AllReduce});
  CHECK(given.op == CollectiveOp::AllReduce);
  CHECK(given.op_source == "given");

  NcclTestsLog one = log_at(2);
  one.ranks = 1;
  req.logs = {one};
  CHECK_THAT(nccl_tests_test::fit_error(req), Catch::Contains("ran on one GPU"));
  // One log given twice (a copy under another name) would count its sizes twice.
  NcclTestsLog copy = log_at(2);
  copy.file = "copy.txt";
  req.logs = {log_at(2), copy};
  CHECK_THAT(nccl_tests_test::fit_error(req), Catch::Contains("copy.txt is "));
}

TEST_CASE("calibrate reads no launch from sizes its channels' ceiling holds", "[nccl-tests]") {
  // Send/recv on 8 x H100 at 32 MiB-1 GiB: held by the channels' ceiling (82.4 GB/s on 4
  // channels, twice for twice the bytes, to 330 GB/s of the links' 450), not by bandwidth,
  // not by the launch; a constant 40 us beyond it must not be read as a 48 us launch.
  std::string text = "# Collective test starting: sendrecv_perf\n#  Rank 0..7 Group 0\n";
  for (int i = 0; i < 6; ++i) {
    const std::int64_t bytes = std::int64_t{32} << (20 + i);
    const double us =
        static_cast<double>(bytes) / 82.4e3 / (i < 2 ? 1 : 1 << std::min(i - 1, 2)) + 40;
    text +=
        fmt::format("{} {} float sum -1 {:.2f} {:.2f} {:.2f} 0\n", bytes, bytes / 4, us,
                    static_cast<double>(bytes) / us / 1e3, static_cast<double>(bytes) / us / 1e3);
  }
  NcclFitRequest req;
  req.topology = "dgx-h100";
  req.logs = {parse_nccl_tests_log(text, "sendrecv.txt")};
  const NcclFit fit = fit_nccl_tests(req);
  CHECK_FALSE(fit.used.launch);
  CHECK_THAT(fmt::format("{}", fmt::join(fit.notes, "|")),
             Catch::Contains("launch and latency are not fitted: 0 size(s)"));
}

TEST_CASE("nccl-tests logs as users hand them over: copied, reformatted or cut short",
          "[nccl-tests]") {
  using nccl_tests_test::parse_error;
  const std::string columns =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  // 4 GPUs: busbw = algbw x 1.5; algbw = size / time.
  const std::string row =
      "  1048576  262144  float  sum  -1  52.43  20.00  30.00  0  52.00  "
      "20.17  30.25  0\n";
  const std::string log = nccl_tests_test::kHeader + columns + row;
  REQUIRE(parse_nccl_tests_log(log, "ok.txt").rows.size() == 1);
  // A byte-order mark ahead of the header, and rows indented with no-break spaces (a web
  // page's): the header's nGpus and the rows are read, not skipped.
  const NcclTestsLog bom = parse_nccl_tests_log("\xEF\xBB\xBF" + log, "bom.txt");
  CHECK(bom.gpus_per_thread == 4);
  std::string nbsp = row;
  nbsp.replace(0, 2, "\xC2\xA0\xC2\xA0");
  CHECK(parse_nccl_tests_log(nccl_tests_test::kHeader + columns + nbsp, "nbsp.txt").rows.size() ==
        1);
  // -C 1 prints the host's time to issue each collective under "cputime".
  std::string cpu = columns;
  cpu.replace(cpu.find("    time"), 8, " cputime");
  CHECK_THAT(parse_error(nccl_tests_test::kHeader + cpu + row),
             Catch::StartsWith("bad.txt:3: the log's times are the CPU's"));
  // A time that is not size / time's: the row is not read as one.
  std::string wrong_time = row;
  wrong_time.replace(wrong_time.find("52.43"), 5, "5.243");
  CHECK_THAT(parse_error(nccl_tests_test::kHeader + columns + wrong_time),
             Catch::Contains("algbw 20.00 GB/s is not size / time"));
  CHECK_THAT(parse_error("  1048576  262144  float  sum  -1  0.00  20.00  30.00  0\n"),
             Catch::Contains("time of 0 for 1048576 bytes"));
  // Two runs appended: the second header is refused, not read over the first's.
  CHECK_THAT(parse_error(log + "# nThread 1 nGpus 8 minBytes 8 maxBytes 8\n" + row),
             Catch::StartsWith("bad.txt:5: a second run's header follows the rows of line 4"));
  // With the column headers, a row cut short is refused: its root is not read as a time.
  const std::string cut =
      "  1048576  262144  float  sum  -1  52.43  20.00  30.00  0  52.00  "
      "20.17  30.25\n";
  CHECK_THAT(parse_error(nccl_tests_test::kHeader + columns + cut),
             Catch::Contains("expected 9 or 13 fields, as the column headers of line 3 say"));
  // A run stopped early (no closing lines, its last size far short of maxBytes) is said.
  const std::string big = "# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824\n" + columns + row;
  CHECK_THAT(parse_nccl_tests_log(big, "all_reduce_cut.txt").notes.at(0),
             Catch::Contains("the log ends at 1048576 B, short of its header's maxBytes"));
  CHECK(parse_nccl_tests_log(big + "# Avg bus bandwidth    : 30.0\n", "all_reduce.txt")
            .notes.empty());
  // A log that does not name its collective is held to what its rows say: an all-reduce's
  // rows are neither an all-gather's (no reduction, a count per rank) nor a broadcast's
  // (busbw = algbw).
  const std::string bare = "#  Rank  0..3 Group 0\n" + row;
  const auto as = [&](CollectiveOp op) {
    try {
      return std::string(name_of(parse_nccl_tests_log(bare, "x.txt", {.op = op}).op));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
  };
  CHECK(as(CollectiveOp::AllReduce) == "all_reduce");
  CHECK_THAT(as(CollectiveOp::AllGather), Catch::Contains("prints the reduction \"sum\""));
  CHECK_THAT(as(CollectiveOp::Reduce),
             Catch::Contains("has busbw / algbw 1.500, where reduce has 1.000"));
  std::string whole_count = bare;
  whole_count.replace(whole_count.find("sum"), 3, "none");
  CHECK_THAT(parse_error(whole_count, "all_gather.txt"),
             Catch::Contains("prints a count of 262144 for 1048576 bytes: a count of the whole"));
}

TEST_CASE("nccl-tests' newer outputs: timestamps, per-iteration figures, repeated sweeps, JSON",
          "[nccl-tests]") {
  using nccl_tests_test::parse_error;
  const std::string& header = nccl_tests_test::kHeader;
  const std::string columns =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n";
  // 4 GPUs: busbw = algbw x 1.5; algbw = size / time.
  const auto row = [](int kib, double us) {
    const double algbw = kib * 1024.0 / (us * 1e3);
    return fmt::format(
        "  {}  {}  float  sum  -1  {:.2f}  {:.2f}  {:.2f}  0  {:.2f}  {:.2f}  {:.2f}  0",
        kib * 1024, kib * 256, us, algbw, 1.5 * algbw, us, algbw, 1.5 * algbw);
  };
  // -S 1: when each size finished, after the in-place columns.
  const NcclTestsLog stamped =
      parse_nccl_tests_log(header + columns + row(1024, 52.0) + "  2026-03-05 22:01:16\n" +
                               row(2048, 90.0) + "  2026-03-05 22:01:18\n",
                           "stamped.txt");
  REQUIRE(stamped.rows.size() == 2);
  CHECK(stamped.rows[1].out_of_place.time_us == 90.0);
  CHECK(stamped.rows[1].in_place->time_us == 90.0);

  // The per-iteration report: i_min, i_max, i_p99 and i_cv% after each measurement.
  const std::string per_iteration =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong    "
      "i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    "
      "i_p99    i_cv%\n";
  const std::string iter_row =
      "  1048576  262144  float  sum  -1  52.43  20.00  30.00  0  50.1  60.2  59.0  3.1  52.00  "
      "20.17  30.25  0  50.0  58.1  57.9  2.9\n";
  const NcclTestsLog iterated = parse_nccl_tests_log(header + per_iteration + iter_row, "it.txt");
  CHECK(iterated.rows.at(0).out_of_place.time_us == 52.43);
  CHECK(iterated.rows.at(0).in_place->time_us == 52.00);
  std::string bad_iter = iter_row;
  bad_iter.replace(bad_iter.find("59.0"), 4, "n/a!");
  CHECK_THAT(parse_error(header + per_iteration + bad_iter),
             Catch::Contains("expected the out-of-place per-iteration statistic as a number"));
  // Fields that are not one set of iterations' statistics (i_min above i_max) are refused.
  std::string swapped = iter_row;
  swapped.replace(swapped.find("50.1  60.2"), 10, "60.2  50.1");
  CHECK_THAT(parse_error(header + per_iteration + swapped),
             Catch::Contains("i_min <= i_p99 <= i_max"));
  // Without the per-iteration headers, 21 fields are not a row of 13.
  CHECK_THAT(parse_error(header + columns + iter_row), Catch::Contains("expected 9 or 13 fields"));

  // -N 3: the sweep again from the first size, no header between. Per size the median time
  // stands; every row kept is one the log printed.
  const std::string three = header + columns + row(1024, 52.0) + "\n" + row(2048, 90.0) + "\n" +
                            row(1024, 60.0) + "\n" + row(2048, 95.0) + "\n" + row(1024, 50.0) +
                            "\n" + row(2048, 99.0) + "\n";
  const NcclTestsLog cycles = parse_nccl_tests_log(three, "cycles.txt");
  REQUIRE(cycles.rows.size() == 2);
  CHECK(cycles.rows[0].out_of_place.time_us == 52.0);
  CHECK(cycles.rows[0].line == 4);
  CHECK(cycles.rows[1].out_of_place.time_us == 95.0);
  CHECK(cycles.rows[1].line == 7);
  CHECK_THAT(cycles.notes.at(0), Catch::Contains("in 3 sweeps (nccl-tests -N 3)"));
  CHECK_THAT(parse_nccl_tests_log(three + row(1024, 51.0) + "\n", "four.txt").notes.at(0),
             Catch::Contains("in 4 sweeps (nccl-tests -N 4; the last cut short)"));
  // Two sweeps: the faster of the two.
  CHECK(parse_nccl_tests_log(header + columns + row(1024, 52.0) + "\n" + row(1024, 50.0) + "\n",
                             "two.txt")
            .rows.at(0)
            .out_of_place.time_us == 50.0);
  // A size going down to one that is not the first, or a second sweep with a size the first
  // did not time, is not a repeat.
  CHECK_THAT(parse_error(header + columns + row(1024, 52.0) + "\n" + row(4096, 150.0) + "\n" +
                         row(2048, 90.0) + "\n"),
             Catch::Contains("sizes must increase from row to row"));
  CHECK_THAT(parse_error(header + columns + row(1024, 52.0) + "\n" + row(4096, 150.0) + "\n" +
                         row(1024, 52.0) + "\n" + row(2048, 90.0) + "\n"),
             Catch::StartsWith("bad.txt:7: the sweep that starts again times 2097152 bytes"));
  // A size printed twice in a row (a linear -i step below one element per rank).
  const NcclTestsLog twice =
      parse_nccl_tests_log(header + columns + row(1024, 52.0) + "\n" + row(1024, 51.0) + "\n" +
                               row(1024, 58.0) + "\n" + row(2048, 90.0) + "\n",
                           "twice.txt");
  REQUIRE(twice.rows.size() == 2);
  CHECK(twice.rows[0].out_of_place.time_us == 52.0);
  CHECK_THAT(twice.notes.at(0), Catch::Contains("a linear step, -i"));

  // pdsh's host and moreutils' ts marks come off; NCCL's "host:pid:tid" lines keep theirs.
  const NcclTestsLog marked = parse_nccl_tests_log(
      "node-01: # Collective test starting: all_gather_perf\n"
      "Dec 05 22:01:16 node-01: # nThread 1 nGpus 4 minBytes 1024 maxBytes 4096\n"
      "node-01:1234:1234 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
      "node-01: " +
          row(1024, 52.0) + "\n",
      "marked.txt");
  CHECK(marked.op == CollectiveOp::AllGather);
  CHECK(marked.gpus_per_thread == 4);
  CHECK(marked.nccl_algo == "Ring");
  CHECK(marked.rows.size() == 1);
  CHECK(without_launcher_marks("host.example.com:  8  2") == "  8  2");
  CHECK(without_launcher_marks("node-01: Dec 05 22:01:16   8  2") == "   8  2");  // pdsh 'x | ts'
  CHECK(without_launcher_marks("Dec 05 22:01:16 node-01:   8  2") == "   8  2");
  CHECK(without_launcher_marks("node01:99:99 NCCL INFO x") == "node01:99:99 NCCL INFO x");

  // nccl-tests -J: the same header and rows, as JSON.
  nlohmann::json doc = {
      {"version", 2},
      {"args", {"./build/all_gather_perf", "-b", "1M", "-e", "2M", "-J", "out.json"}},
      {"env", {"NCCL_PROTO=Simple", "HOME=/root"}},
      {"nccl_version", 22602},
      {"config",
       {{"nthreads", 1},
        {"ngpus", 1},
        {"minimum_bytes", 1048576},
        {"maximum_bytes", 2097152},
        {"devices", {{{"rank", 0}}, {{"rank", 1}}, {{"rank", 2}}, {{"rank", 3}}}}}},
      {"results", nlohmann::json::array()},
      {"average_bus_bandwidth", {{"bandwidth", 30.0}}}};
  // An all-gather on 4 GPUs: busbw = algbw x 0.75, a count per rank.
  for (const auto& [bytes, us] : {std::pair{1048576, 52.0}, {2097152, 90.0}}) {
    const double algbw = bytes / (us * 1e3);
    const nlohmann::json measured = {
        {"time", us}, {"alg_bw", algbw}, {"bus_bw", 0.75 * algbw}, {"nwrong", 0.0}};
    doc["results"].push_back({{"size", bytes},
                              {"count", bytes / 16},
                              {"type", "float"},
                              {"redop", "none"},
                              {"root", "    -1"},
                              {"out_of_place", measured},
                              {"in_place", measured}});
  }
  const NcclTestsLog json = parse_nccl_tests_log(doc.dump(), "out.json");
  CHECK(json.from_json);
  CHECK(json.op == CollectiveOp::AllGather);
  CHECK(json.op_source == "the test binary the log names");
  CHECK(json.ranks == 4);
  CHECK(json.ranks_source == "the log's devices");
  CHECK(json.nccl_version == "2.26.2");
  CHECK(json.nccl_proto == "Simple");
  REQUIRE(json.rows.size() == 2);
  CHECK(json.rows[1].out_of_place.time_us == 90.0);
  CHECK(json.rows[1].root == -1);
  CHECK(json.notes.empty());
  // -g 4: one process drives 4 GPUs, and nccl-tests lists each process's first one only.
  nlohmann::json one_process = doc;
  one_process["config"]["ngpus"] = 4;
  one_process["config"]["devices"] = {{{"rank", 0}}};
  const NcclTestsLog driven = parse_nccl_tests_log(one_process.dump(), "g4.json");
  CHECK(driven.ranks == 4);
  CHECK(driven.ranks_source == "the log's devices");
  // Errors name the entry, by JSON path.
  nlohmann::json bad = doc;
  bad["results"][1]["out_of_place"]["time"] = "slow";
  CHECK_THAT(parse_error(bad.dump(), "out.json"),
             Catch::StartsWith("out.json:results[1].out_of_place.time: expected a number"));
  bad = doc;
  bad["results"][1]["out_of_place"]["time"] = -9.0;
  CHECK_THAT(parse_error(bad.dump(), "out.json"),
             Catch::StartsWith("out.json:results[1].out_of_place.time: expected a number of at "
                               "least 0"));
  bad = doc;
  bad["results"][1]["out_of_place"]["time"] = 9.0;  // algbw no longer size / time
  CHECK_THAT(parse_error(bad.dump(), "out.json"),
             Catch::StartsWith("out.json:results[1]: the out-of-place algbw"));
  bad = doc;
  bad["results"][1]["out_of_place"].erase("time");
  bad["results"][1]["out_of_place"]["cpu_time"] = 90.0;
  CHECK_THAT(parse_error(bad.dump(), "out.json"), Catch::Contains("the log's times are the CPU's"));
  bad = doc;
  for (auto& r : bad["results"]) r["redop"] = "sum";  // not what an all-gather prints
  CHECK_THAT(parse_error(bad.dump(), "out.json"),
             Catch::Contains("results[0] prints the reduction \"sum\""));
  CHECK_THAT(parse_error(doc.dump().substr(0, 100), "out.json"),
             Catch::StartsWith("out.json: malformed JSON"));
  bad = doc;
  bad["results"] = nlohmann::json::array();
  CHECK_THAT(parse_error(bad.dump(), "out.json"), Catch::Contains("\"results\" is empty"));
}

TEST_CASE("calibrate names a bandwidth curve only where it kept one", "[nccl-tests]") {
  // The 2 x 8 log keeps efficiency alone: its report printed "bandwidth_curve 0 point(s)".
  const auto dir = collsim::test::temp_dir("nccl-fit-nocurve");
  const auto fit = collsim::test::run_collsim(
      "calibrate --nccl-tests " +
      nccl_tests_test::log_to_fit("h100_2x8_all_reduce_default.txt", dir) +
      " --topology '{\"preset\": \"cluster\", \"nodes\": 2}' --out " + (dir / "c.json").string());
  REQUIRE(fit.status == 0);
  const auto doc = nlohmann::json::parse(collsim::test::slurp(dir / "c.json"));
  CHECK_FALSE(doc["links"]["ib"].contains("bandwidth_curve"));
  CHECK_THAT(fit.out, !Catch::Contains("bandwidth_curve"));
}

TEST_CASE("logs as nccl-tests printed them before 2.0, and names people give them",
          "[nccl-tests]") {
  // nccl-tests 1.x: "bytes N type op ... res", its times in milliseconds (10 MB in 0.286 ms
  // at 34.98 GB/s), read in microseconds.
  const std::string old_columns =
      "#      bytes             N    type      op     time  algbw  busbw      res     time  "
      "algbw  busbw      res\n";
  const std::string old_rows =
      "        8             2   float     sum    0.010   0.00   0.00    0e+00    0.009   0.00   "
      "0.00    0e+00\n"
      "    10000000       2500000   float     sum    0.286  34.98  52.47    0e+00    0.303  32.98  "
      "49.46    0e+00\n";
  const NcclTestsLog old =
      parse_nccl_tests_log("#  Rank 0..3\n" + old_columns + old_rows, "all_reduce.txt");
  REQUIRE(old.rows.size() == 2);
  CHECK(old.rows[0].out_of_place.time_us == Approx(10));
  CHECK(old.rows[1].out_of_place.time_us == Approx(286));
  CHECK(old.rows[1].in_place->time_us == Approx(303));
  CHECK(old.rows[1].redop == "sum");
  CHECK_THAT(fmt::format("{}", fmt::join(old.notes, "|")),
             Catch::Contains("times read as milliseconds"));
  // Without the column headers the first row whose algbw is printed to two digits tells, and
  // the rows before it are read in milliseconds too; a log in microseconds is left as it is.
  const NcclTestsLog bare = parse_nccl_tests_log("#  Rank 0..3\n" + old_rows, "all_reduce.txt");
  CHECK(bare.rows[0].out_of_place.time_us == Approx(10));
  CHECK(bare.rows[1].out_of_place.time_us == Approx(286));
  CHECK_THAT(fmt::format("{}", fmt::join(bare.notes, "|")),
             Catch::Contains("milliseconds (line 3)"));
  const NcclTestsLog us = parse_nccl_tests_log(
      "#  Rank 0..3\n  8 2 float sum 10.5 0.00 0.00 0 10.1 0.00 0.00 0\n"
      "  10000000 2500000 float sum 286.0 34.97 52.45 0 303.0 33.00 49.50 0\n",
      "all_reduce.txt");
  CHECK(us.rows[0].out_of_place.time_us == Approx(10.5));
  CHECK(us.notes.empty());
  // A time in milliseconds printed to three decimals is 3% off at 15 us (4096 B: 0.015 ms at
  // 0.26 GB/s, 0.273 by the printed time): within the printing, not a row that fits neither.
  const NcclTestsLog coarse = parse_nccl_tests_log(
      "#  Rank 0..3\n"
      "  8 2 float sum 0.012 0.00 0.00 0e+00 0.012 0.00 0.00 0e+00\n"
      "  4096 1024 float sum 0.015 0.26 0.40 0e+00 0.015 0.26 0.40 0e+00\n"
      "  65536 16384 float sum 0.030 2.18 3.27 0e+00 0.030 2.18 3.27 0e+00\n",
      "all_reduce.txt");
  CHECK(coarse.rows[0].out_of_place.time_us == Approx(12));
  CHECK(coarse.rows[2].out_of_place.time_us == Approx(30));
  // nccl-tests built on NCCL 1 prints "char" and "int".
  CHECK(parse_nccl_tests_log("#  Rank 0..3\n  1024 1024 char sum 0.013 0.08 0.12 0e+00\n",
                             "all_reduce.txt")
            .rows.size() == 1);

  // A file name with hyphens or spaces names its collective as one with underscores does:
  // "all-gather" is not a gather.
  const std::string row = "  1048576  65536  float  none  -1  60.0  17.48  13.11  0\n";
  CHECK(parse_nccl_tests_log("#  Rank 0..3\n" + row, "H100-All-Gather.txt").op ==
        CollectiveOp::AllGather);
  CHECK(parse_nccl_tests_log("#  Rank 0..3\n" + row, "run 3 all gather.txt").op ==
        CollectiveOp::AllGather);
  // Rows after nccl-tests' closing lines are another run appended: refused; a script's lone
  // number there (`echo $?`) is not a row.
  const std::string closing = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 13.1\n";
  CHECK_THAT(nccl_tests_test::parse_error(nccl_tests_test::kHeader + row + closing + row),
             Catch::Contains("bad.txt:6: a row after the closing lines of line 5"));
  CHECK(nccl_tests_test::parse_error(nccl_tests_test::kHeader + row + closing + "0\n") ==
        "no error");
  // -o mulsum is NCCL's PreMulSum, timed as avg; hypercube_perf is said to be timed as an
  // all-gather.
  CHECK(nccl_tests_reduce_op("mulsum") == ReduceOp::Avg);
  CHECK(nccl_tests_reduce_op("max") == ReduceOp::Max);
  std::string mulsum = "  1048576  262144  float  mulsum  -1  60.0  17.48  26.21  0\n";
  CHECK_THAT(
      fmt::format(
          "{}",
          fmt::join(parse_nccl_tests_log(nccl_tests_test::kHeader + mulsum, "x.txt").notes, "|")),
      Catch::Contains("mulsum (NCCL's PreMulSum) is simulated as avg"));
  const NcclTestsLog cube = parse_nccl_tests_log(
      "# ./build/hypercube_perf -b 1M -e 1M -g 4\n#  Rank 0..3\n" + row, "log.txt");
  CHECK(cube.op == CollectiveOp::AllGather);
  CHECK_THAT(fmt::format("{}", fmt::join(cube.notes, "|")),
             Catch::Contains("simulated as NCCL's all-gather"));
  // Named in prose, it is not the log's test.
  CHECK(parse_nccl_tests_log(
            "# compare with hypercube_perf results later\n" + nccl_tests_test::kHeader + mulsum,
            "x.txt")
            .notes.size() == 1);  // mulsum's alone
}

namespace nccl_tests_test {

// Two Rank lines naming `device`, then one all-reduce row of 1 MiB.
std::string two_rank_rows(const std::string& device) {
  return "#  Rank  0 Group  0 Pid  4242 on node1 device  0 [0x1b] " + device + "\n" +
         "#  Rank  1 Group  0 Pid  4243 on node1 device  1 [0x2b] " + device + "\n" +
         "  1048576  262144  float  sum  -1  60.0  17.48  17.48  0  60.0  17.48  17.48  0\n";
}

// Two H100s on one server, NCCL's all-reduce: a scenario to compare such rows with.
Scenario two_h100s() {
  return parse_scenario(
      nlohmann::json::parse(R"({"topology": {"preset": "dgx", "gpu": "h100", "gpus_per_node": 2},
        "collectives": [{"name": "c", "op": "all_reduce", "algorithm": "nccl", "bytes": 64}]})"),
      ".");
}

}  // namespace nccl_tests_test

TEST_CASE("a log names the GPU it ran on, and a comparison says when the topology's is another",
          "[nccl-tests]") {
  CHECK(gpu_model_of_device("NVIDIA H100 80GB HBM3")->name == "h100");
  CHECK(gpu_model_of_device("NVIDIA A100-SXM4-80GB")->name == "a100");
  CHECK(gpu_model_of_device("NVIDIA GB200") == nullptr);  // not a B200
  CHECK(gpu_model_of_device("NVIDIA RTX A1000 8GB") == nullptr);  // not an A100
  CHECK(gpu_model_of_device("GeForce RTX 2080 Ti") == nullptr);
  const std::string rows = nccl_tests_test::two_rank_rows("NVIDIA A100-SXM4-80GB");
  const NcclTestsLog log = parse_nccl_tests_log(rows, "all_reduce.txt");
  CHECK(log.device == "NVIDIA A100-SXM4-80GB");
  const Scenario h100 = nccl_tests_test::two_h100s();
  const NcclComparison c = compare_nccl_log(h100, h100.collectives[0], log, 0, INT64_MAX);
  CHECK(c.device_mismatch ==
        "the log ran on NVIDIA A100-SXM4-80GB (a100); the topology's GPUs are h100");
  CHECK_THAT(nccl_comparison_table(c),
             Catch::Contains("# warning: the log ran on NVIDIA A100-SXM4-80GB (a100)"));
  // A topology naming no model is held to the log by its GPUs' generation (dgx-h100's NVLink).
  const Scenario unnamed = parse_scenario(
      nlohmann::json::parse(R"({"topology": {"preset": "dgx-h100", "gpus_per_node": 2},
        "collectives": [{"name": "c", "op": "all_reduce", "algorithm": "nccl", "bytes": 64}]})"),
      ".");
  CHECK(device_mismatch(log, unnamed.topology) ==
        "the log ran on NVIDIA A100-SXM4-80GB (a100, an Ampere); the topology's GPUs are a "
        "Hopper by their NVLink bandwidth");
  // Every size disturbed: no MAPE over undisturbed sizes, rather than a perfect 0%.
  std::string disturbed = rows;
  disturbed.replace(disturbed.rfind("60.0"), 4, "99.0");
  const NcclComparison d = compare_nccl_log(
      h100, h100.collectives[0], parse_nccl_tests_log(disturbed, "all_reduce.txt"), 0, INT64_MAX);
  CHECK(d.steady_sizes == 0);
  CHECK_THAT(nccl_comparison_table(d), Catch::Contains("no MAPE over undisturbed sizes"));
  CHECK(nccl_comparison_json(d)["steady"]["mape_pct"].is_null());
}

TEST_CASE("nccl-tests: every word kept from a log is UTF-8, whatever bytes the log holds",
          "[nccl-tests]") {
  // Found by fuzz_nccl_log in CI: a stray byte in a Rank line's device name reached
  // compare --format json, whose strict dump threw (Python's compare() does the same).
  const NcclTestsLog log = parse_nccl_tests_log(
      nccl_tests_test::two_rank_rows("NVIDIA A100\xff-SXM4"), "all_reduce\xfe.txt");
  CHECK(log.device == "NVIDIA A100\xEF\xBF\xBD-SXM4");  // the byte as U+FFFD
  CHECK(log.file == "all_reduce\xEF\xBF\xBD.txt");
  const Scenario s = nccl_tests_test::two_h100s();
  const NcclComparison c = compare_nccl_log(s, s.collectives[0], log, 0, INT64_MAX);
  CHECK_NOTHROW(nccl_comparison_json(c).dump());
}
