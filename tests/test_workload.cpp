// Training steps: compute in the engine, the minimal DDP form against its closed
// forms, model presets against their published sizes, pipeline bubbles, tensor and
// expert parallelism, several jobs sharing links, and the errors a user can make.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/units.h"
#include "helpers.h"
#include "report/workload_report.h"
#include "simulate/run_workload.h"
#include "workload/model.h"

using namespace collsim;
using collsim::test::error_of;
using collsim::test::run_collsim;
using collsim::test::slurp;
using collsim::test::temp_dir;

namespace workload_test {

WorkloadRun run_text(const std::string& text) {
  const Scenario s = parse_scenario(parse_json_text(text, "scenario.json"), ".");
  return run_workloads(s);
}

// The minimal form on an ideal switch: alpha 5 us, per-GPU links of `bandwidth`.
std::string ddp(int gpus, const std::string& bandwidth, const std::string& workload) {
  return R"({"topology": {"preset": "switch", "gpus": )" + std::to_string(gpus) +
         R"(, "bandwidth": ")" + bandwidth + R"(", "latency": "0us"},
            "network": {"model": "ideal", "alpha": "5us"}, "workload": )" +
         workload + "}";
}

// Ring all-reduce: 2 (K - 1) steps of alpha + n / (K beta).
double ring(int k, double bytes, double bandwidth, double alpha = 5e-6) {
  return 2.0 * (k - 1) * (alpha + bytes / k / bandwidth);
}

// Per GPU, the time the category has a task in flight (its tasks one after another here:
// their spans summed).
double category_time(const JobOutcome& j, const std::string& name) {
  for (const auto& c : j.breakdown.categories)
    if (c.category == name) return c.busy_s;
  return 0;
}

std::int64_t category_tasks(const JobOutcome& j, const std::string& name) {
  for (const auto& c : j.breakdown.categories)
    if (c.category == name) return c.tasks;
  return 0;
}

// `collsim run SCENARIO --out DIR`'s timeline.json, for a scenario file or text.
nlohmann::json timeline_of(const std::string& scenario_path, const std::string& tag) {
  const auto dir = temp_dir(tag);
  REQUIRE(run_collsim("run " + scenario_path + " --out " + dir.string()).status == 0);
  return nlohmann::json::parse(slurp(dir / "timeline.json"));
}

std::string write_scenario(const std::string& text, const std::string& tag) {
  const auto path = temp_dir(tag) / "scenario.json";
  std::ofstream(path) << text;
  return path.string();
}

// Complete events ("X") on one (pid, tid) that neither nest nor are disjoint. Times are
// printed to the nanosecond, start and duration rounded apart: an end may be 1 ns off.
int improperly_nested(const nlohmann::json& trace) {
  constexpr double kRounding_us = 1e-3 + 1e-6;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X") {
      const double ts = e["ts"], dur = e["dur"];
      tracks[{e["pid"], e["tid"]}].emplace_back(ts, ts + dur);
    }
  int bad = 0;
  for (auto& [track, slices] : tracks) {
    // Earliest first, the longer first at equal starts: a parent before its children.
    std::ranges::sort(slices, [](auto a, auto b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open;  // ends of the slices enclosing the current one
    for (const auto& [start, end] : slices) {
      while (!open.empty() && open.back() <= start + kRounding_us) open.pop_back();
      if (!open.empty() && end > open.back() + kRounding_us) {
        UNSCOPED_INFO("pid " << track.first << " tid " << track.second << ": [" << start << ", "
                             << end << ") crosses the end of its enclosing slice at "
                             << open.back());
        ++bad;
      }
      open.push_back(end);
    }
  }
  return bad;
}

// Thread names per pid, by tid.
std::map<int, std::map<int, std::string>> thread_names(const nlohmann::json& trace) {
  std::map<int, std::map<int, std::string>> out;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") out[e["pid"]][e["tid"]] = e["args"]["name"];
  return out;
}

}  // namespace workload_test

using namespace workload_test;

TEST_CASE("compute tasks take their time and order the collectives after them", "[workload]") {
  const Topology t = make_switch_topology(2, 100e9, 0);
  Router router(t);
  NetworkParams p;
  auto net = make_network_model(p, t, router);
  const Schedule s = test::generate(CollectiveOp::AllReduce, "ring",
                                    test::shape_of(CollectiveOp::AllReduce, 2, 1 << 20));
  Simulator sim(t, router, *net);
  std::vector<CollectiveTask> tasks(3);
  tasks[0] = {"compute", nullptr, {t.gpu_of_rank(0), t.gpu_of_rank(1)},
              {},        nullptr, from_seconds(1e-3)};
  tasks[1] = {"ar", &s, {t.gpu_of_rank(0), t.gpu_of_rank(1)}, {0}, nullptr, 0};
  tasks[2] = {"more", nullptr, {t.gpu_of_rank(0)}, {1}, nullptr, from_seconds(2e-3)};
  const auto r = sim.run(tasks);
  const double ar = to_seconds(r.tasks[1].end - r.tasks[1].start);
  CHECK(to_seconds(r.tasks[0].end) == Approx(1e-3));
  CHECK(to_seconds(r.tasks[1].start) == Approx(1e-3));
  CHECK(ar == Approx(ring(2, 4 << 20, 100e9, 0)));
  CHECK(to_seconds(r.tasks[2].end) == Approx(1e-3 + ar + 2e-3));
}

TEST_CASE("DDP without overlap: step = compute / N + the ring all-reduce", "[workload]") {
  // The issue's experiment: one-GPU step 20 ms, strong scaling, alpha 5 us, 25 GB/s.
  for (auto [gpus, grads] : {std::pair{8, 10e6}, std::pair{8, 100e6}, std::pair{2, 400e6}}) {
    const auto run = run_text(ddp(gpus, "25GB/s",
                                  R"({"gradients": ")" + std::to_string(static_cast<long>(grads)) +
                                      R"(B", "compute": "20ms", "scaling": "strong", "bucket": null,
                                          "overlap": false, "algorithm": "ring"})"));
    const JobOutcome& j = run.jobs.at(0);
    const double step = 20e-3 / gpus + ring(gpus, grads, 25e9);
    CHECK(j.step_s == Approx(step).epsilon(1e-9));
    CHECK(j.speedup == Approx(20e-3 / step).epsilon(1e-9));
    CHECK(j.exposed_comm_s == Approx(ring(gpus, grads, 25e9)).epsilon(1e-9));
    CHECK(j.overlap == Approx(0).margin(1e-12));
    CHECK(j.overlap >= 0);  // rounding made it -1e-16: "-0% hidden behind compute"
  }
  // Without compute nothing is hidden: exactly 0, never below.
  const auto idle = run_text(R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth":
      "100GB/s"}, "workload": {"gradients": "1GiB", "compute": 0}})");
  CHECK(idle.jobs[0].overlap == 0);
  // Weak scaling keeps the per-GPU compute: N times the one-GPU work per step.
  const auto weak = run_text(ddp(8, "25GB/s", R"({"gradients": "10MB", "compute": "20ms",
                                   "scaling": "weak", "bucket": null, "overlap": false})"));
  CHECK(weak.jobs[0].step_s == Approx(20e-3 + ring(8, 10e6, 25e9)));
  CHECK(weak.jobs[0].speedup == Approx(8 * 20e-3 / (20e-3 + ring(8, 10e6, 25e9))));
}

