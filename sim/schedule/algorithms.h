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
  int segments = 1;  // pipelined algorithms: how many pieces the buffer is cut into
};

using Generator = std::function<Schedule(const CollectiveShape&, const AlgorithmOptions&)>;

struct AlgorithmEntry {
  CollectiveOp op;
  std::string_view algorithm;
  Generator generate;
};

const std::vector<AlgorithmEntry>& algorithm_catalogue();
const AlgorithmEntry* find_algorithm(CollectiveOp op, std::string_view algorithm);
std::vector<std::string> algorithms_for(CollectiveOp op);

}  // namespace collsim
