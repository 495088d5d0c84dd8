// Reports people look at: traffic analysis, report.html in a real browser, sweeps.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "helpers.h"
#include "report/html_common.h"
#include "report/html_report.h"
#include "report/output_dir.h"
#include "report/reports.h"
#include "report/trace_file.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "sweep/sweep.h"

namespace fs = std::filesystem;
using namespace collsim;

namespace {

std::string run_command(const std::string& cmd, int* status = nullptr) {
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int s = pclose(pipe);
  if (status) *status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kScenarios = std::string(COLLSIM_SOURCE_DIR) + "/scenarios/";

}  // namespace

TEST_CASE("traffic: bottlenecks, utilisation and rank busy time add up", "[report]") {
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r, 50);
  REQUIRE(t.timed);
  CHECK(t.makespan_s == Approx(r.outcomes.back().end_s));
  // The flat ring's bottleneck is a 50 GB/s fabric link; the hierarchical one's too, with 1/8 the
  // bytes... per link.
  CHECK(s.topology.link(t.per_collective[0].link).bandwidth == Approx(50e9));
  CHECK(t.per_collective[1].bytes < t.per_collective[0].bytes);
  // Every step has a bottleneck, and per-step bottleneck seconds never exceed the step's simulated
  // length.
  std::size_t steps = 0;
  for (const SharedSchedule& sched : r.schedules)
    steps += static_cast<std::size_t>(sched->num_steps);
  CHECK(t.per_step.size() == steps);
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    double binned = 0;
    for (float u : t.links[l].bins) binned += u * t.bin_s * s.topology.link(l).bandwidth;
    CHECK(binned == Approx(static_cast<double>(t.links[l].bytes)).epsilon(1e-3).margin(1));
    CHECK(t.links[l].utilisation <= 1.0 + 1e-9);
  }
  for (const auto& rank : t.ranks) {
    CHECK(rank.busy_s + rank.idle_s == Approx(t.makespan_s));
    CHECK(rank.sent == rank.received);  // all-reduce: everyone sends what it receives
  }
}