TEST_CASE("25 MB buckets cost one alpha term per extra bucket and hide behind backward",
          "[workload]") {
  const double one = ring(8, 1073741824.0, 450e9);
  const auto single = run_text(ddp(8, "450GB/s", R"({"gradients": "1GiB", "compute": "0s",
                                     "bucket": null, "overlap": false})"));
  CHECK(category_time(single.jobs[0], "dp") == Approx(one).epsilon(1e-9));
  const auto bucketed = run_text(ddp(8, "450GB/s", R"({"gradients": "1GiB", "compute": "0s",
                                       "bucket": "25MB", "overlap": false})"));
  const JobOutcome& b = bucketed.jobs[0];
  CHECK(b.facts.gradient_buckets == 43);  // 42 full buckets and 23.7 MB left over
  CHECK(category_time(b, "dp") == Approx(one + 42 * 14 * 5e-6).epsilon(1e-6));  // ns rounding
  // Overlap, with a backward as long as the one-bucket all-reduce (weak: no division).
  const std::string overlapped = R"({"gradients": "1GiB", "compute": ")" +
                                 std::to_string(one * 1e6) + R"(us", "scaling": "weak",
                                 "backward_fraction": 1, "bucket": "25MB", "overlap": true})";
  const auto overlapped_run = run_text(ddp(8, "450GB/s", overlapped));
  const JobOutcome& o = overlapped_run.jobs[0];
  // Each bucket's all-reduce takes longer than the backward slice filling the next, so the
  // data-parallel stream never idles after the first bucket is ready.
  const double first_slice = one * 25e6 / 1073741824.0;
  CHECK(o.step_s == Approx(first_slice + category_time(b, "dp")).epsilon(1e-6));
  CHECK(o.exposed_comm_s == Approx(o.step_s - one).epsilon(1e-6));
  CHECK(o.overlap > 0.5);
}

TEST_CASE("gradient accumulation all-reduces on the last micro-batch only", "[workload]") {
  const auto run = run_text(ddp(4, "100GB/s", R"({"gradients": "100MB", "compute": "8ms",
                                       "bucket": "25MB", "accumulation": 4, "overlap": true})"));
  const JobOutcome& j = run.jobs[0];
  CHECK(category_tasks(j, "dp") == 4);
  CHECK(category_tasks(j, "compute") == 4 * (1 + 4));  // a forward and a slice per bucket
}

TEST_CASE("model presets match their published sizes", "[workload]") {
  const auto params = [](const char* name) { return model_preset(name)->total_params() / 1e9; };
  const auto active = [](const char* name) { return model_preset(name)->active_params() / 1e9; };
  CHECK(params("llama3-8b") == Approx(8.03).epsilon(0.01));
  CHECK(params("llama3-70b") == Approx(70.6).epsilon(0.01));
  CHECK(params("mixtral-8x7b") == Approx(46.7).epsilon(0.01));
  CHECK(active("mixtral-8x7b") == Approx(12.9).epsilon(0.02));
  CHECK(params("deepseek-v3") == Approx(671).epsilon(0.01));
  CHECK(active("deepseek-v3") == Approx(37).epsilon(0.03));
  CHECK(gpu_preset("h100")->peak_flops == 989e12);
  CHECK_FALSE(model_preset("gpt-5"));
}

namespace workload_test {

// 4 stages of 2 layers, FLOPs per token per layer 2 x 3e6 + 4 x 1024 x 1024 = 10,194,304,
// 512 tokens per micro-batch, 1e12 FLOP/s at MFU 0.5: a stage's forward takes f below.
constexpr double kStageForward = 2 * 10194304.0 * 512 / 5e11;

std::string pipeline(const std::string& schedule, int micro) {
  return R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "1000TB/s", "latency": "0us"},
    "network": {"model": "ideal"},
    "workload": {"model": {"layers": 8, "hidden": 1024, "vocab": 0, "sequence": 1024,
                           "attention_params": 1000000, "mlp_params": 2000000},
                 "gpu": {"peak_flops": 1e12, "memory": "80GB"}, "mfu": 0.5,
                 "tokens_per_gpu": )" +
         std::to_string(512 * micro / 4) + R"(, "parallelism": {"pp": 4, "micro_batches": )" +
         std::to_string(micro) + R"(, "pipeline": ")" + schedule + R"("}}})";
}

}  // namespace workload_test

TEST_CASE("1F1B and GPipe: step (m + p - 1) x (f + b), bubble (p - 1) x (f + b)", "[workload]") {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const auto run = run_text(pipeline(schedule, 8));
    const JobOutcome& j = run.jobs[0];
    INFO(schedule);
    CHECK(j.step_s == Approx(11 * 3 * kStageForward).epsilon(1e-6));
    CHECK(j.compute_s == Approx(8 * 3 * kStageForward).epsilon(1e-6));
    CHECK(j.idle_s == Approx(3 * 3 * kStageForward).epsilon(1e-4));
    CHECK(category_tasks(j, "pp") == 2 * 3 * 8);  // activations and gradients per boundary
  }
  // GPipe keeps every micro-batch's activations; 1F1B at most p on the first stage.
  const auto g = run_text(pipeline("gpipe", 8)).jobs[0].facts.memory_activations;
  const auto f = run_text(pipeline("1f1b", 8)).jobs[0].facts.memory_activations;
  CHECK(static_cast<double>(g) / static_cast<double>(f) == Approx(2.0).epsilon(1e-6));
  // Two micro-batches for four stages run, with a word: the bubble is (p - 1) / (m + p - 1).
  const auto two = run_text(pipeline("1f1b", 2)).jobs[0];
  CHECK(two.idle_s / two.step_s == Approx(3.0 / 5).epsilon(1e-4));
  CHECK_THAT(fmt::format("{}", fmt::join(two.facts.warnings, "|")),
             Catch::Contains("2 micro-batches for pp = 4 stages: the pipeline never fills (a "
                             "bubble of at least (p - 1) / (m + p - 1) = 60% of the step)"));
  CHECK(fmt::format("{}", fmt::join(run_text(pipeline("1f1b", 8)).jobs[0].facts.warnings, "|"))
            .find("never fills") == std::string::npos);
}

