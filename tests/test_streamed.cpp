// Streamed schedules: what a generator streams is, op for op, the schedule it stores,
// and simulating the stream gives what simulating the stored schedule gives, while
// holding only the ops in flight.
#include <catch2/catch.hpp>

#include "core/memory.h"
#include "helpers.h"
#include "network/link_rates.h"
#include "report/run_use_case.h"
#include "report/traffic.h"
#include "report/transfer_timeline.h"
#include "same_traffic.h"
#include "schedule/builder.h"
#include "schedule/stream.h"
#include "simulate/streamed.h"

using namespace collsim;
using namespace collsim::test;

namespace streamed_test {

// Collects a stream back into a stored schedule, to compare with the generator's own.
class Collect final : public StepSink {
 public:
  Schedule s;
  int steps_seen = 0;
  void start(const Schedule& header, int) override {
    s = header;
    s.dep_begin.assign(1, 0);
  }
  void take_step(const StepView& step) override {
    REQUIRE(step.first == s.ops.size());
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      s.ops.push_back(step.ops[i]);
      for (OpId d : step.deps_of(i)) s.deps.push_back(d);
      s.dep_begin.push_back(s.deps.size());
    }
    ++steps_seen;
  }
};

// Switch ops are stored only; a pipeline streams in one segment (AlgorithmEntry::streams).
bool streams(const AlgorithmEntry& e) {
  return !e.switch_ops;
}

// The options each entry is streamed with: its defaults, and segments / levels /
// channels where it takes them.
std::vector<AlgorithmOptions> options_for(const AlgorithmEntry& e, int K) {
  std::vector<AlgorithmOptions> out(1);
  if (e.takes("levels")) {
    out[0].levels = {{K, "ring", {}}};
    for (int f = 2; f * f <= K; ++f)
      if (K % f == 0) {
        out[0].levels = {{f, "ring", {}}, {K / f, "double_binary_tree", {}}};
        break;
      }
  }
  if (e.takes("segments")) {
    out.push_back(out[0]);
    out.back().segments = 3;
  }
  if (e.takes("channels") && K > 1) {
    out.push_back(out[0]);
    out.back().channels = 2;
  }
  return out;
}

Schedule streamed_copy(const AlgorithmEntry& e, const CollectiveShape& shape,
                       const AlgorithmOptions& opt, int& steps_seen) {
  Collect sink;
  Schedule header;
  {
    StreamScope scope(sink);
    header = e.generate(shape, opt);
  }
  CHECK(header.ops.empty());
  sink.s.num_steps = header.num_steps;
  steps_seen = sink.steps_seen;
  return std::move(sink.s);
}

void require_same_run(const SimulationResult& stored, const StreamedResult& streamed) {
  REQUIRE(streamed.end == stored.tasks[0].end);
  require_same_traffic(stored, streamed);
}

// Both ways on a fresh router and model each: the stored schedule through Simulator,
// the generator streamed through simulate_streamed.
void compare_runs(const AlgorithmEntry& e, const CollectiveShape& shape,
                  const AlgorithmOptions& opt, const Topology& topo, const NetworkParams& params,
                  std::shared_ptr<const CostModel> cost = nullptr) {
  const Schedule stored = e.generate(shape, opt);
  std::vector<NodeId> gpus;
  for (int r = 0; r < shape.ranks; ++r) gpus.push_back(topo.gpu_of_rank(r));
  Router r1(topo);
  auto m1 = make_network_model(params, topo, r1);
  Simulator sim(topo, r1, *m1);
  const SimulationResult a = sim.run({{"stored", &stored, gpus, {}, cost}});
  INFO(e.algorithm << " " << name_of(shape.op) << " K=" << shape.ranks << " model "
                   << name_of(params.model));
  for (GenerateOn where : {GenerateOn::OwnThread, GenerateOn::CallerThread}) {
    Router r2(topo);
    auto m2 = make_network_model(params, topo, r2);
    const StreamedResult b = simulate_streamed(
        topo, r2, *m2, {gpus, cost}, [&] { return e.generate(shape, opt); }, where);
    require_same_run(a, b);
    CHECK(b.ops == stored.size());
    CHECK(b.digest == schedule_digest(stored));
    CHECK(b.steps == stored.num_steps);
  }
}

}  // namespace streamed_test

using namespace streamed_test;

