#include "workload/workload.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.h"
#include "schedule/algorithms.h"
#include "workload/chakra.h"
#include "workload/moe.h"
#include "workload/step_graph.h"

namespace collsim {
namespace workload_build {

// A count that saturates at int64's end instead of wrapping: an estimate past every
// bound needs no exact value, only to be refused.
struct Count {
  std::int64_t v = 0;
  Count(std::int64_t x = 0) : v(x) {}  // NOLINT: counts mix with plain integers
  friend Count operator+(Count a, Count b) {
    std::int64_t r;
    return __builtin_add_overflow(a.v, b.v, &r) ? std::numeric_limits<std::int64_t>::max() : r;
  }
  friend Count operator*(Count a, Count b) {
    std::int64_t r;
    return __builtin_mul_overflow(a.v, b.v, &r) ? std::numeric_limits<std::int64_t>::max() : r;
  }
};

// Tallies a WorkloadSize: n tasks of `ranks` ranks each, collectives with `matrix`
// all-to-all entries of their own.
struct SizeTally {
  Count tasks, entries, ops;
  void compute(Count n, Count ranks) {
    tasks = tasks + n;
    entries = entries + n * ranks;
  }
  void collective(Count n, Count ranks, Count matrix = 0) {
    compute(n, ranks + matrix);
    ops = ops + n * 2 * ranks * ranks;
  }
  WorkloadSize size(Count buckets) const { return {tasks.v, entries.v, ops.v, buckets.v}; }
};

// A byte figure for the report, saturated rather than converted past int64 (undefined).
std::int64_t report_bytes(double bytes) {
  return bytes < 9.2e18 ? static_cast<std::int64_t>(bytes) : std::int64_t{9'200'000'000'000'000'000};
}

std::int64_t dtype_bytes(DType t) {
  return element_size(t);
}

StepTask compute_task(std::string name, std::vector<int> ranks, double seconds) {
  StepTask t;
  t.kind = StepTaskKind::Compute;
  t.name = std::move(name);
  t.category = "compute";
  t.ranks = std::move(ranks);
  t.duration_s = seconds;
  return t;
}

// The workload's algorithm wherever the collective has it ("auto" and "nccl" everywhere);
// elsewhere (the all-to-alls of a "ring" workload) the catalogue's default.
std::string algorithm_for(const WorkloadSpec& w, CollectiveOp op) {
  const auto algorithms = algorithms_for(op);
  const bool applies =
      w.algorithm == "auto" || w.algorithm == "nccl" ||
      std::find(algorithms.begin(), algorithms.end(), w.algorithm) != algorithms.end();
  return applies ? w.algorithm : algorithms.front();
}

// The job's algorithm, protocol and NCCL lists on one of its collectives.
void apply_job_settings(const WorkloadSpec& w, CollectiveSpec& c) {
  c.settings_path = w.json_path;
  c.algorithm = algorithm_for(w, c.shape.op);
  c.protocol = w.protocol;
  if (c.algorithm == "nccl") c.nccl_filter = w.nccl_lists.filter_for(c.shape.op);
}

StepTask collective_task(const WorkloadSpec& w, std::string name, std::string category,
                         CollectiveOp op, std::int64_t bytes, DType dtype, std::vector<int> ranks) {
  StepTask t;
  t.kind = StepTaskKind::Collective;
  t.name = std::move(name);
  t.category = std::move(category);
  CollectiveSpec& c = t.collective.edit();
  c.json_path = w.json_path;
  c.shape.op = op;
  c.shape.dtype = dtype;
  c.shape.ranks = static_cast<int>(ranks.size());
  const std::int64_t esize = element_size(dtype);
  c.shape.count = (bytes + esize - 1) / esize;  // whole elements
  c.bytes = c.shape.count * esize;
  apply_job_settings(w, c);
  c.ranks = ranks;
  t.ranks = std::move(ranks);
  return t;
}

// How many buckets bucket_sizes makes, without making them.
std::int64_t bucket_count(std::int64_t total, std::optional<std::int64_t> bucket) {
  if (!bucket || *bucket >= total) return 1;
  return total / *bucket + (total % *bucket != 0);
}

// Splits `total` bytes into buckets of `bucket` (the last takes the rest); nullopt: one.
std::vector<std::int64_t> bucket_sizes(std::int64_t total, std::optional<std::int64_t> bucket) {
  std::vector<std::int64_t> out;
  if (!bucket || *bucket >= total) return {total};
  for (std::int64_t at = 0; at < total; at += *bucket) out.push_back(std::min(*bucket, total - at));
  return out;
}

std::string stream(const WorkloadSpec& w, const std::string& what) {
  return w.name + "/" + what;
}

// What build_minimal makes: per micro-batch a forward and a backward slice per bucket,
// and on the last one (with more than one rank) an all-reduce per bucket.
WorkloadSize minimal_size(const WorkloadSpec& w) {
  const Count n = static_cast<std::int64_t>(w.ranks.size());
  const Count buckets = bucket_count(w.gradients, w.bucket);
  SizeTally t;
  t.compute(Count(w.parallelism.micro_batches) * (buckets + 1), n);
  if (n.v > 1) t.collective(buckets, n);
  return t.size(buckets);
}

// The minimal form: every rank computes in lockstep, backward in one slice per
// bucket (gradients become ready in reverse order as backward runs), one all-reduce
// per bucket on the data-parallel stream, on the last micro-batch only.
WorkloadFacts build_minimal(const WorkloadSpec& w, StepGraphBuilder& b) {
  WorkloadFacts facts;
  const int n = static_cast<int>(w.ranks.size());
  const int micro = w.parallelism.micro_batches;
  const double per_gpu = w.strong_scaling ? w.compute_s / n : w.compute_s;
  facts.one_gpu_step_s = w.strong_scaling ? w.compute_s : w.compute_s * n;
  const double forward = per_gpu * (1 - w.backward_fraction) / micro;
  const double backward = per_gpu * w.backward_fraction / micro;
  const auto buckets = bucket_sizes(w.gradients, w.bucket);
  facts.gradient_buckets = static_cast<int>(buckets.size());
  facts.gradient_bytes = w.gradients;
  const std::string compute = stream(w, "compute"), dp = stream(w, "dp");
  for (int m = 0; m < micro; ++m) {
    const std::string mb = micro > 1 ? fmt::format(".mb{}", m) : "";
    b.add(compute_task(w.name + mb + ".forward", w.ranks, forward), compute);
    const bool sync = m == micro - 1 && n > 1;
    std::vector<std::int32_t> ready;  // per bucket: the backward slice that completes it
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const double share = static_cast<double>(buckets[i]) / static_cast<double>(w.gradients);
      ready.push_back(b.add(
          compute_task(fmt::format("{}{}.backward{}", w.name, mb, i), w.ranks, backward * share),
          compute));
    }
    if (!sync) continue;
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      StepTask t = collective_task(w, fmt::format("{}.bucket{}", w.name, i), "dp",
                                   CollectiveOp::AllReduce, buckets[i], w.grad_dtype, w.ranks);
      t.after = {w.overlap ? ready[i] : ready.back()};
      b.add(std::move(t), dp);
    }
  }
  return facts;
}

