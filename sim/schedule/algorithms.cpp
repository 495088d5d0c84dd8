#include "schedule/algorithms.h"

#include "schedule/generators/ring.h"

namespace collsim {

const std::vector<AlgorithmEntry>& algorithm_catalogue() {
  static const std::vector<AlgorithmEntry> catalogue = {
      {CollectiveOp::AllReduce, "ring", ring_all_reduce},
      {CollectiveOp::ReduceScatter, "ring", ring_reduce_scatter},
      {CollectiveOp::AllGather, "ring", ring_all_gather},
  };
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