TEST_CASE("every generator streams exactly the schedule it stores", "[stream]") {
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    if (!streams(e)) continue;
    for (int K : {1, 2, 3, 5, 8, 13, 16, 31}) {
      for (std::int64_t count : {std::int64_t{1}, 3 * std::int64_t{K} + 1}) {
        CollectiveShape shape = shape_of(e.op, K, count);
        if (is_rooted(e.op)) shape.root = K / 2;
        for (const AlgorithmOptions& opt : options_for(e, K)) {
          if (!e.streams(opt)) continue;
          INFO(e.algorithm << " " << name_of(e.op) << " K=" << K << " count=" << count
                           << " segments=" << opt.segments << " channels=" << opt.channels);
          const Schedule stored = e.generate(shape, opt);
          int steps_seen = 0;
          const Schedule streamed = streamed_copy(e, shape, opt, steps_seen);
          REQUIRE(streamed.size() == stored.size());
          CHECK(streamed.deps == stored.deps);
          CHECK(streamed.dep_begin == stored.dep_begin);
          CHECK(streamed.num_steps == stored.num_steps);
          CHECK(schedule_digest(streamed) == schedule_digest(stored));
          CHECK(steps_seen <= stored.num_steps);  // one hand-over per step that has ops
          StreamAudit digest;
          {
            StreamScope scope(digest);
            e.generate(shape, opt);
          }
          CHECK(digest.digest() == schedule_digest(stored));
          CHECK(digest.ops() == stored.size());
          CHECK(digest.deps() == stored.deps.size());
        }
      }
    }
  }
}

TEST_CASE("the digest tells schedules apart op by op", "[stream]") {
  const Schedule s =
      generate(CollectiveOp::AllReduce, "ring", shape_of(CollectiveOp::AllReduce, 4, 64));
  Schedule t = s;
  t.ops[5].dst_offset += 1;
  CHECK(schedule_digest(t) != schedule_digest(s));
  Schedule u = s;
  u.deps.back() -= 1;
  CHECK(schedule_digest(u) != schedule_digest(s));
}

TEST_CASE("a streamed run is the stored run, on every generator and network model", "[stream]") {
  NetworkParams ideal;
  ideal.alpha = from_seconds(2e-6);
  NetworkParams flow = ideal;
  flow.model = collsim::NetworkModelKind::Flow;
  int streamed_generators = 0;
  for (const AlgorithmEntry& e : algorithm_catalogue()) {
    if (!streams(e)) continue;
    ++streamed_generators;
    for (int K : {1, 2, 5, 8, 13}) {
      const Topology topo = make_switch_topology(K, 50e9, from_seconds(1e-7));
      CollectiveShape shape = shape_of(e.op, K, 4096 * std::int64_t{K} + 7);
      if (is_rooted(e.op)) shape.root = K - 1;
      for (const AlgorithmOptions& opt : options_for(e, K)) {
        if (!e.streams(opt)) continue;
        compare_runs(e, shape, opt, topo, ideal);
        compare_runs(e, shape, opt, topo, flow);
      }
    }
  }
  CHECK(streamed_generators >= 8);  // the filter selected something to compare
}

TEST_CASE("a streamed run shares links as the stored run does, with the cost model", "[stream]") {
  // Two 4-GPU hosts behind an oversubscribed leaf: rings and trees contend there.
  ClusterParams p;
  p.nodes = 2;
  p.server.gpus = 4;
  p.oversubscription = 4;
  const Topology topo = make_cluster_topology(p);
  auto cost = std::make_shared<CostModel>();
  cost->launch = from_seconds(10e-6);
  cost->op_overhead = from_seconds(0.3e-6);
  cost->link(LinkKind::NvLink).efficiency = 0.8;
  NetworkParams flow;
  flow.model = collsim::NetworkModelKind::Flow;
  flow.alpha = from_seconds(1e-6);
  for (const char* name : {"ring", "double_binary_tree", "halving_doubling", "direct"}) {
    for (CollectiveOp op :
         {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::AllToAll}) {
      const AlgorithmEntry* e = find_algorithm(op, name);
      if (!e) continue;
      const CollectiveShape shape = shape_of(op, 8, 1 << 20);
      compare_runs(*e, shape, {}, topo, flow, cost);
      NetworkParams ideal = flow;
      ideal.model = collsim::NetworkModelKind::Ideal;
      compare_runs(*e, shape, {}, topo, ideal, cost);
    }
  }
}

