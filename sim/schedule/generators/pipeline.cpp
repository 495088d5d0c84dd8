#include "schedule/generators/pipeline.h"

#include <algorithm>

namespace collsim {

// NCCL_STEPS: a connection holds this many chunks in flight. A plan of P phases has P
// connections one after another on a segment's way, so up to 8 P segments are in flight
// end to end: segment t may overtake the ranks' work on segments up to t - 8 P (builder.h,
// lanes). With fewer lanes, a rank that a segment visits twice far apart (a tree's way up
// and way down, NVLS's reduce and multicast) would hold the next segments until the
// earlier ones came back. The window is a rank's, not a connection's credits: a
// connection into a slower hop may hold more than 8.
constexpr int kSegmentsInFlight = 8;

namespace {

// A plan's segment s: equal parts, or fixed-size ones and the rest in the last.
struct Segments {
  std::int64_t count;
  int parts;
  std::int64_t fixed;  // elements per segment; 0: equal parts

  std::int64_t begin(int s) const {
    if (fixed == 0) return Partition{count, parts}.begin(s);
    return std::min(count, s * fixed);
  }
  std::int64_t size(int s) const {
    if (fixed == 0) return Partition{count, parts}.size(s);
    return s + 1 == parts ? count - begin(s) : std::min(count, (s + 1) * fixed) - begin(s);
  }
};

}  // namespace

std::int64_t segment_elems(const CollectiveShape& shape, std::int64_t segment_bytes,
                           std::size_t plans) {
  const std::int64_t element = element_size(shape.dtype);
  const std::int64_t elems = (segment_bytes + element - 1) / element;
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(1, plans));
  return (elems + n - 1) / n;
}

void run_pipelined(ScheduleBuilder& b, std::span<const PhasedPlan> plans, int segments,
                   std::int64_t segment_elems) {
  std::size_t phases = 0;
  for (const auto& p : plans) phases = std::max(phases, p.phases.size());
  if (phases == 0) return;
  const int lanes =
      b.begin_lanes(std::min<std::int64_t>(segments, std::int64_t{kSegmentsInFlight} * phases));
  // Per plan, the latest op on each of its edges (phase by phase): the connection's
  // previous segment, which the next one follows.
  std::vector<std::vector<OpId>> latest(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    std::size_t edges = 0;
    for (const Phase& phase : plans[i].phases) edges += phase.size();
    latest[i].assign(edges, ScheduleBuilder::kNoOp);
  }
  const int steps = static_cast<int>(phases) + segments - 1;
  for (int t = 0; t < steps; ++t) {
    b.next_step();
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const PhasedPlan& plan = plans[i];
      const Segments seg{plan.group.count, segments, segment_elems};
      OpId* edge_latest = latest[i].data();
      for (int j = 0; j < static_cast<int>(plan.phases.size()); ++j) {
        const int s = t - j;
        if (s < 0 || s >= segments) {
          edge_latest += plan.phases[j].size();
          continue;
        }
        for (const Edge& e : plan.phases[j]) {
          const OpId id = b.add_in_lane(e.kind, plan.group.at(e.src, seg.begin(s)),
                                        plan.group.at(e.dst, seg.begin(s)), seg.size(s),
                                        plan.group.channel, s % lanes, *edge_latest);
          if (id != ScheduleBuilder::kNoOp) *edge_latest = id;
          ++edge_latest;
        }
      }
    }
  }
  b.end_lanes();
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

std::vector<Phase> tree_all_reduce_phases(const TreeShape& t) {
  const int size = static_cast<int>(t.parent.size());
  std::vector<int> depth(size, -1);
  // Depth by walking up; a member's parent is resolved before it is used.
  for (int m = 0; m < size; ++m) {
    int d = 0;
    for (int p = t.parent[m]; p >= 0; p = t.parent[p]) ++d;
    depth[m] = d;
  }
  const int max_depth = size ? *std::max_element(depth.begin(), depth.end()) : 0;
  const int max_slot = size ? *std::max_element(t.slot.begin(), t.slot.end()) : 0;
  std::vector<Phase> phases;
  for (int d = max_depth; d >= 1; --d)
    for (int s = 0; s <= max_slot; ++s) {
      Phase phase;
      for (int m = 0; m < size; ++m)
        if (depth[m] == d && t.slot[m] == s) phase.push_back({m, t.parent[m], OpKind::Reduce});
      if (!phase.empty()) phases.push_back(std::move(phase));
    }
  for (int d = 1; d <= max_depth; ++d) {
    Phase phase;
    for (int m = 0; m < size; ++m)
      if (depth[m] == d) phase.push_back({t.parent[m], m, OpKind::Copy});
    phases.push_back(std::move(phase));
  }
  return phases;
}

TreeShape in_order_binary_tree(int size, int shift) {
  std::vector<TreeNode> nodes(size);
  build_in_order(nodes, 0, size, -1, 0, false);
  auto member = [&](int position) { return (position + shift) % size; };
  TreeShape t{std::vector<int>(size, -1), std::vector<int>(size, 0)};
  for (int p = 0; p < size; ++p) {
    if (nodes[p].parent >= 0) t.parent[member(p)] = member(nodes[p].parent);
    t.slot[member(p)] = nodes[p].left ? 0 : 1;
  }
  return t;
}

namespace {

// NCCL's binary tree (ncclGetBtree): a member's lowest set bit b makes it the child of
// (m ^ b) | 2b, or of m ^ b where that is past the end, and the parent of m - b/2 and of
// m + b/2 (or the nearest m + b/2^k inside); 0 is the root, odd members are leaves. The
// lower child reduces in slot 0, the higher in slot 1.
TreeShape nccl_binary_tree(int size) {
  TreeShape t{std::vector<int>(size, -1), std::vector<int>(size, 0)};
  for (int m = 1; m < size; ++m) {
    int bit = 1;
    while (bit < size && (bit & m) == 0) bit <<= 1;
    int up = (m ^ bit) | (bit << 1);
    if (up >= size) up = m ^ bit;
    t.parent[m] = up;
    t.slot[m] = m < up ? 0 : 1;
  }
  return t;
}

}  // namespace

TreeShape nccl_double_tree(int size, bool second) {
  const TreeShape first = nccl_binary_tree(size);
  if (!second || size < 2) return first;
  // The member that plays member m of the first tree, and back.
  const bool mirror = size % 2 == 0;
  auto played = [&](int m) { return mirror ? size - 1 - m : (m - 1 + size) % size; };
  auto player = [&](int m) { return mirror ? size - 1 - m : (m + 1) % size; };
  TreeShape t{std::vector<int>(size, -1), std::vector<int>(size, 0)};
  for (int m = 0; m < size; ++m) {
    const int up = first.parent[played(m)];
    t.parent[m] = up < 0 ? -1 : player(up);
    t.slot[m] = first.slot[played(m)];
  }
  return t;
}

std::vector<Phase> binary_tree_all_reduce_phases(int size, int shift) {
  return tree_all_reduce_phases(in_order_binary_tree(size, shift));
}

}  // namespace collsim
