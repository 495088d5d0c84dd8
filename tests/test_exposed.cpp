// Where a step's time went (simulate/step_breakdown.h): per GPU, the mean over the job's
// ranks, compute + each kind's exposed communication + the bubble = the step. Hand-timed
// steps pin the definition; bundled scenarios and the outputs (table, JSON) carry it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "report/workload_report.h"
#include "simulate/run_workload.h"

using namespace collsim;
using collsim::test::run_collsim;

namespace exposed_test {

// A step timed by hand: tasks with the spans given, in milliseconds.
struct HandStep {
  StepGraph graph;
  StepResult result;

  void add(StepTask t, double begin_ms, double end_ms) {
    graph.tasks.push_back(std::move(t));
    TaskTiming when;
    when.start = from_seconds(begin_ms * 1e-3);
    when.end = from_seconds(end_ms * 1e-3);
    result.sim.tasks.push_back(when);
  }
  void compute(std::vector<int> ranks, double begin_ms, double end_ms) {
    StepTask t;
    t.kind = StepTaskKind::Compute;
    t.category = "compute";
    t.ranks = std::move(ranks);
    add(std::move(t), begin_ms, end_ms);
  }
  void collective(const std::string& category, CollectiveOp op, std::vector<int> ranks,
                  double begin_ms, double end_ms) {
    StepTask t;
    t.kind = StepTaskKind::Collective;
    t.category = category;
    t.ranks = std::move(ranks);
    t.collective.edit().shape.op = op;
    t.collective.edit().bytes = 1000;
    add(std::move(t), begin_ms, end_ms);
  }
  StepBreakdown breakdown(const std::vector<int>& ranks = {0, 1}) const {
    return step_breakdown(graph, result, ranks);
  }
};

const StepShare& find(const std::vector<StepShare>& shares, const std::string& category,
                      const std::string& op) {
  const auto it = std::ranges::find_if(
      shares, [&](const StepShare& s) { return s.category == category && s.op == op; });
  INFO(category << " " << op);
  REQUIRE(it != shares.end());
  return *it;
}

const StepShare& kind(const StepBreakdown& b, const std::string& category, const std::string& op) {
  return find(b.kinds, category, op);
}

const StepShare& category(const StepBreakdown& b, const std::string& name) {
  return find(b.categories, name, "");
}

// What holds for any step, ranks alike or not: the parts add up to the step, per kind
// and per category; nothing is busy longer than the step; no communication is exposed
// longer than it is busy.
void check_parts_add_up(const StepBreakdown& b) {
  const double eps = 1e-9 * b.step_s;
  double kinds = b.bubble_s, categories = b.bubble_s, compute = 0, comm = 0;
  for (const StepShare& s : b.kinds) {
    INFO(s.category << " " << s.op);
    kinds += s.exposed_s;
    (s.compute ? compute : comm) += s.exposed_s;
    CHECK(s.exposed_s >= 0);
    CHECK(s.busy_s <= b.step_s + eps);
    CHECK(s.exposed_s <= s.busy_s + eps);
  }
  for (const StepShare& s : b.categories) {
    categories += s.exposed_s;
    CHECK(s.busy_s <= b.step_s + eps);
  }
  CHECK(kinds == Approx(b.step_s).margin(eps));
  CHECK(categories == Approx(b.step_s).margin(eps));
  CHECK(compute == Approx(b.compute_s).margin(eps));
  CHECK(comm == Approx(b.exposed_comm_s).margin(eps));
  CHECK(b.comm_s <= b.step_s + eps);
  CHECK(b.exposed_comm_s <= b.comm_s + eps);
  CHECK(b.bubble_s >= 0);
}

WorkloadRun step_of(const std::string& text) {
  const Scenario s = parse_scenario(parse_json_text(text, "scenario.json"), ".");
  return run_workloads(s);
}

std::string source(const std::string& relative) {
  return std::string(COLLSIM_SOURCE_DIR) + "/" + relative;
}

}  // namespace exposed_test

using namespace exposed_test;

TEST_CASE("exposed time: a DP all-reduce under compute is busy but not exposed", "[exposed]") {
  HandStep h;
  h.compute({0, 1}, 0, 10);
  h.collective("dp", CollectiveOp::AllReduce, {0, 1}, 2, 8);
  const StepBreakdown b = h.breakdown();
  check_parts_add_up(b);
  CHECK(b.step_s == Approx(10e-3));
  CHECK(kind(b, "dp", "all_reduce").busy_s == Approx(6e-3));
  CHECK(kind(b, "dp", "all_reduce").exposed_s == 0);
  CHECK(kind(b, "compute", "").exposed_s == Approx(10e-3));
  CHECK(b.comm_s == Approx(6e-3));
  CHECK(b.exposed_comm_s == 0);
  CHECK(b.bubble_s == 0);
}