TEST_CASE("a streamed ring holds a few steps of ops, not the schedule", "[stream]") {
  const int K = 512;
  const Topology topo = make_switch_topology(K, 450e9, 0);
  std::vector<NodeId> gpus;
  for (int r = 0; r < K; ++r) gpus.push_back(topo.gpu_of_rank(r));
  Router router(topo);
  NetworkParams p;
  p.alpha = from_seconds(5e-6);
  auto model = make_network_model(p, topo, router);
  const AlgorithmEntry* ring = find_algorithm(CollectiveOp::AllReduce, "ring");
  const CollectiveShape shape = shape_of(CollectiveOp::AllReduce, K, std::int64_t{1} << 24);
  const StreamedResult r = simulate_streamed(topo, router, *model, {gpus, nullptr},
                                             [&] { return ring->generate(shape, {}); });
  CHECK(r.ops == std::uint64_t{2} * (K - 1) * K);
  CHECK(r.peak_held <= std::uint64_t{3} * K);  // of 2(K-1)K = 523,264
  // The textbook ring: 2(K-1) steps of alpha + (S/K)/beta.
  const double step = 5e-6 + 4.0 * (std::int64_t{1} << 24) / K / 450e9;
  CHECK(to_seconds(r.end) ==
        Approx(2 * (K - 1) * step).epsilon(1e-6));  // whole picoseconds per step
}

TEST_CASE("switch ops are refused by the stream, not mis-timed", "[stream]") {
  const AlgorithmEntry* nvls = find_algorithm(CollectiveOp::AllReduce, "nvls");
  REQUIRE(nvls);
  const Topology topo = make_switch_topology(4, 50e9, 0);
  std::vector<NodeId> gpus;
  for (int r = 0; r < 4; ++r) gpus.push_back(topo.gpu_of_rank(r));
  Router router(topo);
  NetworkParams p;
  p.model = collsim::NetworkModelKind::Flow;
  auto model = make_network_model(p, topo, router);
  const CollectiveShape shape = shape_of(CollectiveOp::AllReduce, 4, 1024);
  for (GenerateOn where : {GenerateOn::OwnThread, GenerateOn::CallerThread})
    CHECK_THROWS_AS(simulate_streamed(
                        topo, router, *model, {gpus, nullptr},
                        [&] { return nvls->generate(shape, {}); }, where),
                    std::invalid_argument);
}

TEST_CASE("a generator that fails on its own thread fails the run, after what it streamed",
          "[stream]") {
  const Topology topo = make_switch_topology(4, 50e9, 0);
  std::vector<NodeId> gpus;
  for (int r = 0; r < 4; ++r) gpus.push_back(topo.gpu_of_rank(r));
  Router router(topo);
  auto model = make_network_model(NetworkParams{}, topo, router);
  const AlgorithmEntry* ring = find_algorithm(CollectiveOp::AllReduce, "ring");
  const CollectiveShape shape = shape_of(CollectiveOp::AllReduce, 4, 1 << 20);
  auto failing = [&]() -> Schedule {
    ring->generate(shape, {});  // streamed: its steps reach the simulator
    throw std::runtime_error("generator failed");
  };
  CHECK_THROWS_WITH(simulate_streamed(topo, router, *model, {gpus, nullptr}, failing),
                    "generator failed");
  // A consumer that stops early (a refused op) leaves no producer thread behind: many
  // runs in a row, each refused at its first step, each joined.
  const AlgorithmEntry* nvls = find_algorithm(CollectiveOp::AllReduce, "nvls");
  for (int i = 0; i < 50; ++i)
    CHECK_THROWS_AS(simulate_streamed(topo, router, *model, {gpus, nullptr},
                                      [&] { return nvls->generate(shape, {}); }),
                    std::invalid_argument);
}

TEST_CASE("a streamed schedule is checked as a stored one is, step by step", "[stream]") {
  // Two ops of one step write the same elements of rank 1: check_schedule refuses it.
  auto broken = [] {
    auto b = ScheduleBuilder::uniform(shape_of(CollectiveOp::AllGather, 3, 8), "broken", {8});
    b.copy({0, 0, 0}, {1, 0, 0}, 4);
    b.copy({2, 0, 2}, {1, 0, 2}, 4);
    return b.finish();
  };
  const std::string stored = check_schedule(broken());
  REQUIRE(stored.find("overlapping") != std::string::npos);
  StreamAudit audit;
  {
    StreamScope scope(audit);
    CHECK_THROWS_WITH(broken(),
                      Catch::Contains("broken all_gather generated an invalid schedule") &&
                          Catch::Contains("overlapping"));
  }
  const Topology topo = make_switch_topology(3, 50e9, 0);
  std::vector<NodeId> gpus{topo.gpu_of_rank(0), topo.gpu_of_rank(1), topo.gpu_of_rank(2)};
  for (GenerateOn where : {GenerateOn::OwnThread, GenerateOn::CallerThread}) {
    Router router(topo);
    auto model = make_network_model(NetworkParams{}, topo, router);
    CHECK_THROWS_AS(simulate_streamed(topo, router, *model, {gpus, nullptr}, broken, where),
                    std::logic_error);
  }
}

