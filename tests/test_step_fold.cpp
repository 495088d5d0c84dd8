// A training step folded by its data-parallel replicas (simulate/step_fold.h) is the step
// run whole, bit for bit: every task's times, every link's and GPU's counters, the
// transfers. Where the step or the network is not mapped onto itself by a turn of the
// replicas (one task's time, one dependency, one slow link), nothing is folded.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "helpers.h"
#include "same_traffic.h"
#include "scenario/scenario.h"
#include "simulate/run_step.h"
#include "simulate/step_fold.h"
#include "workload/step_graph.h"
#include "workload/workload.h"

using namespace collsim;
using namespace collsim::test;

namespace step_fold_test {

Scenario scenario(const std::string& text) {
  return parse_scenario(parse_json_text(text, "s.json"), ".");
}

StepGraph graph_of(const Scenario& s) {
  StepGraphBuilder b;
  build_workload(s.workloads.front(), b);
  return b.take();
}

void require_same_step(const StepResult& full, const StepResult& folded) {
  REQUIRE(folded.tasks.size() == full.tasks.size());
  CHECK(folded.step_s == full.step_s);
  CHECK(folded.plans == full.plans);
  int differ = 0;
  for (std::size_t i = 0; i < full.tasks.size(); ++i) {
    const TaskTiming &a = full.sim.tasks[i], &b = folded.sim.tasks[i];
    const bool same = a.start == b.start && a.end == b.end && a.ops_start == b.ops_start &&
                      a.ops_end == b.ops_end && full.tasks[i].plan == folded.tasks[i].plan &&
                      full.tasks[i].held_by == folded.tasks[i].held_by;
    if (!same && differ++ < 3)
      FAIL_CHECK(
          fmt::format("task {}: start {} / {}, end {} / {}", i, a.start, b.start, a.end, b.end));
  }
  CHECK(differ == 0);
  require_same_traffic(full.sim, folded.sim);
}

// A small dense model: 4 layers, hidden 1024, so a step is thousands of tasks, not millions.
// `more`: more of the parallelism, after micro_batches; `algorithm`: every collective's.
std::string job(int dp, int tp, int pp, const std::string& more,
                const std::string& algorithm = "") {
  return fmt::format(
      R"({{"model": {{"layers": 4, "hidden": 1024, "vocab": 32000, "sequence": 1024}},
    "gpu": "h100", "mfu": 0.5, "tokens_per_gpu": 2048, "bucket": "8MiB", {}
    "parallelism": {{"dp": {}, "tp": {}, "pp": {}, "micro_batches": 4 {}}}}})",
      algorithm.empty() ? "" : fmt::format(R"("algorithm": "{}",)", algorithm), dp, tp, pp, more);
}

// The step whole and folded; the fold's replicas played, 0 where it did not fold.
int check_fold(const Scenario& s, std::string& why) {
  const StepGraph g = graph_of(s);
  const StepResult full = simulate_step(s, g);
  const auto folded = simulate_step_folded(s, g, replica_turn(s.workloads.front()), why);
  if (!folded) return 0;
  INFO("folded by " << folded->played << " of " << folded->replicas);
  require_same_step(full, folded->result);
  return folded->played;
}

}  // namespace step_fold_test

using namespace step_fold_test;

