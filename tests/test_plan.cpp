// The plan: every choice settled once, the same schedule for every consumer.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_view.h"
#include "plan/plan.h"
#include "plan/plan_report.h"
#include "replay/verify.h"
#include "scenario/scenario.h"
#include "simulate/run_scenario.h"
#include "simulate/simulated_plan.h"
#include "topology/routing.h"

using namespace collsim;

namespace {

Scenario scenario_of(const std::string& text) {
  return parse_scenario(parse_json_text(text, "test.json"), COLLSIM_SOURCE_DIR "/scenarios");
}

std::string plan_error_of(
    const std::string& collective,
    const std::string& topology = R"({"preset": "switch", "gpus": 8, "bandwidth": "10GB/s"})") {
  try {
    make_plan(
        scenario_of(R"({"topology": )" + topology + R"(, "collectives": [)" + collective + "]}"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

bool same_ops(const Schedule& a, const Schedule& b) {
  if (a.size() != b.size() || a.deps != b.deps || a.dep_begin != b.dep_begin) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    if (x.src_rank != y.src_rank || x.dst_rank != y.dst_rank || x.src_offset != y.src_offset ||
        x.dst_offset != y.dst_offset || x.count != y.count || x.kind != y.kind ||
        x.step != y.step || x.src_buffer != y.src_buffer || x.dst_buffer != y.dst_buffer ||
        x.channel != y.channel)
      return false;
  }
  return true;
}

std::vector<int> level_sizes(const CollectiveSpec& c) {
  std::vector<int> out;
  for (const auto& l : c.options.levels) out.push_back(l.size);
  return out;
}

}  // namespace

TEST_CASE("the plan settles hierarchical levels from the hosts, and run times that schedule") {
  // 8 servers of 8 GPUs: 2 levels of 8, 28 steps -- not the 126-step flat ring.
  const Scenario s = scenario_of(R"({"topology": "cluster-8x8", "network": {"alpha": "5us"},
    "collectives": [{"op": "all_reduce", "algorithm": "hierarchical", "bytes": "1KiB"}]})");
  const Plan plan = make_plan(s);
  const PlannedCollective& c = plan.collectives[0];
  CHECK(level_sizes(c.spec) == std::vector<int>{8, 8});
  CHECK(c.schedule->num_steps == 2 * 7 + 2 * 7);
  CHECK(c.label() == "hierarchical [8 ring | 8 ring]");
  CHECK(verify_exact(*c.schedule, 3).ok());
  const ScenarioResult r = run_scenario(s);
  CHECK(same_ops(*r.schedules[0], *c.schedule));
  CHECK(r.digests[0] == c.digest);
  CHECK(schedule_digest(*r.schedules[0]) == c.digest);
}

TEST_CASE("planning twice gives the same schedules and a one-op change changes the digest") {
  const Scenario s = load_scenario(COLLSIM_SOURCE_DIR "/scenarios/plan-choices.json");
  const Plan a = make_plan(s), b = make_plan(s);
  REQUIRE(a.collectives.size() == b.collectives.size());
  for (std::size_t i = 0; i < a.collectives.size(); ++i) {
    CHECK(a.collectives[i].digest == b.collectives[i].digest);
    CHECK(a.collectives[i].label() == b.collectives[i].label());
  }
  Schedule changed = *a.collectives[0].schedule;
  changed.ops.back().count -= 1;
  CHECK(schedule_digest(changed) != a.collectives[0].digest);
  changed = *a.collectives[0].schedule;
  std::swap(changed.ops.front().src_rank, changed.ops.front().dst_rank);
  CHECK(schedule_digest(changed) != a.collectives[0].digest);
}

TEST_CASE("auto and segments auto inside a level are settled by the tuner's cost") {
  const Scenario s = load_scenario(COLLSIM_SOURCE_DIR "/scenarios/plan-choices.json");
  const Plan plan = make_plan(s);
  for (const auto& c : plan.collectives) {
    INFO(c.spec.name);
    CHECK(c.spec.algorithm != "auto");
    CHECK_FALSE(c.spec.options.auto_segments);
    for (const auto& l : c.spec.options.levels) CHECK_FALSE(l.options.auto_segments);
    CHECK(verify_exact(*c.schedule, 11).ok());
  }
  const PlannedCollective* top = plan.find("tree-on-top");
  REQUIRE(top);
  REQUIRE(top->choice);
  CHECK(top->spec.options.levels.back().algorithm == "double_binary_tree");
  CHECK(top->choice->candidates_tried > 5);  // several segment counts at the outermost level
  REQUIRE(top->choice->runner_up);
  CHECK(top->choice->chosen.time_s <= top->choice->runner_up->time_s);

  // The cost is a policy handed to the planner: one that counts transfers picks the
  // algorithm with the fewest, whatever the network says.
  Router router(s.topology, s.network.routing);
  const Plan fewest =
      make_plan(s, router, [](const PlannedCollective& c) { return double(c.schedule->size()); });
  const PlannedCollective* small = fewest.find("auto-small");
  REQUIRE(small);
  for (const auto& name : algorithms_for(CollectiveOp::AllReduce)) {
    if (name == small->spec.algorithm) continue;
    CollectiveSpec other = small->spec;
    other.algorithm = name;
    other.options = {};
    if (name == "hierarchical") other.options.levels = {{2, "ring", {}}, {2, "ring", {}}};
    INFO(name);
    CHECK(generate_schedule(other).size() >= small->schedule->size());
  }
}

TEST_CASE("segments auto leaves out counts whose schedules could pass 2^22 ops") {
  // 1 Mi elements on 64 ranks: powers of two from 1 to 65536 are 17 counts. Both run in
  // a pipeline's lanes, bounded by 4 K S ops: up to S = 16384 within 2^22, 15 counts. The
  // cost here prefers more ops, so the most segments tried is the one chosen.
  const Scenario s = scenario_of(
      R"({"topology": {"preset": "switch", "gpus": 64, "bandwidth": "100GB/s"},
          "network": {"model": "ideal"}, "collectives": [
          {"name": "tree", "op": "all_reduce", "algorithm": "binomial_tree", "bytes": "4MiB",
           "segments": "auto"},
          {"name": "chain", "op": "broadcast", "algorithm": "ring", "bytes": "4MiB",
           "segments": "auto"}]})");
  Router router(s.topology, s.network.routing);
  const Plan plan =
      make_plan(s, router, [](const PlannedCollective& c) { return -double(c.schedule->size()); });
  for (const auto& [name, most] : {std::pair{"tree", 16384}, {"chain", 16384}}) {
    const PlannedCollective* c = plan.find(name);
    REQUIRE(c);
    REQUIRE(c->choice);
    INFO(name);
    CHECK(c->choice->candidates_tried == 15);
    CHECK(c->spec.options.segments == most);
  }
}

TEST_CASE("each algorithm takes its own options, and so does each hierarchy level") {
  CHECK(plan_error_of(R"({"op": "all_reduce", "algorithm": "ring", "bytes": 64, "segments": 4})") ==
        "collectives[0].segments: the ring algorithm takes no \"segments\"; binomial_tree, "
        "double_binary_tree, nccl_tree, hierarchical, nvls, nvls_tree, collnet_direct, "
        "collnet_chain do");
  CHECK(plan_error_of(R"({"op": "all_reduce", "algorithm": "auto", "bytes": 64, "segmnts": 4})") ==
        "collectives[0].segmnts: unknown field; did you mean \"segments\"?");
  CHECK(plan_error_of(R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 64,
        "levels": [{"size": 4, "segments": 2}, {"size": 2}]})") ==
        "collectives[0].levels[0].segments: unknown field; known fields: size, algorithm, "
        "channels");
  CHECK(plan_error_of(R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 64,
        "levels": [{"size": 4}, {"size": 2, "algorithm": "naive"}]})") ==
        "collectives[0].levels[1].algorithm: the outermost level all-reduces across groups: "
        "\"naive\" cannot; one of ring, binomial_tree, double_binary_tree, halving_doubling can");
  CHECK(plan_error_of(R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 64,
        "levels": [{"size": 4}, {"size": 2, "algorithm": "binomial_tree", "segments": 0}]})") ==
        "collectives[0].levels[1].segments: expected an integer in 1..1048576, got 0");
  CHECK(
      plan_error_of(R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 64, "segments": 4,
        "levels": [{"size": 4}, {"size": 2}]})") ==
      "collectives[0].segments: segments apply to the outermost level, whose algorithm "
      "\"ring\" is not pipelined");
  // A level takes its algorithm's options; the collective's segments go to the outermost.
  const Plan plan =
      make_plan(scenario_of(R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "10GB/s"},
    "collectives": [{"op": "all_reduce", "algorithm": "hierarchical", "bytes": "64KiB",
      "levels": [{"size": 4}, {"size": 2, "algorithm": "binomial_tree", "segments": 3}]},
     {"op": "all_reduce", "algorithm": "hierarchical", "bytes": "64KiB", "segments": 5,
      "levels": [{"size": 2}, {"size": 4, "algorithm": "double_binary_tree"}]}]})"));
  CHECK(plan.collectives[0].label() == "hierarchical [4 ring | 2 binomial_tree (3 segments)]");
  CHECK(plan.collectives[1].label() == "hierarchical [2 ring | 4 double_binary_tree (5 segments)]");
  for (const auto& c : plan.collectives) CHECK(verify_exact(*c.schedule, 2).ok());
}