namespace streamed_test {

// The bundled scenario, its collectives shrunk (so the stored run is quick); with
// `chained`, each made to run after the one before it (then each is streamed alone),
// else with the scenario's own "after" (collectives that may overlap are played together).
Scenario small(const std::filesystem::path& file, bool chained) {
  nlohmann::json doc = read_json_file(file.string(), file.string());
  auto& cs = doc["collectives"];
  for (std::size_t i = 0; i < cs.size(); ++i) {
    auto& c = cs[i];
    if (c.contains("bytes") && c["op"] != "barrier") c["bytes"] = "64KiB";
    if (c.contains("routing")) {
      c["routing"]["bytes_per_token"] = "16B";
      if (c["routing"].contains("tokens_per_rank")) c["routing"]["tokens_per_rank"] = 16;
    }
    if (chained && i > 0) c["after"] = {cs[i - 1].value("name", "c" + std::to_string(i - 1))};
    if (!c.contains("name")) c["name"] = "c" + std::to_string(i);
  }
  return parse_scenario(doc, file.parent_path());
}

// The streamed run of `s` gives what its stored run gives: times to the picosecond,
// digests, op and step counts, link and rank counters, and each collective's own links,
// ranks and bottleneck as the reports show them. Returns the collectives compared.
int check_streams_as_stored(const Scenario& s) {
  const ScenarioResult stored = run_scenario(s, SimulationOptions{.record_ops = false});
  const ScenarioResult streamed = run_scenario_streamed(s);
  REQUIRE(streamed.outcomes.size() == stored.outcomes.size());
  for (std::size_t i = 0; i < stored.outcomes.size(); ++i) {
    INFO(stored.resolved[i].name << ": " << stored.labels[i]);
    CHECK(streamed.labels[i] == stored.labels[i]);
    CHECK(streamed.digests[i] == stored.digests[i]);
    CHECK(streamed.op_count(i) == stored.op_count(i));
    CHECK(streamed.schedules[i]->num_steps == stored.schedules[i]->num_steps);
    CHECK(streamed.outcomes[i].start_s == stored.outcomes[i].start_s);
    CHECK(streamed.outcomes[i].end_s == stored.outcomes[i].end_s);
    CHECK(streamed.outcomes[i].held_by == stored.outcomes[i].held_by);
  }
  CHECK(streamed.sim.links.bytes_per_link() == stored.sim.links.bytes_per_link());
  CHECK(streamed.sim.links.peak_per_link() == stored.sim.links.peak_per_link());
  CHECK(streamed.sim.node_sent == stored.sim.node_sent);
  CHECK(streamed.sim.node_received == stored.sim.node_received);
  const TrafficReport a = analyse_traffic(s, stored), b = analyse_traffic(s, streamed);
  REQUIRE(b.collectives.size() == a.collectives.size());
  for (std::size_t i = 0; i < a.collectives.size(); ++i) {
    INFO(stored.resolved[i].name);
    REQUIRE(b.collectives[i].links.size() == a.collectives[i].links.size());
    for (std::size_t k = 0; k < a.collectives[i].links.size(); ++k) {
      CHECK(b.collectives[i].links[k].link == a.collectives[i].links[k].link);
      CHECK(b.collectives[i].links[k].bytes == a.collectives[i].links[k].bytes);
      CHECK(b.collectives[i].links[k].utilisation == a.collectives[i].links[k].utilisation);
    }
    REQUIRE(b.collectives[i].ranks.size() == a.collectives[i].ranks.size());
    for (std::size_t k = 0; k < a.collectives[i].ranks.size(); ++k) {
      CHECK(b.collectives[i].ranks[k].sent == a.collectives[i].ranks[k].sent);
      CHECK(b.collectives[i].ranks[k].received == a.collectives[i].ranks[k].received);
    }
    CHECK(b.per_collective[i].link == a.per_collective[i].link);
    CHECK(b.per_collective[i].bytes == a.per_collective[i].bytes);
  }
  return static_cast<int>(stored.outcomes.size());
}

}  // namespace streamed_test

TEST_CASE("run --stream gives what run gives, on every bundled scenario of collectives",
          "[stream]") {
  int chained = 0, as_written = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(COLLSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    nlohmann::json doc = read_json_file(e.path().string(), e.path().string());
    if (!doc.contains("collectives") || doc.contains("workload")) continue;
    INFO(e.path().filename().string());
    chained += check_streams_as_stored(small(e.path(), true));
    // As written, where some "after" is (without, each runs after the one before: chained).
    const auto& cs = doc["collectives"];
    if (std::any_of(cs.begin(), cs.end(), [](const auto& c) { return c.contains("after"); }))
      as_written += check_streams_as_stored(small(e.path(), false));
  }
  CHECK(chained > 30);
  CHECK(as_written > 0);  // barrier-scaling.json and dgx-h100-nvls.json name theirs
}

