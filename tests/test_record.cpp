// The run record: the simulator keeps each op's times and route once; reports read
// them and the network models' link counters, and every trace goes through one writer.
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "report/chrome_trace.h"
#include "report/reports.h"
#include "report/traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"

#include "helpers.h"

namespace fs = std::filesystem;
using namespace collsim;

using collsim::test::slurp;

namespace {

const std::string kScenarios = std::string(COLLSIM_SOURCE_DIR) + "/scenarios/";

// Peak concurrency the slow way, from the record: per link, op intervals sorted with
// ends before starts at the same instant (back-to-back transfers do not overlap).
std::vector<int> peaks_from_record(const Scenario& s, const ScenarioResult& r) {
  std::vector<std::vector<std::pair<Time, int>>> edges(s.topology.links().size());
  for (std::size_t c = 0; c < r.schedules.size(); ++c)
    for (OpId id = 0; id < r.schedules[c]->size(); ++id) {
      if (r.schedules[c]->ops[id].is_local()) continue;
      const OpTiming& t = r.sim.tasks[c].ops[id];
      for (LinkId l : r.sim.routes[r.sim.tasks[c].paths[id]]) {
        edges[l].emplace_back(t.start, 1);
        edges[l].emplace_back(t.end, -1);
      }
    }
  std::vector<int> out;
  for (auto& e : edges) {
    std::sort(e.begin(), e.end());
    int now = 0, peak = 0;
    for (auto [t, d] : e) peak = std::max(peak, now += d);
    out.push_back(peak);
  }
  return out;
}

int exit_status_of(const std::string& cmd) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  std::string out;
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int s = pclose(pipe);
  if (s != 0) UNSCOPED_INFO(out);
  return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

}  // namespace

TEST_CASE("record: the report's link bytes, busy time and peaks are the model's counters") {
  Scenario s = load_scenario(kScenarios + "oversubscribed-spine-2to1.json");
  // The flow model (the scenario's), and the others, which count in their own ways.
  for (const char* model : {"flow", "ideal", "packet"}) {
    CAPTURE(model);
    s.network.model = *collsim::network_model_named(model);
    const ScenarioResult r = run_scenario(s);
    const TrafficReport t = analyse_traffic(s, r);
    const auto peaks = peaks_from_record(s, r);
    int most = 0;
    for (std::size_t l = 0; l < t.links.size(); ++l) {
      CHECK(t.links[l].bytes == r.sim.links.bytes(l));
      CHECK(t.links[l].busy_s == to_seconds(r.sim.links.busy(l)));
      CHECK(t.links[l].peak_transfers == r.sim.links.peak_in_flight(l));
      CHECK(t.links[l].peak_transfers == peaks[l]);
      most = std::max(most, t.links[l].peak_transfers);
    }
    CHECK(most > 1);  // contended: the spine carries many transfers at once
  }
}

TEST_CASE("record: each op's route is recorded once, as the router has it") {
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  const ScenarioResult r = run_scenario(s, SimulationOptions{.record_ops = false});
  Router router(s.topology, s.network.routing);
  std::size_t routed = 0;
  for (std::size_t c = 0; c < r.schedules.size(); ++c) {
    const Schedule& sched = *r.schedules[c];
    REQUIRE(r.sim.tasks[c].paths.size() == sched.size());
    CHECK(r.sim.tasks[c].ops.empty());  // times only when asked; routes always
    for (OpId id = 0; id < sched.size(); ++id) {
      const Op& op = sched.ops[id];
      const PathId p = r.sim.tasks[c].paths[id];
      if (op.is_local()) {
        CHECK(p == -1);
        continue;
      }
      const auto& ranks = r.resolved[c].ranks;
      const auto want = router.links(router.route(s.topology.gpu_of_rank(ranks[op.src_rank]),
                                                  s.topology.gpu_of_rank(ranks[op.dst_rank])));
      const auto got = r.sim.routes[p];
      REQUIRE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
      ++routed;
    }
  }
  CHECK(routed > 0);
  // One entry per distinct route, far fewer than ops.
  CHECK(r.sim.routes.size() < routed / 10);
}

