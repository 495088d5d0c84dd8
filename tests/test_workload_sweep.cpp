// collsim workload-sweep as a planner: splits keep the global batch (micro-batches follow
// dp), a split that does not fit is tried with more activation recomputation, the best
// row is the fastest that fits, and --out writes the CSV, JSON and page all-or-nothing.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "sweep/workload_sweep.h"

using namespace collsim;
using collsim::test::run_collsim;
using collsim::test::slurp;
using collsim::test::temp_dir;

namespace workload_sweep_test {

// A small model on one node of `gpus` GPUs; `memory` the GPU's, so that a test can put it
// between what a step needs with and without recomputation.
nlohmann::json sweep_scenario(const std::string& parallelism, const std::string& memory = "80GB",
                              const std::string& job = "job0", int gpus = 8) {
  return nlohmann::json::parse(R"({"name": "sweep-small",
    "topology": {"preset": "cluster", "nodes": 1, "gpus_per_node": )" +
                               std::to_string(gpus) + R"(, "nvlink": "450GB/s", "nic": "400Gbps",
                 "pcie": "64GB/s"},
    "network": {"model": "flow"},
    "workload": {"name": ")" + job + R"(",
      "model": {"name": "tiny", "layers": 8, "hidden": 4096, "vocab": 32000, "sequence": 4096},
      "gpu": {"peak_flops": 989e12, "memory": ")" +
                               memory + R"("}, "tokens_per_gpu": 16384, "bucket": "64MB",
      "parallelism": {)" + parallelism + "}}}");
}

// The row with these dp, tp, pp (splits' columns come last but two).
const WorkloadPoint& split_row(const WorkloadSweep& s, int dp, int tp, int pp) {
  const std::size_t c = s.columns.size() - 5;
  for (const auto& p : s.points)
    if (p.settings[c] == std::to_string(dp) && p.settings[c + 1] == std::to_string(tp) &&
        p.settings[c + 2] == std::to_string(pp))
      return p;
  FAIL("no split dp " << dp << " tp " << tp << " pp " << pp);
  throw std::logic_error("unreachable");
}

WorkloadSweep splits_of(const nlohmann::json& doc) {
  WorkloadSweepOptions o;
  o.splits = true;
  return sweep_workload(doc, ".", o);
}

}  // namespace workload_sweep_test

using namespace workload_sweep_test;

TEST_CASE("workload-sweep --splits: micro-batches follow dp for a fixed global batch",
          "[workload][sweep]") {
  // 2 replicas x 4 micro-batches: a global batch of 8 micro-batches.
  const auto s = splits_of(sweep_scenario(R"("dp": 2, "tp": 4, "micro_batches": 4)", "1TB"));
  REQUIRE(s.columns.back() == "recompute");
  REQUIRE(s.columns[s.columns.size() - 2] == "micro_batches");
  const auto micro = [&](int dp, int tp, int pp) { return split_row(s, dp, tp, pp).settings[3]; };
  CHECK(micro(2, 4, 1) == "4");
  CHECK(micro(1, 4, 2) == "8");
  CHECK(micro(4, 2, 1) == "2");
  CHECK(micro(2, 2, 2) == "4");
  CHECK(micro(8, 1, 1) == "1");
  CHECK(micro(1, 1, 8) == "8");  // exactly fills 8 stages
  for (const auto& p : s.points) {
    INFO(p.settings[0] << " " << p.settings[1] << " " << p.settings[2]);
    REQUIRE(p.error.empty());
    // Every split runs the same tokens per GPU per step: the global batch is kept.
    CHECK(p.tokens_per_s_per_gpu * p.step_s == Approx(16384).epsilon(1e-9));
  }
}

TEST_CASE("workload-sweep --splits: refuses a dp that splits the batch unevenly or a pipeline "
          "it cannot fill",
          "[workload][sweep]") {
  // 2 x 3 = 6 micro-batches in all.
  const auto s = splits_of(sweep_scenario(R"("dp": 2, "tp": 4, "micro_batches": 3)", "1TB"));
  CHECK(split_row(s, 1, 4, 2).settings[3] == "6");
  CHECK(split_row(s, 1, 4, 2).error.empty());
  CHECK(split_row(s, 2, 2, 2).settings[3] == "3");
  const auto& uneven = split_row(s, 4, 2, 1);  // 6 / 4
  CHECK(uneven.settings[3] == "-");
  CHECK_THAT(uneven.error, Catch::Contains("does not split over dp = 4"));
  CHECK_FALSE(uneven.fits);
  const auto& shallow = split_row(s, 1, 1, 8);  // 6 micro-batches, 8 stages
  CHECK_THAT(shallow.error, Catch::Contains("6 micro-batches per pipeline cannot fill pp = 8"));
  CHECK_FALSE(shallow.fits);
  CHECK(s.best >= 0);
  CHECK(s.points[s.best].error.empty());
}

