#pragma once
// Chains and trees: pipelined ring (chain) broadcast and reduce, binomial trees,
// and NCCL's double binary tree.
#include "schedule/algorithms.h"
#include "schedule/generators/pipeline.h"

namespace collsim {

void binomial_all_reduce(ScheduleBuilder& b, std::span<const Group> groups, int segments);
void double_binary_tree_all_reduce(ScheduleBuilder& b, std::span<const Group> groups,
                                   int segments);

void register_trees(std::vector<AlgorithmEntry>& catalogue);

}  // namespace collsim