TEST_CASE("record: the traffic report reads the recorded routes and routes nothing itself") {
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  ScenarioResult r = run_scenario(s, SimulationOptions{.record_ops = false});
  // Rewrite the record so that every route is one link no router would choose for most
  // ops: the report's bottlenecks must follow the record.
  const LinkId only = 3;
  for (std::size_t p = 0; p < r.sim.routes.size(); ++p) {
    r.sim.routes.links[r.sim.routes.first[p]] = only;
    for (auto i = r.sim.routes.first[p] + 1; i < r.sim.routes.first[p + 1]; ++i)
      r.sim.routes.links[i] = only;
  }
  const TrafficReport t = analyse_traffic(s, r);
  REQUIRE(t.per_collective.size() == s.collectives.size());
  for (const auto& b : t.per_collective) CHECK(b.link == only);
  for (const auto& b : t.per_step) CHECK(b.link == only);
}

TEST_CASE("chrome trace: one escaper makes any name valid JSON, and keeps it") {
  const std::string names[] = {"plain", "quote\" back\\slash", "new\nline\ttab\x01",
                               "gr\xC3\xBC\xC3\x9F \xE2\x86\x92 \xF0\x9F\x9A\x80", ""};
  std::ostringstream out;
  {
    ChromeTrace trace(out);
    trace.process_name(0, names[1]);
    for (int i = 0; i < 5; ++i) {
      trace.thread_name(0, i, names[i]);
      trace.complete(0, i, 1.5, 2.25, names[i], names[(i + 1) % 5])
          .arg(names[i], names[i])
          .arg("n", std::int64_t{42})
          .arg("x", 0.123456, "{:.3f}");
      trace.flow_start(0, i, 1.5, i, names[i], names[i]);
      trace.flow_end(0, i, 1.5, i, names[i], names[i]);
    }
    trace.counter(1, 0, names[2]).arg("utilisation", 0.5, "{:.4g}");
  }  // finish()ed by the destructor
  const std::string text = out.str();
  CHECK(std::all_of(text.begin(), text.end(), [](char c) { return c > 0; }));  // ASCII
  const auto doc = nlohmann::json::parse(text);
  const auto& ev = doc.at("traceEvents");
  REQUIRE(ev.size() == 1 + 5 * 4 + 1);
  CHECK(ev[0]["args"]["name"] == names[1]);
  for (int i = 0; i < 5; ++i) {
    CHECK(ev[1 + 4 * i]["args"]["name"] == names[i]);
    const auto& x = ev[2 + 4 * i];
    CHECK(x["ph"] == "X");
    CHECK(x["name"] == names[i]);
    CHECK(x["cat"] == names[(i + 1) % 5]);
    CHECK(x["ts"] == 1.5);
    CHECK(x["dur"] == 2.25);
    CHECK(x["args"][names[i]] == names[i]);
    CHECK(x["args"]["n"] == 42);
    CHECK(x["args"]["x"] == 0.123);
    CHECK(ev[3 + 4 * i]["ph"] == "s");
    CHECK(ev[4 + 4 * i]["ph"] == "f");
    CHECK(ev[4 + 4 * i]["cat"] == names[i]);
  }
  CHECK(ev.back()["ph"] == "C");
  CHECK(ev.back()["args"]["utilisation"] == 0.5);
  // Bytes that are not UTF-8 become U+FFFD rather than invalid JSON.
  CHECK(nlohmann::json::parse(json_quote("a\xFF\xC3(")) == "a\xEF\xBF\xBD\xEF\xBF\xBD(");
}

