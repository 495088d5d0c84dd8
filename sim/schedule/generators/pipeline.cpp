#include "schedule/generators/pipeline.h"

#include <algorithm>

namespace collsim {

void run_pipelined(ScheduleBuilder& b, std::span<const PhasedPlan> plans, int segments) {
  std::size_t phases = 0;
  for (const auto& p : plans) phases = std::max(phases, p.phases.size());
  if (phases == 0) return;
  const int steps = static_cast<int>(phases) + segments - 1;
  for (int t = 0; t < steps; ++t) {
    b.next_step();
    for (const auto& plan : plans) {
      const Partition seg = plan.group.chunks(segments);
      for (int j = 0; j < static_cast<int>(plan.phases.size()); ++j) {
        const int s = t - j;
        if (s < 0 || s >= segments) continue;
        for (const Edge& e : plan.phases[j])
          b.add(e.kind, plan.group.at(e.src, seg.begin(s)), plan.group.at(e.dst, seg.begin(s)),
                seg.size(s), plan.group.channel);
      }
    }
  }
}

std::vector<Phase> chain_phases(int size, int root, Direction d) {
  std::vector<Phase> phases;
  for (int p = 0; p + 1 < size; ++p) {
    if (d == Direction::Broadcast) {
      phases.push_back({{(root + p) % size, (root + p + 1) % size, OpKind::Copy}});
    } else {  // from the far end towards the root
      const int from = (root + size - 1 - p) % size, to = (root + size - 2 - p) % size;
      phases.push_back({{from, to, OpKind::Reduce}});
    }
  }
  return phases;
}

std::vector<Phase> binomial_phases(int size, int root, Direction d) {
  std::vector<Phase> phases;
  for (int dist = 1; dist < size; dist *= 2) {
    Phase phase;
    for (int v = 0; v < size; ++v) {
      if (d == Direction::Broadcast && v < dist && v + dist < size)
        phase.push_back({(v + root) % size, (v + dist + root) % size, OpKind::Copy});
      if (d == Direction::Reduce && v % (2 * dist) == dist)
        phase.push_back({(v + root) % size, (v - dist + root) % size, OpKind::Reduce});
    }
    phases.push_back(std::move(phase));
  }
  return phases;
}

namespace {

struct TreeNode {
  int parent = -1;
  int depth = 0;
  bool left = false;  // whether it is its parent's left child
};

// In-order tree on positions [lo, hi): the middle is the root of the range.
void build_in_order(std::vector<TreeNode>& nodes, int lo, int hi, int parent, int depth,
                    bool left) {
  if (lo >= hi) return;
  const int mid = lo + (hi - lo) / 2;
  nodes[mid] = {parent, depth, left};
  build_in_order(nodes, lo, mid, mid, depth + 1, true);
  build_in_order(nodes, mid + 1, hi, mid, depth + 1, false);
}

}  // namespace

std::vector<Phase> binary_tree_all_reduce_phases(int size, int shift) {
  std::vector<TreeNode> nodes(size);
  build_in_order(nodes, 0, size, -1, 0, false);
  int max_depth = 0;
  for (const auto& n : nodes) max_depth = std::max(max_depth, n.depth);
  auto member = [&](int position) { return (position + shift) % size; };
  std::vector<Phase> phases;
  for (int depth = max_depth; depth >= 1; --depth) {
    for (bool left : {true, false}) {
      Phase phase;
      for (int p = 0; p < size; ++p)
        if (nodes[p].depth == depth && nodes[p].left == left)
          phase.push_back({member(p), member(nodes[p].parent), OpKind::Reduce});
      if (!phase.empty()) phases.push_back(std::move(phase));
    }
  }
  for (int depth = 1; depth <= max_depth; ++depth) {
    Phase phase;
    for (int p = 0; p < size; ++p)
      if (nodes[p].depth == depth)
        phase.push_back({member(nodes[p].parent), member(p), OpKind::Copy});
    phases.push_back(std::move(phase));
  }
  return phases;
}

}  // namespace collsim