TEST_CASE("report.html renders in headless Chromium without console errors", "[report][browser]") {
  const std::string chromium = collsim::test::chromium_path();
  if (chromium.empty())
    COLLSIM_SKIP_TEST("chromium is not installed (tools/setup.sh --tests installs it)");
  const fs::path dir = fs::temp_directory_path() / ("collsim-report-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int status = -1;
  run_command(std::string(COLLSIM_EXE) + " run " + kScenarios +
                  "oversubscribed-spine-2to1.json --out " + dir.string(),
              &status);
  REQUIRE(status == 0);
  const auto page = collsim::test::render_in_chromium(dir / "report.html");
  REQUIRE(!page.dom.empty());
  for (const char* id : {"id=\"summary\"", "id=\"per-collective\"", "id=\"timeline\"",
                         "id=\"heatmap\"", "id=\"heatmap-note\"", "id=\"kind-bars\"",
                         "id=\"topology\"", "id=\"topology-legend\"", "class=\"band\""})
    CHECK_THAT(page.dom, Catch::Contains(id));
  CHECK(page.console_errors == std::vector<std::string>{});
  const std::string url = "file://" + (dir / "report.html").string();
  const std::string flags = collsim::test::kChromiumFlags;
  const fs::path shot = fs::path(COLLSIM_BINARY_DIR) / "report-screenshot.png";
  run_command("timeout 120 " + chromium + flags + "--window-size=1280,2000 --screenshot=" +
                  shot.string() + " " + url + " 2>/dev/null",
              &status);
  CHECK(status == 0);
  CHECK(fs::file_size(shot) > 10000);
}

TEST_CASE("sweep: nccl-tests table per algorithm, winners, and the ring/tree crossover near 235 KB",
          "[sweep]") {
  Scenario s = load_scenario(kScenarios + "ring-vs-tree-vs-naive.json");
  s.network.model = collsim::NetworkModelKind::Ideal;
  SweepRequest req;
  req.sizes = parse_sizes("10KB..10MB", "x2");
  req.algorithms = {"binomial_tree", "ring"};
  const SweepResult r = run_sweep(s, req);
  CHECK(r.rows.size() == 2 * req.sizes.size());
  REQUIRE(r.crossovers.size() == 1);
  CHECK(r.crossovers[0].from == "binomial_tree");
  CHECK(r.crossovers[0].to == "ring");
  CHECK(r.crossovers[0].estimate == Approx(235'294).epsilon(0.01));  // docs/models.md: about 235 KB
  const std::string table = sweep_table(r);
  CHECK_THAT(table, Catch::Contains("# ranks 8, algorithm ring") &&
                        Catch::Contains("binomial_tree -> ring at"));
  for (std::size_t k = 0; k < req.sizes.size(); ++k)  // exactly one winner per size
    CHECK(r.rows[k].winner + r.rows[req.sizes.size() + k].winner == 1);
}

TEST_CASE("sweep over rank counts and sizes by list", "[sweep]") {
  Scenario s = load_scenario(kScenarios + "parameter-server-scaling.json");
  SweepRequest req;
  req.sizes = parse_sizes("1MiB,16MiB", "x2");
  req.algorithms = {"ring", "parameter_server"};
  req.rank_counts = {4, 16};
  const SweepResult r = run_sweep(s, req);
  CHECK(r.rows.size() == 2 * 2 * 2);
  CHECK(r.rows[0].ranks == 4);
  CHECK(r.rows.back().ranks == 16);
  CHECK_THROWS_WITH(parse_sizes("1KiB..1MiB", "2"),
                    "--step: expected a factor like \"x2\", got \"2\"");
  CHECK_THROWS_WITH(parse_sizes("1KiB..1MiB", "x2abc"),
                    "--step: expected a factor like \"x2\", got \"x2abc\"");
  CHECK_THROWS_WITH(parse_sizes("1KiB..1PiB", "x1.0001"),
                    "--step: x1.0001 from 1 KiB to 1 PiB makes 277273 sizes, more than the 4096 a "
                    "sweep takes; use a larger factor");
  CHECK_THROWS_WITH(parse_sizes("1KiB,2PiB", "x2"),
                    "--sizes: 2PiB is more than the largest size, 1 PiB");
  CHECK_THROWS_WITH(parse_sizes("1KiB..lots", "x2"),
                    "--sizes: expected a size like \"1KiB\", got \"lots\"");
  CHECK_THROWS_WITH(parse_sizes("1KiB,2KiB", "bogus"),  // a list's step is checked too
                    "--step: expected a factor like \"x2\", got \"bogus\"");
  // A repeated rank count or algorithm would run its points twice.
  req.rank_counts = {4, 16, 4};
  CHECK_THROWS_WITH(plan_sweep(s, req), "--ranks: 4 is given twice");
  req.rank_counts = {4};
  req.algorithms = {"ring", "parameter_server", "ring"};
  CHECK_THROWS_WITH(plan_sweep(s, req), "--algorithms: ring is given twice");
  // Each point runs alone: it holds no more data than a scenario of it could.
  req.algorithms = {"ring"};
  req.rank_counts = {16};
  req.sizes = parse_sizes("1KiB,1PiB", "x2");
  CHECK_NOTHROW(plan_sweep(s, req));  // 2^54 bytes: the most a scenario holds
  const Scenario wide = load_scenario(kScenarios + "placement.json");
  req.rank_counts = {32};
  CHECK_THROWS_WITH(plan_sweep(wide, req),
                    "--sizes: 1 PiB at 32 ranks: the scenario's data, bytes x ranks summed over "
                    "its collectives, passes 2^54 bytes (16 PiB), more than collsim counts");
}

namespace report_test {

// The rows of a CSV written by collsim (no quoted fields in these scenarios), split at commas.
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::size_t a = 0;
    for (std::size_t b; (b = line.find(',', a)) != std::string::npos; a = b + 1)
      cells.push_back(line.substr(a, b - a));
    cells.push_back(line.substr(a));
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace report_test

// Balanced and skewed MoE exchanges in one scenario: each collective judged over its own
// window, so the skewed one's hot link and its receivers' imbalance show in one file.
TEST_CASE("per-collective accounting tells balanced and skewed all-to-all apart", "[report]") {
  const Scenario s = load_scenario(kScenarios + "moe-all-to-all.json");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r);
  REQUIRE(t.collectives.size() == r.resolved.size());
  std::map<std::string, const CollectiveTraffic*> by_name;
  for (std::size_t c = 0; c < r.resolved.size(); ++c)
    by_name[r.resolved[c].name] = &t.collectives[c];
  const CollectiveTraffic& balanced = *by_name.at("balanced.dispatch");
  const CollectiveTraffic& skewed = *by_name.at("skewed.dispatch");
  // Dispatch: expert 0's GPU receives twice its share when skewed, an even share when not.
  CHECK(spread(balanced.ranks, &RankTraffic::received).imbalance() == Approx(1.0).epsilon(0.01));
  CHECK(spread(skewed.ranks, &RankTraffic::received).imbalance() == Approx(2.0).epsilon(0.05));
  CHECK(skewed.ranks[0].received > 1.9 * balanced.ranks[0].received);
  // Over its own window the skewed exchange's hottest link is nearly full; over the whole
  // run (four exchanges one after another) no link is.
  const auto hot = skewed.hottest(1);
  REQUIRE(hot.size() == 1);
  CHECK(hot[0].utilisation > 0.9);
  CHECK(t.links[hot[0].link].utilisation < 0.85);
  CHECK(hot[0].utilisation ==
        Approx(static_cast<double>(hot[0].bytes) /
               (s.topology.link(hot[0].link).bandwidth * skewed.duration_s())));
  // The collectives' shares add up to the run's totals, per link and per rank.
  std::vector<std::int64_t> link_sum(t.links.size(), 0), sent_sum(t.ranks.size(), 0);
  for (std::size_t c = 0; c < t.collectives.size(); ++c) {
    for (const auto& lb : t.collectives[c].links) link_sum[lb.link] += lb.bytes;
    for (std::size_t i = 0; i < t.collectives[c].ranks.size(); ++i)
      sent_sum[r.resolved[c].ranks[i]] += t.collectives[c].ranks[i].sent;
  }
  for (std::size_t l = 0; l < t.links.size(); ++l) CHECK(link_sum[l] == t.links[l].bytes);
  for (std::size_t k = 0; k < t.ranks.size(); ++k) CHECK(sent_sum[k] == t.ranks[k].sent);
}

TEST_CASE("links.csv, ranks.csv and result.json carry each collective's own share", "[report]") {
  const fs::path dir =
      fs::temp_directory_path() / ("collsim-percoll-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int status = -1;
  run_command(
      std::string(COLLSIM_EXE) + " run " + kScenarios + "moe-all-to-all.json --out " + dir.string(),
      &status);
  REQUIRE(status == 0);
  const auto links = report_test::csv_rows(read(dir / "links.csv"));
  REQUIRE(links[0] == std::vector<std::string>{"scope", "collective", "src", "dst", "kind",
                                               "bandwidth_Bps", "bytes", "window_s", "utilisation",
                                               "busy_s", "peak_transfers"});
  // Per link: the run's bytes = the sum of the collectives' rows.
  std::map<std::string, double> run_bytes, coll_bytes;
  std::set<std::string> collectives;
  for (std::size_t i = 1; i < links.size(); ++i) {
    REQUIRE(links[i].size() == 11);
    const std::string key = links[i][2] + ">" + links[i][3];
    (links[i][0] == "run" ? run_bytes : coll_bytes)[key] += std::stod(links[i][6]);
    if (links[i][0] == "collective") collectives.insert(links[i][1]);
  }
  CHECK(collectives == std::set<std::string>{"balanced.dispatch", "balanced.combine",
                                             "skewed.dispatch", "skewed.combine"});
  for (const auto& [key, bytes] : run_bytes) CHECK(coll_bytes[key] == bytes);
  const auto ranks = report_test::csv_rows(read(dir / "ranks.csv"));
  CHECK(ranks[0] == std::vector<std::string>{"scope", "collective", "rank", "gpu", "sent_bytes",
                                             "received_bytes", "window_s", "busy_s", "idle_s"});
  CHECK(ranks.size() == 1 + 8 + 4 * 8);  // the run, then each collective, per rank
  const auto result = nlohmann::json::parse(read(dir / "result.json"));
  // result.json's per_rank holds, rank by rank, what ranks.csv's rows of that collective do.
  std::map<std::string, std::vector<std::vector<std::string>>> csv_of;
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i][0] == "collective") csv_of[ranks[i][1]].push_back(ranks[i]);
  for (const auto& c : result["collectives"]) {
    INFO(c["name"]);
    const auto& rows = csv_of[c["name"].get<std::string>()];
    REQUIRE(rows.size() == 8);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      CHECK(c["per_rank"]["sent_bytes"][k].get<std::int64_t>() == std::stoll(rows[k][4]));
      CHECK(c["per_rank"]["busy_s"][k].get<double>() == Approx(std::stod(rows[k][7])));
      CHECK(c["per_rank"]["idle_s"][k].get<double>() == Approx(std::stod(rows[k][8])));
    }
    CHECK(c["per_rank"]["received_bytes"].size() == 8);
    CHECK(c["hottest_links"].size() == 5);
    CHECK(c["hottest_links"][0]["utilisation"].get<double>() > 0.9);  // over its own window
  }
  CHECK(result["collectives"][2]["received_bytes_per_rank"]["max"].get<double>() >
        1.9 * result["collectives"][2]["received_bytes_per_rank"]["mean"].get<double>());
  fs::remove_all(dir);
}

// What a reader needs on the page, and a size that opens at once: the detail is in the trace.
TEST_CASE("report.html: named bands, time axes with units, heatmap scale, human units",
          "[report]") {
  const Scenario s = load_scenario(kScenarios + "moe-all-to-all.json");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r);
  std::ostringstream page;
  write_html_report(page, s, r, t);
  const std::string html = page.str();
  CHECK(html.size() < 300'000);     // the budget: well under 1 MB
  for (const auto& c : r.resolved)  // every collective named on the timeline
    CHECK_THAT(html, Catch::Contains("class=\"bandname\">" + c.name + "</text>"));
  // Round ticks in microseconds (the run takes 803 us): 0, 200, 400, 600, 800.
  for (const char* tick : {">0 \u00b5s<", ">200 \u00b5s<", ">800 \u00b5s<"})
    CHECK_THAT(html, Catch::Contains(tick));
  CHECK_THAT(html, Catch::Contains("id=\"load\"") && Catch::Contains(">100%<"));  // colour scale
  CHECK_THAT(html, Catch::Contains("16 of the 16 links that carried bytes"));
  CHECK_THAT(
      html, Catch::Contains(">64 MiB<") && Catch::Contains(">135 us<") && Catch::Contains("GB/s<"));
  CHECK_THAT(html, !Catch::Contains("67108864"));  // no raw byte counts
  // Skew: the skewed dispatch's receivers are 2.00x the mean.
  CHECK_THAT(html, Catch::Contains("received 2.00"));
  // Many transfers: aggregated rows instead of a bar each, and the page stays small.
  Scenario big = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  const ScenarioResult rb = run_scenario(big);
  std::ostringstream big_page;
  write_html_report(big_page, big, rb, analyse_traffic(big, rb));
  CHECK(big_page.str().size() < 400'000);
  CHECK_THAT(big_page.str(), Catch::Contains("too many to draw one by one") &&
                                 Catch::Contains("class=\"tick\">server 7<"));
  // A bottleneck slowed by a reducing switch's legs says so, as the text table does.
  const Scenario nvls = parse_scenario(nlohmann::json::parse(R"({"topology": "dgx-h100",
      "network": {"model": "flow"}, "collectives": [
        {"name": "n", "op": "all_reduce", "algorithm": "nvls", "bytes": "64MiB"},
        {"name": "r", "op": "all_reduce", "algorithm": "ring", "bytes": "64MiB"}]})"),
                                       ".");
  const ScenarioResult rn = run_scenario(nvls);
  std::ostringstream nvls_page;
  write_html_report(nvls_page, nvls, rn, analyse_traffic(nvls, rn));
  CHECK_THAT(nvls_page.str(), Catch::Contains("(at 85%: a reducing switch"));
}

TEST_CASE("sweep.html: coloured legend, coinciding lines said, round ticks, labelled crossover",
          "[sweep]") {
  Scenario s = load_scenario(kScenarios + "ring-vs-tree-vs-naive.json");
  s.network.model = collsim::NetworkModelKind::Ideal;
  SweepRequest req;
  req.sizes = parse_sizes("1KiB..16MiB", "x4");
  req.algorithms = {"binomial_tree", "ring", "naive", "parameter_server"};
  const SweepResult r = run_sweep(s, req);
  std::ostringstream page;
  write_sweep_html(page, r);
  const std::string html = page.str();
  // Each legend name is painted (style beats CSS) in its line's colour.
  for (const char* name : {"binomial_tree", "ring", "naive"}) {
    std::smatch line, legend;
    REQUIRE(std::regex_search(html, line,
                              std::regex(std::string("<title>") + name +
                                         "</title><polyline points=\"[^\"]*\" fill=\"none\" "
                                         "stroke=\"(#[0-9a-f]{6})\"")));
    REQUIRE(std::regex_search(
        html, legend, std::regex("style=\"fill:(#[0-9a-f]{6})\">" + std::string(name) + "[<( ]")));
    CHECK(line[1] == legend[1]);
  }
  CHECK_THAT(html, !Catch::Contains(".label{"));  // the rule that painted legends grey
  CHECK_THAT(html, Catch::Contains("naive and parameter_server coincide"));
  CHECK_THAT(html, Catch::Contains("parameter_server (= naive)"));
  for (const char* tick : {">1 KiB<", ">1 MiB<", ">16 MiB<"})
    CHECK_THAT(html, Catch::Contains(tick));
  CHECK_THAT(html, !Catch::Contains("9.77") && !Catch::Contains("97.7"));
  REQUIRE(!r.crossovers.empty());
  CHECK_THAT(html, Catch::Contains("class=\"xlabel\"") &&
                       Catch::Contains(r.crossovers[0].from + " \u2192 " + r.crossovers[0].to));
}

namespace {

// Each series' line colour and its legend marker with coordinates and colour taken out
// (signs kept: the up and down triangles differ only in them), in legend order.
std::vector<std::pair<std::string, std::string>> series_looks(const std::string& html,
                                                              const std::string& svg_id) {
  const std::size_t from = html.find("<svg id=\"" + svg_id + "\"");
  const std::string svg = html.substr(from, html.find("</svg>", from) - from);
  const std::regex legend("<g class=\"legend\"><line [^>]*stroke=\"([^\"]+)\"[^>]*/>(<[^>]*/>)");
  std::vector<std::pair<std::string, std::string>> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), legend), end; it != end; ++it) {
    std::string shape =
        std::regex_replace((*it)[2].str(), std::regex("#[0-9a-f]{6}|hsl\\([^)]*\\)"), "C");
    out.emplace_back((*it)[1].str(), std::regex_replace(shape, std::regex("[0-9.]+"), "#"));
  }
  return out;
}