TEST_CASE("workload-sweep --splits: a split that does not fit is tried with recomputation",
          "[workload][sweep]") {
  // dp 1, tp 1, pp 1 on one GPU: its activations alone exceed the GPU's memory unless
  // each layer's forward is recomputed.
  const std::string par = R"("dp": 1, "micro_batches": 1)";
  WorkloadSweepOptions by_hand;
  by_hand.axes = {parse_axis("workload.parallelism.recompute=none,selective,full")};
  const auto direct = sweep_workload(sweep_scenario(par, "40GB", "job0", 1), ".", by_hand);
  REQUIRE(direct.points.size() == 3);
  CHECK_FALSE(direct.points[0].fits);
  CHECK_FALSE(direct.points[1].fits);
  REQUIRE(direct.points[2].fits);

  const auto s = splits_of(sweep_scenario(par, "40GB", "job0", 1));
  REQUIRE(s.points.size() == 1);
  const auto& p = s.points[0];
  CHECK(p.settings.back() == "full");
  CHECK(p.fits);
  CHECK(p.memory_bytes == direct.points[2].memory_bytes);
  CHECK(p.step_s == direct.points[2].step_s);
  CHECK(s.best == 0);
  CHECK_THAT(workload_sweep_csv(s), Catch::Contains(",full,"));
}

TEST_CASE("workload-sweep --splits: a job in a list of jobs keeps its own flash_attention",
          "[workload][sweep]") {
  // Without flash attention the scores are stored, and selective recomputation drops them:
  // on 60 GB that fits where no recomputation (134 GB) does not, whether the job stands alone or
  // as the one job of a list.
  nlohmann::json alone = sweep_scenario(R"("dp": 1, "micro_batches": 1)", "60GB", "job0", 1);
  alone["workload"]["flash_attention"] = false;
  nlohmann::json listed = alone;
  listed["workload"] = nlohmann::json::array({alone["workload"]});
  const auto a = splits_of(alone), l = splits_of(listed);
  REQUIRE(a.points.size() == 1);
  REQUIRE(l.points.size() == 1);
  CHECK(a.points[0].settings.back() == "selective");
  CHECK(l.points[0].settings.back() == "selective");
  CHECK(l.points[0].step_s == a.points[0].step_s);
}

TEST_CASE(
    "workload-sweep --set: a path set twice, or inside another, or one --splits sets, "
    "is refused",
    "[workload][sweep]") {
  CHECK_THROWS_WITH(
      workload_sweep_options({"workload.bucket=10MB,100MB", "workload.bucket=25MB"}, false),
      "--set: \"workload.bucket\" is set twice; give all its values in one --set "
      "workload.bucket=V1,V2");
  // A value given twice ran its point twice (sweep refuses a repeated rank count).
  CHECK_THROWS_WITH(workload_sweep_options({"workload.bucket=25MB,10MB,25MB"}, false),
                    "--set: 25MB is given twice in \"workload.bucket=25MB,10MB,25MB\"");
  CHECK_THROWS_WITH(workload_sweep_options(
                        {"workload.parallelism={\"dp\":2}", "workload.parallelism.dp=1,2"}, false),
                    Catch::Contains("one sets part of the other"));
  CHECK_THROWS_WITH(workload_sweep_options({"workload.parallelism.tp=1,2"}, true),
                    Catch::Contains("--splits sets workload.parallelism's dp, tp, pp"));
  CHECK(workload_sweep_options({"workload.parallelism.recompute=none,full"}, true).axes.size() ==
        1);
  CHECK(workload_sweep_options({"workload.bucket=1MB", "workload.bucket_cap=2MB"}, false)
            .axes.size() == 2);  // a name that starts like another's is another path
}

TEST_CASE("workload-sweep --set: a misspelt key on the way is named as the loader names any",
          "[workload][sweep]") {
  // It once said "workload.parallelsim" is null, not an object whose "dp" could be set.
  WorkloadSweepOptions o = workload_sweep_options({"workload.parallelsim.dp=1,2"}, false);
  const auto s = sweep_workload(sweep_scenario(R"("dp": 8)"), ".", o);
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[0].error == "workload.parallelsim: unknown field; did you mean \"parallelism\"?");
  // A value that is there and is not an object is still refused as such.
  o = workload_sweep_options({"workload.gpu.memory.x=1"}, false);
  CHECK_THROWS_WITH(sweep_workload(sweep_scenario(R"("dp": 8)"), ".", o),
                    Catch::Contains("not an object whose \"x\" could be set"));
}