TEST_CASE("run --stream plays collectives that may overlap together, and streams the rest",
          "[stream]") {
  // a and b may overlap; c waits on both (the run is cut before it) and is streamed alone;
  // d and e wait on c only, so they may overlap each other. f after d and e: cut before
  // f, streamed alone. f after a only: it may overlap b to e, so there is no cut after a.
  const auto scenario = [](const std::string& model, const char* f_after) {
    return parse_scenario(
        parse_json_text(fmt::format(R"({{"topology": {{"preset": "switch", "gpus": 6,
      "bandwidth": "50GB/s"}}, "network": {{"model": "{}", "alpha": "2us"}},
      "collectives": [
        {{"name": "a", "op": "all_reduce", "bytes": "1MiB", "algorithm": "ring"}},
        {{"name": "b", "op": "all_gather", "bytes": "768KiB", "algorithm": "ring",
          "ranks": [0, 1, 2], "after": []}},
        {{"name": "c", "op": "reduce_scatter", "bytes": "1MiB", "algorithm": "ring",
          "after": ["a", "b"]}},
        {{"name": "d", "op": "all_reduce", "bytes": "512KiB", "algorithm": "ring",
          "after": ["c"]}},
        {{"name": "e", "op": "broadcast", "bytes": "1MiB", "algorithm": "ring",
          "ranks": [3, 4, 5], "after": ["c"]}},
        {{"name": "f", "op": "all_reduce", "bytes": "256KiB", "algorithm": "ring",
          "after": {}}}]}})",
                                    model, f_after),
                        "s.json"),
        ".");
  };
  for (const std::string model : {"ideal", "flow", "packet"}) {
    INFO(model);
    // f after d and e: cut before f, which is streamed alone.
    const Scenario cut = scenario(model, R"(["d", "e"])");
    CHECK(streamed_test::check_streams_as_stored(cut) == 6);
    // f after a only: f may overlap b, c, d and e, so none of them is alone.
    const Scenario uncut = scenario(model, R"(["a"])");
    CHECK(streamed_test::check_streams_as_stored(uncut) == 6);
  }
  // The case is one where playing alone would be wrong: a shares links with b and takes
  // longer than it does alone.
  const ScenarioResult both = run_scenario_streamed(scenario("flow", R"(["d", "e"])"));
  const ScenarioResult alone = run_scenario_streamed(parse_scenario(
      parse_json_text(R"({"topology": {"preset": "switch", "gpus": 6, "bandwidth": "50GB/s"},
        "network": {"model": "flow", "alpha": "2us"}, "collectives": [{"name": "a",
        "op": "all_reduce", "bytes": "1MiB", "algorithm": "ring"}]})",
                      "s.json"),
      "."));
  CHECK(both.outcomes[0].time_s > 1.1 * alone.outcomes[0].time_s);  // 61.7 us, 55 alone
}

TEST_CASE("run --symmetry refuses --out: a fold has not every op to write", "[stream]") {
  const char* one = R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "50GB/s"},
    "collectives": [{"name": "a", "op": "all_reduce", "bytes": "1MiB"}]})";
  const auto dir = temp_dir("stream-cli");
  { std::ofstream(dir / "s.json") << one; }
  // A folded run plays one rank's ops: no files from it.
  const Outcome out = run_collsim("run --symmetry " + (dir / "s.json").string() + " --out " +
                                  (dir / "out").string());
  CHECK(out.status == 2);
  CHECK_THAT(out.err, Catch::Contains("--out"));
  CHECK(!std::filesystem::exists(dir / "out"));
  // (A training step is taken: "run --stream and --symmetry take a training step ...".)
}

namespace streamed_test {

// Every file of `run --out` from the stored run and from the streamed one (which hands
// each op to the reports as it retires, on a second pass): byte for byte the same.
// Returns the files compared.
int check_files_as_stored(const Scenario& s, std::size_t trace_transfers) {
  const auto dir = temp_dir("stream-files");
  RunRequest stored, streamed;
  stored.out = dir / "stored";
  streamed.out = dir / "streamed";
  streamed.stream = true;
  stored.files.trace_transfers = streamed.files.trace_transfers = trace_transfers;
  const RunRecord a = run_use_case(s, stored), b = run_use_case(s, streamed);
  REQUIRE(a.result->streamed_ops.empty());
  REQUIRE(b.result->streamed_ops.size() == s.collectives.size());
  CHECK(run_table(s, a) == run_table(s, b));
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "stored")) {
    INFO(e.path().filename().string());
    const std::string mine = slurp(e.path());
    CHECK(!mine.empty());
    CHECK(mine == slurp(dir / "streamed" / e.path().filename()));
    ++files;
  }
  std::filesystem::remove_all(dir);
  return files;
}

}  // namespace streamed_test