// A sweep made up: ring wins without NCCL's pick, but the pick is faster from 2 KiB on.
SweepResult made_up_sweep(const std::string& topology) {
  SweepPlan plan;
  plan.about.topology = topology;
  plan.about.op = "all_reduce";
  plan.rank_counts = {8};
  plan.algorithms = {"ring", "nccl"};
  plan.sizes = {1024, 2048, 4096};
  std::vector<SweepRow> rows;
  const double ring[] = {10e-6, 20e-6, 40e-6}, nccl[] = {12e-6, 15e-6, 30e-6};
  const char* picks[] = {"nccl: ring/LL/4ch", "nccl: ring/LL/4ch", "nccl: tree/Simple/8ch"};
  for (int k = 0; k < 3; ++k)
    rows.push_back({8, "ring", plan.sizes[k], plan.sizes[k] / 4, ring[k], 1e9, 1e9, false,
                    "ring (4 channels) LL"});
  for (int k = 0; k < 3; ++k)
    rows.push_back(
        {8, "nccl", plan.sizes[k], plan.sizes[k] / 4, nccl[k], 1e9, 2e9, false, picks[k]});
  return finish_sweep(std::move(plan), std::move(rows));
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("sweep.html: every line, nccl and measured included, has its own colour and marker",
          "[sweep]") {
  const Scenario s = load_scenario(kScenarios + "nccl-dgx-h100.json");
  SweepRequest req;
  req.sizes = parse_sizes("1KiB,1MiB", "x2");
  SweepResult r = run_sweep(s, req);  // every algorithm, and nccl
  r.measured = {{8, 1024, 40e-6, 0.05e9}, {8, 1 << 20, 45e-6, 40e9}};
  std::ostringstream page;
  write_sweep_html(page, r);
  const std::string html = page.str();
  for (const char* chart : {"time-8", "busbw-8"}) {
    const auto looks = series_looks(html, chart);
    REQUIRE(looks.size() == r.plan.algorithms.size() + 1);  // the measured line too
    REQUIRE(r.plan.algorithms.size() > 8);                  // past the first palette
    std::set<std::string> colours, markers;
    for (const auto& [colour, marker] : looks) {
      colours.insert(colour);
      markers.insert(marker);
    }
    CHECK(colours.size() == looks.size());
    CHECK(markers.size() == looks.size());
  }
  CHECK_THAT(html,
             Catch::Contains("<title>nccl</title>") && Catch::Contains("<title>measured</title>"));
}

TEST_CASE("sweep.html: NCCL's picks labelled, its line among the crossovers, names escaped",
          "[sweep]") {
  const SweepResult r = made_up_sweep("<script>alert(1)</script>");
  REQUIRE(r.crossovers.empty());  // the rows' winners leave NCCL's pick out
  REQUIRE(sweep_crossovers(r.plan, r.rows, 0, true).size() == 1);
  std::ostringstream page;
  write_sweep_html(page, r);
  const std::string html = page.str();
  // A label where the pick changes (at 1 KiB and at 4 KiB), once per chart.
  CHECK(count_of(html, "class=\"pick\"") == 4);
  CHECK(count_of(html, ">ring/LL/4ch</text>") == 2);
  CHECK(count_of(html, ">tree/Simple/8ch</text>") == 2);
  // A hover title per point, saying what ran there.
  CHECK_THAT(html, Catch::Contains("<title>nccl at 2 KiB: 15 \u00b5s, nccl: ring/LL/4ch</title>"));
  // The page's fastest line counts NCCL's pick: ring, then nccl.
  CHECK_THAT(html, Catch::Contains("ring \u2192 nccl \u2248") &&
                       Catch::Contains("<li>ring &rarr; nccl at about"));
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt;") &&
                       !Catch::Contains("<script>"));
}