TEST_CASE("tensor parallelism: two all-reduces per layer each way, or RS + AG with SP",
          "[workload]") {
  const auto text = [](bool sp) {
    return R"({"topology": "dgx-h100", "network": {"model": "flow"},
      "workload": {"model": "llama3-8b", "tokens_per_gpu": 1024,
                   "parallelism": {"tp": 8, "sequence_parallel": )" +
           std::string(sp ? "true" : "false") + "}}}";
  };
  const auto plain_run = run_text(text(false));
  const JobOutcome& plain = plain_run.jobs[0];
  CHECK(category_tasks(plain, "tp") == 32 * 4);
  CHECK(category_tasks(plain, "dp") == 0);  // one replica: nothing to synchronise
  const auto sp_run = run_text(text(true));
  const JobOutcome& sp = sp_run.jobs[0];
  CHECK(category_tasks(sp, "tp") == 32 * 8);
  CHECK(plain.comm_s > 0);
  CHECK(plain.exposed_comm_s == Approx(plain.comm_s));  // Megatron's exchanges block compute
}

TEST_CASE("expert parallelism: an MoE layer's all-to-alls carry tokens x top_k x hidden",
          "[workload]") {
  // The issue's experiment: 8 GPUs, 8192 tokens each, top-1, hidden 7168, bf16.
  const auto run = run_text(R"({"topology": "dgx-h100", "network": {"model": "flow"},
    "workload": {"model": {"layers": 1, "hidden": 7168, "vocab": 0, "experts": 8, "top_k": 1},
                 "tokens_per_gpu": 8192, "parallelism": {"dp": 8, "ep": 8}}})");
  int all_to_alls = 0;
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i) {
    const StepTask& t = run.graph.tasks[i];
    if (t.category != "ep") continue;
    ++all_to_alls;
    const auto& m = *t.collective->shape.matrix;
    REQUIRE(m.size() == 64);
    for (int s = 0; s < 8; ++s) {
      std::int64_t off_rank = 0;
      for (int d = 0; d < 8; ++d)
        if (d != s) off_rank += m[s * 8 + d];
      CHECK(off_rank * 2 == 7 * 1024 * 7168 * 2);  // 7/8 of 8192 tokens leave the GPU
    }
  }
  CHECK(all_to_alls == 4);  // dispatch and combine, forward and backward
}

TEST_CASE("two jobs sharing a link each slow down against running alone", "[workload]") {
  const auto run = run_text(R"({
    "topology": {"nodes": [{"name": "g0", "kind": "gpu"}, {"name": "g1", "kind": "gpu"},
                           {"name": "g2", "kind": "gpu"}, {"name": "g3", "kind": "gpu"},
                           {"name": "s0", "kind": "switch"}, {"name": "s1", "kind": "switch"}],
                 "links": [{"src": "g0", "dst": "s0", "bandwidth": "100GB/s", "kind": "nvlink"},
                           {"src": "g1", "dst": "s0", "bandwidth": "100GB/s", "kind": "nvlink"},
                           {"src": "g2", "dst": "s1", "bandwidth": "100GB/s", "kind": "nvlink"},
                           {"src": "g3", "dst": "s1", "bandwidth": "100GB/s", "kind": "nvlink"},
                           {"src": "s0", "dst": "s1", "bandwidth": "10GB/s", "kind": "nvlink"}]},
    "network": {"model": "flow"},
    "workload": [{"name": "a", "ranks": [0, 2], "gradients": "100MB", "compute": "1ms", "overlap": false, "bucket": null},
                 {"name": "b", "ranks": [1, 3], "gradients": "100MB", "compute": "1ms", "overlap": false, "bucket": null}]})");
  REQUIRE(run.jobs.size() == 2);
  for (const auto& j : run.jobs) {
    const double comm_alone = ring(2, 100e6, 10e9, 0);
    CHECK(j.alone_step_s == Approx(0.5e-3 + comm_alone).epsilon(1e-6));
    CHECK(j.step_s == Approx(0.5e-3 + 2 * comm_alone).epsilon(1e-6));  // the spine link halved
  }
}

TEST_CASE("workload errors name the path and the expectation", "[workload]") {
  const std::string topo =
      R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "100GB/s", "kind": "nvlink"}, "workload": )";
  CHECK_THAT(
      error_of(topo +
               R"({"model": "llama3-8b", "tokens_per_gpu": 1024, "ranks": [0, 1, 2, 3, 4, 5, 6, 7],
                                         "parallelism": {"dp": 2, "tp": 2}}})"),
      Catch::Contains(
          "workload.parallelism: dp x tp x pp = 2 x 2 x 1 = 4 GPUs, but the job has 8 ranks"));
  CHECK_THAT(
      error_of(
          topo +
          R"({"model": "mixtral-8x7b", "tokens_per_gpu": 1024, "parallelism": {"dp": 8, "ep": 3}}})"),
      Catch::Contains(
          "workload.parallelism.ep: expert parallelism is carved out of data parallelism"));
  CHECK_THAT(error_of(topo + R"({"model": "llama4", "tokens_per_gpu": 1}})"),
             Catch::Contains("workload.model: no model preset \"llama4\"; presets: llama3-8b"));
  CHECK_THAT(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 1, "gradients": "1GB"}})"),
             Catch::Contains("workload.gradients: the model gives the gradients"));
  CHECK_THAT(error_of(topo + R"({"gradients": "1GB"}})"), Catch::Contains("workload: "));
  CHECK_THAT(error_of(topo + R"({"gradients": "1GB", "compute": "1ms", "bukcet": "1MB"}})"),
             Catch::Contains("bucket"));
  CHECK_THAT(error_of(topo + R"([{"ranks": [0, 1], "gradients": "1GB", "compute": "1ms"},
                                 {"ranks": [1, 2], "gradients": "1GB", "compute": "1ms"}]})"),
             Catch::Contains("workload[1].ranks[0]: rank 1 already belongs to another job"));
  CHECK_THAT(error_of(topo + R"({"gradients": "1GB", "compute": "1ms", "algorithm": "rng"}})"),
             Catch::Contains("workload.algorithm: no all_reduce algorithm \"rng\""));
  // Tensor parallelism splits the heads a model gives; FSDP and "zero" must agree.
  CHECK_THAT(error_of(topo + R"({"model": {"layers": 2, "hidden": 384, "vocab": 500,
      "heads": 3}, "gpu": "h100", "tokens_per_gpu": 256, "parallelism": {"dp": 4, "tp": 2}}})"),
             Catch::Contains("workload.parallelism.tp: tensor parallelism splits the attention "
                             "heads: 3 heads do not split evenly over tp = 2"));
  // A preset's heads too (llama3-8b: 32), and expert parallelism only on experts.
  const std::string six = R"({"topology": {"preset": "switch", "gpus": 6, "bandwidth": "100GB/s"},
                              "workload": {"model": "llama3-8b", "tokens_per_gpu": 1024, )";
  CHECK_THAT(error_of(six + R"("parallelism": {"dp": 2, "tp": 3}}})"),
             Catch::Contains("workload.parallelism.tp: tensor parallelism splits the attention "
                             "heads: 32 heads do not split evenly over tp = 3"));
  CHECK_THAT(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 1024,
      "parallelism": {"dp": 8, "ep": 2}}})"),
             Catch::Contains("workload.parallelism.ep: expert parallelism splits an MoE model's "
                             "experts: llama3-8b has none (ep = 1)"));
  CHECK_THAT(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 1024,
      "parallelism": {"dp": 8, "zero": 3, "fsdp": false}}})"),
             Catch::Contains("workload.parallelism.fsdp: FSDP is ZeRO stage 3, and \"zero\" is 3"));
  // As a collective's bytes: whole elements of the gradients' type (bfloat16 by default).
  CHECK_THAT(error_of(topo + R"({"gradients": "3B", "compute": "1ms"}})"),
             Catch::Contains("workload.gradients: 3 bytes is not a whole number of bfloat16"));
}