TEST_CASE("run --out streamed writes the stored run's files, byte for byte", "[stream]") {
  // Collectives one after another (streamed alone), some that may overlap (played
  // together, stored, their ops handed over after), on a cluster whose ring ranks each
  // run hundreds of transfers (their busy time is summed as they go, closed behind the
  // run), under every network model; the trace per transfer, and in time bins.
  const auto scenario = [](const std::string& model) {
    return parse_scenario(
        parse_json_text(fmt::format(R"({{"topology": {{"preset": "cluster", "nodes": 8}},
      "network": {{"model": "{}", "alpha": "2us"}},
      "collectives": [
        {{"name": "a", "op": "all_reduce", "bytes": "{}", "algorithm": "ring"}},
        {{"name": "b", "op": "all_gather", "bytes": "1MiB", "algorithm": "ring",
          "ranks": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}},
        {{"name": "c", "op": "reduce_scatter", "bytes": "1MiB", "algorithm": "ring",
          "ranks": [20, 21, 22, 23], "after": ["a"]}},
        {{"name": "d", "op": "all_reduce", "bytes": "2MiB", "algorithm": "ring",
          "channels": 2, "after": ["b", "c"]}},
        {{"name": "e", "op": "all_to_all", "bytes": "256KiB", "ranks": [3, 9, 17, 40]}}]}})",
                                    model, model == "packet" ? "1MiB" : "4MiB"),
                        "s.json"),
        ".");
  };
  for (const std::string model : {"ideal", "flow", "packet"}) {
    INFO(model);
    const Scenario s = scenario(model);
    CHECK(streamed_test::check_files_as_stored(s, kTraceTransfers) == 7);
    if (model == "flow") CHECK(streamed_test::check_files_as_stored(s, 500) == 7);  // binned
  }
  // NVLS is stored even streamed (switch ops): its ops handed over from its record.
  const Scenario nvls = parse_scenario(
      read_json_file(std::string(COLLSIM_SOURCE_DIR) + "/scenarios/dgx-h100-nvls.json", "n.json"),
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios");
  CHECK(streamed_test::check_files_as_stored(nvls, kTraceTransfers) == 7);
}

TEST_CASE("link rates handed over as they come are the points kept, and none are held",
          "[stream]") {
  // LinkRates: a change at the instant of a link's latest point replaces it; kept, the
  // points; handed over, the same points in the same order, each once it is final.
  struct Collect final : RateListener {
    std::size_t count = 0;
    std::vector<std::vector<RatePoint>> points;
    void links(std::size_t n) override { count = n, points.resize(n); }
    void rate(LinkId l, RatePoint p) override { points[l].push_back(p); }
  };
  const auto note_all = [](LinkRates& r) {
    r.note(0, 10, 5, true);
    r.note(0, 10, 7, true);  // replaces the point at 10
    r.note(0, 20, 7, true);  // unchanged: skipped
    r.note(1, 5, 0, true);   // a link that starts at 0: skipped
    r.note(1, 6, 3, false);
    r.note(0, 30, 0, true);
    r.note(1, 6, 4, false);  // replaces
    r.note(1, 9, 4, false);  // kept where changes are not skipped
  };
  LinkRates kept;
  kept.start(2, nullptr);
  note_all(kept);
  const auto points = kept.take();
  REQUIRE(points.size() == 2);
  CHECK(points[0].size() == 2);
  CHECK(points[0][0].milli_Bps == 7);
  CHECK(points[1].size() == 2);
  Collect to;
  LinkRates handed;
  handed.start(2, &to);
  note_all(handed);
  CHECK(to.points[1].size() == 1);  // the latest not yet final
  CHECK(handed.take().empty());
  CHECK(to.count == 2);
  for (std::size_t l = 0; l < 2; ++l) {
    REQUIRE(to.points[l].size() == points[l].size());
    for (std::size_t i = 0; i < points[l].size(); ++i) {
      CHECK(to.points[l][i].at == points[l][i].at);
      CHECK(to.points[l][i].milli_Bps == points[l][i].milli_Bps);
    }
  }

  // A streamed run whose sink takes the rates hands them over and keeps none: run --out
  // held a point per rate change (4.3 GB at 4,096 GPUs under flow).
  const Scenario s = parse_scenario(parse_json_text(R"({"topology": {"preset": "cluster",
      "nodes": 4}, "network": {"model": "flow"}, "collectives": [
      {"name": "a", "op": "all_reduce", "bytes": "4MiB", "algorithm": "ring"},
      {"name": "b", "op": "all_gather", "bytes": "1MiB", "algorithm": "ring", "after": ["a"]}]})",
                                                    "s.json"),
                                    ".");
  struct RatesOnly final : OpSink {
    Collect rates_to;
    void collective(std::size_t, const Schedule*) override {}
    void op(const RetiredOp&) override {}
    void collective_done() override {}
    RateListener* rates() override { return &rates_to; }
  } sink;
  const ScenarioResult r = run_scenario_streamed(s, FoldWhen::Never, &sink);
  CHECK(r.sim.link_rates.empty());
  CHECK(sink.rates_to.count == s.topology.links().size());
  std::size_t handed_points = 0;
  for (const auto& link : sink.rates_to.points) {
    handed_points += link.size();
    for (std::size_t i = 1; i < link.size(); ++i) CHECK(link[i - 1].at < link[i].at);
  }
  CHECK(handed_points > 100);
}

