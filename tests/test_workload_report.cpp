// report.html of a training step and the sampled timeline.json: the page shows the figures
// result.json holds, escapes what users name, is the same bytes run after run, and the
// timeline draws each pipeline stage's representative rank.
#include <fmt/format.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/units.h"
#include "helpers.h"
#include "report/html_common.h"
#include "report/workload_html.h"
#include "report/workload_ranks.h"
#include "report/workload_report.h"
#include "simulate/run_workload.h"

using namespace collsim;
using collsim::test::run_collsim;
using collsim::test::slurp;
using collsim::test::temp_dir;

namespace workload_report_test {

// A tiny model on a 2-node cluster (8 GPUs each, a NIC per GPU): dp 2, tp 4, pp 2 over
// 4 micro-batches, so that tp, pp and dp all communicate and the pipeline has a bubble.
std::string report_scenario_text(const std::string& name = "report-small",
                                 const std::string& job = "job0", int gpus_per_node = 8,
                                 const std::string& parallelism = R"("dp": 2, "tp": 4, "pp": 2)") {
  return R"({"name": ")" + name + R"(",
    "topology": {"preset": "cluster", "nodes": 2, "gpus_per_node": )" +
         std::to_string(gpus_per_node) +
         R"(, "nvlink": "450GB/s", "nic": "400Gbps", "pcie": "64GB/s"},
    "network": {"model": "flow"},
    "workload": {"name": ")" +
         job + R"(",
      "model": {"name": "tiny", "layers": 4, "hidden": 2048, "vocab": 32000},
      "gpu": "h100", "tokens_per_gpu": 2048, "bucket": "8MB",
      "parallelism": {)" +
         parallelism + R"(, "micro_batches": 4}}})";
}

std::string report_scenario_file(const std::string& text, const std::string& tag) {
  const auto path = temp_dir(tag) / "scenario.json";
  std::ofstream(path) << text;
  return path.string();
}

// `collsim run --out` into a fresh folder; the folder.
std::filesystem::path report_run_out(const std::string& scenario_path, const std::string& tag) {
  const auto dir = temp_dir(tag);
  const auto o = run_collsim("run " + scenario_path + " --out " + dir.string());
  INFO(o.err);
  REQUIRE(o.status == 0);
  return dir;
}

// Each rank's last task end, worked out here (not by the code under test).
std::vector<double> report_last_ends(const Scenario& s, const WorkloadRun& run) {
  std::vector<double> end(s.topology.num_ranks(), 0.0);
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i)
    for (int r : run.graph.tasks[i].ranks) end[r] = std::max(end[r], run.step.tasks[i].end_s);
  return end;
}

}  // namespace workload_report_test

using namespace workload_report_test;

TEST_CASE(
    "workload report.html: the step, each parallelism's exposed time, the bubble, memory "
    "against the GPU, the hottest links",
    "[workload][report]") {
  const auto dir =
      report_run_out(report_scenario_file(report_scenario_text(), "wr-content"), "wr-content-out");
  REQUIRE(std::filesystem::exists(dir / "report.html"));
  const std::string page = slurp(dir / "report.html");
  const auto doc = nlohmann::json::parse(slurp(dir / "result.json"));
  const auto& w = doc["workload"];
  CHECK_THAT(page, Catch::Contains(format_duration(w["step_s"].get<double>())));
  CHECK_THAT(page, Catch::Contains(format_duration(w["exposed_comm_s"].get<double>())));
  std::set<std::string> categories;
  for (const auto& c : w["categories"]) {
    const std::string name = c["category"];
    categories.insert(name);
    INFO(name);
    const std::string exposed = format_duration(c["exposed_s"].get<double>());
    // The category's own row in the breakdown table: its name, then (later) its exposed time.
    const auto row = page.find("<b>" + name + "</b></td>");
    REQUIRE(row != std::string::npos);
    const auto row_end = page.find("</tr>", row);
    CHECK(page.substr(row, row_end - row).find("<td>" + exposed + "</td>") != std::string::npos);
  }
  for (const char* p : {"compute", "tp", "pp", "dp", "bubble"}) CHECK(categories.count(p) == 1);
  // Every collective kind under its parallelism.
  for (const auto& k : w["kinds"])
    if (!k["op"].is_null())
      CHECK_THAT(page, Catch::Contains(k["category"].get<std::string>() + " " +
                                       k["op"].get<std::string>() + "</td>"));
  // The bubble a pipeline of 2 stages has, in the bar's legend and the headline.
  const double bubble = w["categories"].back()["exposed_s"];
  CHECK(bubble > 0);
  CHECK_THAT(page, Catch::Contains("bubble <b>" + format_duration(bubble) + "</b>"));
  // Memory per GPU against the H100's 80 GB.
  const auto& mem = w["memory_bytes"];
  CHECK_THAT(page, Catch::Contains(workload_report::gigabytes(mem["total"]) + " of the h100's " +
                                   workload_report::gigabytes(mem["gpu"])));
  CHECK_THAT(page, Catch::Contains("id=\"memory-0\""));
  // The hottest links, the busiest first, their names escaped ("gpu0->nvswitch0").
  const auto& hot = w["hottest_links"];
  REQUIRE(hot.size() > 1);
  const auto first = page.find(html::escape(hot[0]["link"].get<std::string>()) + "</td>");
  const auto second = page.find(html::escape(hot[1]["link"].get<std::string>()) + "</td>");
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(first < second);
  // A lane per stage's representative, and a time axis.
  CHECK_THAT(page, Catch::Contains("stage 0 &middot; rank"));
  CHECK_THAT(page, Catch::Contains("stage 1 &middot; rank"));
  CHECK_THAT(page, Catch::Contains("class=\"axis\" text-anchor=\"end\">time</text>"));
  CHECK(page.find("http://") == page.find("http://www.w3.org/2000/svg"));  // nothing fetched
}