TEST_CASE("exposed time: without compute, exposed communication is the communication timeline",
          "[exposed]") {
  HandStep h;
  h.collective("tp", CollectiveOp::AllReduce, {0, 1}, 0, 4);
  h.collective("dp", CollectiveOp::AllReduce, {0, 1}, 2, 6);  // 2-4 ms shared with TP
  h.collective("pp", CollectiveOp::SendRecv, {0, 1}, 8, 10);  // 6-8 ms: nothing in flight
  const StepBreakdown b = h.breakdown();
  check_parts_add_up(b);
  CHECK(b.exposed_comm_s == Approx(b.comm_s));
  CHECK(b.comm_s == Approx(8e-3));
  CHECK(b.bubble_s == Approx(2e-3));
  // Two kinds in flight together split the stretch evenly: 2 + 1 ms each.
  CHECK(kind(b, "tp", "all_reduce").exposed_s == Approx(3e-3));
  CHECK(kind(b, "dp", "all_reduce").exposed_s == Approx(3e-3));
  CHECK(kind(b, "pp", "send_recv").exposed_s == Approx(2e-3));
  CHECK(kind(b, "tp", "all_reduce").busy_s == Approx(4e-3));
  CHECK(kind(b, "dp", "all_reduce").busy_s == Approx(4e-3));
}

TEST_CASE("exposed time: a category's busy time is the union of its kinds', tasks counted once",
          "[exposed]") {
  HandStep h;
  h.collective("dp", CollectiveOp::AllReduce, {0, 1}, 0, 4);
  h.collective("dp", CollectiveOp::AllReduce, {0, 1}, 1, 3);  // within the first: once
  h.collective("dp", CollectiveOp::AllGather, {0, 1}, 2, 6);
  const StepBreakdown b = h.breakdown();
  check_parts_add_up(b);
  CHECK(kind(b, "dp", "all_reduce").busy_s == Approx(4e-3));
  CHECK(kind(b, "dp", "all_reduce").tasks == 2);
  CHECK(kind(b, "dp", "all_reduce").bytes == 2000);
  CHECK(kind(b, "dp", "all_gather").busy_s == Approx(4e-3));
  CHECK(kind(b, "dp", "all_reduce").exposed_s == Approx(3e-3));  // 0-2, and half of 2-4
  CHECK(kind(b, "dp", "all_gather").exposed_s == Approx(3e-3));
  CHECK(category(b, "dp").busy_s == Approx(6e-3));
  CHECK(category(b, "dp").exposed_s == Approx(6e-3));
  CHECK(category(b, "dp").tasks == 3);
}

TEST_CASE("exposed time: alike and unlike ranks keep the same meaning, the mean over ranks",
          "[exposed]") {
  SECTION("alike: both compute 4 ms, then an all-to-all") {
    HandStep h;
    h.compute({0, 1}, 0, 4);
    h.collective("ep", CollectiveOp::AllToAll, {0, 1}, 4, 6);
    const StepBreakdown b = h.breakdown();
    check_parts_add_up(b);
    CHECK(b.compute_s == Approx(4e-3));
    CHECK(kind(b, "ep", "all_to_all").exposed_s == Approx(2e-3));
    CHECK(b.bubble_s == 0);
  }
  SECTION("a hot expert: rank 0 computes 10 ms, rank 1 4 ms and waits") {
    HandStep h;
    h.compute({0}, 0, 10);
    h.compute({1}, 0, 4);
    h.collective("ep", CollectiveOp::AllToAll, {0, 1}, 10, 12);
    const StepBreakdown b = h.breakdown();
    check_parts_add_up(b);
    CHECK(b.step_s == Approx(12e-3));
    CHECK(b.compute_s == Approx(7e-3));  // (10 + 4) / 2: a mean, not a sum over ranks
    CHECK(kind(b, "ep", "all_to_all").busy_s == Approx(2e-3));
    CHECK(kind(b, "ep", "all_to_all").exposed_s == Approx(2e-3));
    CHECK(b.bubble_s == Approx(3e-3));  // rank 1's 6 ms of waiting, over two ranks
  }
}

