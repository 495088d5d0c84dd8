// Sweeps split up: threads (-j), shards (--shard i/n + merge) and MPI ranks each give
// the single-process sweep's output byte for byte, and broken shard sets are refused.
#include <sys/wait.h>

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/csv.h"
#include "helpers.h"
#include "sweep/sweep.h"
#include "sweep/sweep_shard.h"

namespace fs = std::filesystem;
using namespace collsim;

namespace sweep_parallel_test {

const std::string kScenario =
    std::string(COLLSIM_SOURCE_DIR) + "/scenarios/ring-vs-tree-vs-naive.json";
// 9 algorithms (nccl among them) x 11 sizes: 99 points, a fraction of a second.
const std::string kSweep = "sweep " + kScenario + " --sizes 1KiB..1MiB";

// Every output of a sweep, as text: what "byte for byte the same" compares.
std::string all_outputs(const SweepResult& r) {
  std::ostringstream csv, html;
  write_sweep_csv(csv, r);
  write_sweep_html(html, r);
  return sweep_table(r) + csv.str() + sweep_json(r).dump(2) + html.str();
}

SweepRequest request() {
  SweepRequest req;
  req.sizes = parse_sizes("1KiB..1MiB", "x2");
  return req;
}

// The files a sweep --out folder holds, and stdout.
std::string outputs_of(const fs::path& dir, const std::string& stdout_text) {
  std::string all = stdout_text;
  for (const char* f : {"sweep.csv", "sweep.json", "sweep.html"})
    all += std::string("\n== ") + f + "\n" + test::slurp(dir / f);
  return all;
}

// Shard files written by the library, for the merge error tests.
std::vector<ShardFile> shard_files(const Scenario& s, const SweepRequest& req, int n) {
  const SweepPlan plan = plan_sweep(s, req);
  std::vector<ShardFile> out;
  for (int i = 1; i <= n; ++i) {
    const Shard shard{i, n};
    const auto rows = run_sweep_points(s, plan, shard_points(plan.points(), shard));
    out.push_back({shard_file_name(shard), shard_json(plan, "digest", shard, rows)});
  }
  return out;
}

// A shell command's exit status.
int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string merge_error(const std::vector<ShardFile>& files) {
  try {
    merge_shards(files);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace sweep_parallel_test

using namespace sweep_parallel_test;

TEST_CASE("sweep on 2 and 3 threads gives the one-thread sweep byte for byte",
          "[sweep][parallel]") {
  const Scenario s = load_scenario(kScenario);
  const SweepResult one = run_sweep(s, request(), {}, 1);
  REQUIRE(one.rows.size() == 99);
  REQUIRE(!one.crossovers.empty());
  REQUIRE(!one.nccl.empty());
  const std::string expected = all_outputs(one);
  std::size_t calls = 0, last = 0;
  const SweepResult two = run_sweep(
      s, request(),
      [&](std::size_t done, std::size_t total) {
        ++calls;
        CHECK(done == last + 1);  // one call at a time, counting up
        CHECK(total == 99);
        last = done;
      },
      2);
  CHECK(calls == 99);
  CHECK(all_outputs(two) == expected);
  CHECK(all_outputs(run_sweep(s, request(), {}, 3)) == expected);
  // More threads than points, and no points at all (an MPI rank beyond the points).
  const SweepPlan plan = plan_sweep(s, request());
  const std::vector<std::size_t> two_points{5, 98};
  const auto rows = run_sweep_points(s, plan, two_points, 8);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].time_s == one.rows[98].time_s);
  CHECK(run_sweep_points(s, plan, {}, 4).empty());
}

TEST_CASE("shards cover every point once, round robin", "[sweep][shard]") {
  CHECK(shard_points(7, {1, 3}) == std::vector<std::size_t>{0, 3, 6});
  CHECK(shard_points(7, {3, 3}) == std::vector<std::size_t>{2, 5});
  CHECK(shard_points(2, {3, 3}).empty());  // more shards than points: some have none
  CHECK(parse_shard("2/8").index == 2);
  CHECK(parse_shard("2/8").count == 8);
  CHECK_THROWS_WITH(parse_shard("2"), "--shard: expected i/n like \"2/8\", got \"2\"");
  CHECK_THROWS_WITH(parse_shard("a/3"), "--shard: expected i/n like \"2/8\", got \"a/3\"");
  CHECK_THROWS_WITH(parse_shard("1/3x"), "--shard: expected i/n like \"2/8\", got \"1/3x\"");
  CHECK_THROWS_WITH(parse_shard("0/3"),
                    Catch::StartsWith("--shard: shard 0 of 3: expected 1 <= i <= n"));
  CHECK_THROWS_WITH(parse_shard("4/3"), Catch::StartsWith("--shard: shard 4 of 3"));
}

TEST_CASE("shards merged in any order give the single-process sweep byte for byte",
          "[sweep][shard]") {
  const Scenario s = load_scenario(kScenario);
  const std::string expected = all_outputs(run_sweep(s, request()));
  auto files = shard_files(s, request(), 4);
  // Through text, as the files are read back: every double must survive the trip.
  for (auto& f : files) f.doc = nlohmann::json::parse(f.doc.dump(1));
  std::swap(files[0], files[3]);
  CHECK(all_outputs(merge_shards(files)) == expected);

  // More shards than points: the last shard has none, and still counts.
  SweepRequest one_point;
  one_point.sizes = {1024};
  one_point.algorithms = {"ring"};
  const auto few = shard_files(s, one_point, 2);
  CHECK(few[1].doc["rows"].empty());
  CHECK(all_outputs(merge_shards(few)) == all_outputs(run_sweep(s, one_point)));
}

TEST_CASE("merge refuses incomplete or mismatched shard sets, naming the file", "[sweep][shard]") {
  const Scenario s = load_scenario(kScenario);
  const auto files = shard_files(s, request(), 3);

  CHECK(merge_error({files[0], files[2]}) ==
        "merge: shard 2/3 missing: merge needs all 3 shards' files");
  CHECK(merge_error({files[0]}) ==
        "merge: shards 2/3, 3/3 missing: merge needs all 3 shards' files");
  CHECK(merge_error({files[0], files[1], files[1], files[2]}) ==
        "sweep-shard-2-of-3.json: shard 2/3 again: sweep-shard-2-of-3.json is that shard too");

  auto truncated = files;
  truncated[1].doc["rows"].erase(truncated[1].doc["rows"].size() - 1);
  CHECK_THAT(merge_error(truncated),
             Catch::StartsWith("sweep-shard-2-of-3.json: 32 rows, but shard 2/3 has 33 points"));

  auto other_sizes = request();
  other_sizes.sizes.pop_back();
  auto mixed = files;
  mixed[2] = shard_files(s, other_sizes, 3)[2];
  CHECK_THAT(merge_error(mixed),
             Catch::StartsWith("sweep-shard-3-of-3.json: a shard of another sweep than "
                               "sweep-shard-1-of-3.json"));

  auto other_scenario = files;
  other_scenario[1].doc["scenario_digest"] = "0123456789abcdef";
  CHECK_THAT(merge_error(other_scenario),
             Catch::StartsWith("sweep-shard-2-of-3.json: ran another scenario file than"));

  auto other_count = files;
  other_count[1] = shard_files(s, request(), 2)[1];
  CHECK_THAT(merge_error(other_count), Catch::Contains("shard 2/2, but sweep-shard-1-of-3.json "
                                                       "is shard 1/3"));

  auto not_shard = files;
  not_shard[0].doc = {{"rows", nlohmann::json::array()}};
  CHECK_THAT(merge_error(not_shard),
             Catch::StartsWith("sweep-shard-1-of-3.json: not a shard file of collsim sweep"));

  auto bad_row = files;
  bad_row[0].doc["rows"][1]["time_s"] = "fast";
  CHECK_THAT(merge_error(bad_row),
             Catch::StartsWith("sweep-shard-1-of-3.json:rows[1].time_s: expected"));
}

TEST_CASE("merge refuses shard files that lack a part, misspell a key or hold impossible numbers",
          "[sweep][shard]") {
  const Scenario s = load_scenario(kScenario);
  const auto files = shard_files(s, request(), 2);
  REQUIRE(merge_error(files) == "no error");
  const auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto copy = files;
    edit(copy[1].doc);
    return merge_error(copy);
  };
  // Once a const operator[] on the missing key: undefined behaviour, a garbage message.
  for (const char* key : {"sweep", "rows", "version", "shards", "scenario_digest"})
    CHECK(edited([&](nlohmann::json& d) { d.erase(key); }) ==
          fmt::format("sweep-shard-2-of-2.json: missing required field \"{}\" (is the shard "
                      "file cut short?)",
                      key));
  CHECK(edited([](nlohmann::json& d) { d["row"] = d["rows"]; }) ==
        "sweep-shard-2-of-2.json:row: unknown field; did you mean \"rows\"?");
  CHECK(edited([](nlohmann::json& d) { d["rows"][0]["tim_s"] = 1; }) ==
        "sweep-shard-2-of-2.json:rows[0].tim_s: unknown field; did you mean \"time_s\"?");
  CHECK(edited([](nlohmann::json& d) { d["sweep"]["size"] = 1; }) ==
        "sweep-shard-2-of-2.json:sweep.size: unknown field; did you mean \"sizes\"?");
  CHECK(edited([](nlohmann::json& d) { d["version"] = "1"; }) ==
        "sweep-shard-2-of-2.json:version: expected 1 (made by another collsim version), got \"1\"");
  for (const char* key : {"time_s", "algbw_Bps", "busbw_Bps"})
    for (double v : {-1.0, -1e-300})
      CHECK_THAT(
          edited([&](nlohmann::json& d) { d["rows"][0][key] = v; }),
          Catch::StartsWith(fmt::format("sweep-shard-2-of-2.json:rows[0].{}: expected", key)));
  CHECK_THAT(edited([](nlohmann::json& d) { d["rows"][0]["time_s"] = 1e7; }),
             Catch::Contains("rows[0].time_s: expected a simulated time in seconds from 0 to"));
  CHECK_THAT(edited([](nlohmann::json& d) { d["rows"][0]["bytes"] = std::int64_t{1} << 51; }),
             Catch::StartsWith("sweep-shard-2-of-2.json:rows[0].bytes: expected an integer in"));
  // Counts a file may set to anything: nothing is sized by them before they check out.
  CHECK_THAT(edited([](nlohmann::json& d) { d["shards"] = 2147483647; }),
             Catch::EndsWith("rows, but shard 2/2147483647 has 1 points: its rows, shard count "
                             "or sweep were changed"));
  CHECK_THAT(edited([](nlohmann::json& d) { d["rows"].erase(d["rows"].size() - 1); }),
             Catch::EndsWith("the file is incomplete (did the shard finish?)"));
  // Each row is the point it names: its rank count, size and count as the plan has them.
  const nlohmann::json& row = files[1].doc["rows"][0];
  for (const char* key : {"ranks", "bytes", "count"})
    CHECK(edited([&](nlohmann::json& d) { d["rows"][0][key] = row[key].get<int>() + 1; }) ==
          fmt::format("sweep-shard-2-of-2.json:rows[0].{}: expected {} (point {}), got {}", key,
                      row[key].get<int>(), row["point"].get<int>(), row[key].get<int>() + 1));
  CHECK_THAT(edited([](nlohmann::json& d) { d["sweep"]["scenario"] = "renamed"; }),
             Catch::Contains("a shard of another sweep than sweep-shard-1-of-2.json: its "
                             "\"scenario\" is \"renamed\", not"));
  auto alone = files;
  alone.pop_back();
  alone[0].doc["shards"] = 2147483647;
  alone[0].doc["rows"] = nlohmann::json::array({alone[0].doc["rows"][0]});  // its one point
  CHECK(merge_error(alone) ==
        "merge: shards 2/2147483647, 3/2147483647, 4/2147483647, 5/2147483647, 6/2147483647, "
        "7/2147483647, 8/2147483647, 9/2147483647 and 2147483638 more missing: merge needs all "
        "2147483647 shards' files");
  CHECK_THAT(edited([](nlohmann::json& d) {
               d["sweep"]["sizes"] = std::vector<int>(100000, 1);
               d["sweep"]["rank_counts"] = std::vector<int>(100000, 2);
             }),
             Catch::StartsWith("sweep-shard-2-of-2.json:sweep: rank counts x algorithms x sizes "
                               "is 9e+10 points; a sweep has at most"));
}