TEST_CASE("auto skips what cannot apply and says why when nothing can") {
  // Hosts of unequal size: hierarchical cannot take its levels from them, the others run.
  const std::string uneven = R"({"nodes": [
      {"name": "g0", "kind": "gpu", "host": 0}, {"name": "g1", "kind": "gpu", "host": 0},
      {"name": "g2", "kind": "gpu", "host": 1}, {"name": "sw", "kind": "switch"}],
    "links": [{"src": "g0", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"}, {"src": "g1", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"},
              {"src": "g2", "dst": "sw", "bandwidth": "10GB/s", "kind": "ib"}]})";
  const Plan plan = make_plan(scenario_of(
      R"({"topology": )" + uneven +
      R"(, "collectives": [{"op": "all_reduce", "algorithm": "auto", "bytes": 1200}]})"));
  CHECK(plan.collectives[0].spec.algorithm != "hierarchical");
  CHECK(plan_error_of(R"({"op": "all_reduce", "algorithm": "hierarchical", "bytes": 1200})",
                      uneven) ==
        "collectives[0]: hierarchical needs the same number of ranks on every host (found 2 and "
        "1); or give \"levels\"");
}

TEST_CASE("every bundled scenario shrunk to small sizes plans to schedules the replayer proves") {
  int planned = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(COLLSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    INFO(e.path().filename().string());
    nlohmann::json doc = read_json_file(e.path().string(), e.path().string());
    if (!doc.contains("collectives")) continue;  // a workload alone: tests/test_workload.cpp
    for (auto& c : doc["collectives"]) {
      if (c.contains("bytes") && c["op"] != "barrier") c["bytes"] = "1KiB";
      if (c.contains("routing")) {
        c["routing"]["bytes_per_token"] = "16B";
        if (c["routing"].contains("tokens_per_rank")) c["routing"]["tokens_per_rank"] = 16;
      }
    }
    const Plan plan = make_plan(parse_scenario(doc, e.path().parent_path()));
    for (const auto& c : plan.collectives) {
      INFO(c.spec.name);
      const Verdict v = c.spec.shape.op == CollectiveOp::Barrier ? verify_barrier(*c.schedule)
                                                                 : verify_exact(*c.schedule, 7);
      CHECK(v.ok());
      ++planned;
    }
  }
  CHECK(planned > 30);
}