TEST_CASE("sweep --measured: the log's times as a measured line and a measured_us column",
          "[sweep]") {
  const auto dir = temp_dir("sweep-measured");
  const std::string log =
      std::string(COLLSIM_SOURCE_DIR) + "/data/nccl-tests/h100x8_all_reduce_ring.txt";
  const std::string args = "sweep " + kScenarios +
                           "nccl-dgx-h100.json --collective forced-ring "
                           "--sizes 256KiB..1MiB --step x4 --measured " +
                           log + " --out ";
  const Outcome o = run_collsim(args + (dir / "a").string());
  REQUIRE(o.status == 0);
  const std::string csv = read(dir / "a" / "sweep.csv");
  CHECK_THAT(csv, Catch::StartsWith(
                      "ranks,algorithm,size,count,type,time_us,algbw_GBps,busbw_GBps,winner,plan,"
                      "over_link_rate,measured_us\n"));
  // 1 MiB: the log's out-of-place 44.38 us, on every algorithm's row of that size.
  std::istringstream lines(csv);
  std::size_t at_1mib = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find(",1048576,") != std::string::npos) {
      CHECK_THAT(line, Catch::EndsWith(",44.380000"));
      ++at_1mib;
    }
  CHECK(at_1mib >= 2);
  const auto json = nlohmann::json::parse(read(dir / "a" / "sweep.json"));
  for (const auto& row : json["rows"])
    if (row["bytes"] == 1048576) CHECK(row["measured_us"].get<double>() == Approx(44.38));
  const std::string html = read(dir / "a" / "sweep.html");
  CHECK_THAT(html, Catch::Contains("<title>measured</title>") &&
                       Catch::Contains("<title>measured at 1 MiB: 44.38 \u00b5s</title>"));
  // The same command again: the same bytes.
  REQUIRE(run_collsim(args + (dir / "b").string()).status == 0);
  for (const char* f : {"sweep.csv", "sweep.json", "sweep.html"})
    CHECK(read(dir / "a" / f) == read(dir / "b" / f));
  // Without --measured, no column.
  REQUIRE(run_collsim("sweep " + kScenarios +
                      "nccl-dgx-h100.json --collective forced-ring "
                      "--sizes 1MiB --out " +
                      (dir / "c").string())
              .status == 0);
  CHECK_THAT(read(dir / "c" / "sweep.csv"), !Catch::Contains("measured_us"));
}

