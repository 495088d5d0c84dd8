#include "workload/model.h"

#include <algorithm>

namespace collsim {
namespace {

// Grouped-query attention: Q and O are hidden x hidden, K and V hidden x (kv_heads x head_dim).
double gqa_params(double hidden, double kv_heads, double head_dim) {
  return 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim;
}

// SwiGLU: gate, up and down projections.
double swiglu_params(double hidden, double ffn) {
  return 3 * hidden * ffn;
}

ModelSpec llama3(std::string name, int layers, std::int64_t hidden, std::int64_t ffn) {
  ModelSpec m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.vocab = 128256;
  m.sequence = 8192;
  m.attention_params = gqa_params(hidden, 8, 128);
  m.dense_mlp_params = swiglu_params(hidden, ffn);
  m.attention_dim = hidden;
  m.heads = static_cast<int>(hidden / 128);
  m.kv_dim = 8 * 128;
  return m;
}

// Mixtral 8x7B (Jiang et al. 2024): Mistral-7B's attention, 8 experts, top-2.
ModelSpec mixtral() {
  ModelSpec m = llama3("mixtral-8x7b", 32, 4096, 14336);
  m.vocab = 32000;
  m.sequence = 4096;
  m.experts = 8;
  m.top_k = 2;
  m.expert_params = swiglu_params(4096, 14336);
  return m;
}

// DeepSeek-V3 (DeepSeek-AI 2024): multi-head latent attention, 3 dense layers, then
// 256 routed experts (top-8) and 1 shared expert per layer.
ModelSpec deepseek_v3() {
  ModelSpec m;
  m.name = "deepseek-v3";
  m.layers = 61;
  m.hidden = 7168;
  m.vocab = 129280;
  m.sequence = 4096;
  const double h = 7168, heads = 128, q_lora = 1536, kv_lora = 512, nope = 128, rope = 64, v = 128;
  m.attention_params = h * q_lora + q_lora * heads * (nope + rope)            // queries
                       + h * (kv_lora + rope) + kv_lora * heads * (nope + v)  // keys, values
                       + heads * v * h;                                       // output
  // QK^T over 192-wide heads and AV over 128-wide ones: 128 x (192 + 128) / 2 per token.
  m.attention_dim = 128 * (192 + 128) / 2;
  m.heads = 128;
  m.kv_dim = m.attention_dim;  // decompressed per head: 192-wide keys, 128-wide values
  m.dense_mlp_params = swiglu_params(h, 18432);
  m.dense_layers = 3;
  m.experts = 256;
  m.top_k = 8;
  m.shared_experts = 1;
  m.expert_params = swiglu_params(h, 2048);
  return m;
}

}  // namespace

double ModelSpec::layer_params(int layer) const {
  if (!layer_is_moe(layer)) return attention_params + dense_mlp_params;
  const double router = static_cast<double>(hidden) * experts;
  return attention_params + (experts + shared_experts) * expert_params + router;
}

double ModelSpec::layer_active_params(int layer) const {
  if (!layer_is_moe(layer)) return layer_params(layer);
  const double router = static_cast<double>(hidden) * experts;
  return attention_params + (top_k + shared_experts) * expert_params + router;
}

double ModelSpec::embedding_params() const {
  return static_cast<double>(vocab) * static_cast<double>(hidden) * (tied_embeddings ? 1 : 2);
}

double ModelSpec::total_params() const {
  double p = embedding_params();
  for (int l = 0; l < layers; ++l) p += layer_params(l);
  return p;
}

double ModelSpec::active_params() const {
  double p = embedding_params();
  for (int l = 0; l < layers; ++l) p += layer_active_params(l);
  return p;
}

double ModelSpec::layer_forward_flops_per_token(int layer, std::int64_t seq) const {
  return 2 * layer_active_params(layer) +
         4 * static_cast<double>(seq) * static_cast<double>(attention_dim);
}

double ModelSpec::head_forward_flops_per_token() const {
  return 2 * static_cast<double>(vocab) * static_cast<double>(hidden);
}

std::optional<ModelSpec> model_preset(const std::string& name) {
  // Llama 3 (Meta 2024, Table 3): GQA with 8 KV heads of 128, vocabulary 128256.
  if (name == "llama3-8b") return llama3(name, 32, 4096, 14336);
  if (name == "llama3-70b") return llama3(name, 80, 8192, 28672);
  if (name == "llama3-405b") return llama3(name, 126, 16384, 53248);
  if (name == "mixtral-8x7b") return mixtral();
  if (name == "deepseek-v3") return deepseek_v3();
  return std::nullopt;
}

std::vector<std::string> model_preset_names() {
  return {"llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3"};
}

std::optional<GpuSpec> gpu_preset(const std::string& name) {
  // Dense bf16 and FP8 tensor throughput and HBM as NVIDIA's datasheets give them (SXM
  // parts); the A100 has no FP8.
  if (name == "h100") return GpuSpec{name, 989e12, 1979e12, 80'000'000'000};
  if (name == "a100") return GpuSpec{name, 312e12, 0, 80'000'000'000};
  if (name == "b200") return GpuSpec{name, 2250e12, 4500e12, 180'000'000'000};
  return std::nullopt;
}

std::vector<std::string> gpu_preset_names() {
  return {"h100", "a100", "b200"};
}

}  // namespace collsim