TEST_CASE("workload report: each stage's representative is its rank that ends last",
          "[workload][report]") {
  const Scenario s = parse_scenario(parse_json_text(report_scenario_text(), "scenario.json"), ".");
  const WorkloadRun run = run_workloads(s);
  const auto reps = stage_representatives(s, run);
  const auto stages = pipeline_stages(*run.jobs[0].spec);
  REQUIRE(stages.size() == 2);
  REQUIRE(reps.size() == 2);
  const auto end = report_last_ends(s, run);
  std::ostringstream page;
  write_workload_html(page, s, run);
  for (std::size_t st = 0; st < stages.size(); ++st) {
    INFO("stage " << st);
    CHECK(stages[st].size() == 8);  // tp 4 x dp 2
    double latest = 0;
    for (int r : stages[st]) latest = std::max(latest, end[r]);
    int first_latest = s.topology.num_ranks();
    for (int r : stages[st])
      if (end[r] == latest) first_latest = std::min(first_latest, r);
    CHECK(reps[st].stage == static_cast<int>(st));
    CHECK(reps[st].rank == first_latest);
    CHECK(reps[st].end_s == latest);
    CHECK_THAT(page.str(),
               Catch::Contains(fmt::format("stage {} &middot; rank {}</tspan>", st, first_latest)));
  }
  // One of the representatives ends at the job's step.
  CHECK(std::max(reps[0].end_s, reps[1].end_s) == Approx(run.jobs[0].step_s));

  // A straggler: a task of its own on stage 1's second-to-last rank, ending after the
  // step. It, not the lowest rank of a tie, represents the stage.
  WorkloadRun late = run_workloads(s);
  const int straggler = stages[1][stages[1].size() - 2];
  StepTask extra;
  extra.name = "late";
  extra.category = "compute";
  extra.ranks = {straggler};
  late.graph.tasks.push_back(extra);
  late.step.tasks.push_back({late.jobs[0].step_s, late.jobs[0].step_s + 1e-3, -1});
  const auto moved = stage_representatives(s, late);
  REQUIRE(moved.size() == 2);
  CHECK(moved[0].rank == reps[0].rank);
  CHECK(moved[1].rank == straggler);
  CHECK(moved[1].rank != *std::ranges::min_element(stages[1]));
}

TEST_CASE("workload report.html escapes the names a user gives", "[workload][report]") {
  const std::string evil = "<script>alert(1)</script>";
  const std::string text = report_scenario_text(evil, "job <b>&\\\"x\\\"");
  const auto dir = report_run_out(report_scenario_file(text, "wr-escape"), "wr-escape-out");
  const std::string page = slurp(dir / "report.html");
  CHECK(page.find("<script>alert") == std::string::npos);
  CHECK_THAT(page, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(page.find("<b>&") == std::string::npos);
  CHECK_THAT(page, Catch::Contains("job &lt;b&gt;&amp;&quot;x&quot;"));
  // Only the page's own hover script.
  std::size_t scripts = 0;
  for (auto at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1))
    ++scripts;
  CHECK(scripts == 1);
}

TEST_CASE("workload report.html and timeline.json: same scenario, same bytes",
          "[workload][report]") {
  const std::string path = report_scenario_file(report_scenario_text(), "wr-det");
  const auto a = report_run_out(path, "wr-det-a"), b = report_run_out(path, "wr-det-b");
  for (const char* f : {"report.html", "timeline.json", "result.json", "links.csv"}) {
    INFO(f);
    const std::string first = slurp(a / f);
    CHECK_FALSE(first.empty());
    CHECK(first == slurp(b / f));
  }
}

