// Training realism in the model form: activation recomputation (memory and compute
// against Korthikanti et al. 2022), the Llama 3 405B preset, and the end-to-end MFU
// and tokens/s the run reports beside the kernels' efficiency it takes.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "report/workload_report.h"
#include "simulate/run_workload.h"
#include "workload/model.h"

using namespace collsim;
using collsim::test::error_of;

// The test cases too: a unity build compiles this file with others and their helpers.
namespace training_test {

WorkloadRun run_text(const std::string& text) {
  const Scenario s = parse_scenario(parse_json_text(text, "scenario.json"), ".");
  return run_workloads(s);
}

// One GPU on an ideal network: the step is its compute alone.
std::string one_gpu(const std::string& model, const std::string& extra) {
  return R"({"topology": {"preset": "switch", "gpus": 1, "bandwidth": "100GB/s"},
    "network": {"model": "ideal"},
    "workload": {"model": )" +
         model + R"(, "gpu": {"peak_flops": 1e12, "memory": "80GB"}, "mfu": 0.5,
                 "tokens_per_gpu": 2048)" +
         extra + "}}";
}

// 4 layers, hidden 1024, 16 heads, sequence 2048, no vocabulary (no head to compute).
const std::string kSmall = R"({"layers": 4, "hidden": 1024, "heads": 16, "vocab": 0,
                               "sequence": 2048})";

std::string recompute(const std::string& how, bool flash = true) {
  return R"(, "flash_attention": )" + std::string(flash ? "true" : "false") +
         R"(, "parallelism": {"recompute": ")" + how + R"("})";
}

// Llama 3 8B on one DGX H100 with TP 8 and sequence parallelism.
std::string dgx_tp8(const std::string& how) {
  return R"({"topology": "dgx-h100", "network": {"model": "flow"},
    "workload": {"model": "llama3-8b", "tokens_per_gpu": 1024,
                 "parallelism": {"tp": 8, "sequence_parallel": true, "recompute": ")" +
         how + R"("}}})";
}

// Llama 3 70B over 8 nodes x 8 H100: TP 8 with sequence parallelism, FSDP over 8
// replicas, 8 sequences of 8192 per replica in one micro-batch.
std::string fsdp_tp_70b(const std::string& how) {
  return R"({"topology": "cluster-8x8", "network": {"model": "flow"},
    "workload": {"model": "llama3-70b", "gpu": "h100", "tokens_per_gpu": 8192,
                 "parallelism": {"tp": 8, "dp": 8, "fsdp": true, "sequence_parallel": true,
                                 "recompute": ")" +
         how + R"("}}})";
}

TEST_CASE("full recomputation adds one forward per layer to backward, keeps the layer input",
          "[workload][recompute]") {
  const auto none = run_text(one_gpu(kSmall, recompute("none"))).jobs.at(0);
  const auto full = run_text(one_gpu(kSmall, recompute("full"))).jobs.at(0);
  // Forward F, backward 2F; with full recomputation the backward is 3F: 4F over 3F.
  CHECK(full.compute_s / none.compute_s == Approx(4.0 / 3.0).epsilon(1e-6));
  CHECK(full.step_s == Approx(full.compute_s).epsilon(1e-6));
  // Model FLOPs do not count the recomputation: end-to-end MFU drops by 3/4.
  CHECK(full.facts.flops_per_step == none.facts.flops_per_step);
  CHECK(full.mfu / none.mfu == Approx(0.75).epsilon(1e-6));
  // Per layer per token: 34h kept (flash attention, t = 1) against the input's 2h.
  const double tokens = 2048, layers = 4, h = 1024;
  CHECK(static_cast<double>(none.facts.memory_activations) == Approx(34 * h * tokens * layers));
  CHECK(static_cast<double>(full.facts.memory_activations) == Approx(2 * h * tokens * layers));
}