TEST_CASE("collsim sweep -j 2, and --shard i/n then collsim merge, match the plain sweep",
          "[sweep][shard][cli]") {
  const fs::path dir = test::temp_dir("sweep-shards");
  const auto plain = test::run_collsim(kSweep + " --out " + (dir / "plain").string());
  REQUIRE(plain.status == 0);
  const std::string expected = outputs_of(dir / "plain", plain.out);
  CHECK_THAT(plain.out, Catch::Contains("# ranks 8, algorithm nccl"));

  const auto threads = test::run_collsim(kSweep + " -j 2 --out " + (dir / "j2").string());
  REQUIRE(threads.status == 0);
  CHECK(outputs_of(dir / "j2", threads.out) == expected);

  for (const char* shard : {"1/2", "2/2"}) {
    const auto part =
        test::run_collsim(kSweep + " --shard " + shard + " -j 2 --out " + (dir / "parts").string());
    REQUIRE(part.status == 0);
    CHECK_THAT(part.out, Catch::Contains("of the sweep's 99 points"));
  }
  const auto merged = test::run_collsim(
      "merge " + (dir / "parts" / "sweep-shard-2-of-2.json").string() + " " +
      (dir / "parts" / "sweep-shard-1-of-2.json").string() + " --out " + (dir / "merged").string());
  REQUIRE(merged.status == 0);
  CHECK(outputs_of(dir / "merged", merged.out) == expected);

  // One shard alone is not the sweep; a shard needs a folder for its file.
  const auto alone =
      test::run_collsim("merge " + (dir / "parts" / "sweep-shard-1-of-2.json").string());
  CHECK(alone.status == 2);
  CHECK_THAT(alone.err, Catch::Contains("merge: shard 2/2 missing"));
  const auto no_out = test::run_collsim(kSweep + " --shard 1/2");
  CHECK(no_out.status == 2);
  CHECK_THAT(no_out.err, Catch::Contains("--shard: needs --out DIR"));
  const auto bad = test::run_collsim(kSweep + " --shard 3/2 --out " + dir.string());
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Catch::Contains("--shard: shard 3 of 2"));
  fs::remove_all(dir);
}