TEST_CASE("workload-sweep: the best row is the fastest that fits", "[workload][sweep]") {
  WorkloadSweepOptions o;
  o.axes = {parse_axis("workload.parallelism.recompute=none,full")};
  const auto s =
      sweep_workload(sweep_scenario(R"("dp": 1, "micro_batches": 1)", "40GB", "job0", 1), ".", o);
  REQUIRE(s.points.size() == 2);
  // Without recomputation the step is faster but does not fit.
  REQUIRE(s.points[0].step_s < s.points[1].step_s);
  REQUIRE_FALSE(s.points[0].fits);
  REQUIRE(s.points[1].fits);
  CHECK(s.best == 1);
  CHECK(s.points[1].mfu > 0);
  CHECK(s.points[1].mfu < s.points[0].mfu);  // recomputed FLOPs are not useful ones
  const auto j = workload_sweep_json(s);
  CHECK(j["best"] == 1);
  CHECK(j["points"][0]["best"] == false);
  CHECK(j["points"][1]["best"] == true);
  CHECK(j["points"][1]["mfu"].get<double>() == s.points[1].mfu);
  const std::string table = workload_sweep_table(s);
  const auto full_line = table.substr(table.find("\nfull"));
  CHECK_THAT(full_line.substr(0, full_line.find('\n', 1)), Catch::Contains("<- best"));
  CHECK(table.find("<- best") == table.rfind("<- best"));
  CHECK_THAT(table, Catch::Contains("MFU"));
  CHECK_THAT(table, Catch::Contains("tok/s/GPU"));
  const std::string csv = workload_sweep_csv(s);
  CHECK_THAT(csv, Catch::Contains("mfu,tokens_per_s_per_gpu,memory_bytes,fits,best,error\n"));
  const auto second = csv.substr(csv.find("\nfull,") + 1);
  CHECK_THAT(second, Catch::Contains(",1,1,\n"));  // fits, best
  CHECK_THAT(csv.substr(0, csv.find("\nfull,")), Catch::EndsWith(",0,0,"));  // neither
}

TEST_CASE("workload-sweep --out: csv, json and an escaped page, the same bytes each run",
          "[workload][sweep][report]") {
  const auto scenario = temp_dir("wsweep-scn") / "scenario.json";
  std::ofstream(scenario) << sweep_scenario(R"("dp": 2, "tp": 4, "micro_batches": 4)", "80GB",
                                            "<script>alert(1)</script>")
                                 .dump();
  const auto run_out = [&](const std::string& tag) {
    const auto dir = temp_dir(tag);
    const auto o = run_collsim("workload-sweep " + scenario.string() + " --splits --out " +
                               dir.string() + " --format csv");
    INFO(o.err);
    REQUIRE(o.status == 0);
    CHECK(o.out == slurp(dir / "workload_sweep.csv"));
    return dir;
  };
  const auto a = run_out("wsweep-a"), b = run_out("wsweep-b");
  for (const char* f : {"workload_sweep.csv", "workload_sweep.json", "workload_sweep.html"}) {
    INFO(f);
    const std::string first = slurp(a / f);
    CHECK_FALSE(first.empty());
    CHECK(first == slurp(b / f));
  }
  const auto j = nlohmann::json::parse(slurp(a / "workload_sweep.json"));
  CHECK(j["job"] == "<script>alert(1)</script>");
  for (const auto& p : j["points"]) CHECK(p["best"].is_boolean());
  REQUIRE(j["best"].is_number());
  const std::string page = slurp(a / "workload_sweep.html");
  CHECK(page.find("<script>alert") == std::string::npos);
  CHECK_THAT(page, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  // The best row starred: its settings in the columns' order.
  std::string best = "\u2605 ";
  for (const auto& c : j["columns"])
    best += (best.size() > 4 ? " / " : "") +
            j["points"][j["best"].get<int>()]["settings"][c.get<std::string>()].get<std::string>();
  CHECK_THAT(page, Catch::Contains(best + "</text>"));
  CHECK(page.find("\u2605") == page.rfind("\u2605"));
  std::size_t scripts = 0;
  for (auto at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1))
    ++scripts;
  CHECK(scripts == 1);  // only the page's own hover script
  // One <g> per point, each with its hover text.
  std::size_t rows = 0;
  for (auto at = page.find("<g><title>dp="); at != std::string::npos;
       at = page.find("<g><title>dp=", at + 1))
    ++rows;
  CHECK(rows == j["points"].size());
}