TEST_CASE("flows of one instant that reach the flow model in another order finish alike",
          "[stream]") {
  // Found by tools/stream_vs_stored_fuzz.py; both differed by tens of picoseconds. A
  // ring's next step reaches the model after the resolve of the step that ended (streamed)
  // or before it (stored): a flow set to a new rate and back at one instant kept the
  // finish of its second setting. And a collective streamed alone gives its flows other
  // slots than the stored run, where the flows due at one instant left in slot order.
  for (const char* text : {
           R"({"topology": {"preset": "switch", "gpus": 10, "bandwidth": "50GB/s"},
               "network": {"model": "flow", "alpha": "0us"},
               "collectives": [{"name": "ag", "op": "all_gather", "algorithm": "ring",
                                "bytes": "1MiB", "channels": 3}]})",
           R"({"topology": {"preset": "cluster", "nodes": 9, "gpus_per_node": 1, "radix": 8,
                            "spines": 2},
               "network": {"model": "flow", "alpha": "5us"},
               "collectives": [{"name": "c0", "op": "all_gather", "algorithm": "pat", "bytes": 4},
                               {"name": "c1", "op": "all_to_all", "algorithm": "nccl",
                                "bytes": 3145728, "after": ["c0"]}]})"}) {
    INFO(text);
    const Scenario s = parse_scenario(parse_json_text(text, "s.json"), ".");
    CHECK(streamed_test::check_files_as_stored(s, kTraceTransfers) == 7);
  }
}

TEST_CASE("a streamed op that follows a receive starts when the receive was sent, as stored",
          "[stream]") {
  // Found by tools/stream_vs_stored_fuzz.py: a pairwise all-to-all whose rounds cross
  // leaves, with NCCL's latencies (delivery well after the last byte left). A rank's next
  // send needs only that the block it received was sent (another buffer); the streamed
  // run counted a rank free for ops to come only when its own send had left, played on,
  // and generated the next round once a slower send elsewhere had left: three sends of
  // round 9 began 136.5 ns late (10.5845 us instead of 10.448 us).
  const Scenario s = parse_scenario(
      parse_json_text(R"({"topology": {"preset": "cluster", "nodes": 10, "gpus_per_node": 1,
                            "radix": 8, "spines": 4},
                          "network": {"model": "ideal", "alpha": "0us"},
                          "collectives": [{"name": "c0", "op": "all_to_all",
                            "algorithm": "pairwise", "bytes": 65536, "protocol": "Simple"}]})",
                      "s.json"),
      ".");
  CHECK(streamed_test::check_files_as_stored(s, kTraceTransfers) == 7);
}