// Node names holding a quote, a backslash, a newline and non-ASCII text, in a topology
// file: `collsim run --out` writes a timeline that parses, with the names intact.
// (validate --out and compare --out: tests/test_validate.cpp, with the rank processes.)
TEST_CASE("chrome trace: run --out with odd node names writes valid JSON") {
  const fs::path dir = fs::temp_directory_path() / ("collsim-names-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::string>& gpus = collsim::test::kOddGpuNames;
  const nlohmann::json scenario = {{"topology", collsim::test::odd_names_topology("odd \"names\"")},
                                   {"network", {{"model", "flow"}}},
                                   {"collectives",
                                    {{{"name", "ar \"1\" <b>"},
                                      {"op", "all_reduce"},
                                      {"algorithm", "ring"},
                                      {"bytes", "1MiB"}}}}};
  std::ofstream(dir / "odd.json") << scenario.dump(2);
  REQUIRE(exit_status_of(std::string(COLLSIM_EXE) + " run " + (dir / "odd.json").string() +
                         " --out " + (dir / "out").string()) == 0);
  const auto trace = nlohmann::json::parse(slurp(dir / "out" / "timeline.json"));
  std::vector<std::string> seen;
  bool collective = false, link = false;
  for (const auto& e : trace.at("traceEvents")) {
    if (e["name"] == "thread_name") seen.push_back(e["args"]["name"]);
    if (e["ph"] == "X") collective |= e["cat"] == "ar \"1\" <b>";
    if (e["ph"] == "C") link |= e["name"].get<std::string>().find("gpu\"0") != std::string::npos;
  }
  for (std::size_t r = 0; r < gpus.size(); ++r)
    CHECK(std::count(seen.begin(), seen.end(),
                     "rank " + std::to_string(r) + " (" + gpus[r] + ") send") == 1);
  CHECK(collective);
  CHECK(link);
  fs::remove_all(dir);
}

namespace record_test {

// Runs `scenario` with --trace-transfers `budget` and returns the binned slices ("X").
std::vector<nlohmann::json> binned_slices(const std::string& tag, const nlohmann::json& scenario,
                                          int budget) {
  const fs::path dir = fs::temp_directory_path() / ("collsim-" + tag + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "bins.json") << scenario.dump();
  REQUIRE(exit_status_of(std::string(COLLSIM_EXE) + " run " + (dir / "bins.json").string() +
                         " --trace-transfers " + std::to_string(budget) + " --out " +
                         (dir / "out").string()) == 0);
  const auto trace = nlohmann::json::parse(slurp(dir / "out" / "timeline.json"));
  std::vector<nlohmann::json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e["ph"] == "X" && e["pid"] == 0) out.push_back(e);  // the ranks' tracks
  fs::remove_all(dir);
  return out;
}

nlohmann::json ring(const std::string& name, const std::string& bytes, nlohmann::json after) {
  return {{"name", name},
          {"op", "all_reduce"},
          {"algorithm", "ring"},
          {"bytes", bytes},
          {"after", std::move(after)}};
}

}  // namespace record_test

// Past --trace-transfers the trace holds time bins per rank and collective; a transfer
// spanning many bins must count whole in each bin it covers.
TEST_CASE("chrome trace: binned transfers spanning many bins keep bytes and busy time", "[trace]") {
  // A 1 GiB ring (112 transfers, each 1/14 of it), then a pipelined 64 KiB tree with
  // thousands of short transfers: 100 bins per track, so each big transfer spans about 7.
  nlohmann::json small = record_test::ring("small", "64KiB", {"big"});
  small["algorithm"] = "binomial_tree";
  small["segments"] = 256;
  const nlohmann::json scenario = {
      {"topology", {{"preset", "switch"}, {"gpus", 8}, {"bandwidth", "100GB/s"}}},
      {"network", {{"model", "ideal"}, {"alpha", "1us"}}},
      {"collectives", {record_test::ring("big", "1GiB", nlohmann::json::array()), small}}};
  const auto slices = record_test::binned_slices("bins", scenario, 1600);
  double sent = 0, received = 0;
  std::map<std::string, int> per_collective;
  for (const auto& e : slices) {
    const std::string cat = e["cat"], name = e["name"];
    ++per_collective[cat];
    CHECK(e["args"]["collective"] == cat);
    CHECK(name.starts_with(cat + ": "));  // the bin says which collective it belongs to
    if (cat != "big") continue;
    // Every rank sends and receives throughout the big ring: each bin is fully busy.
    CHECK(e["args"]["busy"].get<double>() == Approx(1.0).margin(1e-3));
    (name.find("sending") != std::string::npos ? sent : received) +=
        e["args"]["bytes"].get<double>();
  }
  CHECK(per_collective["big"] >= 2 * 8 * 95);  // about 100 bins per track, minus the small one's
  CHECK(per_collective["small"] >= 2 * 8);
  const double total = 2.0 * 7 * (1 << 30);  // ring all-reduce: 2 (K - 1) N over all ranks
  CHECK(sent == Approx(total).epsilon(1e-6));
  CHECK(received == Approx(total).epsilon(1e-6));
}