TEST_CASE("without flash attention the scores are kept unless selective recomputation drops them",
          "[workload][recompute]") {
  const double tokens = 2048, layers = 4, h = 1024, a = 16, s = 2048;
  const auto none = run_text(one_gpu(kSmall, recompute("none", false))).jobs.at(0);
  const auto selective = run_text(one_gpu(kSmall, recompute("selective", false))).jobs.at(0);
  // sbh(34 + 5as/h) without recomputation, sbh x 34 with selective (t = 1).
  CHECK(static_cast<double>(none.facts.memory_activations) ==
        Approx((34 * h + 5 * a * s) * tokens * layers));
  CHECK(static_cast<double>(selective.facts.memory_activations) ==
        Approx(34 * h * tokens * layers));
  CHECK(selective.compute_s > none.compute_s);
  // With flash attention selective changes nothing, and says so.
  const auto flash = run_text(one_gpu(kSmall, recompute("selective"))).jobs.at(0);
  const auto flash_none = run_text(one_gpu(kSmall, recompute("none"))).jobs.at(0);
  CHECK(flash.compute_s == flash_none.compute_s);
  CHECK(flash.facts.memory_activations == flash_none.facts.memory_activations);
  REQUIRE(flash.facts.warnings.size() == 1);
  CHECK_THAT(flash.facts.warnings[0], Catch::Contains("changes nothing with flash attention"));
}

TEST_CASE("selective recomputation costs Korthikanti et al.'s 2.7% on GPT-3 175B's layer",
          "[workload][recompute]") {
  // GPT-3 175B's layer: hidden 12288, 96 heads, sequence 2048, 4h^2 + 8h^2 weights. The
  // paper: 72bsh^2(1 + s/3h) hardware FLOPs against 72bsh^2(1 + s/6h) model FLOPs.
  const std::string gpt3 = R"({"layers": 1, "hidden": 12288, "heads": 96, "vocab": 0,
                                "sequence": 2048})";
  const auto none = run_text(one_gpu(gpt3, recompute("none", false))).jobs.at(0);
  const auto selective = run_text(one_gpu(gpt3, recompute("selective", false))).jobs.at(0);
  CHECK(selective.compute_s / none.compute_s == Approx(38.0 / 37.0).epsilon(1e-6));
  CHECK(selective.compute_s / none.compute_s - 1 == Approx(0.027).margin(5e-4));
}

TEST_CASE("activations under TP with sequence parallelism: 34sbh/t, full recompute 2sbh/t",
          "[workload][recompute]") {
  // 1024 tokens per GPU x 8 GPUs of one replica: 8192 tokens a micro-batch, 32 layers.
  const double tokens = 8192, layers = 32, h = 4096, t = 8;
  const auto none = run_text(dgx_tp8("none")).jobs.at(0);
  const auto full = run_text(dgx_tp8("full")).jobs.at(0);
  CHECK(static_cast<double>(none.facts.memory_activations) ==
        Approx(34 * h / t * tokens * layers));
  CHECK(static_cast<double>(full.facts.memory_activations) == Approx(2 * h / t * tokens * layers));
  CHECK(full.compute_s > none.compute_s);
}

TEST_CASE("Llama 3 70B with FSDP and TP 8 fits in 80 GB only with full recomputation",
          "[workload][recompute]") {
  const auto none = run_text(fsdp_tp_70b("none")).jobs.at(0);
  const auto full = run_text(fsdp_tp_70b("full")).jobs.at(0);
  const std::int64_t hbm = 80'000'000'000;
  CHECK(none.facts.memory_total() > hbm);
  CHECK(full.facts.memory_total() < hbm);
  CHECK(none.facts.warnings.size() == 1);
  CHECK(full.facts.warnings.empty());
  CHECK(full.step_s > none.step_s);
}

