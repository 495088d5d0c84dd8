// Chakra execution traces: the reader on ASTRA-sim's published microbenchmarks in
// data/chakra, and the mapping to a step graph on
// traces written here: compute, collectives per process group, send/recv pairs,
// data and control dependencies, and the errors a broken trace gets.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/json_view.h"
#include "helpers.h"
#include "scenario/scenario.h"
#include "simulate/run_workload.h"
#include "workload/chakra.h"

using namespace collsim;

namespace chakra_test {

namespace fs = std::filesystem;

// data/chakra/microbenchmarks/<op>/<K>npus_1MB/<op>: a published trace's file prefix.
fs::path published_prefix(const std::string& op, int ranks) {
  return test::data_file(fs::path("chakra") / "microbenchmarks" / op /
                         fmt::format("{}npus_1MB", ranks)) /
         op;
}

// A fresh folder under the build tree for written traces.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::path(COLLSIM_BINARY_DIR) / "chakra-test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

ChakraNode node(std::uint64_t id, ChakraNodeType type, std::vector<std::uint64_t> deps = {}) {
  ChakraNode n;
  n.id = id;
  n.type = static_cast<int>(type);
  n.name = fmt::format("n{}", id);
  n.data_deps = std::move(deps);
  return n;
}

ChakraNode compute(std::uint64_t id, std::uint64_t micros, std::vector<std::uint64_t> deps = {}) {
  ChakraNode n = node(id, ChakraNodeType::Compute, std::move(deps));
  n.duration_micros = micros;
  n.is_cpu_op = false;
  return n;
}

ChakraNode collective(std::uint64_t id, ChakraCommType type, std::int64_t bytes,
                      std::vector<std::uint64_t> deps = {}, std::optional<std::string> pg = {}) {
  ChakraNode n = node(id, ChakraNodeType::Collective, std::move(deps));
  n.comm_type = static_cast<int>(type);
  n.comm_size = bytes;
  n.pg_name = std::move(pg);
  return n;
}

ChakraNode send(std::uint64_t id, int dst, std::int64_t bytes, std::int64_t tag,
                std::vector<std::uint64_t> deps = {}) {
  ChakraNode n = node(id, ChakraNodeType::Send, std::move(deps));
  n.comm_dst = dst;
  n.comm_size = bytes;
  n.comm_tag = tag;
  return n;
}

ChakraNode recv(std::uint64_t id, int src, std::int64_t bytes, std::int64_t tag,
                std::vector<std::uint64_t> deps = {}) {
  ChakraNode n = node(id, ChakraNodeType::Recv, std::move(deps));
  n.comm_src = src;
  n.comm_size = bytes;
  n.comm_tag = tag;
  return n;
}

std::string graph_error(const std::vector<ChakraTrace>& traces, ChakraOptions options = {}) {
  try {
    chakra_step_graph(traces, options, "trace");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The task named `name`, which must exist.
const StepTask& task(const StepGraph& g, const std::string& name) {
  for (const auto& t : g.tasks)
    if (t.name == name) return t;
  FAIL("no task " << name);
  throw std::logic_error("unreachable");
}

std::int32_t index_of(const StepGraph& g, const std::string& name) {
  return static_cast<std::int32_t>(&task(g, name) - g.tasks.data());
}

// The positions of the named tasks, ascending (as `after` lists them).
std::vector<std::int32_t> indices(const StepGraph& g, const std::vector<std::string>& names) {
  std::vector<std::int32_t> out;
  for (const auto& n : names) out.push_back(index_of(g, n));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace chakra_test

using namespace chakra_test;

TEST_CASE("Chakra microbenchmarks: every rank file of every shared trace as ASTRA-sim wrote it",
          "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  for (const std::string op : {"all_reduce", "all_gather"})
    for (int K : {4, 8, 16}) {
      const fs::path prefix = published_prefix(op, K);
      INFO(prefix.string());
      const auto files = chakra_rank_files(prefix, 0);
      REQUIRE(files.size() == static_cast<std::size_t>(K));  // ranks found by the files present
      for (int r = 0; r < K; ++r) {
        const ChakraTrace t = read_chakra_file(files[r]);
        CHECK(t.version == "0.0.4");
        REQUIRE(t.nodes.size() == 1);
        const ChakraNode& n = t.nodes[0];
        CHECK(n.id == static_cast<std::uint64_t>(r));  // these files number the node by rank
        CHECK(n.name == fmt::format("{}_{}npus_1MB", op, K));
        CHECK(n.type == static_cast<int>(ChakraNodeType::Collective));
        CHECK(n.comm_type == (op == "all_reduce" ? 0 : 2));
        CHECK(n.comm_size == 1048576);
        CHECK(n.is_cpu_op == false);
        CHECK(n.data_deps.empty());
        CHECK(n.ctrl_deps.empty());
        CHECK(n.duration_micros == 0);
        CHECK_FALSE(n.pg_name);
      }
      // One collective over all K ranks; an all-gather's 1 MiB is each rank's share.
      const StepGraph g = read_chakra(prefix);
      REQUIRE(g.tasks.size() == 1);
      const StepTask& c = g.tasks[0];
      CHECK(c.kind == StepTaskKind::Collective);
      CHECK(c.after.empty());
      CHECK(c.ranks.size() == static_cast<std::size_t>(K));
      CHECK(c.ranks.back() == K - 1);
      CHECK(c.collective->shape.op ==
            (op == "all_reduce" ? CollectiveOp::AllReduce : CollectiveOp::AllGather));
      CHECK(c.collective->bytes == (op == "all_reduce" ? 1048576 : 1048576LL * K));
      CHECK(c.collective->shape.count == c.collective->bytes);  // bytes as u8 elements
      CHECK(c.collective->shape.ranks == K);
      CHECK(c.collective->algorithm.empty());

      ChakraOptions wrong;
      wrong.ranks = K / 2;  // files for ranks >= K/2 are there: refused
      CHECK_THROWS_WITH(read_chakra(prefix, wrong),
                        Catch::Contains(fmt::format("{}.{}.et is there but the trace should "
                                                    "have {} ranks",
                                                    op, K - 1, K / 2)));
    }
}

TEST_CASE("Chakra files: written and read back, framing checked, gaps and damage refused",
          "[chakra]") {
  if (!chakra_files_supported()) {
    CHECK_THROWS_WITH(read_chakra("nowhere/x"), Catch::Contains("built without protobuf"));
    return;
  }
  const fs::path dir = scratch("roundtrip");
  ChakraTrace t;
  t.version = "0.0.4";
  t.nodes = {compute(5, 30, {7}), collective(7, ChakraCommType::AllToAll, 4096, {}, "ep"),
             send(9, 1, 100, 3)};
  t.nodes[0].ctrl_deps = {9};
  t.nodes[1].involved_dim = {true, true};
  t.nodes[2].num_ops = 12;
  t.nodes[2].tensor_size = 34;
  write_chakra_file(dir / "w.0.et", t);
  const ChakraTrace back = read_chakra_file(dir / "w.0.et");
  CHECK(back.version == "0.0.4");
  REQUIRE(back.nodes.size() == 3);
  CHECK(back.nodes[0].id == 5);
  CHECK(back.nodes[0].duration_micros == 30);
  CHECK(back.nodes[0].data_deps == std::vector<std::uint64_t>{7});
  CHECK(back.nodes[0].ctrl_deps == std::vector<std::uint64_t>{9});
  CHECK(back.nodes[0].is_cpu_op == false);
  CHECK(back.nodes[1].comm_type == 6);
  CHECK(back.nodes[1].pg_name == "ep");
  CHECK(back.nodes[1].involved_dim == std::vector<bool>{true, true});
  CHECK(back.nodes[2].comm_dst == 1);
  CHECK(back.nodes[2].comm_tag == 3);
  CHECK(back.nodes[2].comm_size == 100);
  CHECK(back.nodes[2].num_ops == 12);
  CHECK(back.nodes[2].tensor_size == 34);
  CHECK_FALSE(back.nodes[2].comm_src);

  // The first message is the metadata, each one prefixed by its varint length: the
  // file starts with the metadata's length, then field 1 (version) as a string.
  {
    std::ifstream in(dir / "w.0.et", std::ios::binary);
    std::vector<unsigned char> head(4);
    in.read(reinterpret_cast<char*>(head.data()), 4);
    CHECK(head == std::vector<unsigned char>{7, 0x0a, 5, '0'});
  }

  // Cut inside the last node: damaged, naming which message.
  const auto size = fs::file_size(dir / "w.0.et");
  fs::copy_file(dir / "w.0.et", dir / "cut.0.et");
  fs::resize_file(dir / "cut.0.et", size - 3);
  CHECK_THROWS_WITH(read_chakra_file(dir / "cut.0.et"),
                    Catch::Contains("node message #3 (after 2 whole nodes) is damaged"));
  std::ofstream(dir / "empty.0.et").close();
  CHECK_THROWS_WITH(read_chakra_file(dir / "empty.0.et"), Catch::Contains("empty file"));

  // Ranks 0 and 2 without 1: a gap.
  write_chakra_file(dir / "w.2.et", t);
  CHECK_THROWS_WITH(chakra_rank_files(dir / "w", 0), Catch::Contains("w.1.et is missing"));
  CHECK_THROWS_WITH(chakra_rank_files(dir / "nothing", 0), Catch::Contains("no files"));
  // "w.02.et" and "w.x.et" are not rank files.
  fs::copy_file(dir / "w.0.et", dir / "w.02.et");
  fs::copy_file(dir / "w.0.et", dir / "w.x.et");
  fs::remove(dir / "w.2.et");
  CHECK(chakra_rank_files(dir / "w", 0).size() == 1);
}

TEST_CASE("Chakra step graph: compute, a collective joining ranks, send/recv as one transfer",
          "[chakra]") {
  // Two ranks: each computes, all-reduces its gradients, and rank 0 sends rank 1 an
  // activation that rank 1 needs before its last compute. Dependencies point forward
  // on rank 1 (allowed), one is a control dependency, one goes through a metadata node.
  ChakraTrace r0, r1;
  r0.nodes = {compute(1, 100), collective(2, ChakraCommType::AllReduce, 1 << 20, {1}),
              send(3, 1, 4096, 7, {1}), compute(4, 50, {2, 3})};
  r1.nodes = {compute(10, 40, {}), node(11, ChakraNodeType::Metadata, {10}),
              collective(12, ChakraCommType::AllReduce, 1 << 20, {11}), compute(14, 25, {13}),
              recv(13, 0, 4096, 7)};
  r1.nodes[3].ctrl_deps = {12};

  const StepGraph g = chakra_step_graph({r0, r1}, {}, "t");
  REQUIRE(g.tasks.size() == 6);  // 4 compute, 1 all-reduce, 1 transfer (metadata is no task)
  for (std::size_t i = 0; i < g.tasks.size(); ++i)
    for (auto a : g.tasks[i].after) CHECK(a < static_cast<std::int32_t>(i));

  const StepTask& c1 = task(g, "rank0.n1");
  CHECK(c1.kind == StepTaskKind::Compute);
  CHECK(c1.ranks == std::vector<int>{0});
  CHECK(c1.duration_s == Approx(100e-6));
  CHECK(c1.after.empty());

  const StepTask& ar = task(g, "n2");  // named after its first member
  CHECK(ar.kind == StepTaskKind::Collective);
  CHECK(ar.ranks == std::vector<int>{0, 1});
  CHECK(ar.collective->shape.op == CollectiveOp::AllReduce);
  CHECK(ar.collective->bytes == 1 << 20);
  // The union of both ranks' dependencies; rank 1's through the metadata node.
  CHECK(ar.after == indices(g, {"rank0.n1", "rank1.n10"}));

  const StepTask& p2p = task(g, "n3");
  CHECK(p2p.category == "p2p");
  CHECK(p2p.ranks == std::vector<int>{0, 1});
  CHECK(p2p.collective->shape.op == CollectiveOp::AllToAll);
  CHECK(p2p.collective->algorithm == "direct");
  REQUIRE(p2p.collective->shape.matrix);
  CHECK(*p2p.collective->shape.matrix == std::vector<std::int64_t>{0, 4096, 0, 0});  // 0 -> 1 only
  CHECK(p2p.after ==
        std::vector<std::int32_t>{index_of(g, "rank0.n1")});  // the recv waits on nothing

  CHECK(task(g, "rank0.n4").after == indices(g, {"n2", "n3"}));
  // Data dependency on the recv, control dependency on the all-reduce.
  CHECK(task(g, "rank1.n14").after == indices(g, {"n2", "n3"}));
  // Independent compute of one rank is not chained...
  CHECK(task(g, "rank1.n10").after.empty());

  // ...unless asked, as ASTRA-sim runs one compute node at a time.
  ChakraOptions serial;
  serial.serialize_compute = true;
  const StepGraph s = chakra_step_graph({r0, r1}, serial, "t");
  CHECK(task(s, "rank0.n4").after == indices(s, {"rank0.n1", "n2", "n3"}));
}

TEST_CASE("Chakra step graph: process groups, sizes, FLOPs and memory nodes", "[chakra]") {
  // Four ranks, two tensor-parallel pairs {0,1} and {2,3} named "tp0"/"tp1", and a
  // data-parallel all-gather over everyone.
  std::vector<ChakraTrace> t(4);
  for (int r = 0; r < 4; ++r) {
    const std::string pg = r < 2 ? "tp0" : "tp1";
    t[r].nodes = {collective(1, ChakraCommType::ReduceScatter, 1000, {}, pg),
                  collective(2, ChakraCommType::AllGather, 1000, {1})};
    t[r].nodes[0].name = "rs";
    t[r].nodes[1].name = "ag";
  }
  StepGraph g = chakra_step_graph(t, {}, "t");
  REQUIRE(g.tasks.size() == 3);
  CHECK(g.tasks[0].ranks == std::vector<int>{0, 1});  // inferred from who uses "tp0"
  CHECK(g.tasks[1].ranks == std::vector<int>{2, 3});
  CHECK(g.tasks[0].collective->shape.op == CollectiveOp::ReduceScatter);
  CHECK(g.tasks[0].collective->bytes == 1000);  // the whole input, as collsim's
  CHECK(g.tasks[2].collective->bytes == 4000);  // all-gather: 4 ranks x 1000
  CHECK(g.tasks[2].after == std::vector<std::int32_t>{0, 1});

  // An explicit group sets the algorithm's rank order.
  ChakraOptions o;
  o.process_groups = {{"tp1", {3, 2}}};
  o.algorithm = "ring";
  g = chakra_step_graph(t, o, "t");
  CHECK(g.tasks[1].ranks == std::vector<int>{3, 2});
  CHECK(g.tasks[1].collective->ranks == std::vector<int>{3, 2});
  CHECK(g.tasks[1].collective->algorithm == "ring");
  o.process_groups = {{"tp1", {0, 2, 3}}};  // rank 0 lists no tp1 collective
  CHECK_THAT(graph_error(t, o), Catch::Contains("but rank 0 issues fewer collectives in "
                                                "process group \"tp1\""));
  o.process_groups = {{"tp1", {2, 3, 3}}};
  CHECK_THAT(graph_error(t, o), Catch::Contains("names rank 3 twice"));

  // FLOPs: timed by peak x MFU; a duration, when there, wins.
  ChakraTrace c;
  c.nodes = {compute(1, 0), compute(2, 7)};
  c.nodes[0].num_ops = 4'000'000'000'000;
  c.nodes[1].num_ops = 1;
  CHECK_THAT(graph_error({c}), Catch::Contains("gives 4000000000000 FLOPs (num_ops) but no "
                                               "duration"));
  ChakraOptions flops;
  flops.peak_flops = 1e15;
  flops.mfu = 0.4;
  g = chakra_step_graph({c}, flops, "t");
  CHECK(g.tasks[0].duration_s == Approx(0.01));  // 4e12 / (1e15 x 0.4)
  CHECK(g.tasks[1].duration_s == Approx(7e-6));

  // Memory nodes: left out (dependencies pass through) unless a bandwidth times them.
  ChakraTrace m;
  m.nodes = {node(1, ChakraNodeType::MemLoad), compute(2, 10, {1})};
  m.nodes[0].tensor_size = 2'000'000;
  g = chakra_step_graph({m}, {}, "t");
  REQUIRE(g.tasks.size() == 1);
  CHECK(g.tasks[0].after.empty());
  ChakraOptions mem;
  mem.memory_bandwidth = 1e9;
  g = chakra_step_graph({m}, mem, "t");
  REQUIRE(g.tasks.size() == 2);
  CHECK(g.tasks[0].category == "memory");
  CHECK(g.tasks[0].duration_s == Approx(2e-3));
  CHECK(g.tasks[1].after == std::vector<std::int32_t>{0});

  // A comm size must be whole elements of the chosen dtype.
  ChakraOptions f32;
  f32.dtype = DType::F32;
  CHECK(graph_error(t, f32) == "no error");
  t[0].nodes[0].comm_size = t[1].nodes[0].comm_size = 1001;
  CHECK_THAT(graph_error(t, f32), Catch::Contains("1001 bytes is not a whole number of float32"));
  // An all-gather's size is each rank's part: whole elements too, though K of them are not
  // (6 bytes of float32 on 2 ranks was read as 12 bytes, 3 elements).
  std::vector<ChakraTrace> gather(2);
  for (int r = 0; r < 2; ++r) gather[r].nodes = {collective(1, ChakraCommType::AllGather, 6)};
  CHECK_THAT(graph_error(gather, f32), Catch::Contains("6 bytes is not a whole number of float32"));
}

TEST_CASE("Chakra step graph: broken traces are refused, naming rank and node", "[chakra]") {
  ChakraTrace a, b;
  // A send without its recv.
  a.nodes = {send(1, 1, 10, 0)};
  b.nodes = {compute(1, 1)};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("rank 0 node 1 (\"n1\") has no matching recv "
                                                  "on rank 1"));
  // Matched, but the sizes differ.
  b.nodes = {recv(1, 0, 11, 0)};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("comm_size differ (10 vs 11)"));
  // A different tag does not match.
  b.nodes = {recv(1, 0, 10, 1)};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("has no matching recv"));
  // Sending to oneself or outside the trace.
  a.nodes = {send(1, 0, 10, 0)};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("sends to rank 0: expected another rank"));
  // A send whose own end names another rank (accepted as rank 0's before).
  a.nodes = {send(1, 1, 10, 0)};
  a.nodes[0].comm_src = 1;
  b.nodes = {recv(1, 0, 10, 0)};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("with comm_src 1: expected 0 or none"));

  // Collectives in crossed orders with dependencies between them: a deadlock.
  a.nodes = {collective(1, ChakraCommType::AllReduce, 8, {}, "x"),
             collective(2, ChakraCommType::AllReduce, 8, {1}, "y")};
  b.nodes = {collective(1, ChakraCommType::AllReduce, 8, {}, "y"),
             collective(2, ChakraCommType::AllReduce, 8, {1}, "x")};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("the ranks' traces deadlock"));
  // The same collectives without those dependencies: nothing orders them, no deadlock.
  a.nodes[1].data_deps.clear();
  b.nodes[1].data_deps.clear();
  CHECK(chakra_step_graph({a, b}, {}, "t").tasks.size() == 2);
  // The k-th collectives of a group disagree.
  b.nodes = {collective(1, ChakraCommType::AllGather, 8, {}, "x"),
             collective(2, ChakraCommType::AllReduce, 8, {}, "y")};
  CHECK_THAT(graph_error({a, b}), Catch::Contains("the type or size differs (comm_type 2 vs 0"));
  // One rank issues fewer.
  a.nodes = {collective(1, ChakraCommType::AllReduce, 8),
             collective(2, ChakraCommType::AllReduce, 8)};
  b.nodes = {collective(2, ChakraCommType::AllReduce, 8)};
  CHECK_THAT(graph_error({a, b}),
             Catch::Contains("rank 0 node 2 (\"n2\") is a collective over ranks "
                             "0,1 but rank 1 issues fewer collectives in the "
                             "group of all ranks"));

  // Within one rank: a dangling dependency, a cycle, a duplicate id.
  a.nodes = {compute(1, 1, {9})};
  CHECK_THAT(graph_error({a}), Catch::Contains("rank 0 node 1 (\"n1\") depends on node 9, which "
                                               "rank 0's trace lacks"));
  a.nodes = {compute(1, 1, {2}), compute(2, 1, {1})};
  CHECK_THAT(graph_error({a}), Catch::Contains("is on a dependency cycle"));
  a.nodes = {compute(1, 1), compute(1, 1)};
  CHECK_THAT(graph_error({a}), Catch::Contains("two nodes have the id 1"));

  // What collsim does not read.
  a.nodes = {collective(1, ChakraCommType::Gather, 8)};
  CHECK_THAT(graph_error({a}), Catch::Contains("gather and scatter have no agreed size"));
  a.nodes = {collective(1, ChakraCommType::AllReduce, 8)};
  a.nodes[0].involved_dim = {true, false};
  CHECK_THAT(graph_error({a}), Catch::Contains("involved_dim"));
  a.nodes = {collective(1, ChakraCommType::AllReduce, 8)};
  a.nodes[0].comm_size.reset();
  CHECK_THAT(graph_error({a}), Catch::Contains("without a comm_size"));
  ChakraOptions bad;
  bad.mfu = 0;
  CHECK_THAT(graph_error({a}, bad), Catch::Contains("MFU must be in (0, 1]"));
}

