#include "workload/moe.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace collsim {

int expert_rank(const MoeRouting& r, int expert, int ranks) {
  if (!r.expert_ranks.empty()) return r.expert_ranks.at(expert);
  if (ranks <= 0 || r.experts % ranks != 0)
    throw std::invalid_argument(fmt::format(
        "{} experts do not split evenly over {} ranks: give each expert's rank", r.experts, ranks));
  return expert / (r.experts / ranks);
}

std::vector<std::int64_t> moe_dispatch_tokens(const MoeRouting& r, int ranks) {
  std::vector<double> load = r.expert_load;
  if (load.empty()) load.assign(r.experts, 1.0);
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  std::vector<double> share(ranks, 0.0);  // share of a rank's routed tokens that each rank receives
  for (int e = 0; e < r.experts; ++e) share[expert_rank(r, e, ranks)] += load[e] / total;

  const std::int64_t routed = r.tokens_per_rank * r.top_k;
  std::vector<std::int64_t> row(ranks);
  std::vector<int> order(ranks);
  std::int64_t assigned = 0;
  for (int d = 0; d < ranks; ++d) {
    row[d] = static_cast<std::int64_t>(std::floor(share[d] * routed));
    assigned += row[d];
  }
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return share[a] * routed - row[a] > share[b] * routed - row[b];
  });
  for (int i = 0; assigned < routed; i = (i + 1) % ranks, ++assigned) ++row[order[i]];
  // Every source routes the same way (the load is global), so every row is the same.
  std::vector<std::int64_t> m;
  m.reserve(static_cast<std::size_t>(ranks) * ranks);
  for (int s = 0; s < ranks; ++s) m.insert(m.end(), row.begin(), row.end());
  return m;
}

std::vector<std::int64_t> transpose(const std::vector<std::int64_t>& m, int ranks) {
  std::vector<std::int64_t> t(m.size());
  for (int s = 0; s < ranks; ++s)
    for (int d = 0; d < ranks; ++d)
      t[static_cast<std::size_t>(d) * ranks + s] = m[static_cast<std::size_t>(s) * ranks + d];
  return t;
}

}  // namespace collsim