TEST_CASE("sweep --measured refuses a log of another collective", "[sweep]") {
  const auto dir = temp_dir("sweep-measured-other");
  std::ofstream(dir / "ag.json")
      << R"({"topology": "dgx-h100", "network": {"model": "flow"}, "collectives": [)"
         R"({"name": "ag", "op": "all_gather", "algorithm": "ring", "bytes": "1MiB"}]})";
  const Outcome o =
      run_collsim("sweep " + (dir / "ag.json").string() + " --sizes 1MiB --measured " +
                  COLLSIM_SOURCE_DIR + "/data/nccl-tests/h100x8_all_reduce_ring.txt");
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--measured") && Catch::Contains("all_reduce") &&
                        Catch::Contains("all_gather"));
}

TEST_CASE("run --trace-gzip writes timeline.json.gz, the same trace compressed",
          "[report][trace]") {
  const fs::path dir = fs::temp_directory_path() / ("collsim-gzip-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string run =
      std::string(COLLSIM_EXE) + " run " + kScenarios + "dgx-h100-allreduce.json --out ";
  int status = -1;
  run_command(run + (dir / "plain").string(), &status);
  REQUIRE(status == 0);
  run_command(run + (dir / "gz").string() + " --trace-gzip", &status);
  REQUIRE(status == 0);
  REQUIRE(fs::exists(dir / "gz" / "timeline.json.gz"));
  CHECK_FALSE(fs::exists(dir / "gz" / "timeline.json"));
  const std::string unzipped =
      run_command("gzip -dc " + (dir / "gz" / "timeline.json.gz").string(), &status);
  CHECK(status == 0);
  CHECK(unzipped == read(dir / "plain" / "timeline.json"));
  const std::string first = read(dir / "gz" / "timeline.json.gz");
  CHECK(first.size() < unzipped.size() / 4);
  // Byte for byte the same again; a plain run into that folder replaces the .gz.
  run_command(run + (dir / "gz").string() + " --trace-gzip", &status);
  CHECK(read(dir / "gz" / "timeline.json.gz") == first);
  run_command(run + (dir / "gz").string(), &status);
  CHECK(fs::exists(dir / "gz" / "timeline.json"));
  CHECK_FALSE(fs::exists(dir / "gz" / "timeline.json.gz"));
  fs::remove_all(dir);
}

TEST_CASE("run --out keeps no file of an earlier run that this run does not write", "[report]") {
  const fs::path dir = fs::temp_directory_path() / ("collsim-outset-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int status = -1;
  const std::string out = " --out " + dir.string();
  run_command(std::string(COLLSIM_EXE) + " run " + kScenarios + "dgx-h100-allreduce.json" + out,
              &status);
  REQUIRE(status == 0);
  REQUIRE(fs::exists(dir / "ranks.csv"));
  // What it prints does not depend on --out: the hottest links said "up to N at once" only
  // with it.
  const std::string plain = run_command(
      std::string(COLLSIM_EXE) + " run " + kScenarios + "dgx-h100-allreduce.json", &status);
  CHECK(
      run_command(std::string(COLLSIM_EXE) + " run " + kScenarios + "dgx-h100-allreduce.json" + out,
                  &status) == plain);
  CHECK_THAT(plain, Catch::Contains("at once"));
  // A training step writes fewer files: the collectives run's per-rank, per-step and
  // utilisation tables stayed beside its result.json as if they described it.
  run_command(std::string(COLLSIM_EXE) + " run " + kScenarios + "workload-ddp-buckets.json" + out,
              &status);
  REQUIRE(status == 0);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names ==
        std::vector<std::string>{"links.csv", "report.html", "result.json", "timeline.json"});
  fs::remove_all(dir);
}

TEST_CASE("TraceFile: plain below the size, gzip past it, the content the same", "[trace]") {
  const fs::path dir =
      fs::temp_directory_path() / ("collsim-tracefile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "{\"event\": " + std::to_string(i) + "},\n";
  auto write = [&](std::size_t above) {
    OutputDir out(dir);
    TraceFile trace(out, "t.json", false, above);
    std::ostream stream(&trace);
    // In pieces, as the trace writer streams it.
    for (std::size_t at = 0; at < text.size(); at += 1000) stream << text.substr(at, 1000);
    stream.flush();
    const std::string name = trace.finish();
    out.commit();
    return name;
  };
  CHECK(write(text.size()) == "t.json");  // exactly at the size: still plain
  CHECK(read(dir / "t.json") == text);
  CHECK(write(text.size() / 3) == "t.json.gz");  // past it part way through
  CHECK_FALSE(fs::exists(dir / "t.json"));
  int status = -1;
  CHECK(run_command("gzip -dc " + (dir / "t.json.gz").string(), &status) == text);
  CHECK(status == 0);
  fs::remove_all(dir);
}

namespace {

// Splits CSV text into rows of fields by RFC 4180 (quoted fields, doubled quotes).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    std::string& field = rows.back().back();
    if (quoted && ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
      field += '"';
      ++i;
    } else if (ch == '"') {
      quoted = !quoted;
    } else if (!quoted && ch == ',') {
      rows.back().emplace_back();
    } else if (!quoted && ch == '\n') {
      rows.emplace_back(1);
    } else {
      field += ch;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

// Every row of every CSV in `dir` has its header's number of fields, and `name` appears
// whole as a field somewhere in the folder.
void check_csvs(const std::filesystem::path& dir, const std::string& name) {
  bool found = false;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv") continue;
    ++files;
    const auto rows = parse_csv(collsim::test::slurp(entry.path()));
    REQUIRE(!rows.empty());
    for (const auto& row : rows) {
      INFO(entry.path().filename().string());
      CHECK(row.size() == rows[0].size());
      for (const auto& field : row) found = found || field.find(name) != std::string::npos;
    }
  }
  CHECK(files > 0);
  CHECK(found);
}

}  // namespace

TEST_CASE("every CSV stays one field per column when names hold commas and quotes", "[report]") {
  const auto dir = collsim::test::temp_dir("csv-quoting");
  const std::string topology = R"({"nodes": [
      {"name": "gpu \"a\", left", "kind": "gpu"}, {"name": "gpu b, right", "kind": "gpu"},
      {"name": "switch, one", "kind": "nvswitch"}],
    "links": [{"src": "gpu \"a\", left", "dst": "switch, one", "bandwidth": "100GB/s", "kind": "nvlink"},
              {"src": "gpu b, right", "dst": "switch, one", "bandwidth": "100GB/s", "kind": "nvlink"}]})";
  const std::string collective = (dir / "collective.json").string();
  std::ofstream(collective) << R"({"topology": )" << topology << R"(, "collectives": [
      {"name": "grads, \"fp32\"", "op": "all_reduce", "bytes": "1MiB", "algorithm": "ring"}]})";
  REQUIRE(collsim::test::run_collsim("run " + collective + " --out " + (dir / "c").string()).status == 0);
  check_csvs(dir / "c", "grads, \"fp32\"");
  check_csvs(dir / "c", "gpu \"a\", left");
  const std::string workload = (dir / "workload.json").string();
  std::ofstream(workload) << R"({"topology": )" << topology << R"(, "workload":
      {"gradients": "100MB", "compute": "10ms"}})";
  REQUIRE(collsim::test::run_collsim("run " + workload + " --out " + (dir / "w").string()).status == 0);
  check_csvs(dir / "w", "switch, one");
}