namespace chakra_test {

// ASTRA-sim 2.0's analytical backend on the Ring_<K>npus networks with one chunk, 1 ns
// endpoint delay and unlimited local memory bandwidth, as data/README.md records them (ns).
struct Microbenchmark {
  std::string op;
  int ranks;
  double astra_sim_ns;
};
const Microbenchmark kMicrobenchmarks[] = {
    {"all_reduce", 4, 32299}, {"all_reduce", 8, 41189},  {"all_reduce", 16, 51631},
    {"all_gather", 4, 60097}, {"all_gather", 8, 140225}, {"all_gather", 16, 300481},
};

// The step of a scenario with this topology whose workload is the trace at `prefix`.
double step_of(const fs::path& prefix, const std::string& topology, const std::string& model) {
  const std::string text = R"({"topology": )" + topology + R"(, "network": {"model": ")" + model +
                           R"(", "alpha": "0us"}, "workload": {"chakra": ")" + prefix.string() +
                           R"(", "algorithm": "ring"}})";
  const Scenario scenario = parse_scenario(parse_json_text(text, "t.json"), ".");
  const WorkloadRun run = run_workloads(scenario);
  REQUIRE(run.jobs.size() == 1);
  return run.jobs[0].step_s;
}

}  // namespace chakra_test

