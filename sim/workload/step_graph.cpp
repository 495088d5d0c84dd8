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
  // Every field the match below compares by value cheaply: a Chakra trace names each
  // node's spec apart (its json_path), and those must not all fall in one bucket.
  std::uint64_t h = std::hash<std::string>{}(spec->algorithm);
  const auto mix = [&h](std::int64_t v) {
    h = h * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(v);
  };
  mix(static_cast<std::int64_t>(std::hash<std::string>{}(spec->json_path)));
  mix(spec->bytes);
  mix(static_cast<std::int64_t>(spec->shape.op));
  for (int r : spec->ranks) mix(r);
  std::vector<SharedSpec>& alike = specs_[h];
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