TEST_CASE("mpirun -n 2 collsim sweep matches the single-process sweep", "[sweep][mpi][cli]") {
  const std::string mpirun = COLLSIM_MPIEXEC;
  if (mpirun.empty())
    COLLSIM_SKIP_TEST(
        "collsim was built without MPI (tools/setup.sh --tests installs libopenmpi-dev)");
  const fs::path dir = test::temp_dir("sweep-mpi");
  const auto plain = test::run_collsim(kSweep + " --out " + (dir / "plain").string());
  REQUIRE(plain.status == 0);
  // Open MPI refuses root and counts slots by cores unless told otherwise (CI runs as
  // root on 2 cores); the sanitizers' leak check would report MPI's own allocations.
  const std::string env =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
      "ASAN_OPTIONS=detect_leaks=0 ";
  const std::string mpi_sweep = env + mpirun + " -n 2 " + COLLSIM_EXE + " " + kSweep;
  const auto out_file = dir / "mpi.txt";
  int status = shell(mpi_sweep + " --out " + (dir / "mpi").string() + " > " + out_file.string() +
                     " 2>" + (dir / "mpi.err").string());
  INFO(test::slurp(dir / "mpi.err"));
  REQUIRE(status == 0);
  CHECK(outputs_of(dir / "mpi", test::slurp(out_file)) == outputs_of(dir / "plain", plain.out));

  // Ranks on other machines read their own copy of the scenario: rank 0 checks it is
  // the same file (here rank 1's has one more newline).
  std::ofstream(dir / "copy.json") << test::slurp(kScenario) << "\n";
  const std::string mpmd = env + mpirun + " -n 1 " + COLLSIM_EXE + " " + kSweep + " : -n 1 " +
                           COLLSIM_EXE + " sweep " + (dir / "copy.json").string() +
                           " --sizes 1KiB..1MiB";
  status = shell(mpmd + " > /dev/null 2>" + (dir / "err.txt").string());
  // Printed once, by rank 0, and every rank exits with its status.
  CHECK(status == 2);
  const std::string err = test::slurp(dir / "err.txt");
  const std::string message = "collsim: error: MPI rank 1: read another scenario than rank 0";
  CHECK_THAT(err, Catch::Contains(message));
  CHECK(err.find(message, err.find(message) + 1) == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sweep.csv names what ran at each point: NCCL's pick changes with size", "[sweep]") {
  const nlohmann::json doc = {
      {"topology", "dgx-h100"},
      {"collectives", {{{"name", "ar"}, {"op", "all_reduce"}, {"bytes", "1MiB"}}}}};
  SweepRequest req;
  req.sizes = {1024, 4 << 20};
  req.algorithms = {"ring", "nccl"};
  std::ostringstream csv;
  write_sweep_csv(csv, run_sweep(parse_scenario(doc, "."), req));
  const std::string text = csv.str();
  CHECK_THAT(text, Catch::StartsWith(
                       "ranks,algorithm,size,count,type,time_us,algbw_GBps,busbw_GBps,winner,plan,"
                       "over_link_rate\n"));
  CHECK_THAT(text, Catch::Contains(",0,nccl: ring/LL/1ch (NCCL's estimate),0\n") &&
                       Catch::Contains(",0,nccl: nvls/Simple/16ch,0\n"));
  // A plan with a comma in it stays one field.
  CHECK(csv_field("ring (8 channels), LL") == "\"ring (8 channels), LL\"");
}

TEST_CASE("sweep refuses points its collective cannot have, and runs each size once, in order",
          "[sweep]") {
  const auto scenario = [](const std::string& collective) {
    return parse_scenario(
        nlohmann::json::parse(R"({"topology": "dgx-h100", "collectives": [)" + collective + "]}"),
        ".");
  };
  SweepRequest req;
  req.sizes = parse_sizes("1KiB", "x2");
  // A root outside the ranks swept: it crashed the schedule generators once.
  req.rank_counts = {4};
  for (const char* op : {"broadcast", "reduce", "scatter", "gather"})
    CHECK_THROWS_WITH(
        plan_sweep(scenario(fmt::format(R"({{"op": "{}", "root": 5, "bytes": "1KiB"}})", op)), req),
        Catch::Contains("--ranks") && Catch::Contains("rooted at rank 5"));
  req.rank_counts = {8};
  CHECK(
      plan_sweep(scenario(R"({"op": "broadcast", "root": 5, "bytes": "1KiB"})"), req).rank_counts ==
      std::vector<int>{8});
  // A routed all-to-all's bytes come from its routing: no size to sweep (it ran the routed
  // exchange at every size, and another rank count read its matrix out of bounds).
  req.rank_counts = {};
  CHECK_THROWS_WITH(plan_sweep(scenario(R"({"name": "m", "op": "all_to_all", "ranks": [0, 1, 2, 3],
          "dtype": "bfloat16", "routing": {"tokens_per_rank": 64, "bytes_per_token": "8KiB",
          "experts": 4, "top_k": 2}})"),
                               req),
                    Catch::Contains("routed all-to-all"));
  // Sizes in whole elements, increasing, each once: a list out of order made false
  // crossovers, and a fine step repeated a size.
  req.sizes = parse_sizes("1MiB,1KiB,64KiB,1KiB,1026", "x2");
  const SweepPlan plan = plan_sweep(scenario(R"({"op": "all_reduce", "bytes": "1KiB"})"), req);
  CHECK(plan.sizes == std::vector<std::int64_t>{1024, 65536, 1 << 20});
  req.sizes = parse_sizes("1..3", "x2");
  CHECK_THROWS_WITH(plan_sweep(scenario(R"({"op": "all_reduce", "bytes": "1KiB"})"), req),
                    Catch::Contains("at least one element"));
}