TEST_CASE("Chakra microbenchmarks simulate to the ring closed form on ASTRA-sim's networks",
          "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  const double N = 1 << 20;  // comm_size: 1 MiB
  for (const auto& m : kMicrobenchmarks) {
    const fs::path prefix = published_prefix(m.op, m.ranks);
    INFO(m.op << " on " << m.ranks);
    const double K = m.ranks;
    // Ring_<K>npus: a ring of 50 GiB/s links (ASTRA-sim's "GB/s" are GiB/s), 500 ns each.
    const std::string ring = fmt::format(
        R"({{"preset": "ring", "gpus": {}, "bandwidth": "50GiB/s", "latency": "500ns"}})", m.ranks);
    const double beta = 50.0 * (1 << 30), L = 500e-9;
    // Ring all-reduce: 2(K-1) steps of N/K; all-gather: K-1 steps of one rank's N.
    const double closed =
        m.op == "all_reduce" ? 2 * (K - 1) * (L + N / (K * beta)) : (K - 1) * (L + N / beta);
    for (const char* model : {"ideal", "flow"}) {
      INFO(model);
      const double step = step_of(prefix, ring, model);
      CHECK(step == Approx(closed).epsilon(1e-6));
      // ASTRA-sim adds about 1 ns of endpoint delay per step: within 0.05%.
      CHECK(std::abs(step * 1e9 - m.astra_sim_ns) / m.astra_sim_ns < 5e-4);
    }
    if (m.ranks != 8) continue;
    // HGX-H100-validated: 8 NPUs on one switch, 400 GiB/s and 936.25 ns per link, so a
    // message crosses two links and pays two latencies.
    const std::string hgx =
        R"({"preset": "switch", "gpus": 8, "bandwidth": "400GiB/s", "latency": "936.25ns"})";
    const double hbeta = 400.0 * (1 << 30), hL = 2 * 936.25e-9;
    const double hclosed =
        m.op == "all_reduce" ? 2 * (K - 1) * (hL + N / (K * hbeta)) : (K - 1) * (hL + N / hbeta);
    CHECK(step_of(prefix, hgx, "flow") == Approx(hclosed).epsilon(1e-6));
  }
}