TEST_CASE("every bundled workload scenario runs", "[workload]") {
  int jobs = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(COLLSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    nlohmann::json doc = read_json_file(e.path().string(), e.path().string());
    if (!doc.contains("workload")) continue;
    INFO(e.path().filename().string());
    if (collsim::test::needs_protobuf(doc)) continue;  // test_chakra.cpp reports the skip
    // Fewer micro-batches keep this quick under the sanitizers; the shape stays.
    for (auto* job : doc["workload"].is_array() ? std::vector<nlohmann::json*>{}
                                                : std::vector<nlohmann::json*>{&doc["workload"]})
      if (job->contains("parallelism") && (*job)["parallelism"].contains("micro_batches"))
        (*job)["parallelism"]["micro_batches"] = 2;
    const Scenario scenario = parse_scenario(doc, e.path().parent_path());
    const WorkloadRun run = run_workloads(scenario);
    for (const auto& j : run.jobs) {
      CHECK(j.step_s > 0);
      if (!j.spec->is_chakra()) CHECK(j.compute_s > 0);  // a microbenchmark trace has none
      CHECK(j.step_s >= j.compute_s);
      // Per GPU, compute + exposed communication + bubble = the step (test_exposed.cpp).
      double parts = j.breakdown.bubble_s;
      for (const StepShare& k : j.breakdown.kinds) {
        parts += k.exposed_s;
        CHECK(k.busy_s <= j.step_s * (1 + 1e-9));
      }
      CHECK(parts == Approx(j.step_s).epsilon(1e-9));
      ++jobs;
    }
  }
  CHECK(jobs >= 6);
}

TEST_CASE("workload timeline: overlapping TP and DP collectives take lanes that nest",
          "[workload][trace]") {
  // dp 2 x tp 2: backward's TP all-reduces run while earlier gradient buckets all-reduce.
  const std::string path = write_scenario(
      R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "50GB/s", "latency": "1us"},
          "network": {"model": "flow", "alpha": "5us"},
          "workload": {"model": {"name": "tiny", "layers": 4, "hidden": 2048, "vocab": 32000},
                       "gpu": "h100", "tokens_per_gpu": 2048, "bucket": "8MB",
                       "parallelism": {"dp": 2, "tp": 2}}})",
      "trace-lanes");
  const nlohmann::json trace = timeline_of(path, "trace-lanes-out");
  CHECK(improperly_nested(trace) == 0);
  const auto names = thread_names(trace);
  REQUIRE(names.size() == 4);  // every rank fits: all drawn, none listed
  CHECK_FALSE(trace["otherData"].contains("ranks_shown"));
  for (const auto& [pid, threads] : names) {
    INFO("rank " << pid);
    CHECK(threads ==
          std::map<int, std::string>{{0, "compute"}, {1, "communication"}, {2, "communication 2"}});
  }
  std::map<std::string, int> on_second_lane;  // categories of the slices there
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["tid"] == 2) ++on_second_lane[e["cat"]];
  CHECK(on_second_lane["tp"] > 0);
}

TEST_CASE("workload timeline: a run without overlap keeps one communication thread per rank",
          "[workload][trace]") {
  const nlohmann::json trace = timeline_of(
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-ddp-buckets.json", "trace-one-lane");
  CHECK(improperly_nested(trace) == 0);
  for (const auto& [pid, threads] : thread_names(trace)) {
    INFO("rank " << pid);
    CHECK(threads == std::map<int, std::string>{{0, "compute"}, {1, "communication"}});
  }
}

TEST_CASE("workload timeline: past 32 ranks, each job's representative and evenly spaced ranks",
          "[workload][trace]") {
  // 72 GPUs, two jobs of one stage each: ranks 0-7 and 8, 16, ..., 64; the others idle.
  // Each job's 8 evenly spaced ranks are all of its ranks.
  const nlohmann::json trace = timeline_of(
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-moe-layer.json", "trace-ranks");
  std::vector<int> busy = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int r = 8; r <= 64; r += 8) busy.push_back(r);
  CHECK(trace["otherData"]["ranks"] == 72);
  CHECK(trace["otherData"]["ranks_drawn"] == busy.size());
  CHECK(trace["otherData"]["ranks_shown"].get<std::vector<int>>() == busy);
  REQUIRE(trace["otherData"]["representatives"].size() == 2);  // a stage per job
  for (const auto& rep : trace["otherData"]["representatives"]) {
    CHECK(rep["stage"] == 0);
    CHECK(std::ranges::find(busy, rep["rank"].get<int>()) != busy.end());
  }
  std::vector<int> processes;
  std::set<int> with_slices;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.push_back(e["pid"]);
    if (e["ph"] == "X") with_slices.insert(e["pid"].get<int>());
  }
  CHECK(processes == busy);
  // Rank 64, the eight-nodes job's last GPU, among them.
  CHECK(with_slices == std::set<int>(busy.begin(), busy.end()));
  CHECK(improperly_nested(trace) == 0);
}

TEST_CASE("workload table: long durations in minutes, not e-notation", "[workload]") {
  // 1280 s of one GPU's compute over 4: the one-GPU step is 21.3 minutes.
  const Scenario s = parse_scenario(
      parse_json_text(ddp(4, "100GB/s", R"({"gradients": "1GiB", "compute": "1280s"})"),
                      "scenario.json"),
      ".");
  const std::string table = workload_table(s, run_workloads(s));
  CHECK_THAT(table, Catch::Contains("over one GPU (21.3 min)"));
  CHECK_THAT(table, !Catch::Contains("e+"));
}

namespace workload_test {

// What a built step holds, counted as workload_size() estimates it.
WorkloadSize built_size(const WorkloadSpec& w) {
  StepGraphBuilder b;
  build_workload(w, b);
  WorkloadSize s;
  std::set<const std::vector<std::int64_t>*> sends;  // the pipeline sends' one matrix
  for (const StepTask& t : b.graph().tasks) {
    const auto k = static_cast<std::int64_t>(t.ranks.size());
    ++s.tasks;
    s.entries += k;
    if (t.kind != StepTaskKind::Collective) continue;
    s.ops += 2 * k * k;
    if (!t.collective->shape.matrix) continue;
    if (t.category == "pp")
      sends.insert(t.collective->shape.matrix.get());
    else  // an expert exchange: each plan hashes its matrix
      s.entries += static_cast<std::int64_t>(t.collective->shape.matrix->size());
  }
  for (const auto* m : sends) s.entries += static_cast<std::int64_t>(m->size());
  // The routing matrix the expert exchanges share, made once.
  const auto& p = w.parallelism;
  if (w.has_model() && w.model->is_moe() && p.ep > 1) s.entries += std::int64_t{p.ep} * p.ep;
  CHECK(sends.size() <= 1);  // one matrix for every send of the step
  return s;
}

Scenario scenario_of(int gpus, const std::string& workload) {
  return parse_scenario(
      parse_json_text(R"({"topology": {"preset": "switch", "gpus": )" + std::to_string(gpus) +
                          R"(, "bandwidth": "100GB/s"}, "workload": )" + workload + "}",
                      "scenario.json"),
      ".");
}

}  // namespace workload_test

