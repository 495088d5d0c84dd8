// Reports people look at: traffic analysis, report.html in a real browser, sweeps.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

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

TEST_CASE("traffic: bottlenecks, utilisation and rank busy time add up") {
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r, 50);
  REQUIRE(t.timed);
  CHECK(t.makespan_s == Approx(r.outcomes[1].end_s));
  // The flat ring's bottleneck is a 50 GB/s fabric link; the hierarchical one's too, with 1/8 the
  // bytes... per link.
  CHECK(s.topology.link(t.per_collective[0].link).bandwidth == Approx(50e9));
  CHECK(t.per_collective[1].bytes < t.per_collective[0].bytes);
  // Every step has a bottleneck, and per-step bottleneck seconds never exceed the step's simulated
  // length.
  CHECK(t.per_step.size() ==
        static_cast<std::size_t>(r.schedules[0].num_steps + r.schedules[1].num_steps));
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

TEST_CASE("report.html renders in headless Chromium without console errors") {
  const fs::path dir = fs::temp_directory_path() / ("collsim-report-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int status = -1;
  run_command(std::string(COLLSIM_EXE) + " run " + kScenarios +
                  "oversubscribed-spine-2to1.json --out " + dir.string(),
              &status);
  REQUIRE(status == 0);
  const std::string chromium = fs::exists("/usr/bin/chromium") ? "/usr/bin/chromium" : "";
  if (chromium.empty()) FAIL("chromium is not installed; tools/setup.sh installs it");
  const std::string flags = " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 ";
  const std::string url = "file://" + (dir / "report.html").string();
  const fs::path log = dir / "chromium.log";
  const std::string dom = run_command(
      "timeout 120 " + chromium + flags + "--dump-dom " + url + " 2>" + log.string(), &status);
  REQUIRE(status == 0);
  for (const char* id : {"id=\"summary\"", "id=\"timeline\"", "id=\"heatmap\"", "id=\"kind-bars\"",
                         "id=\"topology\"", "class=\"op\""})
    CHECK_THAT(dom, Catch::Contains(id));
  // Console messages land in the log as CONSOLE lines; an uncaught error would be one.
  std::istringstream lines(read(log));
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK_FALSE(
        (line.find("CONSOLE") != std::string::npos &&
         (line.find("Uncaught") != std::string::npos || line.find("Error") != std::string::npos)));
  }
  const fs::path shot = fs::path(COLLSIM_BINARY_DIR) / "report-screenshot.png";
  run_command("timeout 120 " + chromium + flags + "--window-size=1280,2000 --screenshot=" +
                  shot.string() + " " + url + " 2>/dev/null",
              &status);
  CHECK(status == 0);
  CHECK(fs::file_size(shot) > 10000);
}

TEST_CASE(
    "sweep: nccl-tests table per algorithm, winners, and the ring/tree crossover near 235 KB") {
  Scenario s = load_scenario(kScenarios + "ring-vs-tree-vs-naive.json");
  s.network.model = "ideal";
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

TEST_CASE("sweep over rank counts and sizes by list") {
  Scenario s = load_scenario(kScenarios + "parameter-server-scaling.json");
  SweepRequest req;
  req.sizes = parse_sizes("1MiB,16MiB", "x2");
  req.algorithms = {"ring", "parameter_server"};
  req.rank_counts = {4, 16};
  const SweepResult r = run_sweep(s, req);
  CHECK(r.rows.size() == 2 * 2 * 2);
  CHECK(r.rows[0].ranks == 4);
  CHECK(r.rows.back().ranks == 16);
  CHECK_THROWS_WITH(parse_sizes("1KiB..1MiB", "2"), "--step: expected a factor like \"x2\"");
  CHECK_THROWS_WITH(parse_sizes("1KiB..lots", "x2"),
                    "--sizes: expected a size like \"1KiB\", got \"lots\"");
}
