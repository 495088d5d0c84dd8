#pragma once
// Which ranks a training step's reports draw when there are too many to draw all: one
// representative per pipeline stage of each job, plus a few evenly spaced ranks.
#include <vector>

#include "simulate/run_workload.h"

namespace collsim {

// A stage's representative is the rank whose last task ends last within the stage (the
// one the stage's part of the step waits for); ties go to the lowest rank.
struct StageRepresentative {
  int job = 0;
  int stage = 0;
  int rank = 0;
  double end_s = 0;  // its last task's end
};

struct RankSample {
  std::vector<int> ranks;  // in rank order
  bool all = false;        // every topology rank (they fit): nothing left out
  std::vector<StageRepresentative> representatives;  // per job, per stage, in order
};

// Per job and stage, in the scenario's job order.
std::vector<StageRepresentative> stage_representatives(const Scenario& scenario,
                                                       const WorkloadRun& run);

// Every rank when the topology has at most `max_ranks`; else the representatives, then up to
// kSpreadPerJob ranks of each job evenly spaced over its placement (first and last
// included), at most `max_ranks` in all.
inline constexpr int kSpreadPerJob = 8;
RankSample sample_ranks(const Scenario& scenario, const WorkloadRun& run, int max_ranks);

// `count` of `items` evenly spaced, the first and the last among them (all when they fit).
std::vector<int> evenly_spaced(const std::vector<int>& items, int count);

}  // namespace collsim