TEST_CASE("workload-sweep --out: nothing written when the sweep fails", "[workload][sweep]") {
  const auto dir = temp_dir("wsweep-fail");
  const auto o = run_collsim("workload-sweep /nonexistent/scenario.json --splits --out " +
                             (dir / "out").string());
  CHECK(o.status != 0);
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "workload_sweep.html"));
  // Every point refused (a misspelt path): the table says why, the status is bad input's,
  // and no file is written.
  const std::string scenario =
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-ddp-buckets.json";
  const auto all = run_collsim("workload-sweep " + scenario + " --set workload.bogus=1,2 --out " +
                               (dir / "all").string());
  CHECK(all.status == 2);
  CHECK_THAT(all.out, Catch::Contains("refused: workload.bogus: unknown field"));
  CHECK_THAT(all.err, Catch::Contains("--set: every point of the sweep was refused"));
  CHECK_FALSE(std::filesystem::exists(dir / "all"));
  // In the format asked for.
  const auto json =
      run_collsim("workload-sweep " + scenario + " --set workload.bogus=1,2 --format json");
  CHECK(json.status == 2);
  CHECK(nlohmann::json::parse(json.out)["best"].is_null());
}

TEST_CASE("workload-sweep --set: a comma inside a JSON string or list is the value's own",
          "[workload][sweep]") {
  // NCCL_ALGO's lists hold commas: "ring,tree" quoted is one value, as [1, 2] is.
  const SweepAxis a =
      parse_axis(R"(workload.nccl_algo="ring,tree",ring,"a\"b,c",[1,[2,3]],{"x":1,"y":2})");
  CHECK(a.path == "workload.nccl_algo");
  CHECK(a.values == std::vector<std::string>{R"("ring,tree")", "ring", R"("a\"b,c")", "[1,[2,3]]",
                                             R"({"x":1,"y":2})"});
  CHECK(parse_axis("workload.bucket=10MB,25MB").values == std::vector<std::string>{"10MB", "25MB"});
  CHECK_THROWS_WITH(parse_axis(R"(workload.nccl_algo="ring,tree",)"),
                    Catch::Contains("an empty value"));
  // A quote inside a plain word is the word's; an unclosed or trailed JSON value is refused.
  CHECK(parse_axis(R"(workload.name=a"b,c)").values == std::vector<std::string>{R"(a"b)", "c"});
  CHECK_THROWS_WITH(parse_axis(R"(workload.nccl_algo="ring,tree)"),
                    Catch::Contains("never closes"));
  CHECK_THROWS_WITH(parse_axis("workload.bucket=[1,2"), Catch::Contains("never closes"));
  CHECK_THROWS_WITH(parse_axis(R"(workload.nccl_algo="ring"x,tree)"),
                    Catch::Contains("a comma or the end must follow the JSON value"));
  // Each point's scenario gets the string, and its row says it as written.
  const auto doc = nlohmann::json::parse(R"({"topology": "dgx-h100", "workload": {"gradients":
      "64MiB", "compute": "1ms", "algorithm": "nccl"}})");
  WorkloadSweepOptions o;
  o.axes = {parse_axis(R"(workload.nccl_algo="ring,tree",nvls)")};
  const WorkloadSweep s = sweep_workload(doc, ".", o);
  REQUIRE(s.points.size() == 2);
  CHECK(s.points[0].error.empty());
  CHECK(s.points[1].error.empty());
  CHECK(s.points[0].settings == std::vector<std::string>{R"("ring,tree")"});
  CHECK(s.points[0].step_s != s.points[1].step_s);  // NVLS on one node: not the ring's time
  CHECK_THAT(workload_sweep_table(s), !Catch::Contains("refused"));
  // Every point refused: the table says so, not that none fits.
  o.axes = {parse_axis(R"(workload.nccl_algo="rings",tre)")};
  const WorkloadSweep refused = sweep_workload(doc, ".", o);
  CHECK_THAT(workload_sweep_table(refused), Catch::EndsWith("# every point was refused\n"));
  // The refusal names what made the points: a --splits sweep's were said to be --set's.
  CHECK_THROWS_WITH(require_a_point_ran(refused, o), Catch::StartsWith("--set: every point"));
  o.splits = true;
  CHECK_THROWS_WITH(require_a_point_ran(refused, o),
                    Catch::StartsWith("--set/--splits: every point"));
  o.axes.clear();
  CHECK_THROWS_WITH(require_a_point_ran(refused, o), Catch::StartsWith("--splits: every point"));
  // Bytes that are not UTF-8 are refused at --set (every report is UTF-8 text); they once
  // reached the JSON writer and stopped the run with an internal error.
  CHECK_THROWS_WITH(parse_axis("workload.nccl_algo=\xff"), Catch::Contains("not UTF-8"));
}