// Collectives at once share each rank's tracks in lanes: the bins per collective shrink
// so that the trace stays within its budget, and each keeps its own bytes.
TEST_CASE("chrome trace: binned concurrent collectives each keep their name and bytes", "[trace]") {
  nlohmann::json collectives = nlohmann::json::array();
  for (int i = 0; i < 16; ++i)
    collectives.push_back(
        record_test::ring("ar" + std::to_string(i), "1MiB", nlohmann::json::array()));
  const nlohmann::json scenario = {
      {"topology", {{"preset", "switch"}, {"gpus", 8}, {"bandwidth", "100GB/s"}}},
      {"network", {{"model", "ideal"}}},
      {"collectives", collectives}};
  // 16 x 112 transfers, room for 1600, 16 at once: 1600 / (2 x 8 x 16) = 6 bins per track.
  const auto slices = record_test::binned_slices("conc", scenario, 1600);
  std::map<std::string, double> sent;
  for (const auto& e : slices) {
    CHECK(e["args"]["busy"].get<double>() == Approx(1.0).margin(1e-4));
    if (e["name"].get<std::string>().find("sending") != std::string::npos)
      sent[e["cat"]] += e["args"]["bytes"].get<double>();
  }
  CHECK(slices.size() == 16 * 2 * 8 * 6);
  REQUIRE(sent.size() == 16);
  // Each slice prints what rounding the bytes so far adds: the slices add up to every byte
  // (each rounded alone, they were off by up to half a byte a slice).
  for (const auto& [name, bytes] : sent) CHECK(bytes == 2.0 * 7 * (1 << 20));
}

namespace record_test {

// A JSON value's type as result.json's readers see it.
std::string json_type(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_string()) return "string";
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "float";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_boolean()) return "boolean";
  return "other";
}