TEST_CASE("recompute is checked like every field", "[workload][recompute]") {
  const std::string topo =
      R"({"topology": {"preset": "switch", "gpus": 8, "bandwidth": "100GB/s"}, "workload": )";
  CHECK_THAT(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 1024,
                                  "parallelism": {"recompute": "ful"}}})"),
             Catch::Contains("workload.parallelism.recompute: unknown value \"ful\"; did you mean "
                             "\"full\"?"));
  CHECK_THAT(error_of(topo + R"({"model": "llama3-8b", "tokens_per_gpu": 1024,
                                  "parallelism": {"recomptue": "full"}}})"),
             Catch::Contains("did you mean \"recompute\"?"));
  CHECK_THAT(error_of(topo + R"({"gradients": "1GB", "compute": "1ms", "flash_attention": false}})"),
             Catch::Contains("workload.flash_attention: only a workload with a \"model\" takes it"));
}

TEST_CASE("the Llama 3 405B preset matches the paper's size", "[workload]") {
  const ModelSpec m = *model_preset("llama3-405b");
  CHECK(m.layers == 126);
  CHECK(m.hidden == 16384);
  CHECK(m.heads == 128);
  CHECK(m.total_params() / 1e9 == Approx(405.8).epsilon(0.002));
  // GQA: Q and O 16384^2 each, K and V 16384 x (8 x 128) each.
  CHECK(m.attention_params == 2.0 * 16384 * 16384 + 2.0 * 16384 * 1024);
  CHECK(m.dense_mlp_params == 3.0 * 16384 * 53248);
}

TEST_CASE("end-to-end MFU is the model's FLOPs over GPUs x peak x step, exactly", "[workload]") {
  const Scenario s = parse_scenario(
      parse_json_text(R"({"topology": "dgx-h100", "network": {"model": "flow"},
        "workload": {"model": "llama3-8b", "mfu": 0.5, "tokens_per_gpu": 4096,
                     "parallelism": {"tp": 2, "dp": 4}}})",
                      "scenario.json"),
      ".");
  const WorkloadRun run = run_workloads(s);
  const JobOutcome& j = run.jobs.at(0);
  CHECK(j.mfu == j.facts.flops_per_step / (8 * 989e12 * j.step_s));
  CHECK(j.tokens_per_s_per_gpu == 4096 / j.step_s);
  // Communication and the rest come on top of the kernels: below their 50%.
  CHECK(j.mfu < 0.5);
  CHECK(j.mfu > 0.3);
  const auto doc = workload_json(s, run);
  CHECK(doc["end_to_end_mfu"].get<double>() == j.mfu);
  CHECK(doc["tokens_per_s_per_gpu"].get<double>() == j.tokens_per_s_per_gpu);
  CHECK(doc["mfu"].get<double>() == 0.5);
  CHECK_THAT(workload_table(s, run), Catch::Contains("% end to end"));
}

// Llama 3 8B on one DGX H100 (TP 8 with sequence parallelism), in bf16 or FP8.
std::string dgx_dtype(const std::string& gpu, const std::string& dtype) {
  return R"({"topology": "dgx-h100", "network": {"model": "flow"},
    "workload": {"model": "llama3-8b", "gpu": )" +
         gpu + R"(, "tokens_per_gpu": 1024, "compute_dtype": ")" + dtype +
         R"(", "parallelism": {"tp": 8, "sequence_parallel": true}}})";
}

double compute_category(const JobOutcome& j) {
  for (const auto& c : j.breakdown.categories)
    if (c.category == "compute") return c.busy_s;
  return 0;
}

TEST_CASE("FP8 runs the kernels at the FP8 peak and all-gathers forward activations in FP8",
          "[workload][fp8]") {
  const auto bf16 = run_text(dgx_dtype(R"("h100")", "bfloat16"));
  const auto fp8 = run_text(dgx_dtype(R"("h100")", "fp8"));
  CHECK(compute_category(fp8.jobs.at(0)) / compute_category(bf16.jobs.at(0)) ==
        Approx(989.0 / 1979.0).epsilon(1e-6));
  CHECK(fp8.jobs[0].facts.flops_per_step == bf16.jobs[0].facts.flops_per_step);
  // A micro-batch of 8192 tokens x hidden 4096: bf16 2 bytes, FP8 1 byte an element.
  const std::int64_t elements = 8192 * 4096;
  int forward_gathers = 0;
  for (const StepTask& t : fp8.graph.tasks) {
    if (t.category != "tp") continue;
    const bool forward = t.name.find(".fwd.") != std::string::npos;
    const bool gather = t.collective->shape.op == CollectiveOp::AllGather;
    INFO(t.name);
    CHECK(t.collective->bytes == elements * (forward && gather ? 1 : 2));
    forward_gathers += forward && gather;
  }
  CHECK(forward_gathers == 32 * 2);
  // End-to-end MFU against the peak the kernels run at.
  const JobOutcome& j = fp8.jobs[0];
  CHECK(j.mfu == j.facts.flops_per_step / (8 * 1979e12 * j.step_s));
}