TEST_CASE("a workload's size is known before its step is built, exactly", "[workload]") {
  const std::string tiny =
      R"("model": {"layers": 5, "hidden": 256, "vocab": 1000}, "gpu": "h100", "tokens_per_gpu": 512)";
  const std::string moe =
      R"("model": {"layers": 3, "hidden": 128, "vocab": 500, "experts": 4, "top_k": 2,
                   "dense_layers": 1, "shared_experts": 1}, "gpu": "h100", "tokens_per_gpu": 256)";
  const std::vector<std::pair<int, std::string>> cases = {
      {8, R"({"gradients": "1GiB", "compute": "1ms", "bucket": "25MB", "accumulation": 3})"},
      {8, R"({"gradients": "1GiB", "compute": "1ms", "bucket": null})"},
      {1, R"({"gradients": "100MB", "compute": "1ms", "bucket": "1MB"})"},
      {8, "{" + tiny + R"(, "bucket": "1MB", "parallelism": {"dp": 2, "tp": 2, "pp": 2, "micro_batches": 3}})"},
      {8, "{" + tiny + R"(, "bucket": "1MB", "overlap": false, "parallelism": {"dp": 2, "tp": 2, "pp": 2, "micro_batches": 3, "zero": 1, "pipeline": "gpipe"}})"},
      {8, "{" + tiny + R"(, "parallelism": {"dp": 4, "tp": 2, "zero": 2, "sequence_parallel": true}})"},
      {8, "{" + tiny + R"(, "bucket": "1MB", "compute_dtype": "fp8", "parallelism": {"dp": 2, "tp": 2, "pp": 2, "micro_batches": 4, "pipeline": "interleaved", "virtual_stages": 2, "sequence_parallel": true, "recompute": "full"}})"},
      {8, "{" + tiny + R"(, "parallelism": {"dp": 2, "pp": 4, "fsdp": true, "micro_batches": 4, "pipeline": "interleaved", "virtual_stages": 1}})"},
      {16, "{" + tiny + R"(, "sequence": 512, "parallelism": {"dp": 2, "tp": 2, "cp": 2, "pp": 2, "micro_batches": 2, "zero": 3, "sequence_parallel": true}})"},
      {16, "{" + moe + R"(, "parallelism": {"dp": 2, "ep": 2, "cp": 2, "pp": 2, "micro_batches": 2, "zero": 1, "order": ["ep", "cp", "tp", "pp", "dp"]}})"},
      {8, "{" + tiny + R"(, "bucket": null, "parallelism": {"dp": 2, "pp": 4, "fsdp": true, "micro_batches": 2}})"},
      {16, "{" + moe + R"(, "parallelism": {"dp": 4, "ep": 2, "tp": 2, "pp": 2, "micro_batches": 2}, "expert_load": [0.4, 0.2, 0.2, 0.2]})"},
      {16, "{" + moe + R"(, "bucket": "64KB", "parallelism": {"dp": 8, "ep": 4, "pp": 2, "zero": 3}})"},
      {16, "{" + moe + R"(, "bucket": "64KB", "parallelism": {"dp": 8, "ep": 2, "zero": 1, "sequence_parallel": true, "tp": 2}})"},
  };
  for (const auto& [gpus, workload] : cases) {
    INFO(workload);
    const Scenario s = scenario_of(gpus, workload);
    const WorkloadSize estimate = workload_size(s.workloads[0]), built = built_size(s.workloads[0]);
    CHECK(estimate.tasks == built.tasks);
    CHECK(estimate.entries == built.entries);
    CHECK(estimate.ops == built.ops);
    CHECK(estimate.tasks >= 3);
  }
  // The bundled workloads, well within the bounds.
  for (const char* name : {"workload-ddp-buckets", "workload-fsdp", "workload-llama3-70b-3d",
                           "workload-llama3-70b-dp", "workload-moe-ep", "workload-two-jobs"}) {
    INFO(name);
    const Scenario s = load_scenario(fmt::format("{}/scenarios/{}.json", COLLSIM_SOURCE_DIR, name));
    for (const auto& w : s.workloads) {
      const WorkloadSize e = workload_size(w);
      WARN(name << ": " << e.tasks << " tasks, " << e.entries << " entries, " << e.ops << " ops");
      CHECK(e.tasks * 4 < kMaxStepTasks);
    }
  }
}

