#include "workload/step_graph.h"

#include <algorithm>
#include <stdexcept>

namespace collsim {

std::int32_t StepGraphBuilder::add(StepTask task, const std::string& stream) {
  return add(std::move(task), std::vector<std::string>{stream});
}

std::int32_t StepGraphBuilder::add(StepTask task, const std::vector<std::string>& streams) {
  const auto id = static_cast<std::int32_t>(graph_.tasks.size());
  for (std::int32_t a : task.after)
    if (a < 0 || a >= id)
      throw std::logic_error("step task \"" + task.name + "\" waits on a later task");
  for (const auto& stream : streams) {
    auto [it, fresh] = last_.try_emplace(stream, id);
    if (!fresh) {
      task.after.push_back(it->second);
      it->second = id;
    }
  }
  std::sort(task.after.begin(), task.after.end());
  task.after.erase(std::unique(task.after.begin(), task.after.end()), task.after.end());
  if (task.kind == StepTaskKind::Collective) share(task.collective);
  graph_.tasks.push_back(std::move(task));
  return id;
}

void StepGraphBuilder::share(SharedSpec& spec) {
  if (!spec->name.empty() || !spec->after.empty()) {
    CollectiveSpec& own = spec.edit();
    own.name.clear();
    own.after.clear();
  }
  // With the json_path and ranks the match below also compares: a Chakra trace names
  // each node's spec apart, and those must not all fall in one bucket.
  SpecHash h(*spec);
  h.mix(static_cast<std::int64_t>(std::hash<std::string>{}(spec->json_path)));
  for (int r : spec->ranks) h.mix(r);
  std::vector<SharedSpec>& alike = specs_[h.value];
  for (const SharedSpec& s : alike)
    if (s->asks_the_same_as(*spec) && s->json_path == spec->json_path) {
      spec = s;
      return;
    }
  alike.push_back(spec);
}

std::int32_t StepGraphBuilder::last(const std::string& stream) const {
  const auto it = last_.find(stream);
  return it == last_.end() ? -1 : it->second;
}

}  // namespace collsim