// The model form. Ranks are coordinates (t, e, p, d): tensor rank, expert rank, pipeline
// stage, and d: data-parallel replica outside EP (dp = ep x dpo) with its CP rank. Each stage runs its work in
// phases: compute on every GPU of the stage, then the collectives that compute feeds;
// a stage's phases run in order (its "frontier"), stages meet through point-to-point
// activations and gradients, and data-parallel collectives run on streams of their own.
class TrainingBuilder {
 public:
  TrainingBuilder(const WorkloadSpec& w, StepGraphBuilder& b)
      : w_(w), m_(*w.model), par_(w.parallelism), b_(b) {
    cp_ = par_.cp;
    dpo_ = par_.dp / par_.ep * cp_;  // CP ranks are replicas to every loop but attention's
    micro_ = par_.micro_batches;
    seq_ = w.sequence > 0 ? w.sequence : m_.sequence;
    const double global_tokens = static_cast<double>(w.tokens_per_gpu) * par_.gpus();
    mb_tokens_ = global_tokens / par_.dp / micro_ / cp_;  // one CP rank's share
    rate_ = w.peak_flops() * w.mfu;
    act_bytes_ = dtype_bytes(w.param_dtype);
    chunks_ = par_.pp * par_.virtual_stages;
    for (std::int64_t k = 0; k < chunks_; ++k)  // k x layers passes int for 10^5 layers
      stage_layers_.push_back({static_cast<int>(k * m_.layers / chunks_),
                               static_cast<int>((k + 1) * m_.layers / chunks_)});
    frontier_.resize(par_.pp);
    order_ = par_.order;
    if (std::find(order_.begin(), order_.end(), ParallelAxis::Cp) == order_.end())
      order_.insert(std::find(order_.begin(), order_.end(), ParallelAxis::Tp) + 1,
                    ParallelAxis::Cp);
    for (ParallelAxis axis : order_) radix_.push_back(size_along(axis));
  }

  WorkloadFacts build() {
    facts_.flops_per_step =
        flops_per_token_step() * static_cast<double>(w_.tokens_per_gpu) * par_.gpus();
    facts_.one_gpu_step_s = facts_.flops_per_step / rate_;
    if (par_.recompute == "selective" && w_.flash_attention)
      facts_.warnings.push_back(fmt::format(
          "{}: selective recomputation changes nothing with flash attention, which never "
          "stores the attention scores (\"flash_attention\": false models attention without it)",
          w_.name));
    // Attention is costed over whole sequences: a micro-batch of fewer tokens than one
    // sequence (a 16M-token sequence in a 4,096-token micro-batch) costs more than it holds.
    if (mb_tokens_ * cp_ < static_cast<double>(seq_))
      facts_.warnings.push_back(fmt::format(
          "{}: a micro-batch holds {:.0f} tokens per data-parallel replica, less than one "
          "sequence of {}: its attention is costed over the whole sequence (raise "
          "tokens_per_gpu, or lower micro_batches or the sequence)",
          w_.name, mb_tokens_ * cp_, seq_));
    // Fewer micro-batches than stages: each stage idles at least (p - m) of every m + p - 1
    // slots. It runs (Megatron's 1F1B too), but is rarely what was meant.
    if (par_.pp > 1 && micro_ < par_.pp)
      facts_.warnings.push_back(fmt::format(
          "{}: {} micro-batch{} for pp = {} stages: the pipeline never fills (a bubble of at "
          "least (p - 1) / (m + p - 1) = {:.0f}% of the step); raise micro_batches to pp or more",
          w_.name, micro_, micro_ == 1 ? "" : "es", par_.pp,
          100.0 * (par_.pp - 1) / (micro_ + par_.pp - 1)));
    for (int p = 0; p < par_.pp; ++p) plan_gradients(p);
    run_pipeline();
    account_memory();
    return facts_;
  }

  // What build() makes, counted as it would make it (each count below names the
  // function that makes those tasks), in time linear in the layers.
  WorkloadSize size() const {
    const Count T = par_.tp, E = par_.ep, D = dpo_, S = D * E * T;  // S: a stage's GPUs
    const bool skewed = !w_.expert_load.empty() && m_.is_moe() && par_.ep > 1;
    SizeTally t;
    if (m_.is_moe() && par_.ep > 1) t.entries = t.entries + E * E;  // prepare_routing
    if (chunks_ > 1) t.entries = t.entries + 4 * T * T;             // send's matrix
    for (int k = 0; k < chunks_; ++k) {
      SizeTally mb;  // one micro-batch of chunk k, forward and backward
      for (int l = stage_layers_[k].first; l < stage_layers_[k].second; ++l) {
        for (int pass = 0; pass < 2; ++pass) {
          if (par_.zero == 3) {  // gather_layer
            if (sync_ranks() > 1) mb.collective(T, D * E);
            if (dpo_ > 1 && expert_params(l) > 0) mb.collective(E * T, D);
          }
          if (!split(l)) {
            mb.compute(1, S);
            continue;
          }
          mb.compute(1, S);  // attention
          if (cp_ > 1) mb.collective(Count(dpo_ / cp_) * E * T, cp_);  // context_exchange
          if (par_.tp > 1)   // tensor_exchange, after attention and after the MLP
            mb.collective(2 * D * E * (par_.sequence_parallel ? 2 : 1), T);
          if (moe_split(l))  // expert_exchange (dispatch, combine): a plan hashes the matrix
            mb.collective(2 * D * T, E, E * E);
          if (moe_split(l) && skewed)
            mb.compute(D * E, T);  // the MLP per tensor group
          else
            mb.compute(1, S);
        }
      }
      if (k == chunks_ - 1) mb.compute(2, S);                          // the head
      if (par_.zero == 3 && sync_ranks() > 1)  // gather_table: embedding; head fwd and bwd
        mb.collective(T * ((k == 0 ? 1 : 0) + (k == chunks_ - 1 ? 2 : 0)), D * E);
      const int sends = (k + 1 < chunks_) + (k > 0);                   // send
      mb.collective(Count(sends) * D * E, 2 * T);  // their one matrix: counted below
      t.tasks = t.tasks + mb.tasks * micro_;
      t.entries = t.entries + mb.entries * micro_;
      t.ops = t.ops + mb.ops * micro_;
    }
    Count buckets = 0;
    for (int p = 0; p < par_.pp; ++p) {
      // plan_gradients, then sync_bucket per bucket (and gather_updated for ZeRO-1/2).
      const auto [dense, expert] = stage_buckets(p);
      const Count times = par_.zero == 1 || par_.zero == 2 ? 2 : 1;
      t.collective(times * dense * T, D * E);
      t.collective(times * expert * T * E, D);
      buckets = buckets + dense + expert;
    }
    return t.size(buckets);
  }