TEST_CASE("workloads too big to build, and counts and shares without a value, are refused",
          "[workload]") {
  const std::string topo =
      R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "100GB/s"}, "workload": )";
  CHECK(error_of(topo + R"({"gradients": "1GiB", "compute": "20ms", "bucket": "1B"}})") ==
        "workload: a step of 2147483649 tasks (1 micro-batch, 1073741824 gradient buckets), "
        "more than the 3145728 collsim builds; use larger buckets, fewer micro-batches or fewer "
        "layers");
  // Many data-parallel replicas, each with its own pipeline: the advice names them first
  // (Llama 3 405B on 49,152 GPUs: 3,321,584 tasks, about 8,600 a replica).
  const std::string cluster =
      R"({"topology": {"preset": "cluster", "nodes": 6144}, "workload": {"model": "llama3-405b",
          "tokens_per_gpu": 4096, "parallelism": {"dp": 384, "tp": 8, "pp": 16,
          "micro_batches": 16}}})";
  CHECK_THAT(error_of(cluster),
             Catch::Contains("more than the 3145728 collsim builds; use fewer data-parallel "
                             "replicas (384 here, each with its own pipeline's tasks), larger "
                             "buckets"));
  // Two jobs each within the bound, not together.
  const std::string half =
      R"({"gradients": "1GiB", "compute": "20ms", "bucket": "1KiB", "ranks": )";
  CHECK_THAT(
      error_of(topo + "[" + half + "[0, 1]}, " + half + "[2, 3]}]}"),
      Catch::StartsWith("workload[1]: a step of 2097153 tasks (1 micro-batch, 1048576 "
                        "gradient buckets), with the jobs before it, more than the 3145728"));
  CHECK(
      error_of(
          topo +
          R"({"model": "llama3-8b", "tokens_per_gpu": 4096, "parallelism": {"dp": 1048576, "tp": 1048576, "pp": 1048576}}})") ==
      "workload.parallelism: dp x tp x pp = 1048576 x 1048576 x 1048576 = 1152921504606846976 "
      "GPUs, but only 8 ranks are free on the topology");
  // A job without ranks after jobs that took every rank (fuzz_workload: SIGSEGV once, when
  // the one before ended on the last rank).
  CHECK(error_of(topo + R"([{"ranks": [0, 1, 2, 3, 4, 5, 6, 7], "gradients": "1GB", "compute":
                            "1ms"}, {"gradients": "1GB", "compute": "1ms"}]})") ==
        "workload[1]: no ranks are left on the topology (the jobs before it take them all): "
        "give its \"ranks\"");
  // Without "ranks", a job takes those after the jobs before it where enough are left there,
  // else the lowest free ones.
  const auto ranks_of = [&](const std::string& jobs, int job) {
    return parse_scenario(parse_json_text(topo + jobs + "}", "scenario.json"), ".")
        .workloads.at(job)
        .ranks;
  };
  const std::string job = R"({"gradients": "1GB", "compute": "1ms")";
  CHECK(ranks_of("[" + job + R"(, "ranks": [0, 1]}, )" + job + "}]", 1) ==
        std::vector<int>{2, 3, 4, 5, 6, 7});
  CHECK(ranks_of("[" + job + R"(, "ranks": [7]}, )" + job + "}]", 1) ==
        std::vector<int>{0, 1, 2, 3, 4, 5, 6});
  CHECK(ranks_of("[" + job + R"(, "ranks": [4, 5, 6, 7]}, {"model": "llama3-8b",
      "tokens_per_gpu": 1024, "parallelism": {"dp": 2}}])",
                 1) == std::vector<int>{0, 1});
  CHECK(ranks_of("[" + job + R"(, "ranks": [1, 7]}, {"model": "llama3-8b",
      "tokens_per_gpu": 1024, "parallelism": {"dp": 3}}])",
                 1) == std::vector<int>{3, 4, 5});  // in a row, from a multiple of 3
  CHECK(ranks_of("[" + job + R"(, "ranks": [1, 7]}, {"model": "llama3-8b",
      "tokens_per_gpu": 1024, "parallelism": {"dp": 4}}])",
                 1) == std::vector<int>{2, 3, 4, 5});  // in a row: none from 0 or 4
  // Never scattered: six free ranks, not six in a row.
  CHECK(error_of(topo + "[" + job + R"(, "ranks": [1, 7]}, )" + job + "}]}") ==
        "workload[1]: needs 6 ranks in a row and no 6 free ranks are (the jobs before it leave 6 "
        "free, apart): give its \"ranks\"");
  CHECK(error_of(topo + "[" + job + R"(, "ranks": [1, 7]}, {"model": "llama3-8b",
      "tokens_per_gpu": 1024, "parallelism": {"dp": 7}}]})") ==
        "workload[1].parallelism: dp x tp x pp = 7 x 1 x 1 = 7 GPUs, but only 6 ranks are free "
        "on the topology");
  const std::string mixtral =
      R"({"model": "mixtral-8x7b", "tokens_per_gpu": 4096, "parallelism": {"dp": 8, "ep": 8}, "expert_load": )";
  CHECK(error_of(topo + mixtral + "[0, 0, 0, 0, 0, 0, 0, 0]}}") ==
        "workload.expert_load: the shares sum to 0, not 1: each is the fraction of routed tokens "
        "its expert receives");
  CHECK(error_of(topo + mixtral + "[0.1, 0.1, 0.1, 1e308, 1e308, 1e308, 0.1, 0.1]}}") ==
        "workload.expert_load[3]: expected a share from 0 to 1, got 1e+308");
  CHECK_THAT(error_of(topo + mixtral + "[0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]}}"),
             Catch::Contains("the shares sum to 1.6, not 1"));
  CHECK_THAT(error_of(topo + mixtral + "[0.5, 0.5]}}"),
             Catch::Contains("workload.expert_load: expected one share per expert (8)"));
  // Mixtral routes each token to 2 distinct experts: none receives more than half the slots
  // (all on one expert ran, as every token routed to it twice).
  CHECK_THAT(error_of(topo + mixtral + "[1, 0, 0, 0, 0, 0, 0, 0]}}"),
             Catch::Contains("workload.expert_load[0]: 1 of the routed slots: top-2 routing"));
  CHECK_THAT(error_of(topo + mixtral + "[0.5, 0.5, 0, 0, 0, 0, 0, 0]}}"),
             !Catch::Contains("top-2"));
  CHECK(error_of(topo + R"({"model": {"layers": 100, "hidden": 1048576, "experts": 65536, "expert_params": "1TiB"}, "tokens_per_gpu": 1, "parallelism": {"dp": 8}}})") ==
        "workload.model: 7.21e+18 parameters, more than the 2^47 (1.41e+14) collsim accounts for");
  CHECK(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 2, "parallelism": {"dp": 2, "pp": 4, "micro_batches": 9}}})") ==
        "workload.tokens_per_gpu: 2 tokens per GPU x 4 pipeline stages, split into 9 "
        "micro-batches, leave less than one token per GPU in each");
  CHECK(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 1099511627776, "parallelism": {"dp": 1, "tp": 8}}})") ==
        "workload.tokens_per_gpu: a micro-batch's activations (8796093022208 tokens x hidden "
        "4096) come to 7.21e+16 bytes, more than 2^50");
}

TEST_CASE("a training step counts and reports the collectives NCCL's estimate held", "[workload]") {
  // A tiny model on 2 x 8 H100, dp 2 x tp 4 x pp 2, collectives as NCCL picks them: small
  // TP all-reduces take NCCL's estimate (its latency), which outlasts what the links take.
  // Held time is per GPU like communication: each held collective's time past its ops,
  // over its ranks, averaged over the job's 16 (a plain sum would be 4-8 times as much).
  const auto scenario = [](const std::string& algorithm) {
    return parse_scenario(parse_json_text(R"({"topology": {"preset": "cluster", "nodes": 2},
          "network": {"model": "flow"}, "workload": {"model": {"name": "tiny", "layers": 4,
          "hidden": 2048, "vocab": 32000}, "gpu": "h100", "tokens_per_gpu": 2048,
          "bucket": "8MB", "algorithm": ")" + algorithm +
                                              R"(", "parallelism": {"dp": 2,
          "tp": 4, "pp": 2, "micro_batches": 4}}})",
                                          "scenario.json"),
                          ".");
  };
  const Scenario nccl = scenario("nccl");
  const WorkloadRun held = run_workloads(nccl);
  const JobOutcome& j = held.jobs.at(0);
  int collectives = 0, held_count = 0;
  double per_gpu = 0, summed = 0;
  for (std::size_t i = 0; i < held.graph.tasks.size(); ++i) {
    if (held.graph.tasks[i].kind != StepTaskKind::Collective) continue;
    ++collectives;
    const StepTaskOutcome& t = held.step.tasks[i];
    if (t.held_by == HeldBy::Nothing) continue;
    ++held_count;
    summed += t.end_s - t.ops_end_s;
    per_gpu += (t.end_s - t.ops_end_s) * static_cast<double>(held.graph.tasks[i].ranks.size()) / 16;
  }
  CHECK(j.collectives == collectives);
  CHECK(held_count > 0);
  CHECK(j.held_collectives == held_count);
  CHECK(per_gpu < 0.5 * summed);
  CHECK(j.held_s == Approx(per_gpu));
  CHECK(j.held_s <= j.comm_s);
  CHECK(workload_table(nccl, held)
            .find(fmt::format("held            {} of {} collectives", held_count, collectives)) !=
        std::string::npos);
  CHECK(workload_json(nccl, held)["held_s"].get<double>() == Approx(per_gpu));

  const Scenario ring = scenario("ring");
  const WorkloadRun free = run_workloads(ring);
  CHECK(free.jobs.at(0).collectives == collectives);
  CHECK(free.jobs.at(0).held_collectives == 0);
  CHECK(free.jobs.at(0).held_s == 0);
  CHECK(workload_table(ring, free).find("held ") == std::string::npos);
}

