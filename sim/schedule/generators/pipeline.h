#pragma once
// Tree-shaped algorithms as phases: a phase is a set of member-to-member
// transfers that can run in one step (a level of a tree, a hop of a chain).
// Cutting the region into S segments and running phase j on segment t - j in
// step t pipelines any such plan: the chain broadcast becomes the pipelined ring
// broadcast, K - 2 + S steps of N/S each.
#include <span>
#include <vector>

#include "schedule/group.h"

namespace collsim {

struct Edge {
  int src;  // members of the group
  int dst;
  OpKind kind;
};
using Phase = std::vector<Edge>;

struct PhasedPlan {
  Group group;
  std::vector<Phase> phases;
};

// All plans run in lock-step (a double binary tree's two trees share the steps). Each
// plan's elements are cut into `segments` equal parts, or, with `segment_elems`, into
// parts of that many elements but the last, which holds the rest.
void run_pipelined(ScheduleBuilder& b, std::span<const PhasedPlan> plans, int segments,
                   std::int64_t segment_elems = 0);
// The elements of each of `plans` pipelines that share segments of `segment_bytes` (each a
// plans-th of it, rounded up to whole elements); 0: equal parts.
std::int64_t segment_elems(const CollectiveShape& shape, std::int64_t segment_bytes,
                           std::size_t plans = 1);

// The plans `plans_of(region)` gives for each of `channels` channels, each region its own
// slice of the whole buffer on its own channel: independent pipelines.
template <class PlansOf>
std::vector<PhasedPlan> channel_plans(const CollectiveShape& shape, int channels,
                                      PlansOf plans_of) {
  const Group whole = whole_group(shape);
  const Partition slices{whole.count, channels};
  std::vector<PhasedPlan> plans;
  for (int c = 0; c < channels; ++c) {
    Group region = whole.slice(slices.begin(c), slices.size(c));
    region.channel = c;
    for (PhasedPlan& p : plans_of(region)) plans.push_back(std::move(p));
  }
  return plans;
}

enum class Direction { Broadcast, Reduce };

// Chain root -> root+1 -> ... (broadcast) or ... -> root+1 -> root (reduce).
std::vector<Phase> chain_phases(int size, int root, Direction d);
// Binomial tree rooted at `root`: ceil(log2 K) phases.
std::vector<Phase> binomial_phases(int size, int root, Direction d);
// An in-order binary tree over members; `shift` rotates it by that many members,
// so that shift 1 turns the leaves of shift 0 into inner nodes (NCCL's second tree).
// Reduce to the root (children of a level in two phases, left then right, as a
// parent cannot take two reductions into the same elements in one step; the right one
// sends once the left one's bytes have left, schedule.h's needs_only_sent, and what reads
// the sum waits for both), then broadcast.
std::vector<Phase> binary_tree_all_reduce_phases(int size, int shift);

// Any tree over members: parent[m] (-1 for the root) and, among a parent's children,
// which phase of a level each reduces in (slot[m]): a parent cannot take two
// reductions into the same elements at once.
struct TreeShape {
  std::vector<int> parent;
  std::vector<int> slot;
};
TreeShape in_order_binary_tree(int size, int shift);
// NCCL's double binary tree over members (ncclGetDtree): the first tree is NCCL's binary
// tree rooted at 0, in which every odd member is a leaf; the second (`second`) mirrors it
// (member m plays the first tree's size-1-m) where size is even and shifts it by one where
// it is odd, so that no member is an inner node of both (where size is odd, one member
// may be) and every NIC carries about the same.
TreeShape nccl_double_tree(int size, bool second);
// Reduce to the root, deepest level first, one slot per phase; then broadcast down,
// a level per phase.
std::vector<Phase> tree_all_reduce_phases(const TreeShape& tree);

}  // namespace collsim
