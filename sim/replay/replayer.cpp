#include "replay/replayer.h"

namespace collsim {

std::vector<OpId> random_dependency_order(const Schedule& s, std::uint64_t seed) {
  ScheduleGraph g(s);
  std::mt19937_64 rng(seed);
  std::vector<OpId> ready, order;
  order.reserve(s.size());
  for (OpId id = 0; id < s.size(); ++id)
    if (g.indegree[id] == 0) ready.push_back(id);
  while (!ready.empty()) {
    std::uniform_int_distribution<std::size_t> pick(0, ready.size() - 1);
    const std::size_t k = pick(rng);
    const OpId id = ready[k];
    ready[k] = ready.back();
    ready.pop_back();
    order.push_back(id);
    for (OpId next : g.successors(id))
      if (--g.indegree[next] == 0) ready.push_back(next);
  }
  return order;
}

}  // namespace collsim