TEST_CASE("run's table details the first 16 collectives and counts the rest", "[report]") {
  nlohmann::json doc = {{"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "450GB/s"}}},
                        {"collectives", nlohmann::json::array()}};
  for (int i = 0; i < 20; ++i)
    doc["collectives"].push_back(
        {{"name", "c" + std::to_string(i)}, {"op", "all_reduce"}, {"algorithm", "ring"},
         {"bytes", 4096}});
  const Scenario s = parse_scenario(doc, ".");
  const ScenarioResult r = run_scenario(s);
  const std::string text = summary_table(s, r, analyse_traffic(s, r));
  for (int i = 0; i < 20; ++i)  // a row each
    CHECK_THAT(text, Catch::Contains("  c" + std::to_string(i) + " "));
  CHECK_THAT(text, Catch::Contains("# c15: bottleneck"));
  CHECK_THAT(text, !Catch::Contains("# c16: bottleneck"));
  CHECK_THAT(text, Catch::Contains("#   c15 ("));
  CHECK_THAT(text, !Catch::Contains("#   c16 ("));
  CHECK_THAT(text, Catch::Contains("... and 4 more collectives"));
}

TEST_CASE("under ideal, a time below what the busiest link needs is flagged and never wins",
          "[report]") {
  // A naive broadcast's root sends its 7 copies at once, each at full rate under ideal: 64 MB
  // in 2.6 ms where its one 25 GB/s link needs 17.9 ms for the 448 MB.
  Scenario s = load_scenario(kScenarios + "pipelined-broadcast.json");
  REQUIRE(s.network.model == NetworkModelKind::Ideal);
  const ScenarioResult r = run_scenario(s);
  for (const auto& c : r.resolved) CHECK(c.algorithm != "naive");  // auto held to the link
  const std::string text = run_collsim("run " + kScenarios + "pipelined-broadcast.json").out;
  CHECK_THAT(text,
             Catch::Contains("S=1: bottleneck gpu0->switch (61 MiB in 2.56 ms at full rate)"));
  CHECK_THAT(text, !Catch::Contains("no physical one"));  // every plan here is within its links
  s.collectives = {s.collectives.back()};
  s.collectives[0].algorithm = "naive";
  s.collectives[0].after.clear();
  const ScenarioResult alone = run_scenario(s);
  const std::string naive = summary_table(s, alone, analyse_traffic(s, alone));
  CHECK_THAT(naive, Catch::Contains("more than the 2.56 ms it took") &&
                        Catch::Contains("no physical one"));
  SweepRequest req;
  req.sizes = parse_sizes("1MiB..16MiB", "x4");
  req.algorithms = {"ring", "naive"};
  const SweepResult sweep = run_sweep(s, req);
  for (const SweepRow& row : sweep.rows) {
    CHECK(row.over_link_rate == (row.algorithm == "naive"));
    if (row.algorithm == "naive") CHECK(!row.winner);
  }
  std::ostringstream csv;
  write_sweep_csv(csv, sweep);
  CHECK_THAT(csv.str(), Catch::Contains(",naive,1048576,") && Catch::EndsWith(",1\n"));
}

TEST_CASE("a collective's ranks: all of them reordered, or a subset, and NCCL's pick named",
          "[report]") {
  const auto table_of = [](const std::string& ranks) {
    const Scenario s = parse_scenario(
        nlohmann::json::parse(R"({"topology": "dgx-h100", "network": {"model": "flow"},
            "collectives": [{"name": "b", "op": "all_reduce", "algorithm": "ring",
                             "bytes": "1MiB", "ranks": )" +
                              ranks + "}]}"),
        ".");
    const ScenarioResult r = run_scenario(s);
    return summary_table(s, r, analyse_traffic(s, r));
  };
  CHECK_THAT(table_of("[0, 4, 1, 5, 2, 6, 3, 7]"), Catch::Contains(" 8 (reordered) "));
  CHECK_THAT(table_of("[0, 2, 4, 6]"), Catch::Contains(" 4 (subset) "));
  // An error of what NCCL picked says it was NCCL's pick, not the collective's word.
  CHECK_THAT(collsim::test::error_of(R"({"topology": "dgx-h100", "network": {"model": "ideal"},
      "collectives": [{"name": "a", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB"}]})"),
             Catch::Contains("collectives[0]: NCCL's model picks nvls/Simple/16ch here: nvls is "
                             "timed by how its transfers share"));
}

namespace {

// `collectives` (JSON text) on 4 GPUs behind a 100 GB/s switch of links without latency, under
// the network model `model`, with no start-up cost.
Scenario on_a_quiet_switch(const std::string& model, const std::string& collectives) {
  return parse_scenario(
      nlohmann::json::parse(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "100GB/s",
          "latency": "0us"}, "network": {"model": ")" +
                            model + R"(", "alpha": "0us"}, "collectives": )" + collectives + "}"),
      ".");
}

// 100 MB from GPU 0 to 1 beside a naive 10 MB broadcast from GPU 0 to 2 and 3, at once.
Scenario three_transfers_from_gpu0(const std::string& model) {
  return on_a_quiet_switch(
      model, R"([{"name": "big", "op": "send_recv", "bytes": "100MB", "ranks": [0, 1]},
            {"name": "small", "op": "broadcast", "algorithm": "naive", "bytes": "10MB",
             "ranks": [0, 2, 3], "after": []}])");
}

}  // namespace

TEST_CASE("utilisation over time under flow is what each link carried, interval by interval",
          "[report]") {
  // 100 MB from GPU 0 to 1 beside a naive 10 MB broadcast from GPU 0 to 2 and 3: gpu0's
  // uplink carries three flows at a third each, then the big one alone: full all along.
  // Spread evenly over each transfer's life, it read 150% and then 83%.
  const Scenario s = three_transfers_from_gpu0("flow");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r);
  const auto bins_of = [&](const std::string& label) {
    for (LinkId l = 0; l < static_cast<LinkId>(s.topology.links().size()); ++l)
      if (s.topology.link_label(l) == label) return t.links[l].bins;
    FAIL("no link " << label);
    return std::vector<float>{};
  };
  const auto up = bins_of("gpu0->switch"), down = bins_of("switch->gpu1");
  REQUIRE(up.size() == 100);
  for (float u : up) CHECK(u == Approx(1).margin(1e-3));
  // The broadcast's flows end at 0.3 ms of 1.2 ms: a quarter of the bins at a third.
  CHECK(down[10] == Approx(1.0 / 3).margin(1e-3));
  CHECK(down[80] == Approx(1).margin(1e-3));
}