TEST_CASE("Chakra workload errors name the path", "[chakra]") {
  const std::string topo =
      R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "1GB/s"}, "workload": )";
  using collsim::test::error_of;
  CHECK_THAT(error_of(topo + R"({"chakra": "nowhere/x"}})"),
             Catch::Contains("workload.chakra: nowhere/x: expected a trace prefix DIR/NAME"));
  CHECK_THAT(
      error_of(topo + R"({"gradients": "1GB", "compute": "1ms", "serialize_compute": true}})"),
      Catch::Contains("workload.serialize_compute: only a workload with a \"chakra\" trace"));
  if (!chakra_files_supported()) return;  // the trace-reading half needs protobuf
  const fs::path prefix = published_prefix("all_reduce", 4);
  const std::string chakra = R"({"chakra": ")" + prefix.string() + "\"";
  CHECK_THAT(error_of(topo + chakra + R"(, "gradients": "1GB"}})"),
             Catch::Contains("workload.gradients: a Chakra trace gives every task of the step"));
  CHECK_THAT(error_of(topo + chakra + R"(, "ranks": [0, 1]}})"),
             Catch::Contains("workload.ranks: the Chakra trace has 4 ranks (one file each) but 2"));
}

TEST_CASE("the bundled Chakra scenario runs on the trace the repository holds", "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  // scenarios/chakra-all-reduce-ring8.json: ASTRA-sim's 8-NPU ring, 1 MiB all-reduce,
  // 2(K-1)(500 ns + 1 MiB/(8 x 50 GiB/s)) by the ring's closed form.
  const Scenario scenario =
      load_scenario(fs::path(COLLSIM_SOURCE_DIR) / "scenarios" / "chakra-all-reduce-ring8.json");
  const WorkloadRun run = run_workloads(scenario);
  REQUIRE(run.jobs.size() == 1);
  const double expected = 2 * 7 * (500e-9 + (1 << 20) / (8 * 50.0 * (1 << 30)));
  CHECK(run.jobs[0].step_s == Approx(expected).epsilon(1e-6));
}

