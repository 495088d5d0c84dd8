#pragma once
// The catalogue of schedule generators: (collective, algorithm name) -> Schedule.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/schedule.h"

namespace collsim {

// Knobs an algorithm may read; each ignores those that do not concern it.
struct AlgorithmOptions {
  int segments = 1;          // pipelined algorithms: how many pieces the buffer is cut into
  std::vector<int> servers;  // parameter server: the server ranks (default: the root)
  // Hierarchical: sizes of the nested groups, innermost first (e.g. {8, 4}: 4 nodes
  // of 8 GPUs), and the algorithm used at each level.
  std::vector<int> level_sizes;
  std::vector<std::string> level_algorithms;
};

using Generator = std::function<Schedule(const CollectiveShape&, const AlgorithmOptions&)>;

struct AlgorithmEntry {
  CollectiveOp op;
  std::string_view algorithm;
  Generator generate;
  bool uses_segments = false;  // reads AlgorithmOptions::segments (pipelined)
};

const std::vector<AlgorithmEntry>& algorithm_catalogue();
const AlgorithmEntry* find_algorithm(CollectiveOp op, std::string_view algorithm);
std::vector<std::string> algorithms_for(CollectiveOp op);

}  // namespace collsim