// Every field of result.json by path, grouped by the types it may take: "[]" each element,
// "doc." the document's top level, "candidate." each of auto.chosen and auto.runner_up,
// "spread." each of sent_bytes_per_rank and received_bytes_per_rank.
const std::pair<std::set<std::string>, std::vector<std::string>> kFieldsByType[] = {
    {{"string"},
     {"name", "op", "algorithm", "plan", "protocol", "dtype", "symmetry", "bottleneck.link",
      "hottest_links[].link", "hottest_links[].kind", "candidate.algorithm", "candidate.plan",
      "doc.scenario", "doc.topology.name", "doc.network.model", "doc.links[].src",
      "doc.links[].dst", "doc.links[].kind", "doc.ranks[].gpu"}},
    {{"string", "null"}, {"schedule_digest", "held_by", "doc.caveat"}},
    {{"boolean"}, {"over_link_rate"}},
    {{"integer"},
     {"ranks[]",
      "bytes",
      "count",
      "segments",
      "transfers",
      "steps",
      "auto.candidates",
      "bottleneck.bytes",
      "hottest_links[].bytes",
      "links_used",
      "per_rank.sent_bytes[]",
      "per_rank.received_bytes[]",
      "candidate.segments",
      "spread.min",
      "spread.mean",
      "spread.max",
      "doc.topology.gpus",
      "doc.topology.links",
      "doc.links[].bytes",
      "doc.links[].peak_transfers",
      "doc.ranks[].rank",
      "doc.ranks[].sent_bytes",
      "doc.ranks[].received_bytes"}},
    {{"float"},
     {"start_s", "end_s", "time_s", "ops_time_s", "bottleneck.seconds_at_full_rate",
      "bottleneck.share_of_rate", "bottleneck.seconds_at_its_rate", "hottest_links[].bandwidth_Bps",
      "hottest_links[].utilisation", "per_rank.busy_s[]", "per_rank.idle_s[]", "candidate.time_s",
      "doc.network.alpha_s", "doc.makespan_s", "doc.links[].bandwidth_GBps", "doc.links[].busy_s",
      "doc.links[].utilisation", "doc.ranks[].busy_s", "doc.ranks[].idle_s"}},
    {{"float", "null"}, {"algbw_GBps", "busbw_GBps"}},
    {{"object"},
     {"auto", "auto.chosen", "bottleneck", "hottest_links[]", "per_rank", "sent_bytes_per_rank",
      "received_bytes_per_rank", "doc.topology", "doc.network", "doc.links[]", "doc.ranks[]"}},
    {{"object", "null"}, {"auto.runner_up"}},
    {{"array"},
     {"ranks", "hottest_links", "per_rank.sent_bytes", "per_rank.received_bytes", "per_rank.busy_s",
      "per_rank.idle_s", "doc.links", "doc.ranks"}}};

// kFieldsByType as path -> types.
std::map<std::string, std::set<std::string>> field_types() {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [types, paths] : kFieldsByType)
    for (const auto& path : paths) out[path] = types;
  return out;
}

// The path kFieldsByType lists `at` under (auto.chosen.x is candidate.x, ...).
std::string listed_path(const std::string& at) {
  for (const char* object : {"auto.chosen.", "auto.runner_up."})
    if (at.starts_with(object)) return "candidate." + at.substr(std::strlen(object));
  for (const char* object : {"sent_bytes_per_rank.", "received_bytes_per_rank."})
    if (at.starts_with(object)) return "spread." + at.substr(std::strlen(object));
  return at;
}

// Each value under `v` (at `path`) has a type kFieldsByType allows; `seen` collects paths.
void check_types(const nlohmann::json& v, const std::string& path, std::set<std::string>& seen) {
  static const auto types = field_types();
  const auto check = [&](const nlohmann::json& value, const std::string& at) {
    INFO(at);
    const auto known = types.find(at);
    REQUIRE(known != types.end());
    CHECK(known->second.count(json_type(value)) == 1);
    seen.insert(at);
    if (value.is_object()) check_types(value, at, seen);
  };
  for (const auto& [key, value] : v.items()) {
    const std::string at = listed_path(path.empty() ? key : path + "." + key);
    check(value, at);
    if (value.is_array())
      for (const auto& element : value) check(element, at + "[]");
  }
}

}  // namespace record_test

TEST_CASE("result.json keeps each field's JSON type", "[record]") {
  // The writer (report/json_text.h) writes each value as its C++ type says. This pins the
  // types result.json has always had, which reading the text back cannot: an integer
  // written as 4096.0 reads back as a double and writes out the same.
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(kScenarios)) {
    if (entry.path().extension() != ".json") continue;
    const Scenario s = load_scenario(entry.path());
    if (s.collectives.empty() || !s.workloads.empty()) continue;
    INFO(entry.path().filename().string());
    const ScenarioResult r = run_scenario(s);
    nlohmann::json doc = result_json(s, r, analyse_traffic(s, r));
    for (const auto& c : doc["collectives"]) record_test::check_types(c, "", seen);
    doc.erase("collectives");
    record_test::check_types(doc, "doc", seen);
  }
  const Scenario ring = load_scenario(kScenarios + "ring-allreduce-trace.json");
  const ScenarioResult folded = run_scenario_streamed(ring, FoldWhen::Always);
  const nlohmann::json doc = result_json(ring, folded, analyse_traffic(ring, folded));
  for (const auto& c : doc["collectives"]) record_test::check_types(c, "", seen);
  // The bundled scenarios reach every field (a bottleneck's slowed share: NVLS).
  for (const auto& [types, paths] : record_test::kFieldsByType)
    for (const auto& path : paths) {
      INFO(path);
      CHECK(seen.count(path) == 1);
    }
}