TEST_CASE("a Chakra job's collectives take its NCCL lists, errors at the job's fields",
          "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  // ASTRA-sim's 8-NPU all-gather, 1 MiB, under NCCL held to the ring or to LL: what ran says
  // so. NCCL has no tree all-gather: the error names the job's "nccl_algo", not a node.
  const auto run = [](const std::string& lists) {
    const Scenario s = parse_scenario(
        nlohmann::json{{"topology", "dgx-h100"},
                       {"workload", nlohmann::json::parse(
                                        R"({"algorithm": "nccl", )" + lists + R"("chakra": ")" +
                                        published_prefix("all_gather", 8).string() + R"("})")}},
        ".");
    const WorkloadRun r = run_workloads(s);
    std::set<std::string> plans;
    for (const StepTaskOutcome& t : r.step.tasks)
      if (t.plan >= 0) plans.insert(r.step.plans.at(t.plan));
    return plans;
  };
  const std::set<std::string> ll = run(R"("nccl_proto": "ll", )");
  REQUIRE(ll.size() == 1);
  CHECK_THAT(*ll.begin(), Catch::StartsWith("nccl: ring/LL/"));
  CHECK_THAT(*run("").begin(), !Catch::StartsWith("nccl: ring/LL/"));
  CHECK_THROWS_WITH(run(R"("nccl_algo": "tree", )"),
                    Catch::StartsWith("workload.nccl_algo: NCCL has no algorithm and protocol for "
                                      "all_gather"));
}

