#include "workload/workload_json.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/units.h"
#include "schedule/algorithms.h"
#include "workload/chakra.h"

namespace collsim {

// Shares that do not sum to 1 are refused, not rescaled: a silent rescale hides a
// forgotten or mistyped expert, and shares summing to 0 or past a double's range have
// no fraction to give (NaN times). Top-k routing sends a token to k distinct experts, so
// no expert receives more than 1/k of the routed slots.
std::vector<double> parse_expert_shares(const JsonView& load, int experts, int top_k) {
  if (load.size() != static_cast<std::size_t>(experts))
    load.fail(fmt::format("one share per expert ({})", experts));
  std::vector<double> shares;
  double total = 0;
  for (std::size_t e = 0; e < load.size(); ++e) {
    const double x = load[e].as_number();
    if (!(x >= 0 && x <= 1)) load[e].fail("a share from 0 to 1");
    if (top_k > 1 && x > 1.0 / top_k + 1e-9)
      load[e].fail_message(fmt::format(
          "{} of the routed slots: top-{} routing sends each token to {} distinct experts, so "
          "one expert receives at most 1/{} of them",
          format_significant(x, 6), top_k, top_k, top_k));
    shares.push_back(x);
    total += x;
  }
  if (std::abs(total - 1) > 1e-6)
    load.fail_message(fmt::format(
        "the shares sum to {}, not 1: each is the fraction of routed tokens its expert "
        "receives{}",
        format_significant(total, 6),
        total > 0 ? fmt::format(" (divide each by {})", format_significant(total, 6)) : ""));
  return shares;
}

namespace workload_parse {

// Keys only a Chakra workload takes (besides "chakra"), and keys it refuses (the trace
// gives the step).
constexpr std::string_view kChakraOnlyKeys[] = {"memory_bandwidth", "serialize_compute",
                                                "process_groups"};
constexpr std::string_view kNotWithChakra[] = {
    "gradients",    "compute",           "scaling",     "bucket",         "overlap",
    "accumulation", "backward_fraction", "model",       "tokens_per_gpu", "sequence",
    "param_dtype",  "grad_dtype",        "parallelism", "expert_load",    "flash_attention",
    "compute_dtype"};

// A parallelism degree is at most 2^20, so dp x tp x pp is exact in 64 bits (as a
// 32-bit int it wrapped, and a job of 2^60 GPUs "needed 65 ranks").
constexpr std::int64_t kMaxDegree = 1 << 20;
constexpr std::int64_t kMaxCp = 1 << 10;  // tp x pp x cp stays within 2^50
static_assert(kMaxDegree * kMaxDegree <= std::numeric_limits<std::int64_t>::max() / kMaxDegree);

// The product as a double: four degrees can pass int64 (refused, never wrapped).
double gpus_of(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t cp) {
  return static_cast<double>(dp) * static_cast<double>(tp) * static_cast<double>(pp) *
         static_cast<double>(cp);
}

std::string gpus_text(std::int64_t dp, std::int64_t tp, std::int64_t pp, std::int64_t cp = 1) {
  if (cp == 1)  // three degrees of at most 2^20: exact in int64
    return fmt::format("dp x tp x pp = {} x {} x {} = {} GPUs", dp, tp, pp, dp * tp * pp);
  return fmt::format("dp x tp x pp x cp = {} x {} x {} x {} = {:.0f} GPUs", dp, tp, pp, cp,
                     gpus_of(dp, tp, pp, cp));
}

DType parse_dtype(const JsonView& v) {
  return *dtype_from_name(v.as_choice(all_dtype_names()));
}

std::string preset_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

ModelSpec parse_model(const JsonView& v) {
  if (v.is_string()) {
    const std::string name = v.as_string();
    if (auto m = model_preset(name)) return *m;
    v.fail_message(fmt::format("no model preset \"{}\"; presets: {}", name,
                               preset_list(model_preset_names())));
  }
  if (!v.is_object()) v.fail("a model preset name or an object with \"layers\" and \"hidden\"");
  v.allow_only(kModelKeys);
  ModelSpec m;
  m.name = v.has("name") ? v["name"].as_name() : "model";
  m.layers = static_cast<int>(v["layers"].as_int(1, 100000));
  m.hidden = v["hidden"].as_int(1, 1 << 20);
  if (auto x = v.find("vocab")) m.vocab = x->as_int(0, 1 << 24);
  if (auto x = v.find("sequence")) m.sequence = x->as_int(1, 1 << 24);
  const double h = static_cast<double>(m.hidden);
  // Defaults: multi-head attention (4h^2) and a 4h MLP, the classic transformer.
  m.attention_params =
      v.has("attention_params") ? static_cast<double>(v["attention_params"].as_size()) : 4 * h * h;
  m.dense_mlp_params =
      v.has("mlp_params") ? static_cast<double>(v["mlp_params"].as_size()) : 8 * h * h;
  m.attention_dim = v.has("attention_dim") ? v["attention_dim"].as_int(1, 1 << 24) : m.hidden;
  m.kv_dim = v.has("kv_dim") ? v["kv_dim"].as_int(1, 1 << 24) : m.attention_dim;
  // Heads of 128 unless told: the attention scores' size without flash attention.
  m.heads = v.has("heads") ? static_cast<int>(v["heads"].as_int(1, 1 << 16))
                           : static_cast<int>(std::max<std::int64_t>(1, m.attention_dim / 128));
  if (auto x = v.find("experts")) m.experts = static_cast<int>(x->as_int(0, 1 << 16));
  if (auto x = v.find("top_k")) m.top_k = static_cast<int>(x->as_int(1, std::max(1, m.experts)));
  if (auto x = v.find("shared_experts")) m.shared_experts = static_cast<int>(x->as_int(0, 64));
  if (auto x = v.find("dense_layers")) m.dense_layers = static_cast<int>(x->as_int(0, m.layers));
  if (auto x = v.find("tied_embeddings")) m.tied_embeddings = x->as_bool();
  m.expert_params = v.has("expert_params") ? static_cast<double>(v["expert_params"].as_size())
                                           : m.dense_mlp_params;
  if (m.experts > 0 && m.top_k > m.experts) v["top_k"].fail("at most \"experts\"");
  return m;
}

GpuSpec parse_gpu(const JsonView& v) {
  if (v.is_string()) {
    const std::string name = v.as_string();
    if (auto g = gpu_preset(name)) return *g;
    v.fail_message(
        fmt::format("no GPU preset \"{}\"; presets: {}", name, preset_list(gpu_preset_names())));
  }
  if (!v.is_object()) v.fail("a GPU preset name or {\"peak_flops\": 989e12, \"memory\": \"80GB\"}");
  v.allow_only(kGpuKeys);
  GpuSpec g;
  g.name = v.has("name") ? v["name"].as_name() : "gpu";
  const auto flops = [&](const char* key) {
    const double f = v[key].as_number();
    if (!(f >= 1e9 && f <= 1e18)) v[key].fail("FLOP/s between 1e9 and 1e18");
    return f;
  };
  g.peak_flops = flops("peak_flops");
  if (v.has("fp8_peak_flops")) g.fp8_peak_flops = flops("fp8_peak_flops");
  g.memory = v["memory"].as_size();
  return g;
}

// Interleaved 1F1B: its virtual stages, and Megatron's conditions on the pipeline.
void parse_interleaving(const JsonView& v, Parallelism& p) {
  const bool interleaved = p.pipeline == "interleaved";
  if (auto s = v.find("virtual_stages")) {
    if (!interleaved) s->fail_message("only an \"interleaved\" pipeline has virtual stages");
    p.virtual_stages = static_cast<int>(s->as_int(1, 1 << 10));
  }
  if (!interleaved) return;
  if (!v.has("virtual_stages"))
    v["pipeline"].fail_message("an interleaved pipeline needs \"virtual_stages\": model chunks per stage");
  if (p.pp < 2) v["pipeline"].fail_message("an interleaved pipeline needs pp of 2 or more");
  if (p.micro_batches % p.pp != 0)
    (v.has("micro_batches") ? v["micro_batches"] : v)
        .fail_message(fmt::format("interleaved 1F1B runs micro-batches in groups of pp, as Megatron "
                                  "does: {} micro-batches is not a multiple of pp = {}",
                                  p.micro_batches, p.pp));
}

void parse_parallelism(const JsonView& v, WorkloadSpec& w, int ranks) {
  Parallelism& p = w.parallelism;
  if (!v.is_object()) v.fail("an object like {\"dp\": 8, \"tp\": 8, \"pp\": 1, \"ep\": 1}");
  v.allow_only(kParallelismKeys);
  const auto degree = [&](const char* key, int& into) {
    if (auto x = v.find(key)) into = static_cast<int>(x->as_int(1, kMaxDegree));
  };
  degree("tp", p.tp);
  degree("pp", p.pp);
  degree("ep", p.ep);
  if (auto x = v.find("cp")) p.cp = static_cast<int>(x->as_int(1, kMaxCp));
  const std::int64_t model_gpus = std::int64_t{p.tp} * p.pp * p.cp;  // at most 2^50
  if (v.has("dp")) {
    degree("dp", p.dp);
  } else if (ranks % model_gpus == 0) {
    p.dp = static_cast<int>(ranks / model_gpus);  // what the ranks leave
  }
  if (ranks % model_gpus != 0 || ranks / model_gpus != p.dp)
    v.fail_message(
        fmt::format("{}, but the job has {} ranks", gpus_text(p.dp, p.tp, p.pp, p.cp), ranks));
  if (p.dp % p.ep != 0)
    v["ep"].fail_message(
        fmt::format("expert parallelism is carved out of data parallelism: ep "
                    "({}) must divide dp ({})",
                    p.ep, p.dp));
  if (auto z = v.find("zero")) p.zero = static_cast<int>(z->as_int(0, 3));
  if (auto f = v.find("fsdp")) {
    // FSDP is ZeRO stage 3: either says the other ("zero": 3 with "fsdp": false ran as FSDP).
    if (v.has("zero") && (p.zero == 3) != f->as_bool())
      f->fail_message(
          fmt::format("FSDP is ZeRO stage 3, and \"zero\" is {}: leave one out", p.zero));
    if (f->as_bool()) p.zero = 3;
  }
  if (auto s = v.find("sequence_parallel")) p.sequence_parallel = s->as_bool();
  if (auto s = v.find("pipeline")) p.pipeline = s->as_choice({"1f1b", "gpipe", "interleaved"});
  if (auto m = v.find("micro_batches")) p.micro_batches = static_cast<int>(m->as_int(1, 1 << 16));
  parse_interleaving(v, p);
  if (auto r = v.find("recompute")) p.recompute = r->as_choice({"none", "selective", "full"});
  if (auto o = v.find("order")) {
    // Every axis once, CP optional: a bitmask of those named, unknown names and repeats
    // spoiling it.
    unsigned named = 0;
    bool valid = true;
    p.order.clear();
    for (const std::string& name : o->as_string_list()) {
      const auto axis = parallel_axis_from_name(name);
      const unsigned bit = axis ? 1u << static_cast<unsigned>(*axis) : 0;
      valid = valid && bit != 0 && !(named & bit);
      named |= bit;
      if (axis) p.order.push_back(*axis);
    }
    const unsigned cp = 1u << static_cast<unsigned>(ParallelAxis::Cp);
    const unsigned all = (1u << kParallelAxisNames.size()) - 1;
    if (!valid || (named != all && named != (all & ~cp)))
      o->fail("the four of \"tp\", \"ep\", \"pp\", \"dp\" once each, fastest-varying first "
              "(and \"cp\", else placed right after \"tp\")");
  }
}


// What the builder computes in int64 from a model: its gradients in bytes, and a
// micro-batch's activations (TP and PP traffic; with MoE, x top_k routed tokens) stay
// within a size's 2^50 bytes; a micro-batch has at least one token per GPU (MoE routing
// counts whole tokens: none would be NaN shares).
void check_model_size(const JsonView& v, const WorkloadSpec& w) {
  const ModelSpec& m = *w.model;
  const Parallelism& p = w.parallelism;
  const double params = m.total_params();
  if (!(params <= kMaxModelParams))
    v["model"].fail_message(fmt::format("{:.3g} parameters, more than the 2^47 ({:.3g}) collsim "
                                        "accounts for",
                                        params, kMaxModelParams));
  const JsonView tokens = v["tokens_per_gpu"];
  const std::int64_t per_gpu = w.tokens_per_gpu * p.pp;  // a micro-batch's tokens per GPU x micro
  if (per_gpu < p.micro_batches)
    tokens.fail_message(fmt::format("{} tokens per GPU x {} pipeline stages, split into {} "
                                    "micro-batches, leave less than one token per GPU in each",
                                    w.tokens_per_gpu, p.pp, p.micro_batches));
  const double routed = m.is_moe() ? m.top_k : 1;
  const double bytes = static_cast<double>(per_gpu) * p.tp / p.micro_batches *
                       static_cast<double>(m.hidden) * routed * element_size(w.param_dtype);
  if (!(bytes <= static_cast<double>(kMaxBytes)))
    tokens.fail_message(fmt::format("a micro-batch's activations ({} tokens x hidden {}{}) come "
                                    "to {:.3g} bytes, more than 2^50",
                                    static_cast<double>(per_gpu) * p.tp / p.micro_batches,
                                    m.hidden, m.is_moe() ? fmt::format(" x top_k {}", m.top_k) : "",
                                    bytes));
}

// The GPU a job computes on when it names none: the topology's named GPU where it is a
// compute preset too (a100, h100, b200), else an H100.
std::string default_compute_gpu(const Topology& topology) {
  const auto presets = gpu_preset_names();
  if (topology.gpu &&
      std::find(presets.begin(), presets.end(), topology.gpu->name) != presets.end())
    return std::string(topology.gpu->name);
  return "h100";
}

// The model form: tokens, MFU, GPU, dtypes and parallelism; the gradients are the model's.
void parse_model_form(const JsonView& v, WorkloadSpec& w, const Topology& topology) {
  for (const char* key : {"gradients", "compute", "scaling", "backward_fraction", "dtype"})
    if (v.has(key))
      v[key].fail_message(
          "the model gives the gradients and the compute: leave it out, or leave "
          "out \"model\" for the minimal form");
  w.model = parse_model(v["model"]);
  w.gpu = parse_gpu(
      v.has("gpu") ? v["gpu"]
                   : JsonView(nlohmann::json(default_compute_gpu(topology)), v.path() + ".gpu"));
  if (auto m = v.find("mfu")) {
    w.mfu = m->as_number();
    if (!(w.mfu > 0 && w.mfu <= 1)) m->fail("a fraction of peak in (0, 1]");
  }
  w.tokens_per_gpu = v["tokens_per_gpu"].as_int(1, std::int64_t{1} << 40);
  if (auto s = v.find("sequence")) w.sequence = s->as_int(1, 1 << 24);
  if (auto d = v.find("param_dtype")) w.param_dtype = parse_dtype(*d);
  if (auto d = v.find("grad_dtype")) w.grad_dtype = parse_dtype(*d);
  if (auto f = v.find("flash_attention")) w.flash_attention = f->as_bool();
  if (auto c = v.find("compute_dtype")) {
    w.fp8 = c->as_choice({"bfloat16", "fp8"}) == "fp8";
    if (w.fp8 && w.gpu.fp8_peak_flops <= 0)
      c->fail_message(fmt::format("the {} has no FP8 tensor cores{}", w.gpu.name,
                                  v.has("gpu") && v["gpu"].is_object()
                                      ? ": give the GPU's \"fp8_peak_flops\""
                                      : " (FP8 presets: h100, b200)"));
  }
  if (v.has("accumulation"))
    v["accumulation"].fail_message("with a model, use \"parallelism\": {\"micro_batches\": N}");
  parse_parallelism(v.has("parallelism")
                        ? v["parallelism"]
                        : JsonView(nlohmann::json::object(), v.path() + ".parallelism"),
                    w, static_cast<int>(w.ranks.size()));
  const Parallelism& par = w.parallelism;
  if (par.pp > w.model->layers)
    v["parallelism"]["pp"].fail_message(
        fmt::format("{} pipeline stages for {} layers: at most one "
                    "stage per layer",
                    par.pp, w.model->layers));
  if (std::int64_t{par.pp} * par.virtual_stages > w.model->layers)
    v["parallelism"]["virtual_stages"].fail_message(
        fmt::format("{} stages x {} virtual stages for {} layers: at most one chunk per layer",
                    par.pp, par.virtual_stages, w.model->layers));
  const std::int64_t sequence = w.sequence > 0 ? w.sequence : w.model->sequence;
  if (sequence % par.cp != 0)
    v["parallelism"]["cp"].fail_message(fmt::format(
        "context parallelism splits each sequence over cp ranks: {} tokens do not split "
        "evenly over cp = {}",
        sequence, par.cp));
  if (auto e = v.find("expert_load")) {
    if (!w.model->is_moe()) e->fail_message("the model has no experts");
    w.expert_load = parse_expert_shares(*e, w.model->experts, w.model->top_k);
  }
  // Megatron splits the attention heads over the tensor-parallel ranks: "heads": 3 on tp = 8
  // ran, and so did llama3-8b's 32 on tp = 3. Checked where the heads are given or a preset's;
  // a model without them counts hidden / 128 heads only to size its attention scores.
  const bool heads_given = v["model"].is_string() || v["model"].has("heads");
  if (heads_given && w.model->heads % par.tp != 0)
    v["parallelism"]["tp"].fail_message(
        fmt::format("tensor parallelism splits the attention heads: {} heads do not split "
                    "evenly over tp = {}",
                    w.model->heads, par.tp));
  check_model_size(v, w);
  // Expert parallelism places ranks (ep sits in the rank order): on a dense model it only
  // moved the data- and pipeline-parallel groups.
  if (!w.model->is_moe() && w.parallelism.ep > 1)
    v["parallelism"]["ep"].fail_message(
        fmt::format("expert parallelism splits an MoE model's experts: {} has none (ep = 1)",
                    w.model->name.empty() ? "the model" : w.model->name));
  if (w.model->is_moe() && w.parallelism.ep > 1 && w.model->experts % w.parallelism.ep != 0)
    v["parallelism"]["ep"].fail_message(fmt::format("{} experts do not split evenly over ep = {}",
                                                    w.model->experts, w.parallelism.ep));
}

void parse_minimal_form(const JsonView& v, WorkloadSpec& w) {
  for (const char* key :
       {"gpu", "mfu", "tokens_per_gpu", "sequence", "param_dtype", "parallelism", "expert_load",
        "flash_attention", "compute_dtype"})
    if (v.has(key)) v[key].fail_message("only a workload with a \"model\" takes it");
  if (auto d = v.find("dtype")) w.grad_dtype = parse_dtype(*d);
  w.gradients = v["gradients"].as_size();
  if (w.gradients <= 0) v["gradients"].fail("a positive size");
  // As a collective's bytes: "3B" of bfloat16 gradients ran, where the collective is refused.
  if (const int esize = element_size(w.grad_dtype); w.gradients % esize != 0)
    v["gradients"].fail_message(
        fmt::format("{} bytes is not a whole number of {} elements ({} bytes each)", w.gradients,
                    name_of(w.grad_dtype), esize));
  w.compute_s = v["compute"].as_duration();
  if (auto s = v.find("scaling")) w.strong_scaling = s->as_choice({"strong", "weak"}) == "strong";
  if (auto f = v.find("backward_fraction")) {
    w.backward_fraction = f->as_number();
    if (!(w.backward_fraction >= 0 && w.backward_fraction <= 1)) f->fail("a fraction in [0, 1]");
  }
  if (auto a = v.find("accumulation"))
    w.parallelism.micro_batches = static_cast<int>(a->as_int(1, 1 << 16));
  w.parallelism.dp = static_cast<int>(w.ranks.size());
}

// The Chakra form: the trace prefix, resolved against the scenario's folder, and how
// many ranks its files hold (read now, so a wrong path is reported with the scenario).
int parse_chakra_prefix(const JsonView& v, const std::filesystem::path& base_dir, WorkloadSpec& w) {
  const std::filesystem::path prefix = v.as_string();
  w.chakra = (prefix.is_absolute() ? prefix : base_dir / prefix).lexically_normal().string();
  try {
    return static_cast<int>(chakra_rank_files(w.chakra, 0).size());
  } catch (const InputError& e) {
    v.fail_message(e.what());
  }
}

void parse_chakra_form(const JsonView& v, WorkloadSpec& w) {
  for (std::string_view key : kNotWithChakra)
    if (v.has(key))
      v[key].fail_message("a Chakra trace gives every task of the step: leave it out");
  ChakraOptions& o = w.chakra_options;
  o.ranks = static_cast<int>(w.ranks.size());
  o.algorithm = w.algorithm;
  if (auto g = v.find("gpu")) {
    w.gpu = parse_gpu(*g);
    o.peak_flops = w.gpu.peak_flops;
  }
  if (auto m = v.find("mfu")) {
    w.mfu = m->as_number();
    if (!(w.mfu > 0 && w.mfu <= 1)) m->fail("a fraction of peak in (0, 1]");
  }
  o.mfu = w.mfu;
  if (auto b = v.find("memory_bandwidth")) o.memory_bandwidth = b->as_bandwidth();
  if (auto s = v.find("serialize_compute")) o.serialize_compute = s->as_bool();
  if (auto d = v.find("dtype")) o.dtype = parse_dtype(*d);
  if (auto groups = v.find("process_groups")) {
    if (!groups->is_object())
      groups->fail("an object of process group name -> trace ranks, like {\"tp0\": [0, 1]}");
    for (const auto& [name, ranks] : groups->raw().items()) {
      const JsonView list = (*groups)[name];
      o.process_groups[name] = list.as_int_list(0, static_cast<int>(w.ranks.size()) - 1);
      if (o.process_groups[name].empty()) list.fail("a non-empty list of trace ranks");
    }
  }
}

// A job without "ranks": as many as its trace or parallelism asks for, else every rank
// left. After the jobs before it where that many are left there (as a list of jobs fills a
// machine), else the lowest run of that many free ranks in a row that starts at a multiple
// of that many (a whole host for a host's worth), else the lowest run at all: never
// scattered, which would split its groups over hosts.
std::vector<int> default_ranks(const JsonView& v, const Topology& topology,
                               const std::vector<bool>& taken, int next_free,
                               std::optional<int> trace_ranks) {
  const int after = topology.num_ranks() - next_free;
  const int free = static_cast<int>(std::count(taken.begin(), taken.end(), false));
  if (free == 0)
    v.fail_message(
        "no ranks are left on the topology (the jobs before it take them all): give "
        "its \"ranks\"");
  int want = trace_ranks.value_or(after > 0 ? after : free);
  if (auto p = v.find("parallelism"); p && p->is_object() && p->has("dp")) {
    std::int64_t d[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; ++i)
      if (auto x = p->find(std::array{"dp", "tp", "pp", "cp"}[i]))
        d[i] = x->as_int(1, i == 3 ? kMaxCp : kMaxDegree);
    if (gpus_of(d[0], d[1], d[2], d[3]) > free)
      p->fail_message(fmt::format("{}, but only {} ranks are free on the topology",
                                  gpus_text(d[0], d[1], d[2], d[3]), free));
    want = static_cast<int>(gpus_of(d[0], d[1], d[2], d[3]));
  }
  if (want > free)
    v.fail_message(fmt::format("needs {} ranks but only {} are free on the topology", want, free));
  // Every rank from next_free on is free: the first run tried is the one after the jobs.
  const auto free_from = [&](int first) {
    if (first + want > topology.num_ranks()) return false;
    for (int r = first; r < first + want; ++r)
      if (taken[r]) return false;
    return true;
  };
  const auto run_from = [want](int first) {
    std::vector<int> ranks(want);
    std::iota(ranks.begin(), ranks.end(), first);
    return ranks;
  };
  if (free_from(next_free)) return run_from(next_free);
  for (int step : {want, 1})
    for (int first = 0; first + want <= topology.num_ranks(); first += step)
      if (free_from(first)) return run_from(first);
  v.fail_message(
      fmt::format("needs {} ranks in a row and no {} free ranks are (the jobs before "
                  "it leave {} free, apart): give its \"ranks\"",
                  want, want, free));
}

// The job's ranks, given or by default, each claimed from `taken`.
std::vector<int> job_ranks(const JsonView& v, const Topology& topology,
                           std::optional<int> trace_ranks, std::vector<bool>& taken,
                           int& next_free) {
  std::vector<int> ranks;
  if (auto r = v.find("ranks")) {
    ranks = r->as_int_list(0, topology.num_ranks() - 1);
    if (ranks.empty()) r->fail("a non-empty list of ranks");
    if (trace_ranks && static_cast<int>(ranks.size()) != *trace_ranks)
      r->fail_message(
          fmt::format("the Chakra trace has {} ranks (one file each) but {} are "
                      "listed",
                      *trace_ranks, ranks.size()));
  } else {
    ranks = default_ranks(v, topology, taken, next_free, trace_ranks);
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (taken[ranks[i]])
      (v.has("ranks") ? v["ranks"][i] : v)
          .fail_message(
              fmt::format("rank {} already belongs to another job (or is listed twice)", ranks[i]));
    taken[ranks[i]] = true;
  }
  next_free = std::max(next_free, *std::max_element(ranks.begin(), ranks.end()) + 1);
  return ranks;
}

// What every form takes: the gradient bucket, overlap, the all-reduce algorithm, protocol.
void parse_collective_settings(const JsonView& v, WorkloadSpec& w) {
  if (auto b = v.find("bucket")) {
    if (b->raw().is_null()) {
      w.bucket.reset();
    } else {
      w.bucket = b->as_size();
      if (*w.bucket <= 0) b->fail("a positive size, or null for one bucket");
    }
  }
  if (auto o = v.find("overlap")) w.overlap = o->as_bool();
  if (auto a = v.find("algorithm")) {
    w.algorithm = a->as_string();
    const auto all_reduce = algorithms_for(CollectiveOp::AllReduce);
    if (w.algorithm != "auto" && w.algorithm != "nccl" &&
        std::find(all_reduce.begin(), all_reduce.end(), w.algorithm) == all_reduce.end())
      a->fail_message(fmt::format("no all_reduce algorithm \"{}\"; available: {}, auto, nccl",
                                  w.algorithm, preset_list(all_reduce)));
  }
  w.nccl_lists = NcclLists::parse(v, w.algorithm);
  if (auto p = v.find("protocol")) w.protocol = p->as_choice({"LL", "LL128", "Simple", "auto"});
}

WorkloadSpec parse_job(const JsonView& v, const Topology& topology, std::size_t index,
                       std::vector<bool>& taken, int& next_free,
                       const std::filesystem::path& base_dir) {
  if (!v.is_object())
    v.fail("a workload object like {\"gradients\": \"1GiB\", \"compute\": \"20ms\"}");
  v.allow_only(kJobKeys);
  WorkloadSpec w;
  w.json_path = v.path();
  w.name = v.has("name") ? v["name"].as_name() : fmt::format("job{}", index);
  std::optional<int> trace_ranks;
  if (auto c = v.find("chakra")) {
    trace_ranks = parse_chakra_prefix(*c, base_dir, w);
  } else {
    for (std::string_view key : kChakraOnlyKeys)
      if (v.has(key)) v[key].fail_message("only a workload with a \"chakra\" trace takes it");
  }
  w.ranks = job_ranks(v, topology, trace_ranks, taken, next_free);
  parse_collective_settings(v, w);
  if (trace_ranks)
    parse_chakra_form(v, w);
  else if (v.has("model"))
    parse_model_form(v, w, topology);
  else
    parse_minimal_form(v, w);
  return w;
}

// The work its step would take, with the jobs before it: refused past the bounds in
// workload.h, naming the counts that make it up, before any task is made.
void check_step_size(const JsonView& job, const WorkloadSpec& w, WorkloadSize& total) {
  const WorkloadSize s = workload_size(w);
  const auto count = [](std::int64_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
  };
  const std::string micro = count(w.parallelism.micro_batches, "micro-batch", "micro-batches");
  const std::string buckets = count(s.buckets, "gradient bucket", "gradient buckets");
  const std::string shape =
      w.has_model() ? fmt::format("{}, {}, {}, {}", count(w.model->layers, "layer", "layers"),
                                  micro, count(w.parallelism.pp, "pipeline stage", "pipeline stages"),
                                  buckets)
                    : fmt::format("{}, {}", micro, buckets);
  const std::string others = total.tasks > 0 ? ", with the jobs before it," : "";
  // Every data-parallel replica runs its own pipeline's tasks: with many, they are most of it.
  const int dp = w.has_model() ? w.parallelism.dp : 1;
  const std::string replicas =
      dp > 1 ? fmt::format(
                   "fewer data-parallel replicas ({} here, each with its own pipeline's "
                   "tasks), ",
                   dp)
             : "";
  if (s.tasks > kMaxStepTasks - total.tasks)
    job.fail_message(
        fmt::format("a step of {} tasks ({}){} more than the {} collsim builds; use "
                    "{}larger buckets, fewer micro-batches or fewer layers",
                    s.tasks, shape, others.empty() ? "," : others, kMaxStepTasks, replicas));
  if (s.entries > kMaxStepEntries - total.entries)
    job.fail_message(fmt::format("a step whose tasks list {} ranks and all-to-all entries ({}){} "
                                 "more than the {} collsim holds",
                                 s.entries, shape, others.empty() ? "," : others,
                                 kMaxStepEntries));
  if (s.ops > kMaxStepOps - total.ops)
    job.fail_message(
        fmt::format("a step whose collectives make up to {} transfers (2K^2 for K "
                    "ranks; {}){} more than the 2^29 collsim simulates",
                    s.ops, shape, others.empty() ? "," : others));
  total.tasks += s.tasks;
  total.entries += s.entries;
  total.ops += s.ops;
}

}  // namespace workload_parse

std::vector<WorkloadSpec> parse_workloads(const JsonView& v, const Topology& topology,
                                          const std::filesystem::path& base_dir) {
  std::vector<WorkloadSpec> out;
  std::vector<bool> taken(topology.num_ranks(), false);
  int next_free = 0;
  std::set<std::string> names;
  WorkloadSize total;
  const auto add = [&](const JsonView& job, std::size_t i) {
    out.push_back(workload_parse::parse_job(job, topology, i, taken, next_free, base_dir));
    workload_parse::check_step_size(job, out.back(), total);
    if (!names.insert(out.back().name).second) {
      if (!job.has("name"))  // the default name an earlier job took
        job.fail_message(
            fmt::format("its default name \"{}\" is taken by an earlier job; give "
                        "it a \"name\"",
                        out.back().name));
      job["name"].fail_message(fmt::format("another job is already named \"{}\"", out.back().name));
    }
  };
  if (v.is_array()) {
    if (v.size() == 0) v.fail("at least one job");
    for (std::size_t i = 0; i < v.size(); ++i) add(v[i], i);
  } else {
    add(v, 0);
  }
  return out;
}

}  // namespace collsim