  ReplicaTurn replica_turn() const {
    ReplicaTurn out;
    if (par_.ep != 1 || cp_ != 1 || dpo_ < 2) return out;
    const int most = *std::max_element(w_.ranks.begin(), w_.ranks.end());
    out.replicas = dpo_;
    out.next.assign(static_cast<std::size_t>(most) + 1, -1);
    out.replica.assign(static_cast<std::size_t>(most) + 1, -1);
    for (int d = 0; d < dpo_; ++d)
      for (int p = 0; p < par_.pp; ++p)
        for (int t = 0; t < par_.tp; ++t) {
          out.next[rank_at(t, 0, p, d)] = rank_at(t, 0, p, (d + 1) % dpo_);
          out.replica[rank_at(t, 0, p, d)] = d;
        }
    return out;
  }

  std::vector<std::vector<int>> stages() const {
    std::vector<std::vector<int>> out;
    for (int p = 0; p < par_.pp; ++p) out.push_back(stage_ranks(p));
    return out;
  }

 private:
  static constexpr int kHead = -1;  // Bucket::ready_layer of the output head's gradients
  struct Bucket {
    std::int64_t bytes = 0;
    int ready_layer = 0;  // the layer whose backward completes it; kHead: the output head's
    bool expert = false;
  };

  // The job's extent along `axis`; along DP, its replicas (each of cp CP ranks).
  int size_along(ParallelAxis axis) const {
    switch (axis) {
      case ParallelAxis::Tp:
        return par_.tp;
      case ParallelAxis::Cp:
        return cp_;
      case ParallelAxis::Ep:
        return par_.ep;
      case ParallelAxis::Pp:
        return par_.pp;
      case ParallelAxis::Dp:
        return dpo_ / cp_;
    }
    return 1;
  }