TEST_CASE("a training step shares a plan only between collectives that ask the same",
          "[workload]") {
  // Beside a job, two collectives differing in what NCCL may pick alone: each gets its own
  // plan (they once shared the first one's NVLS), and a third like the first shares it.
  const Scenario s =
      parse_scenario(parse_json_text(R"({"topology": "dgx-h100", "workload": {"gradients": "4MiB",
        "compute": "1ms", "scaling": "weak", "bucket": "4MiB", "algorithm": "ring"},
        "collectives": [
          {"name": "a", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB", "after": []},
          {"name": "b", "op": "all_reduce", "algorithm": "nccl", "nccl_algo": "ring",
           "bytes": "1GiB", "after": []},
          {"name": "c", "op": "all_reduce", "algorithm": "nccl", "bytes": "1GiB", "after": []}]})",
                                     "scenario.json"),
                     ".");
  const WorkloadRun run = run_workloads(s);
  const auto& t = run.step.tasks;
  REQUIRE(t.size() > 3);
  CHECK(t[0].plan != t[1].plan);
  CHECK(t[2].plan == t[0].plan);
  CHECK(run.step.plans.at(t[0].plan).find("nvls") != std::string::npos);
  CHECK(run.step.plans.at(t[1].plan).find("ring") != std::string::npos);
  // The text names each beside the step, as the JSON does (it once printed none of them).
  const std::string text = workload_table(s, run);
  CHECK_THAT(text, Catch::Contains("# the scenario's collectives, run beside the step"));
  for (int i = 0; i < 3; ++i) {
    const std::string line = fmt::format(
        "{:<24} {:<24} {:>10} {:>10} ", s.collectives[i].name, run.step.plans.at(t[i].plan),
        format_duration(t[i].start_s), format_duration(t[i].end_s));
    CHECK_THAT(text, Catch::Contains(line));
  }
  CHECK(workload_document(s, run)["collectives"].size() == 3);
}

TEST_CASE("a step's alike collectives share one spec, and a change copies it first", "[workload]") {
  // TP 2 x DP 2: each tensor-parallel pair runs the same exchanges layer after layer.
  const Scenario s = workload_test::scenario_of(
      4, R"({"model": {"layers": 3, "hidden": 256, "vocab": 1000}, "gpu": "h100",
             "tokens_per_gpu": 512, "parallelism": {"tp": 2, "dp": 2}})");
  StepGraphBuilder b;
  build_workload(s.workloads[0], b);
  const std::vector<StepTask>& tasks = b.graph().tasks;
  int shared = 0, apart = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].kind != StepTaskKind::Collective) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (tasks[j].kind != StepTaskKind::Collective) continue;
      const bool alike = tasks[i].collective->asks_the_same_as(*tasks[j].collective);
      CHECK(tasks[i].collective.same_object(tasks[j].collective) == alike);
      (alike ? shared : apart) += 1;
    }
    CHECK(tasks[i].collective->ranks == tasks[i].ranks);  // each still reads its own ranks
    CHECK(tasks[i].collective->name.empty());             // the task's name is the one read
  }
  CHECK(shared > 0);
  CHECK(apart > 0);
  // A change to one task's spec leaves the tasks sharing it as they were.
  std::size_t first = 0;
  while (tasks[first].kind != StepTaskKind::Collective) ++first;
  StepTask changed = tasks[first];
  changed.collective.edit().bytes += 1;
  CHECK(changed.collective->bytes == tasks[first].collective->bytes + 1);
  CHECK(!changed.collective.same_object(tasks[first].collective));
}

TEST_CASE("a job computes on the topology's named GPU unless it names its own", "[workload]") {
  const auto gpu_of = [](const std::string& topology, const std::string& job_gpu) {
    const Scenario s = parse_scenario(
        parse_json_text(R"({"topology": )" + topology +
                            R"(, "workload": {"model": "llama3-8b", "tokens_per_gpu": 1024)" +
                            job_gpu + "}}",
                        "scenario.json"),
        ".");
    return s.workloads[0].gpu;
  };
  CHECK(gpu_of(R"({"preset": "dgx", "gpu": "a100"})", "").peak_flops ==
        gpu_preset("a100")->peak_flops);
  CHECK(gpu_of(R"({"preset": "dgx", "gpu": "a100"})", R"(, "gpu": "b200")").peak_flops ==
        gpu_preset("b200")->peak_flops);
  // No compute preset of that name (an H800's): an H100's, as without a named GPU.
  CHECK(gpu_of(R"({"preset": "dgx", "gpu": "h800"})", "").peak_flops ==
        gpu_preset("h100")->peak_flops);
  CHECK(gpu_of(R"("dgx-h100")", "").peak_flops == gpu_preset("h100")->peak_flops);
}

TEST_CASE("a training step's collectives take NCCL_ALGO and NCCL_PROTO", "[workload]") {
  // A tiny model on 2 x 8 H100, dp 2 x tp 4 x pp 2 with sequence parallelism: all-reduces,
  // all-gathers, reduce-scatters and PP sends, as NCCL picks them. The job's "nccl_algo"
  // and "nccl_proto" read as NCCL reads NCCL_ALGO and NCCL_PROTO: one list for every
  // collective, or a collective's own after its name.
  const auto run = [](const std::string& lists) {
    const Scenario s =
        parse_scenario(parse_json_text(R"({"topology": {"preset": "cluster", "nodes": 2},
          "network": {"model": "flow"}, "workload": {"model": {"name": "tiny", "layers": 4,
          "hidden": 2048, "vocab": 32000}, "gpu": "h100", "tokens_per_gpu": 2048,
          "bucket": "8MB", "algorithm": "nccl", )" +
                                           lists + R"( "parallelism": {"dp": 2, "tp": 4, "pp": 2,
          "micro_batches": 4, "sequence_parallel": true}}})",
                                       "scenario.json"),
                       ".");
    const WorkloadRun r = run_workloads(s);
    std::map<std::string, std::set<std::string>> picks;  // per op, what NCCL ran
    for (std::size_t i = 0; i < r.graph.tasks.size(); ++i) {
      const StepTask& t = r.graph.tasks[i];
      if (t.kind == StepTaskKind::Collective)
        picks[std::string(name_of(t.collective->shape.op))].insert(
            r.step.plans.at(r.step.tasks[i].plan));
    }
    return picks;
  };
  const auto only = [](const std::set<std::string>& plans, const std::string& text) {
    return !plans.empty() && std::all_of(plans.begin(), plans.end(), [&](const std::string& p) {
      return p.find(text) != std::string::npos;
    });
  };
  auto picked = run("");
  REQUIRE(picked.count("all_reduce"));
  REQUIRE(picked.count("all_gather"));
  CHECK_FALSE(only(picked["all_reduce"], "tree"));
  CHECK_FALSE(only(picked["all_reduce"], "/Simple/"));
  CHECK_FALSE(only(picked["all_gather"], "/LL/"));

  picked = run(R"("nccl_algo": "allreduce:tree",)");
  CHECK(only(picked["all_reduce"], "nccl: tree/"));
  CHECK(picked["all_gather"] == run("")["all_gather"]);

  picked = run(R"("nccl_algo": "ring;allreduce:tree", "nccl_proto": "simple;allgather:ll",)");
  CHECK(only(picked["all_reduce"], "nccl: tree/Simple/"));
  CHECK(only(picked["all_gather"], "nccl: ring/LL/"));
  CHECK(only(picked["reduce_scatter"], "nccl: ring/Simple/"));

  const auto refusal = [&](const std::string& lists) {
    try {
      run(lists);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // NCCL has no tree all-gather or reduce-scatter: refused when the step has one to run,
  // at the job's field.
  CHECK_THAT(refusal(R"("nccl_algo": "tree",)"),
             Catch::StartsWith("workload.nccl_algo: NCCL has no algorithm and protocol for "));
  CHECK(
      refusal(
          R"("nccl_algo": "allgather:^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain",)") ==
      "workload.nccl_algo: excludes everything for all_gather");
  // NCCL's point-to-point sends (the pipeline's) take no list: one that would leave every
  // collective nothing leaves them be.
  CHECK(
      refusal(
          R"("nccl_algo": "^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain;allreduce:ring;allgather:ring;reducescatter:ring", "nccl_proto": "^ll,ll128,simple;allreduce:simple;allgather:simple;reducescatter:simple",)") ==
      "no error");
  // A list for a collective the step never runs may leave it nothing, as NCCL allows.
  CHECK(
      refusal(
          R"("nccl_algo": "broadcast:^ring,tree,nvls,nvlstree,pat,collnetdirect,collnetchain",)") ==
      "no error");
  CHECK_THAT(refusal(R"("nccl_algo": "ring;all_gathr:ring",)"),
             Catch::StartsWith("workload.nccl_algo: \"all_gathr\" before a colon is not one of "
                               "NCCL's functions"));
  CHECK(refusal(R"("protocol": "LL",)") ==
        "workload.protocol: NCCL picks the protocol; restrict it with \"nccl_proto\"");
  CHECK(error_of(R"({"topology": "dgx-h100", "workload": {"gradients": "1GiB", "compute": "1ms",
                     "algorithm": "ring", "nccl_proto": "simple"}})") ==
        "workload.nccl_proto: only \"algorithm\": \"nccl\" takes it (what NCCL may pick)");
}

