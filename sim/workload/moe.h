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
  // Share of routed tokens per expert, divided by their total (a scenario's sum to 1:
  // the loader refuses others); empty: uniform.
  std::vector<double> expert_load;
  // The rank (a position in the collective's rank list) hosting each expert; empty:
  // the default placement below.
  std::vector<int> expert_ranks;
};

// Where expert e lives. Without `expert_ranks`, experts are split into equal
// contiguous blocks as expert-parallel frameworks place them: with E experts on K
// ranks (E a multiple of K), rank r hosts experts r*E/K .. (r+1)*E/K - 1, so expert e
// is on rank e / (E/K). Throws std::invalid_argument when E is not a multiple of K.
int expert_rank(const MoeRouting& routing, int expert, int ranks);

// Tokens sent from rank s to rank d at [s * ranks + d], for the dispatch: every rank
// routes its tokens alike, each rank receiving the summed share of the experts it
// hosts. Each row sums to tokens_per_rank * top_k exactly: fractional shares are
// settled by largest remainder, ties to lower ranks.
std::vector<std::int64_t> moe_dispatch_tokens(const MoeRouting& routing, int ranks);

// The combine sends every token back: the dispatch matrix transposed.
std::vector<std::int64_t> transpose(const std::vector<std::int64_t>& matrix, int ranks);

}  // namespace collsim