  // d counts replicas and their CP ranks: replica d / cp, CP rank d % cp.
  int rank_at(int t, int e, int p, int d) const {
    const int coordinate[] = {t, d % cp_, e, p, d / cp_};  // in ParallelAxis order
    int index = 0, scale = 1;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      index += coordinate[static_cast<std::size_t>(order_[i])] * scale;
      scale *= radix_[i];
    }
    return w_.ranks[index];
  }
  std::vector<int> tp_group(int e, int p, int d) const {
    std::vector<int> r;
    for (int t = 0; t < par_.tp; ++t) r.push_back(rank_at(t, e, p, d));
    return r;
  }
  std::vector<int> stage_ranks(int p) const {
    std::vector<int> r;
    for (int d = 0; d < dpo_; ++d)
      for (int e = 0; e < par_.ep; ++e)
        for (int t = 0; t < par_.tp; ++t) r.push_back(rank_at(t, e, p, d));
    return r;
  }
  // The data-parallel group of tensor rank t on stage p; expert weights: only the
  // replicas holding the same experts (same e).
  std::vector<int> dp_group(int t, int p, int e_only = -1) const {
    std::vector<int> r;
    for (int d = 0; d < dpo_; ++d)
      for (int e = 0; e < par_.ep; ++e)
        if (e_only < 0 || e == e_only) r.push_back(rank_at(t, e, p, d));
    return r;
  }

  double flops_per_token_step() const {
    double f = m_.head_forward_flops_per_token();
    for (int l = 0; l < m_.layers; ++l) f += m_.layer_forward_flops_per_token(l, seq_);
    return 3 * f;
  }
  double attention_flops(int layer) const {
    return 2 * m_.attention_params + 4 * static_cast<double>(seq_) * m_.attention_dim +
           (m_.layer_is_moe(layer) ? 2.0 * m_.hidden * m_.experts : 0);
  }
  double mlp_flops(int layer) const {
    if (!m_.layer_is_moe(layer)) return 2 * m_.dense_mlp_params;
    return 2 * (m_.top_k + m_.shared_experts) * m_.expert_params;
  }
  // Backward is twice the forward; full recomputation runs the forward again first.
  double backward_mlp_flops(int layer) const {
    return (par_.recompute == "full" ? 3 : 2) * mlp_flops(layer);
  }
  double backward_attention_flops(int layer) const {
    return (par_.recompute == "full" ? 3 : 2) * attention_flops(layer) + selective_flops();
  }
  // Selective recomputation of the attention scores, at Korthikanti et al.'s figure:
  // the score FLOPs' share of a layer's training FLOPs again, 3 x 4 x s x attention width
  // per token (their 72bsh^2(1 + s/3h) against 72bsh^2(1 + s/6h): 2.7% for GPT-3 175B).
  // With flash attention the scores are never stored: nothing to recompute.
  double selective_flops() const {
    if (par_.recompute != "selective" || w_.flash_attention) return 0;
    return 12 * static_cast<double>(seq_) * static_cast<double>(m_.attention_dim);
  }
  // Weights one GPU holds of a layer: dense weights split over TP, experts over EP too.
  double dense_params(int layer) const {
    const double dense = m_.layer_is_moe(layer)
                             ? m_.attention_params + m_.shared_experts * m_.expert_params +
                                   static_cast<double>(m_.hidden) * m_.experts
                             : m_.layer_params(layer);
    return dense / par_.tp;
  }
  double expert_params(int layer) const {
    if (!m_.layer_is_moe(layer)) return 0;
    return m_.experts * m_.expert_params / (par_.tp * par_.ep);
  }
  double embedding_params(int p) const {
    const double table = static_cast<double>(m_.vocab) * m_.hidden / par_.tp;
    double held = 0;
    if (p == 0) held += table;
    if (p == par_.pp - 1 && !m_.tied_embeddings) held += table;
    return held;
  }
  double stage_dense_params(int p) const {
    double held = embedding_params(p);
    for (int l : layers_backward(p)) held += dense_params(l);
    return held;
  }
  double stage_expert_params(int p) const {
    double held = 0;
    for (int l : layers_backward(p)) held += expert_params(l);
    return held;
  }
  bool moe_split(int layer) const { return m_.layer_is_moe(layer) && par_.ep > 1; }
  // A layer runs as attention and MLP phases with collectives between them, or as one.
  bool split(int layer) const { return par_.tp > 1 || cp_ > 1 || moe_split(layer); }
  // The ranks holding the same dense weights: gradients reduce, FSDP gathers over them.
  int sync_ranks() const { return par_.dp * cp_; }

  // Stage p holds chunks p, p + pp, ... (one without interleaving).
  int stage_of(int chunk) const { return chunk % par_.pp; }
  // Stage p's layers in the order its backward finishes them on the last micro-batch:
  // its last chunk first, each chunk's last layer first.
  std::vector<int> layers_backward(int p) const {
    std::vector<int> out;
    for (int k = chunks_ - par_.pp + p; k >= 0; k -= par_.pp)
      for (int l = stage_layers_[k].second - 1; l >= stage_layers_[k].first; --l) out.push_back(l);
    return out;
  }

  // Gradient buckets of stage p in the order backward produces them (last layer first):
  // a bucket fills up to `bucket` bytes and is ready when the layer holding its last
  // byte is done. FSDP (ZeRO-3) reduces one layer at a time instead.
  void plan_gradients(int p) {
    std::vector<Bucket> dense, expert;
    const bool per_layer = par_.zero == 3;
    const auto fill = [&](std::vector<Bucket>& out, double params, int layer, bool is_expert) {
      std::int64_t left = static_cast<std::int64_t>(params) * dtype_bytes(w_.grad_dtype);
      if (left <= 0) return;
      if (per_layer) return out.push_back({left, layer, is_expert});
      while (left > 0) {
        if (out.empty() || (w_.bucket && out.back().bytes >= *w_.bucket))
          out.push_back({0, layer, is_expert});
        const std::int64_t take = w_.bucket ? std::min(left, *w_.bucket - out.back().bytes) : left;
        out.back().bytes += take;
        out.back().ready_layer = layer;
        left -= take;
      }
    };
    const auto layers = layers_backward(p);
    const double table = static_cast<double>(m_.vocab) * m_.hidden / par_.tp;
    // The head's gradients are done with its backward, before the last layer's begins.
    if (p == par_.pp - 1 && !m_.tied_embeddings) fill(dense, table, kHead, false);
    for (int l : layers) {
      fill(dense, dense_params(l), l, false);
      if (dpo_ > 1) fill(expert, expert_params(l), l, true);
    }
    if (p == 0) fill(dense, table, layers.back(), false);
    if (sync_ranks() == 1) dense.clear();
    dense.insert(dense.end(), expert.begin(), expert.end());
    // Per GPU: the stage that synchronises the most (each of its GPUs its TP share).
    std::int64_t bytes = 0;
    for (const auto& bk : dense) bytes += bk.bytes;
    if (bytes > facts_.gradient_bytes) {
      facts_.gradient_bytes = bytes;
      facts_.gradient_buckets = static_cast<int>(dense.size());
    }
    buckets_.push_back(std::move(dense));
  }

  // plan_gradients' bucket counts for stage p (dense, expert), without the buckets:
  // buckets fill across layers, so ceil(bytes / bucket) of each kind; FSDP one a layer.
  std::pair<std::int64_t, std::int64_t> stage_buckets(int p) const {
    std::int64_t count[2] = {0, 0}, bytes[2] = {0, 0};
    const auto fill = [&](double params, bool is_expert) {
      const std::int64_t b = static_cast<std::int64_t>(params) * dtype_bytes(w_.grad_dtype);
      if (b <= 0) return;
      if (par_.zero == 3) ++count[is_expert];
      bytes[is_expert] += b;
    };
    const double table = static_cast<double>(m_.vocab) * m_.hidden / par_.tp;
    if (p == par_.pp - 1 && !m_.tied_embeddings) fill(table, false);
    for (int l : layers_backward(p)) {
      fill(dense_params(l), false);
      if (dpo_ > 1) fill(expert_params(l), true);
    }
    if (p == 0) fill(table, false);
    if (par_.zero != 3)
      for (int k : {0, 1}) count[k] = bytes[k] > 0 ? bucket_count(bytes[k], w_.bucket) : 0;
    if (sync_ranks() == 1) count[0] = 0;
    return {count[0], count[1]};
  }

  // One compute phase on stage p: every GPU of the stage, after the stage's frontier and
  // `extra`. With skewed expert routing each tensor group runs its own duration.
  void compute(int p, const std::string& name, double flops_per_token,
               const std::vector<std::int32_t>& extra = {},
               const std::vector<double>* skew = nullptr) {
    std::vector<std::int32_t> after = frontier_[p];
    after.insert(after.end(), extra.begin(), extra.end());
    std::vector<std::int32_t> ids;
    if (!skew) {
      const double s = flops_per_token * mb_tokens_ / par_.tp / rate_;
      StepTask t = compute_task(name, stage_ranks(p), s);
      t.after = after;
      ids.push_back(b_.add(std::move(t), stream(w_, fmt::format("compute{}", p))));
    } else {
      for (int d = 0; d < dpo_; ++d)
        for (int e = 0; e < par_.ep; ++e) {
          const double s = flops_per_token * mb_tokens_ * (*skew)[e] / par_.tp / rate_;
          StepTask t = compute_task(fmt::format("{}.e{}.d{}", name, e, d), tp_group(e, p, d), s);
          t.after = after;
          ids.push_back(b_.add(std::move(t), stream(w_, fmt::format("compute{}.{}.{}", p, e, d))));
        }
    }
    frontier_[p] = std::move(ids);
  }

  // Collectives that follow the frontier; they become the frontier.
  void communicate(int p, std::vector<StepTask> tasks) {
    std::vector<std::int32_t> ids;
    for (auto& t : tasks) {
      t.after.insert(t.after.end(), frontier_[p].begin(), frontier_[p].end());
      ids.push_back(b_.add(std::move(t), std::vector<std::string>{}));
    }
    if (!ids.empty()) frontier_[p] = std::move(ids);
  }

  // Megatron's tensor-parallel exchange after (forward) or before (backward) a block: an
  // all-reduce of the block's activations, or with sequence parallelism a reduce-scatter
  // and then the next block's all-gather of the same size, in that order on the stream
  // (Megatron: all-gather, block, reduce-scatter). With FP8 the forward all-gather
  // carries FP8 activations (one byte, moved as uint8 as PyTorch moves float8).
  void tensor_exchange(int p, const std::string& name, bool forward) {
    if (par_.tp == 1) return;
    const auto elements = static_cast<std::int64_t>(mb_tokens_ * m_.hidden);
    const auto exchange = [&](CollectiveOp op, const char* what, DType dtype) {
      std::vector<StepTask> tasks;
      for (int d = 0; d < dpo_; ++d)
        for (int e = 0; e < par_.ep; ++e)
          tasks.push_back(collective_task(w_, fmt::format("{}{}.e{}.d{}", name, what, e, d), "tp",
                                          op, elements * dtype_bytes(dtype), dtype,
                                          tp_group(e, p, d)));
      communicate(p, std::move(tasks));
    };
    if (!par_.sequence_parallel) return exchange(CollectiveOp::AllReduce, "", w_.param_dtype);
    exchange(CollectiveOp::ReduceScatter, ".rs", w_.param_dtype);
    exchange(CollectiveOp::AllGather, ".ag", forward && w_.fp8 ? DType::U8 : w_.param_dtype);
  }

  // Context parallelism's ring attention: every CP rank's keys and values go round the
  // ring to the others (forward: an all-gather's cp - 1 steps), and their gradients come
  // back (backward: a reduce-scatter). Each rank's block is its tokens x keys and values,
  // split over TP by heads. Blocking: the ring's overlap with attention is not modelled.
  void context_exchange(int p, const std::string& name, CollectiveOp op) {
    if (cp_ == 1) return;
    const auto block = static_cast<std::int64_t>(mb_tokens_ * 2 * m_.kv_dim / par_.tp);
    std::vector<StepTask> tasks;
    for (int d = 0; d < dpo_; d += cp_)
      for (int e = 0; e < par_.ep; ++e)
        for (int t = 0; t < par_.tp; ++t) {
          std::vector<int> group;
          for (int c = 0; c < cp_; ++c) group.push_back(rank_at(t, e, p, d + c));
          tasks.push_back(collective_task(w_, fmt::format("{}.t{}.e{}.d{}", name, t, e, d / cp_),
                                          "cp", op, block * cp_ * act_bytes_, w_.param_dtype,
                                          group));
        }
    communicate(p, std::move(tasks));
  }

  // MoE dispatch or combine: an all-to-allv among the EP ranks of each (t, d).
  void expert_exchange(int p, const std::string& name, bool combine) {
    std::vector<StepTask> tasks;
    const auto matrix = combine ? combine_matrix_ : dispatch_matrix_;
    for (int d = 0; d < dpo_; ++d)
      for (int t = 0; t < par_.tp; ++t) {
        std::vector<int> group;
        for (int e = 0; e < par_.ep; ++e) group.push_back(rank_at(t, e, p, d));
        StepTask task = collective_task(w_, fmt::format("{}.t{}.d{}", name, t, d), "ep",
                                        CollectiveOp::AllToAll, 0, w_.param_dtype, group);
        std::int64_t total = 0;
        for (auto v : *matrix) total += v;
        CollectiveSpec& c = task.collective.edit();
        c.shape.matrix = matrix;
        c.shape.count = total / par_.ep;
        c.bytes = c.shape.count * act_bytes_;
        tasks.push_back(std::move(task));
      }
    communicate(p, std::move(tasks));
  }

  void prepare_routing() {
    if (!m_.is_moe() || par_.ep == 1) return;
    MoeRouting r;
    r.tokens_per_rank = static_cast<std::int64_t>(mb_tokens_ / par_.tp);
    r.experts = m_.experts;
    r.top_k = m_.top_k;
    r.expert_load = w_.expert_load;
    const auto tokens = moe_dispatch_tokens(r, par_.ep);
    auto elements = std::make_shared<std::vector<std::int64_t>>(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) (*elements)[i] = tokens[i] * m_.hidden;
    dispatch_matrix_ = elements;
    combine_matrix_ = std::make_shared<std::vector<std::int64_t>>(transpose(*elements, par_.ep));
    // Expert compute per EP rank: what it receives over the mean.
    const double mean = static_cast<double>(r.tokens_per_rank * r.top_k);
    expert_skew_.assign(par_.ep, 0);
    for (int s = 0; s < par_.ep; ++s)
      for (int d = 0; d < par_.ep; ++d)
        expert_skew_[d] += static_cast<double>(tokens[s * par_.ep + d]) / mean;
    skewed_ = !w_.expert_load.empty();
  }

  // FSDP: a layer's weights gathered before use, the dense ones over the data-parallel
  // group, the experts over the replicas holding the same experts.
  // `after`: what the gathers wait for (FSDP's limit on gathers in flight), besides their
  // stream.
  std::vector<std::int32_t> gather_layer(int p, int layer, const std::string& name,
                                         const std::vector<std::int32_t>& after = {}) {
    std::vector<std::int32_t> ids;
    if (par_.zero != 3) return ids;
    if (sync_ranks() > 1) fsdp_gather(p, dense_params(layer), -1, name + ".gather", after, ids);
    if (dpo_ > 1 && expert_params(layer) > 0)
      for (int e = 0; e < par_.ep; ++e)
        fsdp_gather(p, expert_params(layer), e, fmt::format("{}.gather.e{}", name, e), after, ids);
    return ids;
  }

  // FSDP: the embedding table gathered before the embedding's lookup and the output head's
  // forward and backward (sharded like every weight; its gradients are reduce-scattered).
  std::vector<std::int32_t> gather_table(int p, const std::string& name) {
    std::vector<std::int32_t> ids;
    if (par_.zero != 3 || sync_ranks() <= 1) return ids;
    fsdp_gather(p, static_cast<double>(m_.vocab) * m_.hidden / par_.tp, -1, name + ".gather", {},
                ids);
    return ids;
  }

  void fsdp_gather(int p, double params, int e, const std::string& name,
                   const std::vector<std::int32_t>& after, std::vector<std::int32_t>& ids) {
    const auto bytes = static_cast<std::int64_t>(params * dtype_bytes(w_.param_dtype));
    for (int t = 0; t < par_.tp; ++t) {
      StepTask task =
          collective_task(w_, fmt::format("{}.t{}", name, t), "fsdp", CollectiveOp::AllGather,
                          bytes, w_.param_dtype, dp_group(t, p, e));
      task.after = after;
      ids.push_back(
          b_.add(std::move(task), stream(w_, fmt::format("dp{}.{}.{}", p, t, std::max(e, 0)))));
    }
  }

  // Chunk k's forward (with the output head on the last chunk), then its activations on.
  void forward(int k, int mb) {
    const int p = stage_of(k);
    const auto [first, last] = stage_layers_[k];
    std::vector<std::int32_t> extra = inbox_fwd_[k][mb];
    if (k == 0) {
      auto table = gather_table(p, fmt::format("{}.s{}.mb{}.embed.fwd", w_.name, p, mb));
      extra.insert(extra.end(), table.begin(), table.end());
    }
    // FSDP's limit on gathers in flight: a layer's waits for the compute two layers back
    // (without one, every layer's weights were gathered at once, far ahead of their use).
    std::vector<std::int32_t> two_back, one_back;
    for (int l = first; l < last; ++l) {
      const std::string name = fmt::format("{}.s{}.mb{}.L{}.fwd", w_.name, p, mb, l);
      auto gathered = gather_layer(p, l, name, two_back);
      extra.insert(extra.end(), gathered.begin(), gathered.end());
      if (!split(l)) {
        compute(p, name, attention_flops(l) + mlp_flops(l), extra);
      } else {
        compute(p, name + ".attn", attention_flops(l), extra);
        context_exchange(p, name + ".attn.cp", CollectiveOp::AllGather);
        tensor_exchange(p, name + ".attn.tp", true);
        if (moe_split(l)) expert_exchange(p, name + ".dispatch", false);
        compute(p, name + ".mlp", mlp_flops(l), {},
                moe_split(l) && skewed_ ? &expert_skew_ : nullptr);
        if (moe_split(l)) expert_exchange(p, name + ".combine", true);
        tensor_exchange(p, name + ".mlp.tp", true);
      }
      extra.clear();
      two_back = std::move(one_back);
      one_back = frontier_[p];
    }
    if (k == chunks_ - 1) {
      const std::string head = fmt::format("{}.s{}.mb{}.head.fwd", w_.name, p, mb);
      compute(p, head, m_.head_forward_flops_per_token(), gather_table(p, head));
    }
    if (k + 1 < chunks_) send(k, k + 1, mb, inbox_fwd_[k + 1][mb], "act");
  }

  void backward(int k, int mb) {
    const int p = stage_of(k);
    const auto [first, last] = stage_layers_[k];
    std::vector<std::int32_t> extra = inbox_bwd_[k][mb];
    const bool last_mb = mb == micro_ - 1;
    if (k == chunks_ - 1) {
      const std::string head = fmt::format("{}.s{}.mb{}.head.bwd", w_.name, p, mb);
      auto table = gather_table(p, head);
      extra.insert(extra.end(), table.begin(), table.end());
      compute(p, head, 2 * m_.head_forward_flops_per_token(), extra);
      extra.clear();
      if (last_mb) head_done_[p] = frontier_[p];
      if (last_mb && w_.overlap) sync_ready(p, kHead);
    }
    const auto bwd_name = [&](int l) {
      return fmt::format("{}.s{}.mb{}.L{}.bwd", w_.name, p, mb, l);
    };
    // FSDP's backward prefetch (BACKWARD_PRE): the next layer's gather is issued before this
    // layer's gradients are reduced, so it runs under this layer's compute instead of
    // queueing behind the reduce-scatter.
    std::vector<std::int32_t> gathered = gather_layer(p, last - 1, bwd_name(last - 1));
    for (int l = last - 1; l >= first; --l) {
      const std::string name = bwd_name(l);
      extra.insert(extra.end(), gathered.begin(), gathered.end());
      if (!split(l)) {
        compute(p, name, backward_attention_flops(l) + backward_mlp_flops(l), extra);
      } else {
        tensor_exchange(p, name + ".mlp.tp", false);
        if (moe_split(l)) expert_exchange(p, name + ".combine", false);
        compute(p, name + ".mlp", backward_mlp_flops(l), extra,
                moe_split(l) && skewed_ ? &expert_skew_ : nullptr);
        if (moe_split(l)) expert_exchange(p, name + ".dispatch", true);
        tensor_exchange(p, name + ".attn.tp", false);
        compute(p, name + ".attn", backward_attention_flops(l));
        context_exchange(p, name + ".attn.cp", CollectiveOp::ReduceScatter);
      }
      extra.clear();
      gathered = l > first ? gather_layer(p, l - 1, bwd_name(l - 1)) : std::vector<std::int32_t>{};
      if (last_mb) layer_done_[p][l] = frontier_[p];
      if (last_mb && w_.overlap) sync_ready(p, l);
    }
    if (k > 0) send(k, k - 1, mb, inbox_bwd_[k - 1][mb], "grad");
  }

  // Activations (forward) or their gradients (backward) from chunk `from` to its
  // neighbour `to`'s stage: tensor rank t to tensor rank t, each its 1/tp share
  // (Megatron's scatter-gather).
  void send(int from, int to, int mb, std::vector<std::int32_t>& inbox, const char* what) {
    const auto elements = static_cast<std::int64_t>(mb_tokens_ * m_.hidden / par_.tp);
    const int src = stage_of(from), dst_stage = stage_of(to);
    for (int d = 0; d < dpo_; ++d)
      for (int e = 0; e < par_.ep; ++e) {
        std::vector<int> group = tp_group(e, src, d);
        const auto dst = tp_group(e, dst_stage, d);
        group.insert(group.end(), dst.begin(), dst.end());
        const int n = 2 * par_.tp;
        if (!send_matrix_) {  // every send moves the same: one matrix for all of them
          auto matrix =
              std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(n * n), 0);
          for (int t = 0; t < par_.tp; ++t) (*matrix)[t * n + par_.tp + t] = elements;
          send_matrix_ = std::move(matrix);
        }
        StepTask task = collective_task(
            w_, fmt::format("{}.s{}.mb{}.{}.e{}.d{}", w_.name, from, mb, what, e, d), "pp",
            CollectiveOp::AllToAll, 0, w_.param_dtype, group);
        CollectiveSpec& c = task.collective.edit();
        c.shape.matrix = send_matrix_;
        c.shape.count = elements * par_.tp / n;
        c.bytes = c.shape.count * act_bytes_;
        task.after = frontier_[src];
        inbox.push_back(b_.add(std::move(task),
                               stream(w_, fmt::format("pp{}.{}.{}.{}", src, dst_stage, e, d))));
      }
  }

  // Gradient buckets whose last layer is `layer` start their collective.
  void sync_ready(int p, int layer) {
    for (const Bucket& bk : buckets_[p])
      if (bk.ready_layer == layer)
        sync_bucket(p, bk, layer == kHead ? head_done_[p] : layer_done_[p][layer]);
  }

  void sync_bucket(int p, const Bucket& bk, const std::vector<std::int32_t>& after) {
    const CollectiveOp op = par_.zero >= 2 ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce;
    const int index = bucket_index_[p]++;
    for (int t = 0; t < par_.tp; ++t)
      for (int e = 0; e < (bk.expert ? par_.ep : 1); ++e) {
        StepTask task =
            collective_task(w_,
                            fmt::format("{}.s{}.grad{}{}.t{}", w_.name, p, index,
                                        bk.expert ? fmt::format(".e{}", e) : "", t),
                            "dp", op, bk.bytes, w_.grad_dtype, dp_group(t, p, bk.expert ? e : -1));
        task.after = after;
        sync_ids_[p].push_back(
            b_.add(std::move(task), stream(w_, fmt::format("dp{}.{}.{}", p, t, e))));
      }
  }

  // ZeRO-1/2: the optimizer updates its shard, then the replicas gather the weights.
  void gather_updated(int p) {
    if (par_.zero != 1 && par_.zero != 2) return;
    for (const Bucket& bk : buckets_[p])
      for (int t = 0; t < par_.tp; ++t)
        for (int e = 0; e < (bk.expert ? par_.ep : 1); ++e) {
          StepTask task =
              collective_task(w_, fmt::format("{}.s{}.params{}.t{}", w_.name, p, bk.ready_layer, t),
                              "dp", CollectiveOp::AllGather,
                              bk.bytes / dtype_bytes(w_.grad_dtype) * dtype_bytes(w_.param_dtype),
                              w_.param_dtype, dp_group(t, p, bk.expert ? e : -1));
          task.after = sync_ids_[p];
          b_.add(std::move(task), stream(w_, fmt::format("dp{}.{}.{}", p, t, e)));
        }
  }

  // Forward micro-batches stage p runs before its first backward: GPipe all, 1F1B the
  // stages after it, interleaved 1F1B Megatron's 2(pp - p - 1) + (v - 1)pp chunks.
  int warmup(int p) const {
    const int total = micro_ * par_.virtual_stages;
    if (par_.pipeline == "gpipe") return total;
    if (par_.pipeline == "interleaved")
      return std::min(2 * (par_.pp - p - 1) + (par_.virtual_stages - 1) * par_.pp, total);
    return std::min(par_.pp - p - 1, total);
  }

  struct Item {
    bool backward = false;
    int mb = 0, chunk = 0;
  };
  // Stage p's order of forward and backward work: warm-up forwards, then one forward and
  // one backward in turn, then the remaining backwards. The i-th item of either kind is
  // Megatron's: micro-batches in groups of pp, each group through the stage's chunks in
  // turn (backward: last chunk first); without interleaving, micro-batch i on chunk p.
  std::vector<Item> stage_order(int p) const {
    const int v = par_.virtual_stages, total = micro_ * v, group = par_.pp * v;
    const auto item = [&](int i, bool backward) {
      const int c = (i % group) / par_.pp;
      return Item{backward, (i / group) * par_.pp + i % par_.pp, (backward ? v - 1 - c : c) * par_.pp + p};
    };
    const int w = warmup(p);
    std::vector<Item> order;
    for (int i = 0; i < w; ++i) order.push_back(item(i, false));
    for (int i = 0; i < total - w; ++i) {
      order.push_back(item(w + i, false));
      order.push_back(item(i, true));
    }
    for (int i = total - w; i < total; ++i) order.push_back(item(i, true));
    return order;
  }

  // A list schedule of the stages' orders: a stage runs its next item once what it
  // receives has been produced.
  void run_pipeline() {
    inbox_fwd_.assign(chunks_, std::vector<std::vector<std::int32_t>>(micro_));
    inbox_bwd_.assign(chunks_, std::vector<std::vector<std::int32_t>>(micro_));
    prepare_routing();
    layer_done_.assign(par_.pp, std::vector<std::vector<std::int32_t>>(m_.layers));
    head_done_.assign(par_.pp, {});
    bucket_index_.assign(par_.pp, 0);
    sync_ids_.assign(par_.pp, {});
    std::vector<std::vector<Item>> order(par_.pp);
    for (int p = 0; p < par_.pp; ++p) order[p] = stage_order(p);
    std::vector<std::size_t> next(par_.pp, 0);
    std::vector<std::vector<bool>> fwd_done(chunks_, std::vector<bool>(micro_)),
        bwd_done(chunks_, std::vector<bool>(micro_));
    const auto ready = [&](const Item& it) {
      if (!it.backward) return it.chunk == 0 || fwd_done[it.chunk - 1][it.mb];
      return fwd_done[it.chunk][it.mb] && (it.chunk == chunks_ - 1 || bwd_done[it.chunk + 1][it.mb]);
    };
    for (bool progress = true; progress;) {
      progress = false;
      for (int p = 0; p < par_.pp; ++p) {
        for (; next[p] < order[p].size() && ready(order[p][next[p]]); ++next[p]) {
          const Item& it = order[p][next[p]];
          if (it.backward) {
            backward(it.chunk, it.mb);
            bwd_done[it.chunk][it.mb] = true;
          } else {
            forward(it.chunk, it.mb);
            fwd_done[it.chunk][it.mb] = true;
          }
          progress = true;
        }
      }
    }
    for (int p = 0; p < par_.pp; ++p) {
      if (next[p] != order[p].size()) throw std::logic_error("pipeline schedule deadlocked");
      if (!w_.overlap)
        for (const Bucket& bk : buckets_[p]) sync_bucket(p, bk, frontier_[p]);
      gather_updated(p);
    }
  }

  // Activation bytes a layer keeps per token of a micro-batch for backward, per
  // Korthikanti et al. 2022 (Table 2, 16-bit activations): sbh(10 + 24/t) per layer,
  // sbh x 34/t with sequence parallelism, plus the attention scores 5as^2b/t unless flash
  // attention or selective recomputation drops them; full recomputation keeps the
  // layer's input alone, 2sbh (/t with sequence parallelism: it is split too).
  double activation_bytes_per_token() const {
    const double h = static_cast<double>(m_.hidden), t = par_.tp;
    const double split = par_.sequence_parallel ? t : 1;
    if (par_.recompute == "full") return 2 * h / split;
    const double kept = par_.sequence_parallel ? 34 * h / t : h * (10 + 24 / t);
    const bool scores = !w_.flash_attention && par_.recompute == "none";
    return kept + (scores ? 5.0 * m_.heads * static_cast<double>(seq_) / t : 0);
  }

  // Per GPU, the most loaded stage: weights, gradients and Adam's fp32 master copy and
  // two moments (12 bytes a weight), sharded by ZeRO's stage; activations kept for
  // backward (activation_bytes_per_token) for every micro-batch in flight.
  void account_memory() {
    for (int p = 0; p < par_.pp; ++p) {
      // ZeRO shards a weight over the ranks that reduce it: dense weights over every
      // data-parallel rank, experts only over the replicas holding the same experts.
      const double dense = stage_dense_params(p), experts = stage_expert_params(p);
      const auto held = [&](double bytes_per_param, int from_stage) {
        const bool sharded = par_.zero >= from_stage;
        return bytes_per_param *
               (dense / (sharded ? sync_ranks() : 1) + experts / (sharded ? dpo_ : 1));
      };
      const double weights = held(static_cast<double>(dtype_bytes(w_.param_dtype)), 3);
      const double grads = held(static_cast<double>(dtype_bytes(w_.grad_dtype)), 2);
      const double optimizer = held(12, 1);
      const double per_layer_token = activation_bytes_per_token();
      // Chunks' forwards whose activations wait for their backward at the peak: the
      // warm-up and one more, each a chunk's share of the stage's layers.
      const int v = par_.virtual_stages;
      const double in_flight = std::min(warmup(p) + 1, micro_ * v) / static_cast<double>(v);
      const double layers = static_cast<double>(layers_backward(p).size());
      const double activations = per_layer_token * mb_tokens_ * layers * in_flight;
      const double total = weights + grads + optimizer + activations;
      if (total > static_cast<double>(facts_.memory_total())) {
        facts_.memory_params = report_bytes(weights);
        facts_.memory_gradients = report_bytes(grads);
        facts_.memory_optimizer = report_bytes(optimizer);
        facts_.memory_activations = report_bytes(activations);
      }
    }
    if (facts_.memory_total() > w_.gpu.memory)
      facts_.warnings.push_back(fmt::format(
          "{}: {:.1f} GB per GPU (weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, "
          "activations {:.1f}) exceeds the {}'s {:.0f} GB",
          w_.name, facts_.memory_total() / 1e9, facts_.memory_params / 1e9,
          facts_.memory_gradients / 1e9, facts_.memory_optimizer / 1e9,
          facts_.memory_activations / 1e9, w_.gpu.name, static_cast<double>(w_.gpu.memory) / 1e9));
  }

  const WorkloadSpec& w_;
  const ModelSpec& m_;
  const Parallelism& par_;
  StepGraphBuilder& b_;
  WorkloadFacts facts_;
  int dpo_ = 1, micro_ = 1, cp_ = 1;
  std::vector<ParallelAxis> order_;  // par_.order with CP placed
  std::int64_t seq_ = 0;
  double mb_tokens_ = 0, rate_ = 0;
  std::int64_t act_bytes_ = 2;
  std::vector<int> radix_;
  int chunks_ = 1;  // model chunks: pp x virtual stages
  std::vector<std::pair<int, int>> stage_layers_;  // per chunk
  std::vector<std::vector<std::int32_t>> frontier_;
  std::vector<std::vector<std::vector<std::int32_t>>> inbox_fwd_, inbox_bwd_;
  std::vector<std::vector<Bucket>> buckets_;
  std::vector<std::vector<std::vector<std::int32_t>>> layer_done_;
  std::vector<std::vector<std::int32_t>> head_done_;  // per stage: the head's last backward
  std::vector<int> bucket_index_;
  std::vector<std::vector<std::int32_t>> sync_ids_;
  std::shared_ptr<const std::vector<std::int64_t>> dispatch_matrix_, combine_matrix_;
  std::shared_ptr<const std::vector<std::int64_t>> send_matrix_;  // send()'s, made once
  std::vector<double> expert_skew_;
  bool skewed_ = false;
};

