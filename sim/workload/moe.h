#pragma once
// Mixture-of-experts token routing turned into all-to-allv traffic: how many
// tokens each rank sends each other rank when its tokens pick their top-k experts.
#include <cstdint>
#include <vector>

namespace collsim {

struct MoeRouting {
  std::int64_t tokens_per_rank = 0;
  int experts = 0;
  int top_k = 1;
  std::vector<double> expert_load;  // share of routed tokens per expert; empty: uniform
};

// Tokens sent from rank s to rank d at [s * ranks + d], for the dispatch. Expert e
// lives on rank floor(e * ranks / experts). Each row sums to tokens_per_rank * top_k
// exactly: fractional shares are settled by largest remainder, ties to lower ranks.
std::vector<std::int64_t> moe_dispatch_tokens(const MoeRouting& routing, int ranks);

// The combine sends every token back: the dispatch matrix transposed.
std::vector<std::int64_t> transpose(const std::vector<std::int64_t>& matrix, int ranks);

}  // namespace collsim
