#include "report/workload_ranks.h"

#include <algorithm>
#include <numeric>

namespace collsim {
namespace workload_ranks {

// Each rank's last task end (0 for a rank without tasks).
std::vector<double> last_ends(const Scenario& scenario, const WorkloadRun& run) {
  std::vector<double> end(scenario.topology.num_ranks(), 0.0);
  for (std::size_t i = 0; i < run.graph.tasks.size(); ++i)
    for (int r : run.graph.tasks[i].ranks) end[r] = std::max(end[r], run.step.tasks[i].end_s);
  return end;
}

}  // namespace workload_ranks

std::vector<int> evenly_spaced(const std::vector<int>& items, int count) {
  const int n = static_cast<int>(items.size());
  if (n <= count) return items;
  std::vector<int> out;
  for (int i = 0; i < count; ++i)
    out.push_back(items[count == 1 ? 0 : static_cast<std::size_t>(i) * (n - 1) / (count - 1)]);
  return out;
}

std::vector<StageRepresentative> stage_representatives(const Scenario& scenario,
                                                       const WorkloadRun& run) {
  const std::vector<double> end = workload_ranks::last_ends(scenario, run);
  std::vector<StageRepresentative> out;
  for (std::size_t j = 0; j < run.jobs.size(); ++j) {
    const auto stages = pipeline_stages(*run.jobs[j].spec);
    for (std::size_t s = 0; s < stages.size(); ++s) {
      if (stages[s].empty()) continue;
      // Strictly later wins: the lowest rank keeps a tie whatever the placement order.
      int best = *std::min_element(stages[s].begin(), stages[s].end());
      for (int r : stages[s])
        if (end[r] > end[best] || (end[r] == end[best] && r < best)) best = r;
      out.push_back({static_cast<int>(j), static_cast<int>(s), best, end[best]});
    }
  }
  return out;
}

RankSample sample_ranks(const Scenario& scenario, const WorkloadRun& run, int max_ranks) {
  RankSample out;
  out.representatives = stage_representatives(scenario, run);
  const int total = scenario.topology.num_ranks();
  if (total <= max_ranks) {
    out.ranks.resize(total);
    std::iota(out.ranks.begin(), out.ranks.end(), 0);
    out.all = true;
    return out;
  }
  std::vector<int> picked;
  for (const auto& rep : out.representatives) picked.push_back(rep.rank);
  for (const JobOutcome& j : run.jobs)
    for (int r : evenly_spaced(j.spec->ranks, kSpreadPerJob)) picked.push_back(r);
  // First come first kept (representatives before the spread), then in rank order.
  std::vector<bool> seen(total, false);
  for (int r : picked) {
    if (static_cast<int>(out.ranks.size()) >= max_ranks) break;
    if (!seen[r]) out.ranks.push_back(r);
    seen[r] = true;
  }
  std::ranges::sort(out.ranks);
  return out;
}

}  // namespace collsim