TEST_CASE("FP8 on a GPU without it is refused at compute_dtype", "[workload][fp8]") {
  CHECK_THAT(error_of(dgx_dtype(R"("a100")", "fp8")),
             Catch::Contains("workload.compute_dtype: the a100 has no FP8 tensor cores"));
  CHECK_THAT(error_of(dgx_dtype(R"({"peak_flops": 1e15, "memory": "80GB"})", "fp8")),
             Catch::Contains("workload.compute_dtype: the gpu has no FP8 tensor cores: give the "
                             "GPU's \"fp8_peak_flops\""));
  CHECK_THAT(error_of(dgx_dtype(R"("h100")", "fp16")),
             Catch::Contains("workload.compute_dtype: unknown value \"fp16\"; did you mean"));
  CHECK(run_text(dgx_dtype(R"({"peak_flops": 1e15, "fp8_peak_flops": 2e15, "memory": "80GB"})",
                           "fp8"))
            .jobs.at(0)
            .step_s > 0);
}

TEST_CASE("sequence parallelism: reduce-scatter, then all-gather, one after the other",
          "[workload]") {
  const auto run = run_text(dgx_dtype(R"("h100")", "bfloat16"));
  std::map<std::string, std::size_t> scatter;  // exchange name -> its reduce-scatter task
  int checked = 0;
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i) {
    const StepTask& t = run.graph.tasks[i];
    if (t.category != "tp") continue;
    const auto at = t.name.find(".rs.");
    if (at != std::string::npos) {
      scatter[t.name.substr(0, at)] = i;
      continue;
    }
    const auto ag = t.name.find(".ag.");
    REQUIRE(ag != std::string::npos);
    const std::size_t rs = scatter.at(t.name.substr(0, ag));
    INFO(t.name);
    CHECK(t.after == std::vector<std::int32_t>{static_cast<std::int32_t>(rs)});
    CHECK(run.step.tasks[i].start_s >= run.step.tasks[rs].end_s);
    ++checked;
  }
  CHECK(checked == 32 * 4);  // after attention and after the MLP, forward and backward
}

// 4 stages of 4 layers each (FLOPs per token per layer 2 x 3e6 + 4 x 1024 x 1024), 512
// tokens a micro-batch, 1e12 FLOP/s at MFU 0.5: a whole stage's forward takes f below.
constexpr double kStageForward = 4 * 10194304.0 * 512 / 5e11;

std::string pipeline(const std::string& schedule, int micro, const std::string& extra = "") {
  return R"({"topology": {"preset": "switch", "gpus": 4, "bandwidth": "1000TB/s", "latency": "0us"},
    "network": {"model": "ideal"},
    "workload": {"model": {"layers": 16, "hidden": 1024, "vocab": 0, "sequence": 1024,
                           "attention_params": 1000000, "mlp_params": 2000000},
                 "gpu": {"peak_flops": 1e12, "memory": "80GB"}, "mfu": 0.5,
                 "tokens_per_gpu": )" +
         std::to_string(512 * micro / 4) + R"(, "parallelism": {"pp": 4, "micro_batches": )" +
         std::to_string(micro) + R"(, "pipeline": ")" + schedule + "\"" + extra + "}}}";
}