TEST_CASE("channels left to the topology count toward a schedule's size once known") {
  // 768 GPUs: a ring of 64 channels could reach 2 x 768^2 x 64 ops, past the 2^26 a run
  // holds; "auto" gives one channel per rail (8), well within it.
  const auto plan_with = [](const std::string& channels) {
    return make_plan(parse_scenario(
        parse_json_text(R"({"topology": {"preset": "cluster", "nodes": 96}, "collectives": [
          {"name": "x", "op": "all_gather", "algorithm": "ring", "bytes": "1KiB",
           "channels": )" + channels + "}]}",
                        "t.json"),
        "."));
  };
  CHECK(plan_with(R"("auto")").collectives[0].spec.options.channels == 8);
  CHECK_THROWS_WITH(plan_with("64"), Catch::Contains("768 ranks x 1 segments x 64 channels"));
}

TEST_CASE("collectives asking for the same thing share one plan, and time as if planned alone") {
  // Four all-reduces: 0, 1 and 3 ask the same (names, order and "after" aside: 1 waits on 0,
  // 3 on nothing); 2 differs
  // by its bytes alone, so it must get a schedule of its own.
  const Scenario s = scenario_of(R"({"topology": {"preset": "switch", "gpus": 4,
      "bandwidth": "10GB/s"}, "network": {"model": "flow"}, "collectives": [
    {"name": "a", "op": "all_reduce", "algorithm": "auto", "bytes": "64KiB"},
    {"name": "b", "op": "all_reduce", "algorithm": "auto", "bytes": "64KiB"},
    {"name": "c", "op": "all_reduce", "algorithm": "auto", "bytes": "96KiB"},
    {"name": "d", "op": "all_reduce", "algorithm": "auto", "bytes": "64KiB", "after": []}]})");
  const Plan plan = make_plan(s);
  const auto& c = plan.collectives;
  CHECK(c[1].schedule.same_as(c[0].schedule));
  CHECK(c[3].schedule.same_as(c[0].schedule));
  CHECK_FALSE(c[2].schedule.same_as(c[0].schedule));
  // Each keeps its own name, place and predecessors.
  CHECK(c[1].spec.name == "b");
  CHECK(c[1].spec.json_path == "collectives[1]");
  CHECK(c[1].spec.after == std::vector<int>{0});
  CHECK(c[3].spec.after.empty());
  // The shared plan is the one each would get alone.
  Router router(s.topology, s.network.routing);
  for (std::size_t i = 0; i < c.size(); ++i) {
    const PlannedCollective alone =
        plan_collective(s, router, simulated_alone(s, router), s.collectives[i]);
    INFO(i);
    CHECK(alone.label() == c[i].label());
    CHECK(alone.digest == c[i].digest);
    CHECK(same_ops(*alone.schedule, *c[i].schedule));
  }
  // Changing anything the plan reads (here the ranks) is not the same request.
  CollectiveSpec other = s.collectives[0];
  other.name = "z";
  CHECK(other.asks_the_same_as(s.collectives[0]));
  other.ranks = {3, 2, 1, 0};
  CHECK_FALSE(other.asks_the_same_as(s.collectives[0]));
  other = s.collectives[0];
  other.options.channels = 2;
  CHECK_FALSE(other.asks_the_same_as(s.collectives[0]));
  // All-to-allv matrices compare by content, not by which copy holds them.
  CollectiveShape a, b;
  a.matrix =
      std::make_shared<const std::vector<std::int64_t>>(std::vector<std::int64_t>{0, 1, 2, 0});
  b.matrix =
      std::make_shared<const std::vector<std::int64_t>>(std::vector<std::int64_t>{0, 1, 2, 0});
  CHECK(a == b);
  b.matrix =
      std::make_shared<const std::vector<std::int64_t>>(std::vector<std::int64_t>{0, 2, 1, 0});
  CHECK_FALSE(a == b);
  b.matrix = nullptr;
  CHECK_FALSE(a == b);
}

