#include "schedule/algorithms.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/json_view.h"
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

bool AlgorithmEntry::takes(std::string_view option) const {
  return std::find(options.begin(), options.end(), option) != options.end();
}

AlgorithmOptions AlgorithmEntry::own(const AlgorithmOptions& o) const {
  AlgorithmOptions out;
  if (takes("segments")) {
    out.segments = o.segments;
    out.auto_segments = o.auto_segments;
  }
  if (takes("servers")) out.servers = o.servers;
  if (takes("levels")) out.levels = o.levels;
  return out;
}

void parse_segments_option(const JsonView& object, AlgorithmOptions& o, const OptionContext&) {
  auto s = object.find("segments");
  if (!s) return;
  if (s->is_string() && s->as_string() == "auto") {
    o.auto_segments = true;
    return;
  }
  o.segments = static_cast<int>(s->as_int(1, 1 << 20));
  o.auto_segments = false;
}

std::string describe_algorithm(std::string_view algorithm, const AlgorithmOptions& o) {
  std::string out(algorithm);
  if (!o.levels.empty()) {
    out += " [";
    for (std::size_t l = 0; l < o.levels.size(); ++l)
      out += fmt::format("{}{} {}", l ? " | " : "", o.levels[l].size,
                         describe_algorithm(o.levels[l].algorithm, o.levels[l].options));
    out += "]";
  }
  if (o.segments > 1) out += fmt::format(" ({} segments)", o.segments);
  if (!o.servers.empty()) out += fmt::format(" ({} servers)", o.servers.size());
  return out;
}

}  // namespace collsim