TEST_CASE("interleaved 1F1B: the bubble shrinks by v, and more sends cross the stages",
          "[workload][pipeline]") {
  const double stage = 3 * kStageForward;  // a whole stage's forward and backward
  for (int v : {2, 4}) {
    INFO("v = " << v);
    const auto run = run_text(pipeline("interleaved", 8, R"(, "virtual_stages": )" +
                                                             std::to_string(v)));
    const JobOutcome& j = run.jobs.at(0);
    CHECK(j.compute_s == Approx(8 * stage).epsilon(1e-6));
    // (p - 1)/(v m) of the ideal 8 (f + b): (p - 1)(f + b)/v.
    CHECK(j.idle_s == Approx(3 * stage / v).epsilon(1e-3));
    CHECK(j.step_s == Approx((8 + 3.0 / v) * stage).epsilon(1e-3));
    // Every boundary between chunks, both ways, every micro-batch: (pp v - 1) x 2 x m.
    std::int64_t sends = 0;
    for (const auto& c : j.breakdown.categories)
      if (c.category == "pp") sends = c.tasks;
    CHECK(sends == (4 * v - 1) * 2 * 8);
  }
  // The first stage keeps 1 + (p - 1)/(p v) times 1F1B's activations (Narayanan et al.).
  const auto interleaved = run_text(pipeline("interleaved", 8, R"(, "virtual_stages": 2)"));
  const auto plain = run_text(pipeline("1f1b", 8));
  CHECK(static_cast<double>(interleaved.jobs[0].facts.memory_activations) /
            static_cast<double>(plain.jobs[0].facts.memory_activations) ==
        Approx(1 + 3.0 / 8).epsilon(1e-9));
}

TEST_CASE("interleaving's conditions are Megatron's, refused by path", "[workload][pipeline]") {
  CHECK_THAT(error_of(pipeline("interleaved", 6, R"(, "virtual_stages": 2)")),
             Catch::Contains("workload.parallelism.micro_batches: interleaved 1F1B runs "
                             "micro-batches in groups of pp, as Megatron does: 6 micro-batches "
                             "is not a multiple of pp = 4"));
  CHECK_THAT(error_of(pipeline("1f1b", 8, R"(, "virtual_stages": 2)")),
             Catch::Contains("workload.parallelism.virtual_stages: only an \"interleaved\" "
                             "pipeline has virtual stages"));
  CHECK_THAT(error_of(pipeline("interleaved", 8)),
             Catch::Contains("workload.parallelism.pipeline: an interleaved pipeline needs "
                             "\"virtual_stages\""));
  CHECK_THAT(error_of(pipeline("interleaved", 8, R"(, "virtual_stages": 8)")),
             Catch::Contains("workload.parallelism.virtual_stages: 4 stages x 8 virtual stages "
                             "for 16 layers"));
  CHECK_THAT(error_of(pipeline("interleaved", 8, R"(, "virtual_stage": 2)")),
             Catch::Contains("did you mean \"virtual_stages\"?"));
}