// A Chakra trace: its tasks as they are, trace rank r on the job's r-th rank, with the
// workload's algorithm and protocol on its collectives (point to point stays "direct").
// Its one-GPU step is all its compute done on one GPU.
WorkloadFacts build_chakra(const WorkloadSpec& w, StepGraphBuilder& b) {
  StepGraph g;
  try {
    g = read_chakra(w.chakra, w.chakra_options);
  } catch (const InputError& e) {
    throw InputError(w.json_path + ".chakra", e.what());
  }
  WorkloadFacts facts;
  const auto base = static_cast<std::int32_t>(b.graph().tasks.size());
  for (StepTask& t : g.tasks) {
    for (int& r : t.ranks) r = w.ranks[r];
    for (std::int32_t& a : t.after) a += base;
    if (t.kind == StepTaskKind::Collective) {
      CollectiveSpec& c = t.collective.edit();
      c.ranks = t.ranks;
      if (t.category != "p2p") apply_job_settings(w, c);
    } else if (t.category == "compute") {
      facts.one_gpu_step_s += t.duration_s;
    }
    b.add(std::move(t), std::vector<std::string>{});
  }
  return facts;
}

}  // namespace workload_build

WorkloadSize workload_size(const WorkloadSpec& w) {
  if (w.is_chakra()) return {};
  if (!w.has_model()) return workload_build::minimal_size(w);
  StepGraphBuilder none;  // the builder's constructor allocates nothing of the step
  return workload_build::TrainingBuilder(w, none).size();
}