TEST_CASE("plan shows a scenario run streams as run streams it, counted from its folds") {
  // 16,384 ranks: a ring all-reduce of 2 x 16384 x 16383 ops, past the 2^26 a stored plan
  // holds, and a 5-rank all-gather beside it, whose counts a stored plan gives alone.
  const std::string big = R"({"name": "big", "op": "all_reduce", "algorithm": "ring",
                             "bytes": "1GiB"})";
  const std::string small = R"({"name": "small", "op": "all_gather", "algorithm": "ring",
                               "bytes": "1MiB", "ranks": [0, 1, 2, 3, 4]})";
  const auto scenario = [](const std::string& collectives) {
    return scenario_of(R"({"topology": {"preset": "switch", "gpus": 16384,
                           "bandwidth": "450GB/s"}, "collectives": [)" +
                       collectives + "]}");
  };
  const Scenario both = scenario(big + "," + small);
  CHECK_THROWS_WITH(make_plan(both), Catch::Contains("more than the 2^26"));
  const Plan plan = plan_as_run(both);
  REQUIRE(plan.collectives.size() == 2);
  CHECK(plan.collectives[0].streamed);
  CHECK(plan.collectives[1].streamed);
  const std::string table = plan_table(both, plan);
  CHECK_THAT(table, Catch::Contains(" 32766  536838144         streamed"));
  const Plan alone = make_plan(scenario(small));
  CHECK_FALSE(alone.collectives[0].streamed);
  // The small one is made and counted, its digest the stored plan's.
  CHECK_THAT(table,
             Catch::Contains(fmt::format(
                 " {:>7} {:>10} {:>16}", alone.collectives[0].schedule->num_steps,
                 alone.collectives[0].schedule->size(), digest_text(alone.collectives[0].digest))));
  CHECK_THAT(table, Catch::Contains("# streamed: big, small:"));
  const nlohmann::json doc = plan_json(both, plan);
  CHECK(doc["collectives"][0]["transfers"] == 536838144);
  CHECK(doc["collectives"][0]["schedule_digest"].is_null());
  CHECK(doc["collectives"][0]["streamed"]["ops_bound"] == std::int64_t{2} * 16384 * 16384);
  // A fold too large to store (16,383 ops of chunks in two sizes alike every 8,192 ranks,
  // 2 x 8,192 representatives a step) is counted too, without being made.
  const Scenario uneven = scenario(R"({"name": "odd", "op": "all_reduce", "algorithm": "ring",
                                       "bytes": "1073741832"})");
  const Plan uneven_plan = plan_as_run(uneven);
  CHECK(plan_json(uneven, uneven_plan)["collectives"][0]["transfers"] ==
        std::int64_t{2} * 16383 * 16384);
  // Small enough to store: planned as before, digests and all.
  const Plan stored = plan_as_run(scenario(small));
  CHECK_FALSE(stored.collectives[0].streamed);
  CHECK(stored.collectives[0].digest == alone.collectives[0].digest);
  // 1,024 ranks: run streams it (past 2^20 ops), and plan makes it as a stream, one step
  // held at a time, to count it and give the digest the stored plan would.
  const Scenario mid = scenario_of(R"({"topology": {"preset": "switch", "gpus": 1024,
      "bandwidth": "450GB/s"}, "collectives": [{"name": "ar", "op": "all_reduce",
      "algorithm": "ring", "bytes": "1GiB"}]})");
  const Plan streamed = plan_as_run(mid), whole = make_plan(mid);
  CHECK(streamed.collectives[0].streamed);
  CHECK_THAT(plan_table(mid, streamed),
             Catch::Contains(fmt::format(
                 " {:>7} {:>10} {:>16}", whole.collectives[0].schedule->num_steps,
                 whole.collectives[0].schedule->size(), digest_text(whole.collectives[0].digest))));
}

TEST_CASE("more segments than elements plan as one segment an element, label and digest alike") {
  // 64 B of float32: 16 elements. 17 and 100 segments were labelled as asked, and 100 ran
  // steps of nothing (48 steps against 16's 18).
  const auto planned = [](int segments) {
    return make_plan(scenario_of(fmt::format(
                         R"({{"topology": {{"preset": "switch", "gpus": 8, "bandwidth": "100GB/s"}},
                             "collectives": [{{"name": "b", "op": "broadcast",
                             "algorithm": "binomial_tree", "bytes": "64B", "segments": {}}}]}})",
                         segments)))
        .collectives[0];
  };
  const PlannedCollective sixteen = planned(16);
  for (int segments : {17, 100, 1 << 20}) {
    const PlannedCollective c = planned(segments);
    CHECK(c.spec.options.segments == 16);
    CHECK(c.label() == sixteen.label());
    CHECK(c.digest == sixteen.digest);
  }
  CHECK(planned(4).spec.options.segments == 4);
}