TEST_CASE(
    "a default sweep leaves out what the model cannot time, NCCL's pick at any size, and "
    "says why",
    "[sweep]") {
  // The README's first scenario: a ring under the ideal model. NCCL picks NVLS from a few MiB,
  // which ideal cannot time: the whole sweep stopped at that point.
  const Scenario s = parse_scenario(
      nlohmann::json::parse(R"({"topology": "dgx-h100", "network": {"model": "ideal"},
          "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "ring",
                           "bytes": "1GiB"}]})"),
      ".");
  SweepRequest req;
  req.sizes = parse_sizes("1KiB..1GiB", "x8");
  const SweepResult r = run_sweep(s, req);
  const auto& algorithms = r.plan.algorithms;
  CHECK(std::find(algorithms.begin(), algorithms.end(), "nccl") == algorithms.end());
  CHECK(std::find(algorithms.begin(), algorithms.end(), "ring") != algorithms.end());
  REQUIRE(r.plan.left_out.size() >= 2);
  const std::string nccl_why = r.plan.left_out.back();
  CHECK_THAT(nccl_why, Catch::StartsWith("nccl: at 8 ranks and ") &&
                           Catch::Contains("ideal network model does not share links"));
  CHECK_THAT(sweep_table(r), Catch::Contains("# left out: " + nccl_why + "\n"));
  CHECK(sweep_json(r)["left_out"] == nlohmann::json(r.plan.left_out));
  std::ostringstream html;
  write_sweep_html(html, r);
  CHECK_THAT(html.str(), Catch::Contains("Left out: nccl: at 8 ranks"));
  // Under flow every NCCL pick runs: nothing of NCCL's is left out, and the shard file keeps
  // the notes (merge prints them as the single process does).
  Scenario flow = s;
  flow.network.model = NetworkModelKind::Flow;
  const SweepPlan with_nccl = plan_sweep(flow, req);
  CHECK(std::find(with_nccl.algorithms.begin(), with_nccl.algorithms.end(), "nccl") !=
        with_nccl.algorithms.end());
  for (const auto& why : with_nccl.left_out) CHECK_THAT(why, !Catch::StartsWith("nccl"));
  const auto files = shard_files(s, req, 2);
  CHECK(all_outputs(merge_shards(files)) == all_outputs(r));
  // Named with --algorithms, it is refused as before: the user asked for it.
  req.algorithms = {"nccl"};
  CHECK_THROWS_WITH(run_sweep(s, req), Catch::Contains("does not share links"));
}