std::vector<std::vector<int>> pipeline_stages(const WorkloadSpec& w) {
  if (!w.has_model() || w.is_chakra()) return {w.ranks};
  StepGraphBuilder none;  // as in workload_size: the placement, no task made
  return workload_build::TrainingBuilder(w, none).stages();
}

ReplicaTurn replica_turn(const WorkloadSpec& w) {
  if (w.is_chakra() || w.ranks.size() < 2) return {};
  if (!w.has_model()) {  // every rank a replica, in lockstep
    ReplicaTurn out;
    const int n = static_cast<int>(w.ranks.size());
    const int most = *std::max_element(w.ranks.begin(), w.ranks.end());
    out.replicas = n;
    out.next.assign(static_cast<std::size_t>(most) + 1, -1);
    out.replica.assign(static_cast<std::size_t>(most) + 1, -1);
    for (int i = 0; i < n; ++i) {
      out.next[w.ranks[i]] = w.ranks[(i + 1) % n];
      out.replica[w.ranks[i]] = i;
    }
    return out;
  }
  StepGraphBuilder none;  // as in workload_size: the placement, no task made
  return workload_build::TrainingBuilder(w, none).replica_turn();
}

WorkloadFacts build_workload(const WorkloadSpec& w, StepGraphBuilder& builder) {
  if (w.is_chakra()) return workload_build::build_chakra(w, builder);
  if (!w.has_model()) return workload_build::build_minimal(w, builder);
  return workload_build::TrainingBuilder(w, builder).build();
}

}  // namespace collsim