TEST_CASE("exposed time: only the job's ranks count, and an idle rank is all bubble", "[exposed]") {
  HandStep h;
  h.compute({0, 1, 2}, 0, 4);  // rank 2 belongs to another job
  const StepBreakdown b = h.breakdown({0, 1, 3});
  check_parts_add_up(b);
  CHECK(b.ranks == 3);
  CHECK(b.compute_s == Approx(4e-3 * 2 / 3));
  CHECK(b.bubble_s == Approx(4e-3 / 3));
}

TEST_CASE("exposed time: Megatron's TP exchanges block compute, DDP buckets hide behind it",
          "[exposed]") {
  const auto tp = step_of(R"({"topology": "dgx-h100", "network": {"model": "flow"},
      "workload": {"model": "llama3-8b", "tokens_per_gpu": 1024, "parallelism": {"tp": 8}}})");
  const StepBreakdown& t = tp.jobs[0].breakdown;
  check_parts_add_up(t);
  CHECK(kind(t, "tp", "all_reduce").busy_s > 0);
  CHECK(kind(t, "tp", "all_reduce").exposed_s == Approx(kind(t, "tp", "all_reduce").busy_s));

  const Scenario buckets =
      parse_scenario(read_json_file(source("scenarios/workload-ddp-buckets.json"), "buckets"),
                     source("scenarios"));
  const WorkloadRun run = run_workloads(buckets);
  const StepBreakdown& d = run.jobs[0].breakdown;
  check_parts_add_up(d);
  const StepShare& dp = kind(d, "dp", "all_reduce");
  CHECK(dp.exposed_s < 0.6 * dp.busy_s);  // the bundled example hides 58% behind backward
  CHECK(dp.exposed_s > 0);                // the last bucket comes after backward
}

TEST_CASE("exposed time: a hot MoE expert turns into bubble, the parts still add up", "[exposed]") {
  const auto moe = [](const std::string& load) {
    return step_of(R"({"topology": "dgx-h100", "network": {"model": "flow"},
      "workload": {"model": "mixtral-8x7b", "tokens_per_gpu": 2048, "parallelism": {"dp": 8, "ep": 8},
                   "expert_load": )" +
                   load + "}}");
  };
  const auto even = moe("[0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125]");
  const auto hot = moe("[0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]");
  const StepBreakdown& e = even.jobs[0].breakdown;
  const StepBreakdown& h = hot.jobs[0].breakdown;
  check_parts_add_up(e);
  check_parts_add_up(h);
  CHECK(h.step_s > e.step_s);
  // Seven GPUs wait for the hot expert's before each all-to-all: bubble, not exposed EP.
  CHECK(h.bubble_s > e.bubble_s + 0.5 * (h.step_s - e.step_s));
  CHECK(kind(h, "ep", "all_to_all").exposed_s <= kind(h, "ep", "all_to_all").busy_s);
}

TEST_CASE("exposed time: the table and the JSON give the breakdown, the same every run",
          "[exposed]") {
  const std::string path = source("scenarios/workload-ddp-buckets.json");
  const auto text = run_collsim("run " + path);
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("dp all_reduce"));
  CHECK_THAT(text.out, Catch::Contains("compute + exposed + bubble = step"));
  CHECK_THAT(text.out, !Catch::Contains("summed"));
  const auto first = run_collsim("run " + path + " --format json");
  const auto again = run_collsim("run " + path + " --format json");
  REQUIRE(first.status == 0);
  CHECK(first.out == again.out);
  const auto job = nlohmann::json::parse(first.out)["workload"];
  const double step = job["step_s"];
  for (const char* list : {"categories", "kinds"}) {
    INFO(list);
    double exposed = 0, share = 0;
    for (const auto& row : job[list]) {
      exposed += row["exposed_s"].get<double>();
      share += row["share"].get<double>();
      CHECK(row["busy_s"].get<double>() <= step * (1 + 1e-9));
      CHECK_FALSE(row.contains("time_s"));
    }
    CHECK(job[list].back()["category"] == "bubble");
    CHECK(exposed == Approx(step).epsilon(1e-9));
    CHECK(share == Approx(1).epsilon(1e-9));
  }
  CHECK(job["kinds"][1]["category"] == "dp");
  CHECK(job["kinds"][1]["op"] == "all_reduce");
  CHECK(job["kinds"][0]["op"].is_null());  // compute
}