TEST_CASE("a step folded by its replicas is the step run whole, bit for bit", "[step_fold]") {
  struct Case {
    const char* topology;
    int dp, tp, pp;
    const char* parallelism;  // more of it, after micro_batches
    const char* model;        // the network model[, its routing]
    int played;               // the replicas the fold plays; 0: none
    const char* algorithm = "";
  };
  const Case cases[] = {
      // A replica per server, rail leaves of 4 servers: the turn of a leaf's servers.
      {R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 4, "radix": 8})", 8, 4, 1, "", "flow",
       4},
      // Replicas of two pipeline stages: 3D parallelism, 1F1B and ZeRO-1 gradients.
      {R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 4, "radix": 8})", 4, 4, 2,
       R"(, "pipeline": "1f1b", "zero": 1, "sequence_parallel": true)", "flow", 2},
      {R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 4, "radix": 8})", 4, 4, 2,
       R"(, "pipeline": "gpipe")", "ideal", 2},
      {R"({"preset": "cluster", "nodes": 8, "gpus_per_node": 4, "radix": 8})", 4, 4, 2,
       R"(, "pipeline": "interleaved", "virtual_stages": 2, "zero": 1)", "flow", 2},
      // Four replicas on one switch, every collective a ring: one played. Three do not fold:
      // a gradient bucket does not split into three equal chunks, so no turn of the ring
      // maps its ops onto one another.
      {R"({"preset": "switch", "gpus": 16, "bandwidth": "450GB/s"})", 4, 2, 2, "", "flow", 1,
       "ring"},
      {R"({"preset": "switch", "gpus": 12, "bandwidth": "450GB/s"})", 3, 2, 2, "", "flow", 0,
       "ring"},
      // Replicas spread over two spines, D-mod-k routing: a turn of two servers (not of
      // one, whose routes cross the spine where the turned ones do not).
      {R"({"preset": "cluster", "nodes": 16, "gpus_per_node": 2, "radix": 8, "spines": 2})", 8, 2,
       2, R"(, "zero": 1)", "flow, dmodk", 2},
  };
  for (const Case& c : cases) {
    const std::string model = c.model;
    const auto comma = model.find(", ");
    const std::string network = comma == std::string::npos
                                    ? fmt::format(R"({{"model": "{}"}})", model)
                                    : fmt::format(R"({{"model": "{}", "routing": "{}"}})",
                                                  model.substr(0, comma), model.substr(comma + 2));
    const std::string text =
        fmt::format(R"({{"topology": {}, "network": {}, "workload": {}}})", c.topology, network,
                    job(c.dp, c.tp, c.pp, c.parallelism, c.algorithm));
    INFO(text);
    std::string why;
    const int played = check_fold(scenario(text), why);
    INFO(why);
    CHECK(played == c.played);
  }
  // The minimal form: every rank a replica; NCCL's LL128 costs. (NCCL's own pick here is
  // NVLS, whose switch ops act on fixed groups of ranks: no turn folds them.)
  const Scenario ddp = scenario(R"({"topology": {"preset": "dgx-h100"},
      "workload": {"gradients": "256MiB", "compute": "10ms", "bucket": "32MiB",
                   "algorithm": "ring", "protocol": "LL128"}})");
  std::string why;
  const int played = check_fold(ddp, why);
  INFO(why);
  CHECK(played == 1);
}

TEST_CASE("a step a turn of its replicas does not map onto itself is not folded", "[step_fold]") {
  const Scenario s = scenario(fmt::format(
      R"({{"topology": {{"preset": "cluster", "nodes": 4, "gpus_per_node": 4, "radix": 8}},
          "network": {{"model": "flow"}}, "workload": {}}})",
      job(4, 4, 1, R"(, "zero": 1)")));
  const ReplicaTurn turn = replica_turn(s.workloads.front());
  REQUIRE(turn.replicas == 4);
  std::string why;
  {
    const StepGraph g = graph_of(s);
    REQUIRE(simulate_step_folded(s, g, turn, why));
  }
  // A stage's compute (on every replica) without the last GPU.
  {
    StepGraph g = graph_of(s);
    for (StepTask& t : g.tasks)
      if (t.kind == StepTaskKind::Compute) {
        t.ranks.pop_back();
        break;
      }
    CHECK_FALSE(simulate_step_folded(s, g, turn, why));
    CHECK_THAT(why, Catch::Contains("spans 4 of the 4 replicas") ||
                        Catch::Contains("not turned onto itself"));
  }
  // One tensor-parallel exchange of the last replica counted as another kind.
  {
    StepGraph g = graph_of(s);
    for (StepTask& t : g.tasks)
      if (t.kind == StepTaskKind::Collective && turn.replica[t.ranks.front()] == 3 &&
          t.category == "tp") {
        t.category = "ep";
        break;
      }
    CHECK_FALSE(simulate_step_folded(s, g, turn, why));
    CHECK_THAT(why, Catch::Contains("differ"));
  }
  // One collective of the last replica waits on nothing.
  {
    StepGraph g = graph_of(s);
    for (StepTask& t : g.tasks)
      if (t.kind == StepTaskKind::Collective && !t.after.empty() && t.ranks.size() > 1 &&
          turn.replica[t.ranks.front()] == 3 && turn.replica[t.ranks.back()] == 3) {
        t.after.clear();
        break;
      }
    CHECK_FALSE(simulate_step_folded(s, g, turn, why));
    CHECK_THAT(why, Catch::Contains("waits on"));
  }
  // One NIC of the last server slower.
  {
    Scenario slow = s;
    const NodeId gpu = slow.topology.gpu_of_rank(15);
    for (LinkId l = 0; l < static_cast<LinkId>(slow.topology.links().size()); ++l)
      if (slow.topology.link(l).src == gpu && slow.topology.link(l).kind == LinkKind::Pcie)
        slow.topology.set_bandwidth(l, slow.topology.link(l).bandwidth / 2);
    const StepGraph g = graph_of(slow);
    CHECK_FALSE(simulate_step_folded(slow, g, turn, why));
    CHECK_THAT(why, Catch::Contains("differ"));
  }
  // The packet model is folded by turns of one rank only.
  {
    Scenario packet = s;
    packet.network.model = NetworkModelKind::Packet;
    const StepGraph g = graph_of(packet);
    CHECK_FALSE(simulate_step_folded(packet, g, turn, why));
    CHECK_THAT(why, Catch::Contains("packet"));
  }
}