namespace chakra_test {

// A trace file's bytes: each message prefixed by its length as a varint.
std::string varint(std::uint64_t x) {
  std::string out;
  for (; x >= 0x80; x >>= 7) out += static_cast<char>((x & 0x7f) | 0x80);
  return out + static_cast<char>(x);
}
std::string framed(const std::string& message) {
  return varint(message.size()) + message;
}
// Global metadata with version "0.0.4" (field 1, a string).
const std::string kMetadata = framed(std::string("\x0a\x05", 2) + "0.0.4");
// A node: id (field 1), type (field 3), data dependencies (field 5, packed).
std::string node_message(std::uint64_t id, int type, const std::vector<std::uint64_t>& deps = {}) {
  std::string m = "\x08" + varint(id) + "\x18" + varint(static_cast<std::uint64_t>(type));
  std::string packed;
  for (auto d : deps) packed += varint(d);
  if (!deps.empty()) m += "\x2a" + varint(packed.size()) + packed;
  return framed(m);
}

std::string parse_error(const std::string& bytes, ChakraBudget budget = {}) {
  try {
    parse_chakra_trace(bytes, "t.0.et", budget);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace chakra_test

TEST_CASE("Chakra bytes: nodes refused as they are read, within the trace's bounds", "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  const std::string two = kMetadata + node_message(1, 4) + node_message(2, 7, {1});
  ChakraBudget budget;
  const ChakraTrace t = parse_chakra_trace(two, "t.0.et", budget);
  REQUIRE(t.nodes.size() == 2);
  CHECK(t.nodes[1].data_deps == std::vector<std::uint64_t>{1});
  CHECK(budget.nodes == kMaxChakraNodes - 2);
  CHECK(budget.dependencies == kMaxChakraDependencies - 1);
  CHECK(budget.bytes == kMaxChakraBytes);  // bytes are the file reader's to spend

  // Zero bytes after the metadata are empty nodes: the first is refused, not kept.
  CHECK(parse_error(kMetadata + std::string(1000, '\0')) ==
        "t.0.et: node message #1 (after 0 whole nodes), node 0: type 0 (invalid: an empty or "
        "unset node) is not a Chakra node type: expected 1 (metadata) .. 10 (checkpoint)");
  CHECK_THAT(parse_error(two + node_message(3, 99)),
             Catch::Contains("node message #3 (after 2 whole nodes), node 3: type 99 is not a "
                             "Chakra node type"));
  // The budget is shared by a trace's files: what one took, the next cannot.
  ChakraBudget nearly;
  nearly.nodes = 1;
  CHECK(parse_error(two, nearly) ==
        "t.0.et: node message #2 (after 1 whole node): a trace may have at most 1048576 nodes, "
        "all ranks together");
  nearly = {};
  nearly.dependencies = 0;
  CHECK_THAT(parse_error(two, nearly),
             Catch::Contains("node message #2 (after 1 whole node), node 2: a trace may have at "
                             "most 16777216 dependencies"));
  // A message longer than what is left, or than 1 MiB, is refused before it is parsed.
  CHECK_THAT(parse_error(kMetadata + varint(50) + "\x08\x01"),
             Catch::Contains("node message #1 (after 0 whole nodes) is damaged or cut short: 50 "
                             "bytes long, 2 left in the file"));
  CHECK_THAT(parse_error(kMetadata + varint(std::uint64_t{1} << 21)),
             Catch::Contains("node message #1 (after 0 whole nodes) is 2097152 bytes long, more "
                             "than the 1048576 bytes"));
  CHECK_THAT(parse_error(varint(1 << 30)), Catch::Contains("the global metadata message is "));
  // A length past 32 bits is said whole (a 32-bit read kept its low bits: 2^64 - 1 was
  // reported as 4294967295).
  CHECK_THAT(parse_error(varint(~std::uint64_t{0})),
             Catch::Contains("is 18446744073709551615 bytes long"));
  CHECK_THAT(parse_error(kMetadata + "\xff\xff"), Catch::Contains("its length (a varint)"));
  // protobuf's own complaint is the error, not a second line on stderr.
  CHECK(parse_error(kMetadata + framed(std::string("\x12\x02\xff\xfe\x18\x04", 6))) ==
        "t.0.et: node message #1 (after 0 whole nodes) is damaged: String field "
        "'collsim.chakra.Node.name' contains invalid UTF-8 data when parsing a protocol buffer");
}

TEST_CASE("Chakra files: regular files only, ranks within 2^20", "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  const fs::path dir = scratch("special");
  ChakraTrace t;
  t.nodes = {compute(1, 5)};
  write_chakra_file(dir / "w.0.et", t);
  // A FIFO would block the reader, /dev/zero never ends: both refused before a read.
  REQUIRE(::mkfifo((dir / "w.1.et").c_str(), 0600) == 0);
  fs::create_symlink("/dev/zero", dir / "w.2.et");
  fs::create_directory(dir / "w.3.et");
  for (int r : {1, 2, 3})
    CHECK_THROWS_WITH(read_chakra_file(dir / fmt::format("w.{}.et", r)),
                      Catch::Contains("not a regular file (a FIFO, a device or a folder)"));
  CHECK_THROWS_WITH(read_chakra(dir / "w"), Catch::Contains("w.1.et: not a regular file"));
  // A symlink to a regular file is that file.
  fs::create_symlink(dir / "w.0.et", dir / "v.0.et");
  CHECK(read_chakra_file(dir / "v.0.et").nodes.size() == 1);
  // The bytes of all the files count against one budget.
  ChakraBudget budget;
  budget.bytes = static_cast<std::int64_t>(fs::file_size(dir / "w.0.et")) - 1;
  CHECK_THROWS_WITH(read_chakra_file(dir / "w.0.et", budget),
                    Catch::Contains("bytes: a trace's files may hold at most 1073741824 bytes"));
  budget.bytes += 1;
  read_chakra_file(dir / "w.0.et", budget);
  CHECK(budget.bytes == 0);

  // A rank of 2^20 or more, however many digits, is refused before any count is made.
  const fs::path big = scratch("big-rank");
  for (const std::string rank : {"2147483647", "1048576", "99999999999999999999999"}) {
    INFO(rank);
    std::ofstream(big / ("w." + rank + ".et")).close();
    CHECK_THROWS_WITH(chakra_rank_files(big / "w", 0),
                      Catch::Contains("w." + rank + ".et is past the 1048576 ranks a trace may "
                                      "have"));
    fs::remove(big / ("w." + rank + ".et"));
  }
  std::ofstream(big / "w.1048575.et").close();
  CHECK_THROWS_WITH(chakra_rank_files(big / "w", 0), Catch::Contains("w.0.et is missing"));
}

TEST_CASE("Chakra step graph: unknown types, negative counts and multiplying edges refused",
          "[chakra]") {
  ChakraTrace a;
  a.nodes = {compute(1, 1), node(2, static_cast<ChakraNodeType>(99), {1})};
  CHECK(graph_error({a}) ==
        "trace: rank 0 node 2 (\"n2\"): type 99 is not a Chakra node type: expected 1 "
        "(metadata) .. 10 (checkpoint)");
  a.nodes[1].type = 0;
  CHECK_THAT(graph_error({a}), Catch::Contains("rank 0 node 2 (\"n2\"): type 0 (invalid"));
  a.nodes = {compute(1, 0)};
  a.nodes[0].num_ops = -5;
  ChakraOptions h100;
  h100.peak_flops = 989e12;
  CHECK(graph_error({a}, h100) ==
        "trace: rank 0 node 1 (\"n1\") has num_ops -5: expected a FLOP count of at least 0");
  a.nodes = {node(1, ChakraNodeType::MemLoad)};
  a.nodes[0].tensor_size = -1;
  ChakraOptions memory;
  memory.memory_bandwidth = 1e9;
  CHECK_THAT(graph_error({a}, memory),
             Catch::Contains("has tensor_size -1: expected a byte count of at least 0"));

  // n compute nodes, each followed by a metadata node after it and the previous
  // metadata node: the k-th metadata node stands for k tasks, n^2/2 edges in all.
  const int n = 6000;
  a.nodes.clear();
  for (int k = 0; k < n; ++k) {
    a.nodes.push_back(compute(2 * k + 1, 1));
    std::vector<std::uint64_t> deps{static_cast<std::uint64_t>(2 * k + 1)};
    if (k > 0) deps.push_back(2 * k);
    a.nodes.push_back(node(2 * k + 2, ChakraNodeType::Metadata, deps));
  }
  CHECK_THAT(graph_error({a}),
             Catch::Contains("the dependencies between tasks pass 16777216 edges, through nodes "
                             "that are no task"));
  a.nodes.resize(2000);  // 1000 of each: 500,000 edges
  CHECK(chakra_step_graph({a}, {}, "t").tasks.size() == 1000);

  // A collective some member issues fewer of is refused as it is placed, its group
  // named in 16 ranks at most.
  std::vector<ChakraTrace> many(40);
  for (auto& t : many) t.nodes = {collective(1, ChakraCommType::AllReduce, 8)};
  many[0].nodes.push_back(collective(2, ChakraCommType::AllReduce, 8, {1}));
  CHECK(graph_error(many) ==
        "trace: rank 0 node 2 (\"n2\") is a collective over ranks "
        "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,... (40 ranks) but rank 1 issues fewer "
        "collectives in the group of all ranks");
}

TEST_CASE("a Chakra trace's one-GPU step is each rank's work as it ran, overlaps once",
          "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  // Two ranks, each with three independent 10 us kernels, which run at once: the step is
  // 10 us, and one GPU doing both ranks' work as they ran it takes 20 us. Summing the
  // kernels' durations gave 60 us: 6x over one GPU on two, 300% efficient.
  using namespace chakra_test;
  const fs::path dir = scratch("overlap");
  for (int r = 0; r < 2; ++r) {
    ChakraTrace t;
    t.nodes = {compute(1, 10), compute(2, 10), compute(3, 10)};
    write_chakra_file(dir / fmt::format("par.{}.et", r), t);
  }
  const Scenario s = parse_scenario(
      nlohmann::json{{"topology", {{"preset", "switch"}, {"gpus", 2}, {"bandwidth", "100GB/s"}}},
                     {"workload", {{"chakra", (dir / "par").string()}}}},
      ".");
  const WorkloadRun run = run_workloads(s);
  REQUIRE(run.jobs.size() == 1);
  CHECK(run.jobs[0].step_s == Approx(10e-6));
  CHECK(run.jobs[0].facts.one_gpu_step_s == Approx(20e-6));
  CHECK(run.jobs[0].scaling_efficiency == Approx(1.0));
}

namespace chakra_test {

// A varint at `at`, which moves past it.
std::uint64_t read_varint(const std::string& s, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(s.at(at++));
    v |= std::uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return v;
  }
}

}  // namespace chakra_test

TEST_CASE("Chakra: an attribute collsim reads, given twice in a node, is refused", "[chakra]") {
  if (!chakra_files_supported()) COLLSIM_SKIP_TEST("collsim was built without protobuf");
  // A second comm_size attribute on the file's one node (Node.attr = 10; Attribute.name = 1,
  // int64_val = 9): the last one won, 1 KiB for the 1 MiB the first said.
  using namespace chakra_test;
  const fs::path file = scratch("twice") / "t.0.et";
  ChakraTrace t;
  t.nodes = {collective(1, ChakraCommType::AllReduce, 1 << 20)};
  write_chakra_file(file, t);
  std::string bytes = test::slurp(file);
  std::size_t at = 0;
  at += read_varint(bytes, at);  // the metadata
  const std::size_t node_at = at;
  const std::uint64_t node_size = read_varint(bytes, at);
  std::string node = bytes.substr(at, node_size);
  const std::string attribute =
      std::string("\x0a") + varint(9) + "comm_size" + "\x48" + varint(1024);
  node += "\x52" + varint(attribute.size()) + attribute;
  bytes = bytes.substr(0, node_at) + framed(node);
  std::ofstream(file, std::ios::binary) << bytes;
  CHECK_THROWS_WITH(read_chakra_file(file), Catch::Contains("attribute \"comm_size\" given twice"));
}
