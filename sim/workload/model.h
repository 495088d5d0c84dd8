#pragma once
// Models and GPUs a training workload names: the published architecture numbers of
// a few well-known models, and the peak throughput and memory of a few GPUs. From
// them come the figures a step needs: parameters per layer, FLOPs per token,
// activation bytes at a layer boundary.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace collsim {

struct ModelSpec {
  std::string name;
  int layers = 0;
  std::int64_t hidden = 0;
  std::int64_t vocab = 0;
  std::int64_t sequence = 4096;  // default training sequence length
  // Per layer. Attention: every projection's weights. MLP: a dense layer's FFN
  // (SwiGLU: 3 x hidden x ffn). An MoE layer has `experts` routed experts of
  // `expert_params` each, `shared_experts` always active, and picks `top_k`.
  double attention_params = 0;
  double dense_mlp_params = 0;
  int dense_layers = 0;  // MoE models: the first layers stay dense (DeepSeek-V3: 3)
  int experts = 0;       // 0: a dense model
  int top_k = 1;
  int shared_experts = 0;
  double expert_params = 0;
  // Width of attention (heads x head dim) for the attention-score FLOPs.
  std::int64_t attention_dim = 0;
  // Width of a token's keys (and of its values): what ring attention passes around.
  std::int64_t kv_dim = 0;
  // Query heads: the attention scores stored without flash attention are a x s per token.
  int heads = 0;
  bool tied_embeddings = false;

  bool is_moe() const { return experts > 0; }
  bool layer_is_moe(int layer) const { return is_moe() && layer >= dense_layers; }
  // Weights of one layer (all experts), and those one token uses (top_k + shared).
  double layer_params(int layer) const;
  double layer_active_params(int layer) const;
  double embedding_params() const;  // input and output embeddings
  double total_params() const;
  double active_params() const;
  // Forward FLOPs per token of one layer at sequence length s: 2 x active weights plus
  // the attention scores (2 x 2 x s x attention_dim: QK^T and AV). Training is three
  // times that (backward is twice the forward), PaLM's MFU convention.
  double layer_forward_flops_per_token(int layer, std::int64_t sequence) const;
  // The embedding-to-logits projection's forward FLOPs per token (2 x vocab x hidden).
  double head_forward_flops_per_token() const;
};

struct GpuSpec {
  std::string name;
  double peak_flops = 0;    // dense bf16 FLOP/s
  double fp8_peak_flops = 0;  // dense FP8 FLOP/s; 0: no FP8 tensor cores
  std::int64_t memory = 0;  // bytes of HBM
};

// "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3"; nullopt when unknown.
std::optional<ModelSpec> model_preset(const std::string& name);
std::vector<std::string> model_preset_names();
// "h100", "a100", "b200".
std::optional<GpuSpec> gpu_preset(const std::string& name);
std::vector<std::string> gpu_preset_names();

}  // namespace collsim