TEST_CASE("result.json written a collective at a time reads back to the same bytes", "[record]") {
  // What nlohmann writes of the document read back is the text itself: key order,
  // indentation, escapes and number forms are nlohmann's (the types, which reading back
  // cannot see, are pinned above). Every bundled scenario of collectives (auto choices among
  // them), run whole; and a streamed run of one of them with folds tried (null digests,
  // symmetry notes).
  const auto same_bytes = [](const Scenario& s, const ScenarioResult& r) {
    const TrafficReport traffic = analyse_traffic(s, r);
    std::ostringstream streamed;
    write_result_json(streamed, s, r, traffic);
    CHECK(streamed.str() == result_json(s, r, traffic).dump(2) + "\n");
  };
  const Scenario ring = load_scenario(kScenarios + "ring-allreduce-trace.json");
  const ScenarioResult folded = run_scenario_streamed(ring, FoldWhen::Always);
  REQUIRE(folded.folding.size() == 1);
  CHECK(folded.folding[0].folded);
  same_bytes(ring, folded);
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(kScenarios)) {
    if (entry.path().extension() != ".json") continue;
    const Scenario s = load_scenario(entry.path());
    if (s.collectives.empty() || !s.workloads.empty()) continue;
    INFO(entry.path().filename().string());
    same_bytes(s, run_scenario(s));
    ++compared;
  }
  CHECK(compared >= 10);
  // Enough collectives (5,000) that their parts are made on several threads (1, 3 and the
  // machine's), in batches of 4,096, one batch part-filled: still the same bytes, in order.
  nlohmann::json many = {
      {"topology", {{"preset", "switch"}, {"gpus", 4}, {"bandwidth", "450GB/s"}}},
      {"network", {{"model", "ideal"}}},
      {"collectives", nlohmann::json::array()}};
  for (int i = 0; i < 5000; ++i)
    many["collectives"].push_back({{"name", fmt::format("c{}", i)},
                                   {"op", i % 3 ? "all_reduce" : "all_gather"},
                                   {"bytes", 4096 * (1 + i % 7)},
                                   {"after", nlohmann::json::array()}});
  const Scenario m = parse_scenario(many, ".");
  const ScenarioResult mr = run_scenario(m);
  const TrafficReport traffic = analyse_traffic(m, mr);
  const std::string whole = result_json(m, mr, traffic).dump(2) + "\n";
  for (int threads : {1, 3, 0}) {
    std::ostringstream made;
    write_result_json(made, m, mr, traffic, threads);
    CHECK(made.str() == whole);
  }
}

TEST_CASE("record: a rank busy over its whole window is idle 0 there, not a rounding's leftover") {
  // The hierarchical all-reduce keeps every rank busy from its start to its end: idle_s
  // read 5.2e-18 s where busy and window were subtracted as seconds.
  const Scenario s = load_scenario(kScenarios + "hierarchical-vs-flat.json");
  const ScenarioResult r = run_scenario(s);
  const TrafficReport t = analyse_traffic(s, r);
  int all_along = 0;
  for (const CollectiveTraffic& c : t.collectives)
    for (const RankTraffic& rt : c.ranks) {
      // Whole picoseconds, as the simulator keeps time.
      CHECK((rt.idle_s == 0 || rt.idle_s >= 1e-12));
      CHECK(rt.busy_s + rt.idle_s == Approx(c.duration_s()).epsilon(1e-12));
      all_along += rt.idle_s == 0;
    }
  CHECK(all_along > 0);
}
