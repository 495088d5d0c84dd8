#include "schedule/generators/hierarchical.h"

#include <stdexcept>

#include "schedule/generators/halving_doubling.h"
#include "schedule/generators/ring.h"
#include "schedule/generators/tree.h"

namespace collsim {
namespace {

// Members are numbered in mixed radix, innermost level first: member m has digit
// (m / stride[l]) % size[l] at level l. A level-l group fixes every other digit.
struct Levels {
  std::vector<int> size;
  std::vector<int> stride;

  explicit Levels(std::vector<int> sizes) : size(std::move(sizes)) {
    int s = 1;
    for (int n : size) {
      stride.push_back(s);
      s *= n;
    }
  }
  int digit(int member, int level) const { return (member / stride[level]) % size[level]; }
};

std::vector<Group> groups_at(const Levels& lv, int level, std::int64_t count, int ranks) {
  std::vector<Group> groups;
  for (int leader = 0; leader < ranks; ++leader) {
    if (lv.digit(leader, level) != 0) continue;
    Group g;
    for (int t = 0; t < lv.size[level]; ++t) g.ranks.push_back(leader + t * lv.stride[level]);
    // The region is the chunk the inner levels' reduce-scatters left this group with.
    g.count = count;
    for (int inner = 0; inner < level; ++inner) {
      const Partition p{g.count, lv.size[inner]};
      const int d = lv.digit(leader, inner);
      g.offset += p.begin(d);
      g.count = p.size(d);
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

void top_level_all_reduce(ScheduleBuilder& b, std::vector<Group>& groups,
                          const std::string& algorithm, int segments) {
  if (algorithm == "ring") return ring_all_reduce(b, groups);
  for (const Group& g : groups) {
    if (algorithm == "binomial_tree")
      binomial_all_reduce(b, g, segments);
    else if (algorithm == "double_binary_tree")
      double_binary_tree_all_reduce(b, g, segments);
    else if (algorithm == "halving_doubling")
      halving_doubling_all_reduce(b, g);
    else
      throw std::invalid_argument(
          "the outermost level's algorithm must be ring, binomial_tree, double_binary_tree "
          "or halving_doubling, not \"" +
          algorithm + "\"");
  }
}

Schedule hierarchical_all_reduce(const CollectiveShape& s, const AlgorithmOptions& o) {
  std::vector<int> sizes = o.level_sizes.empty() ? std::vector<int>{s.ranks} : o.level_sizes;
  long long product = 1;
  for (int n : sizes) {
    if (n < 1) throw std::invalid_argument("every level needs at least one member");
    product *= n;
  }
  if (product != s.ranks)
    throw std::invalid_argument("the level sizes multiply to " + std::to_string(product) +
                                ", not to the " + std::to_string(s.ranks) + " ranks");
  const int levels = static_cast<int>(sizes.size());
  auto algorithm_at = [&](int level) {
    return level < static_cast<int>(o.level_algorithms.size()) ? o.level_algorithms[level]
                                                               : std::string("ring");
  };
  for (int l = 0; l + 1 < levels; ++l)
    if (algorithm_at(l) != "ring")
      throw std::invalid_argument(
          "inner levels reduce-scatter and all-gather with \"ring\"; level " + std::to_string(l) +
          " asks for \"" + algorithm_at(l) + "\"");
  const Levels lv(sizes);
  auto b = make_builder(s, "hierarchical", {}, 2);
  for (int l = 0; l + 1 < levels; ++l) ring_reduce_scatter(b, groups_at(lv, l, s.count, s.ranks));
  auto top = groups_at(lv, levels - 1, s.count, s.ranks);
  top_level_all_reduce(b, top, algorithm_at(levels - 1), o.segments);
  for (int l = levels - 2; l >= 0; --l) ring_all_gather(b, groups_at(lv, l, s.count, s.ranks));
  return b.finish();
}

}  // namespace

void register_hierarchical(std::vector<AlgorithmEntry>& c) {
  c.push_back({CollectiveOp::AllReduce, "hierarchical", hierarchical_all_reduce, true});
}

}  // namespace collsim