TEST_CASE("run folds by itself a step whose ops reach what a fold pays from", "[step_fold]") {
  // DDP over 128 servers of one GPU: with 4 GiB of gradients in 4 MiB buckets, over 2^24
  // ops under flow, folded by the run itself (a leaf's 4 servers played), with a note; with
  // 64 MiB not, unless asked. (The fold is the whole run: the cases above.) Many ranks and
  // few buckets: 2^24 ops with the fewest played (as a collsim run 0.23 s, where 32
  // servers and 64 GiB took 0.95 s).
  const auto with = [](const char* gradients) {
    return scenario(fmt::format(
        R"({{"topology": {{"preset": "cluster", "nodes": 128, "gpus_per_node": 1, "radix": 8}},
            "network": {{"model": "flow"}},
            "workload": {{"gradients": "{}", "compute": "100ms", "bucket": "4MiB",
                          "algorithm": "ring"}}}})",
        gradients));
  };
  const Scenario big = with("4GiB"), small = with("64MiB");
  REQUIRE(static_cast<double>(workload_size(big.workloads.front()).ops) >= (1 << 24));
  REQUIRE(static_cast<double>(workload_size(small.workloads.front()).ops) < (1 << 24));
  CHECK(run_workloads(big, StepFold::Pays).fold_note == "folded: 128 replicas alike, 4 played");
  CHECK(run_workloads(small, StepFold::Pays).fold_note.empty());
  CHECK(run_workloads(small, StepFold::Always).fold_note == "folded: 128 replicas alike, 4 played");
  CHECK(run_workloads(small, StepFold::Never).fold_note.empty());
}

TEST_CASE("a collective whose ranks are listed in a stride folds by the gcd of its turn",
          "[step_fold]") {
  // DDP on 8 GPUs of one switch, each GPU a replica, the buckets' ring all-reduces listing
  // their ranks 0, 3, 6, 1, 4, 7, 2, 5: a turn of the replicas (rank i to i + 1) moves each
  // rank 3 places along the ring. The turns are then the ring's 8 rotations, as for a list
  // in order: folded by one rank, the whole run's figures. Listed 0, 2, 4, 6, 1, 3, 5, 7
  // (a turn moves each rank by 4, or 4 + 1: no rotation), it is not folded.
  const Scenario s = scenario(
      R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "100GB/s"},
          "network": {"model": "flow"},
          "workload": {"gradients": "256MiB", "compute": "1ms", "bucket": "64MiB",
                       "algorithm": "ring"}})");
  const ReplicaTurn turn = replica_turn(s.workloads.front());
  REQUIRE(turn.replicas == 8);
  const auto listed = [&](const std::vector<int>& order) {
    StepGraph g = graph_of(s);
    int collectives = 0;
    for (StepTask& t : g.tasks)
      if (t.kind == StepTaskKind::Collective) {
        t.ranks = order;
        ++collectives;
      }
    CHECK(collectives == 4);
    return g;
  };
  const StepGraph stride = listed({0, 3, 6, 1, 4, 7, 2, 5});
  std::string why;
  const auto folded = simulate_step_folded(s, stride, turn, why);
  INFO(why);
  REQUIRE(folded);
  CHECK(folded->played == 1);
  require_same_step(simulate_step(s, stride), folded->result);
  CHECK_FALSE(simulate_step_folded(s, listed({0, 2, 4, 6, 1, 3, 5, 7}), turn, why));
  CHECK_THAT(why, Catch::Contains("no rotation"));
}