TEST_CASE("workload-sweep --splits: a --set value the scenario refuses refuses its point alone",
          "[workload][sweep]") {
  // Without --splits such a point is a refused row; with them it once stopped the sweep.
  nlohmann::json doc = sweep_scenario(R"("dp": 8)");
  WorkloadSweepOptions o;
  o.splits = true;
  o.axes = {parse_axis("workload.bucket=bogus,64MB")};
  const WorkloadSweep s = sweep_workload(doc, ".", o);
  REQUIRE(s.points.size() > 1);
  CHECK_THAT(s.points[0].error, Catch::Contains("workload.bucket"));
  CHECK(s.points[0].settings ==
        std::vector<std::string>{"bogus", "-", "-", "-", "-", "-"});  // no split, no recompute
  for (std::size_t i = 1; i < s.points.size(); ++i) CHECK(s.points[i].settings[0] == "64MB");
  CHECK(s.best > 0);
}

TEST_CASE("workload-sweep: the best does the most work per second, refused rows have no figures",
          "[workload][sweep]") {
  // Weak scaling: tokens_per_gpu fixed, 1 to 8 GPUs. The 1-GPU step is the shortest (no
  // communication), and does an eighth of the 8-GPU step's work: the best was the smallest job.
  WorkloadSweepOptions o;
  o.axes = {parse_axis("workload.parallelism.dp=1,2,16,8")};
  auto doc = sweep_scenario(R"("dp": 1, "micro_batches": 1)", "1TB", "job0", 8);
  const auto s = sweep_workload(doc, ".", o);
  REQUIRE(s.points.size() == 4);
  REQUIRE(!s.points[2].error.empty());  // 16 GPUs on 8
  CHECK(s.best == 3);
  CHECK(s.points[0].step_s < s.points[3].step_s);
  const std::string csv = workload_sweep_csv(s);
  const auto refused = csv.substr(csv.find("\n16,") + 1);
  CHECK_THAT(refused.substr(0, refused.find('\n')), Catch::StartsWith("16,,,,,,,,,,,,0,"));
}

TEST_CASE(
    "workload-sweep --splits: context parallelism kept, expert parallelism said, a model "
    "needed",
    "[workload][sweep]") {
  // cp 2 on 8 GPUs: dp x tp x pp split the 4 it leaves (every split once asked for 16).
  const auto cp = splits_of(sweep_scenario(R"("dp": 2, "tp": 2, "cp": 2, "micro_batches": 2)"));
  REQUIRE(cp.points.size() == 6);  // 4x1x1, 2x1x2, 1x1x4, 2x2x1, 1x2x2, 1x4x1
  for (const auto& p : cp.points) {
    INFO(p.settings[0] << " " << p.settings[1] << " " << p.settings[2] << ": " << p.error);
    CHECK(std::stoi(p.settings[0]) * std::stoi(p.settings[1]) * std::stoi(p.settings[2]) == 4);
    CHECK_THAT(p.error, !Catch::Contains("GPUs, but"));
  }
  CHECK(split_row(cp, 2, 2, 1).error.empty());
  // An MoE's dp must hold its ep: the splits it cannot are rows that say why.
  auto moe = sweep_scenario(R"("dp": 4, "ep": 4, "micro_batches": 2)");
  moe["workload"]["model"].update({{"experts", 8}, {"top_k", 2}, {"expert_params", 50000000}});
  const auto m = splits_of(moe);
  CHECK(m.points.size() ==
        splits_of(sweep_scenario(R"("dp": 4, "micro_batches": 2)")).points.size());
  CHECK_THAT(split_row(m, 2, 2, 1).error,
             Catch::Contains("ep = 4 does not divide dp = 2 (expert parallelism is carved out"));
  CHECK(split_row(m, 4, 1, 1).error.empty());
  // The minimal form has no parallelism to split.
  auto minimal = sweep_scenario("");
  minimal["workload"] = {{"gradients", "1GB"}, {"compute", "10ms"}};
  CHECK_THROWS_WITH(splits_of(minimal),
                    Catch::StartsWith("--splits: splits a model's parallelism; job0 is of the "
                                      "minimal form"));
}