TEST_CASE(
    "workload timeline.json: past 32 ranks, each stage's representative and a few "
    "evenly spaced ranks",
    "[workload][report][trace]") {
  // 2 nodes x 32 GPUs: dp 2, tp 8, pp 4 on 64 ranks, more than the 32 drawn at most.
  const std::string text =
      report_scenario_text("sampled", "job0", 32, R"("dp": 2, "tp": 8, "pp": 4)");
  const auto dir = report_run_out(report_scenario_file(text, "wr-sample"), "wr-sample-out");
  const auto trace = nlohmann::json::parse(slurp(dir / "timeline.json"));
  const auto& meta = trace["otherData"];
  CHECK(meta["ranks"] == 64);
  const auto shown = meta["ranks_shown"].get<std::vector<int>>();
  CHECK(meta["ranks_drawn"] == shown.size());
  CHECK(shown.size() <= static_cast<std::size_t>(kTraceRanks));
  CHECK(std::ranges::is_sorted(shown));
  const std::set<int> drawn(shown.begin(), shown.end());
  CHECK(drawn.size() == shown.size());

  const Scenario s = parse_scenario(parse_json_text(text, "scenario.json"), ".");
  const WorkloadRun run = run_workloads(s);
  const auto end = report_last_ends(s, run);
  const auto stages = pipeline_stages(*run.jobs[0].spec);
  REQUIRE(meta["representatives"].size() == 4);
  for (std::size_t st = 0; st < 4; ++st) {
    INFO("stage " << st);
    const auto& rep = meta["representatives"][st];
    CHECK(rep["job"] == "job0");
    CHECK(rep["stage"] == st);
    const int r = rep["rank"];
    CHECK(drawn.count(r) == 1);
    CHECK(std::ranges::find(stages[st], r) != stages[st].end());
    for (int other : stages[st]) CHECK(end[other] <= end[r]);
  }
  // The evenly spaced ranks include the job's first and last.
  CHECK(drawn.count(run.jobs[0].spec->ranks.front()) == 1);
  CHECK(drawn.count(run.jobs[0].spec->ranks.back()) == 1);
  // A process per drawn rank, the representatives named as such, slices on each.
  std::vector<int> processes;
  std::set<int> with_slices;
  int named = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      processes.push_back(e["pid"]);
      named += e["args"]["name"].get<std::string>().find("job0 stage") != std::string::npos;
    }
    if (e["ph"] == "X") with_slices.insert(e["pid"].get<int>());
  }
  CHECK(processes == shown);
  CHECK(with_slices == drawn);
  CHECK(named == 4);
}

TEST_CASE("workload report: a run that fails writes no report.html", "[workload][report]") {
  const auto dir = temp_dir("wr-bad-out");
  // dp 2 x tp 4 x pp 2 needs 16 GPUs; the cluster has 8.
  const auto path = report_scenario_file(
      report_scenario_text("bad", "job0", 4, R"("dp": 2, "tp": 4, "pp": 2)"), "wr-bad");
  const auto o = run_collsim("run " + path + " --out " + dir.string());
  CHECK(o.status != 0);
  CHECK_FALSE(std::filesystem::exists(dir / "report.html"));
  CHECK_FALSE(std::filesystem::exists(dir / "result.json"));
}

TEST_CASE("workload report.html stays small: the bundled Llama-3 70B on 64 GPUs",
          "[workload][report]") {
  const auto dir = report_run_out(
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-llama3-70b-3d.json", "wr-llama");
  const auto size = std::filesystem::file_size(dir / "report.html");
  CHECK(size < 1'000'000);
  const std::string page = slurp(dir / "report.html");
  for (int stage = 0; stage < 4; ++stage)
    CHECK_THAT(page, Catch::Contains(fmt::format("stage {} &middot; rank", stage)));
  CHECK_THAT(page, Catch::Contains("<details id=\"ranks-0\">"));
}

TEST_CASE("workload report.html renders in headless Chromium without console errors",
          "[workload][report][browser]") {
  if (collsim::test::chromium_path().empty())
    COLLSIM_SKIP_TEST("chromium is not installed (tools/setup.sh --tests installs it)");
  const auto dir = report_run_out(
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-llama3-70b-3d.json", "wr-browser");
  const auto page = collsim::test::render_in_chromium(dir / "report.html");
  REQUIRE(!page.dom.empty());
  for (const char* id :
       {"id=\"headline\"", "id=\"breakdown-0\"", "id=\"breakdown-table-0\"",
        "id=\"stage-timeline-0\"", "id=\"ranks-0\"", "id=\"memory-0\"", "id=\"hottest-links\""})
    CHECK_THAT(page.dom, Catch::Contains(id));
  CHECK(page.console_errors == std::vector<std::string>{});
}

TEST_CASE("workload trace: with several jobs every rank's process names its job",
          "[workload][report]") {
  // workload-two-jobs interleaves jobs a and b on one cluster: only each stage's
  // representative said its job, and "rank 9" could be either.
  const auto dir = temp_dir("wr-two-jobs");
  const std::string scenario =
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-two-jobs.json";
  REQUIRE(run_collsim("run " + scenario + " --out " + dir.string()).status == 0);
  const auto trace = nlohmann::json::parse(slurp(dir / "timeline.json"));
  const Scenario s = load_scenario(scenario);
  std::map<int, std::string> job_of;
  for (const auto& w : s.workloads)
    for (int r : w.ranks) job_of[r] = w.name;
  int named = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "M" || e["name"] != "process_name") continue;
    const std::string name = e["args"]["name"];
    const int rank = e["pid"];
    INFO(name);
    REQUIRE(job_of.count(rank) == 1);
    CHECK(name.starts_with(fmt::format("rank {} ({}", rank, job_of[rank])));
    ++named;
  }
  CHECK(named > 4);  // more than the two jobs' stage representatives
  std::filesystem::remove_all(dir);
}