TEST_CASE("a fold keeps the order in which a step lists its tasks, as each replica sees it",
          "[step_fold]") {
  // Two replicas of two GPUs on one switch: each replica's compute X, and a compute C on
  // every GPU. Listed X0, X1, C, every replica sees X before C: folded, the whole run's
  // figures. Listed X0, C, X1, replica 0 sees X first and replica 1 C first: where tasks
  // become ready at one instant, that order is the order their first events run in. (The
  // scenario's one collective makes it a valid file; the step graph here is built by hand.)
  const Scenario s =
      scenario(R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "50GB/s"},
                                  "network": {"model": "flow"},
                                  "collectives": [{"name": "a", "op": "all_reduce", "bytes": 4}]})");
  ReplicaTurn turn;
  turn.replicas = 2;
  turn.next = {2, 3, 0, 1};
  turn.replica = {0, 0, 1, 1};
  const auto compute = [](const char* name, std::vector<int> ranks) {
    StepTask t;
    t.name = name;
    t.category = "compute";
    t.ranks = std::move(ranks);
    t.duration_s = 1e-3;
    return t;
  };
  StepGraph in_order;
  in_order.tasks = {compute("x0", {0, 1}), compute("x1", {2, 3}), compute("c", {0, 1, 2, 3})};
  std::string why;
  const auto folded = simulate_step_folded(s, in_order, turn, why);
  REQUIRE(folded);
  CHECK(folded->played == 1);
  require_same_step(simulate_step(s, in_order), folded->result);
  StepGraph mixed;
  mixed.tasks = {compute("x0", {0, 1}), compute("c", {0, 1, 2, 3}), compute("x1", {2, 3})};
  CHECK_FALSE(simulate_step_folded(s, mixed, turn, why));
  CHECK_THAT(why, Catch::Contains("comes after more tasks of some"));
  // A negative time the whole run refuses: not folded either (the whole run then says why).
  StepGraph negative = in_order;
  negative.tasks[2].duration_s = -1;
  CHECK_FALSE(simulate_step_folded(s, negative, turn, why));
  CHECK_THAT(why, Catch::Contains("negative compute time"));
  // A turn that does not take each replica to the next.
  ReplicaTurn wrong = turn;
  wrong.next = {1, 0, 3, 2};
  CHECK_FALSE(simulate_step_folded(s, in_order, wrong, why));
  CHECK_THAT(why, Catch::Contains("does not take rank 0 to the next replica"));
}

TEST_CASE("a ring in unequal chunks is not folded, and its full schedule is not read to say so",
          "[step_fold]") {
  // The ring's own fold refuses unequal chunks: no turn maps them onto each other. Reading
  // the full schedule to find that out (at every group size) made a 2,944-GPU step's default
  // run 50 s where the whole step took 9.
  const Scenario s = step_fold_test::scenario(
      R"({"topology": {"preset": "switch", "gpus": 16, "bandwidth": "100GB/s"},
          "network": {"model": "flow"},
          "workload": {"gradients": "1000002B", "compute": "1ms", "bucket": null,
                       "algorithm": "ring"}})");
  const ReplicaTurn turn = replica_turn(s.workloads.front());
  REQUIRE(turn.replicas == 16);
  std::string why;
  const StepGraph g = step_fold_test::graph_of(s);
  CHECK_FALSE(simulate_step_folded(s, g, turn, why));
  CHECK_THAT(why, Catch::Contains("ring is folded only where a turn"));
  // In equal chunks it folds, and times the step as the whole run does.
  const Scenario even = step_fold_test::scenario(
      R"({"topology": {"preset": "switch", "gpus": 16, "bandwidth": "100GB/s"},
          "network": {"model": "flow"},
          "workload": {"gradients": "1048576B", "compute": "1ms", "bucket": null,
                       "algorithm": "ring"}})");
  const StepGraph ge = step_fold_test::graph_of(even);
  const auto folded = simulate_step_folded(even, ge, replica_turn(even.workloads.front()), why);
  INFO(why);
  REQUIRE(folded);
  step_fold_test::require_same_step(simulate_step(even, ge), folded->result);
}