// Llama 3 8B on one DGX H100, TP 4, and either 2 replicas or 1 split over CP 2: the same
// tokens per GPU either way.
std::string dgx_cp(const std::string& split) {
  return R"({"topology": "dgx-h100", "network": {"model": "flow"},
    "workload": {"model": "llama3-8b", "tokens_per_gpu": 1024,
                 "parallelism": {"tp": 4, )" +
         split + "}}}";
}

TEST_CASE("context parallelism: the sequence split over cp ranks, K/V round the ring",
          "[workload][cp]") {
  const auto dp = run_text(dgx_cp(R"("dp": 2)"));
  const auto cp = run_text(dgx_cp(R"("dp": 1, "cp": 2)"));
  // Each GPU computes 4096 tokens against the whole 8192-token sequence either way.
  CHECK(compute_category(cp.jobs.at(0)) == Approx(compute_category(dp.jobs.at(0))).epsilon(1e-9));
  CHECK(cp.jobs[0].facts.flops_per_step == dp.jobs[0].facts.flops_per_step);
  // Per layer, forward and backward, one exchange per TP rank among the 2 CP ranks: its 4096
  // tokens' keys and values (8 KV heads x 128 each), split over TP 4, bf16, twice (cp 2).
  const std::int64_t block = 4096 * 2 * 1024 / 4;
  int exchanges = 0;
  for (const StepTask& t : cp.graph.tasks) {
    if (t.category == "dp") CHECK(t.ranks.size() == 2);  // gradients reduce over the CP ranks
    if (t.category != "cp") continue;
    INFO(t.name);
    ++exchanges;
    CHECK(t.ranks.size() == 2);
    CHECK(t.collective->bytes == 2 * block * 2);
    const bool forward = t.name.find(".fwd.") != std::string::npos;
    CHECK(t.collective->shape.op ==
          (forward ? CollectiveOp::AllGather : CollectiveOp::ReduceScatter));
  }
  CHECK(exchanges == 32 * 2 * 4);
  // Activations kept per GPU: its own 4096 tokens, as with 2 replicas.
  CHECK(cp.jobs[0].facts.memory_activations == dp.jobs[0].facts.memory_activations);
}

TEST_CASE("context parallelism is checked like every degree", "[workload][cp]") {
  CHECK_THAT(error_of(dgx_cp(R"("dp": 1, "cp": 4)")),
             Catch::Contains("workload.parallelism: dp x tp x pp x cp = 1 x 4 x 1 x 4 = 16 GPUs, "
                             "but only 8 ranks are free on the topology"));
  CHECK_THAT(error_of(R"({"topology": "dgx-h100", "workload": {"model": "llama3-8b",
      "tokens_per_gpu": 1024, "sequence": 1001, "parallelism": {"tp": 1, "cp": 8}}})"),
             Catch::Contains("workload.parallelism.cp: context parallelism splits each sequence "
                             "over cp ranks: 1001 tokens do not split evenly over cp = 8"));
  CHECK_THAT(error_of(dgx_cp(R"("dp": 1, "cq": 2)")), Catch::Contains("did you mean \"cp\"?"));
  // "cp" may take a place of its own in the order.
  CHECK(run_text(dgx_cp(R"("dp": 1, "cp": 2, "order": ["cp", "tp", "ep", "pp", "dp"])"))
            .jobs.at(0)
            .step_s > 0);
}

TEST_CASE("ZeRO shards experts over the replicas holding them, dense weights over every rank",
          "[workload][memory]") {
  // Mixtral 8x7B on 8 GPUs, dp 8: with ep 8 each GPU holds one expert of each layer, alone;
  // with ep 1 every GPU holds all eight, shared by 8 replicas. Sharded over the ranks that
  // reduce them, both leave 1/8 of the experts' state per GPU; without ZeRO, ep 8 holds 1/8.
  const auto job = [](int ep, int zero) {
    return run_text(fmt::format(
                        R"({{"topology": {{"preset": "switch", "gpus": 8, "bandwidth": "450GB/s"}},
          "network": {{"model": "ideal"}},
          "workload": {{"model": "mixtral-8x7b", "gpu": "h100", "mfu": 0.4, "tokens_per_gpu": 1024,
                        "parallelism": {{"dp": 8, "ep": {}, "zero": {}}}}}}})",
                        ep, zero))
        .jobs.at(0)
        .facts;
  };
  const auto z0_ep1 = job(1, 0), z0_ep8 = job(8, 0);
  CHECK(z0_ep8.memory_optimizer < z0_ep1.memory_optimizer / 4);
  for (int zero : {1, 2, 3}) {
    INFO("zero " << zero);
    const auto ep1 = job(1, zero), ep8 = job(8, zero);
    CHECK(static_cast<double>(ep8.memory_optimizer) ==
          Approx(static_cast<double>(ep1.memory_optimizer)).epsilon(1e-6));
    // Unsharded below their stage: each GPU holds its own experts whole.
    const bool grads_sharded = zero >= 2, weights_sharded = zero >= 3;
    CHECK((ep8.memory_gradients == Approx(ep1.memory_gradients).epsilon(1e-6)) == grads_sharded);
    CHECK((ep8.memory_params == Approx(ep1.memory_params).epsilon(1e-6)) == weights_sharded);
  }
}

}  // namespace training_test