TEST_CASE("a default sweep over rank counts leaves out the same algorithms in any order",
          "[sweep]") {
  // Hosts of 8: hierarchical takes 8 ranks, not 12 (8 and 4 on two hosts). Judged at the
  // first rank count only, --ranks 8,12 stopped the sweep at 12 and 12,8 left it out.
  const Scenario s =
      load_scenario(std::string(COLLSIM_SOURCE_DIR) + "/scenarios/hierarchical-vs-flat.json");
  const auto algorithms_for_ranks = [&](std::vector<int> ranks) {
    SweepRequest req;
    req.sizes = parse_sizes("16MiB", "x2");
    req.rank_counts = std::move(ranks);
    return plan_sweep(s, req).algorithms;
  };
  const auto up = algorithms_for_ranks({8, 12}), down = algorithms_for_ranks({12, 8});
  CHECK(up == down);
  CHECK(std::find(up.begin(), up.end(), "hierarchical") == up.end());
  CHECK(std::find(up.begin(), up.end(), "ring") != up.end());
}

TEST_CASE("a sweep with NCCL's pick says the others pay NCCL's protocol costs too", "[sweep]") {
  // Beside NCCL's pick each algorithm runs with its fastest protocol: its times differ from a
  // sweep without it, which the text did not say.
  const Scenario s =
      parse_scenario(nlohmann::json::parse(R"({"topology": "dgx-h100", "network": {"model": "flow"},
          "collectives": [{"name": "ar", "op": "all_reduce", "bytes": "1MiB"}]})"),
                     ".");
  SweepRequest req;
  req.sizes = parse_sizes("1MiB", "x2");
  req.algorithms = {"ring", "nccl"};
  CHECK_THAT(sweep_table(run_sweep(s, req)),
             Catch::Contains("every algorithm runs on NCCL's protocols, each at its fastest"));
  req.algorithms = {"ring"};
  const SweepResult plain = run_sweep(s, req);
  CHECK_THAT(sweep_table(plain), !Catch::Contains("NCCL's protocols"));
  // A collective NCCL runs puts every algorithm swept on NCCL's protocols, NCCL's pick swept
  // or not, and the header says so there too.
  Scenario nccl = s;
  nccl.collectives[0].algorithm = "nccl";
  const SweepResult on_protocols = run_sweep(nccl, req);
  CHECK_THAT(sweep_table(on_protocols),
             Catch::Contains("every algorithm runs on NCCL's protocols, each at its fastest"));
  REQUIRE(on_protocols.rows.size() == 1);
  CHECK(on_protocols.rows[0].time_s != plain.rows[0].time_s);
}