TEST_CASE(
    "run --stream and --symmetry take a training step as run does, folded where its "
    "replicas are alike",
    "[stream]") {
  // A step's tasks may all overlap: --stream plays them together as run does (what it
  // does with collectives that may overlap); --symmetry folds a step by its replicas
  // (simulate/step_fold.h) where they are alike, with the same figures, and says what it
  // did, in the table and the JSON. A DDP job (eight replicas, one played), two jobs with
  // company and a Chakra trace (neither folds).
  const std::pair<const char*, const char*> cases[] = {
      {"workload-ddp-buckets", "folded: 8 replicas alike, 1 played"},
      {"workload-two-jobs", "not folded: a step of several jobs"},
      {"chakra-all-reduce-ring8", "not folded: the job has no replicas to turn"}};
  for (const auto& [name, note] : cases) {
    INFO(name);
    const Scenario s =
        load_scenario(std::string(COLLSIM_SOURCE_DIR) + "/scenarios/" + name + ".json");
    const RunRecord plain = run_use_case(s, {});
    CHECK(plain.step_note.empty());  // too small for the fold to pay
    RunRequest streamed;
    streamed.stream = true;
    const RunRecord as_streamed = run_use_case(s, streamed);
    CHECK(run_document(s, as_streamed) == run_document(s, plain));
    CHECK(run_table(s, as_streamed) == run_table(s, plain));
    RunRequest folded;
    folded.fold = true;
    const RunRecord as_folded = run_use_case(s, folded);
    CHECK(as_folded.step_note.rfind(note, 0) == 0);
    nlohmann::json expected = run_document(s, plain);
    expected["symmetry"] = as_folded.step_note;
    CHECK(run_document(s, as_folded) == expected);
    CHECK(run_table(s, as_folded) ==
          run_table(s, plain) + "# training step: " + as_folded.step_note + "\n");
  }
  // A folded step writes the files of the step run whole, byte for byte.
  const auto dir = temp_dir("step-symmetry-out");
  const std::string scenario =
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-ddp-buckets.json";
  for (const char* how : {"whole", "folded"}) {
    const auto r = run_collsim("run " + scenario + (how[0] == 'f' ? " --symmetry" : "") +
                               " --out " + (dir / how).string());
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "whole")) {
    INFO(entry.path().filename());
    CHECK(slurp(entry.path()) == slurp(dir / "folded" / entry.path().filename()));
    ++files;
  }
  CHECK(files == 4);  // result.json, links.csv, timeline.json, report.html
  std::filesystem::remove_all(dir);
}

TEST_CASE("collsim run streams by itself where that gives the same figures and pays",
          "[stream]") {
  const auto load = [](const std::string& text) {
    return parse_scenario(parse_json_text(text, "s.json"), ".");
  };
  const auto two = [](int gpus, const char* second_after) {
    return fmt::format(R"({{"topology": {{"preset": "switch", "gpus": {}, "bandwidth": "50GB/s"}},
      "collectives": [{{"name": "a", "op": "all_reduce", "bytes": "64KiB", "algorithm": "ring"}},
                      {{"name": "b", "op": "all_gather", "bytes": "64KiB", "algorithm": "ring",
                        "after": {}}}]}})",
                       gpus, second_after);
  };
  const Scenario small = load(two(8, R"(["a"])"));
  const Scenario overlapping = load(two(8, "[]"));
  // 725 ranks: a ring all-reduce of 2 x 725 x 724 > 2^20 transfers, past which a stored
  // schedule costs more than the stream's set-up.
  const Scenario large = load(two(725, R"(["a"])"));
  CHECK(streams_exactly(small));
  CHECK(streams_exactly(overlapping));  // played together, as stored
  // Overlapping collectives are held whole even streamed: no gain, however large.
  CHECK(!streaming_pays(load(two(725, "[]"))));
  CHECK(!streaming_pays(small));
  CHECK(streaming_pays(large));
  // A streamed record counts its ops per collective (its schedules hold none); a stored
  // one holds them. With files too: streamed where large (each op handed to them on a
  // second pass).
  const auto dir = temp_dir("auto-stream");
  RunRequest with_files;
  with_files.out = dir / "out";
  const RunRecord large_run = run_use_case(large, with_files);
  CHECK(std::filesystem::exists(dir / "out" / "report.html"));
  std::filesystem::remove_all(dir);
  REQUIRE(large_run.result);
  CHECK(large_run.result->streamed_ops.size() == 2);
  CHECK(large_run.result->schedules[0]->ops.empty());
  CHECK(large_run.result->op_count(0) == 2u * 725 * 724);
  CHECK(run_use_case(small, {}).result->streamed_ops.empty());
  CHECK(run_use_case(overlapping, {}).result->streamed_ops.empty());
  // Streamed on request: the same document and table as the stored run.
  RunRequest streamed;
  streamed.stream = true;
  const RunRecord small_streamed = run_use_case(small, streamed);
  CHECK(small_streamed.result->streamed_ops.size() == 2);
  const RunRecord small_stored = run_use_case(small, {});
  CHECK(run_document(small, small_stored) == run_document(small, small_streamed));
  CHECK(run_table(small, small_stored) == run_table(small, small_streamed));
  // Files of a small run: stored.
  CHECK(run_use_case(small, with_files).result->streamed_ops.empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("a streamed run's memory budget: what it holds when made and most of what is left") {
  const collsim::MemoryBudget budget;
  // On Linux /proc is there: a budget above what this process holds, not yet passed.
  CHECK(collsim::memory_available() > 0);
  CHECK(collsim::resident_bytes() > 0);
  CHECK(budget.budget() > collsim::resident_bytes());
  CHECK_FALSE(budget.over());
}