TEST_CASE("utilisation over time under packet is the packets on the wire, never above full",
          "[report]") {
  // The same three transfers from GPU 0: its uplink sends one packet at a time, queued first
  // come first served (the big transfer's, then the broadcast's). Spread evenly over each
  // transfer's life (the broadcast's began with the run and waited), it read up to 200%.
  const Scenario s = three_transfers_from_gpu0("packet");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r);
  const double window = t.makespan_s;
  for (LinkId l = 0; l < static_cast<LinkId>(s.topology.links().size()); ++l) {
    const auto& bins = t.links[l].bins;
    double carried = 0;
    for (float u : bins) {
      CHECK(u <= 1 + 1e-3);
      carried += u * s.topology.link(l).bandwidth * window / static_cast<double>(bins.size());
    }
    INFO(s.topology.link_label(l));
    CHECK(carried == Approx(static_cast<double>(r.sim.links.bytes(l))).epsilon(1e-3));
  }
  // The uplink is never idle until its last packet left.
  const auto& up = t.links[0].bins;
  CHECK(s.topology.link_label(0) == "gpu0->switch");
  CHECK(up[50] == Approx(1).margin(1e-3));
}

TEST_CASE("under ideal, what no physical network could do is said in text, JSON and HTML",
          "[report]") {
  // The three transfers from GPU 0 at once: ideal gives each the uplink to itself. The naive
  // broadcast's two sends take it twice over in their 0.1 ms; the run puts 120 MB through it
  // in the 1 ms the largest needs.
  const Scenario s = three_transfers_from_gpu0("ideal");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r);
  const std::string caveat = ideal_caveat(s, r, t);
  CHECK_THAT(caveat, Catch::Contains("1 of 2 collectives took less time") &&
                         Catch::Contains("gpu0->switch carried 120% of its rate over the run"));
  CHECK_THAT(summary_table(s, r, t), Catch::Contains("# caveat: " + caveat));
  const nlohmann::json doc = result_json(s, r, t);
  CHECK(doc["caveat"] == caveat);
  CHECK(doc["collectives"][0]["over_link_rate"] == false);
  CHECK(doc["collectives"][1]["over_link_rate"] == true);
  std::ostringstream html;
  write_html_report(html, s, r, t);
  CHECK_THAT(html.str(), Catch::Contains("<b>Caveat:</b> the ideal network model"));
  // Two sends from GPU 0 at once, each within the uplink's rate alone: only the run's
  // total says it (200%).
  const Scenario two = on_a_quiet_switch(
      "ideal", R"([{"name": "a", "op": "send_recv", "bytes": "10MB", "ranks": [0, 1]},
            {"name": "b", "op": "send_recv", "bytes": "10MB", "ranks": [0, 2], "after": []}])");
  const ScenarioResult r2 = run_scenario(two);
  const TrafficReport t2 = analyse_traffic(two, r2);
  CHECK_THAT(ideal_caveat(two, r2, t2), Catch::Contains("gpu0->switch carried 200% of its rate") &&
                                            !Catch::Contains("collectives took"));
  // Flow shares the uplink: nothing to say.
  const Scenario flow = three_transfers_from_gpu0("flow");
  const ScenarioResult rf = run_scenario(flow);
  const TrafficReport tf = analyse_traffic(flow, rf);
  CHECK(ideal_caveat(flow, rf, tf).empty());
  CHECK(result_json(flow, rf, tf)["caveat"].is_null());
}

