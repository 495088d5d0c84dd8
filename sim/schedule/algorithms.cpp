#include "schedule/algorithms.h"

#include "schedule/generators/barrier.h"
#include "schedule/generators/direct.h"
#include "schedule/generators/halving_doubling.h"
#include "schedule/generators/hierarchical.h"
#include "schedule/generators/ring.h"
#include "schedule/generators/star.h"
#include "schedule/generators/tree.h"

namespace collsim {

// The first entry for a collective is its default algorithm.
const std::vector<AlgorithmEntry>& algorithm_catalogue() {
  static const std::vector<AlgorithmEntry> catalogue = [] {
    std::vector<AlgorithmEntry> c;
    register_ring(c);
    register_trees(c);
    register_halving_doubling(c);
    register_star(c);
    register_direct(c);
    register_barrier(c);
    register_hierarchical(c);
    return c;
  }();
  return catalogue;
}

const AlgorithmEntry* find_algorithm(CollectiveOp op, std::string_view algorithm) {
  for (const auto& e : algorithm_catalogue())
    if (e.op == op && e.algorithm == algorithm) return &e;
  return nullptr;
}

std::vector<std::string> algorithms_for(CollectiveOp op) {
  std::vector<std::string> out;
  for (const auto& e : algorithm_catalogue())
    if (e.op == op) out.emplace_back(e.algorithm);
  return out;
}

}  // namespace collsim