TEST_CASE("FSDP gathers the embedding and head, prefetches backward, limits forward gathers",
          "[workload]") {
  const std::string tiny =
      R"("model": {"layers": 4, "hidden": 256, "vocab": 1000}, "gpu": "h100", "tokens_per_gpu": 512)";
  const auto graph_of = [](const std::string& workload) {
    const Scenario s = workload_test::scenario_of(4, workload);
    StepGraphBuilder b;
    build_workload(s.workloads[0], b);
    return b.graph();
  };
  const auto index_of = [](const StepGraph& g, const std::string& ends) {
    for (std::size_t i = 0; i < g.tasks.size(); ++i)
      if (g.tasks[i].name.ends_with(ends)) return static_cast<std::int32_t>(i);
    return std::int32_t{-1};
  };
  const StepGraph fsdp = graph_of("{" + tiny + R"(, "parallelism": {"dp": 4, "fsdp": true}})");
  // The table (1000 x 256 bf16 parameters) before the lookup and the head's two passes: the
  // head's and embedding's gradients were reduce-scattered, their weights never gathered.
  for (const char* use : {".embed.fwd.gather.t0", ".head.fwd.gather.t0", ".head.bwd.gather.t0"}) {
    INFO(use);
    const std::int32_t i = index_of(fsdp, use);
    REQUIRE(i >= 0);
    CHECK(fsdp.tasks[i].category == "fsdp");
    CHECK(fsdp.tasks[i].collective->bytes == 1000 * 256 * 2);
  }
  // Backward: layer 2's gather is issued before layer 3's gradients are reduced (one
  // stream: it runs under layer 3's compute, not after its reduce-scatter).
  const std::int32_t gather2 = index_of(fsdp, ".L2.bwd.gather.t0");
  const std::int32_t layer3 = index_of(fsdp, ".L3.bwd");
  REQUIRE(gather2 >= 0);
  for (std::size_t i = 0; i < fsdp.tasks.size(); ++i)
    if (fsdp.tasks[i].category == "dp" &&
        std::find(fsdp.tasks[i].after.begin(), fsdp.tasks[i].after.end(), layer3) !=
            fsdp.tasks[i].after.end())
      CHECK(gather2 < static_cast<std::int32_t>(i));
  // Forward: layer 2's gather waits for layer 0's compute (two in flight at most).
  const auto& after2 = fsdp.tasks[index_of(fsdp, ".L2.fwd.gather.t0")].after;
  CHECK(std::find(after2.begin(), after2.end(), index_of(fsdp, ".L0.fwd")) != after2.end());
  // DDP: a bucket of the head's gradients starts once the head's backward is done, not
  // after the last layer's.
  const StepGraph ddp = graph_of("{" + tiny + R"(, "bucket": "100KB", "parallelism": {"dp": 4}})");
  const auto& first_bucket = ddp.tasks[index_of(ddp, ".grad0.t0")].after;
  CHECK(first_bucket == std::vector<std::int32_t>{index_of(ddp, ".head.bwd")});
}

TEST_CASE("a workload's timeline nests on every track and is gzipped when asked", "[workload]") {
  const std::string scenario =
      std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-ddp-buckets.json";
  // Start and end each rounded to the nanosecond: slices of one track never overlap partly
  // (rounded apart, 32 pairs here overlapped by 1 ns).
  const nlohmann::json trace = workload_test::timeline_of(scenario, "nest");
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X")
      tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  std::size_t partial = 0;
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    for (std::size_t i = 1; i < slices.size(); ++i)
      if (slices[i].first < slices[i - 1].second - 1e-9 &&
          slices[i].second > slices[i - 1].second + 1e-9)
        ++partial;
  }
  CHECK(partial == 0);
  // --trace-gzip: timeline.json.gz, as a run of collectives writes it.
  const auto dir = temp_dir("gzip");
  REQUIRE(run_collsim("run " + scenario + " --trace-gzip --out " + dir.string()).status == 0);
  CHECK(std::filesystem::exists(dir / "timeline.json.gz"));
  CHECK(!std::filesystem::exists(dir / "timeline.json"));
}

TEST_CASE("a micro-batch shorter than one sequence is said", "[workload]") {
  const auto table_of = [](const std::string& workload) {
    const Scenario s = workload_test::scenario_of(4, workload);
    return workload_table(s, run_workloads(s));
  };
  const std::string model =
      R"("model": {"layers": 2, "hidden": 256, "vocab": 1000}, "gpu": "h100")";
  CHECK_THAT(table_of("{" + model +
                      R"(, "tokens_per_gpu": 1024, "sequence": 4096, "parallelism": {"dp": 4}})"),
             Catch::Contains("a micro-batch holds 1024 tokens per data-parallel replica, less "
                             "than one sequence of 4096"));
  CHECK_THAT(table_of("{" + model +
                      R"(, "tokens_per_gpu": 4096, "sequence": 4096, "parallelism": {"dp": 4}})"),
             !Catch::Contains("less than one sequence"));
}

TEST_CASE("a step's hottest links are those that carried the most for their rate", "[workload]") {
  // The MoE scenario's hot expert: GPU 0's links carry 29.7 GB at 450 GB/s for their whole
  // busy time; ranked by busy time they came 7th and 8th.
  const Scenario s =
      load_scenario(std::string(COLLSIM_SOURCE_DIR) + "/scenarios/workload-moe-ep.json");
  const WorkloadRun run = run_workloads(s);
  const nlohmann::json doc = workload_json(s, run);
  const auto& hot = doc["hottest_links"];
  REQUIRE(hot.size() >= 2);
  CHECK_THAT(hot[0]["link"].get<std::string>(), Catch::Contains("gpu0"));
  CHECK_THAT(hot[1]["link"].get<std::string>(), Catch::Contains("gpu0"));
  for (std::size_t i = 1; i < hot.size(); ++i)
    CHECK(hot[i]["utilisation"].get<double>() <= hot[i - 1]["utilisation"].get<double>());
}