TEST_CASE("the trace shows each collective as reported, and the time NCCL's estimate held it",
          "[report]") {
  // 1 GiB on a DGX H100 as NCCL picks it (NVLS): its ops take less than NCCL's own estimate,
  // which stands. The ranks' tracks end with the ops; the collectives' track with the time
  // the run reports.
  const auto dir = temp_dir("trace-held");
  std::ofstream(dir / "held.json") << R"({"topology": "dgx-h100", "network": {"model": "flow"},
      "collectives": [{"name": "ar", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB"}]})";
  REQUIRE(run_collsim("run " + (dir / "held.json").string() + " --out " + (dir / "out").string())
              .status == 0);
  const auto result = nlohmann::json::parse(slurp(dir / "out" / "result.json"));
  const auto& c = result["collectives"][0];
  REQUIRE(c["held_by"] == "nccl_model");
  const double start = c["start_s"].get<double>() * 1e6, time = c["time_s"].get<double>() * 1e6,
               ops = c["ops_time_s"].get<double>() * 1e6;
  REQUIRE(ops < time);
  const auto trace = nlohmann::json::parse(slurp(dir / "out" / "timeline.json"));
  double ops_end = 0;
  std::vector<nlohmann::json> spans;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["pid"] == 0) ops_end = std::max(ops_end, e["ts"].get<double>() + e["dur"].get<double>());
    if (e["pid"] == 2) spans.push_back(e);
  }
  CHECK(ops_end < start + time - 1);
  REQUIRE(spans.size() == 2);
  CHECK(spans[0]["name"] == "ar");
  CHECK(spans[0]["ts"].get<double>() == Approx(start).margin(1e-6));
  CHECK(spans[0]["dur"].get<double>() == Approx(time).margin(1e-6));
  CHECK(spans[1]["name"] == "held: nccl_model");
  CHECK(spans[1]["ts"].get<double>() == Approx(start + ops).margin(1e-6));
  CHECK(spans[1]["ts"].get<double>() + spans[1]["dur"].get<double>() ==
        Approx(start + time).margin(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("report.html's bandwidths keep three significant digits below 10 GB/s", "[report]") {
  // A 1 KB collective's 0.0143 GB/s read 0.0 at one decimal.
  CHECK(html::gbps(1.43e7) == "0.0143 GB/s");
  CHECK(html::gbps(2.5e9) == "2.5 GB/s");
  CHECK(html::gbps(4.5e11) == "450.0 GB/s");
  CHECK(html::gbps(0) == "0.0 GB/s");
}

TEST_CASE("sweep --ranks takes whole rank counts only, spaces around them as --sizes does",
          "[sweep][cli]") {
  const auto spaced = run_collsim("sweep " + kScenarios +
                                  "ring-vs-tree-vs-naive.json --sizes \"1KiB, 2KiB\" "
                                  "--algorithms ring --ranks \"2, 4\"");
  CHECK(spaced.status == 0);
  CHECK_THAT(spaced.out, Catch::Contains("# ranks 2,") && Catch::Contains("# ranks 4,"));
  // std::stoi once read "4x" and "4.5" as 4.
  for (const char* ranks : {"4x", "4.5", "99999999999", "four"}) {
    const auto o = run_collsim("sweep " + kScenarios +
                               "ring-vs-tree-vs-naive.json --sizes 1KiB --algorithms ring "
                               "--ranks " +
                               ranks);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains(fmt::format(
                          "--ranks: expected rank counts like 8,64,512, got \"{}\"", ranks)));
  }
}
