#include "schedule/generators/hierarchical.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.h"
#include "core/json_view.h"
#include "schedule/generators/channels.h"
#include "topology/topology.h"

namespace collsim {
namespace {

// Members are numbered in mixed radix, innermost level first: member m has digit
// (m / stride[l]) % size[l] at level l. A level-l group fixes every other digit.
struct Levels {
  std::vector<int> size;
  std::vector<int> stride;

  explicit Levels(const std::vector<LevelSpec>& levels) {
    int s = 1;
    for (const auto& l : levels) {
      size.push_back(l.size);
      stride.push_back(s);
      s *= l.size;
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

// Inner levels reduce-scatter on the way in and all-gather on the way out; the
// outermost all-reduces. Each needs an entry that can run on groups.
bool is_outermost(std::size_t level, std::size_t levels) {
  return level + 1 == levels;
}

const AlgorithmEntry* level_entry(CollectiveOp op, const std::string& algorithm) {
  const AlgorithmEntry* e = find_algorithm(op, algorithm);
  return e && e->on_groups ? e : nullptr;
}

std::string group_algorithms(CollectiveOp op) {
  std::string out;
  for (const auto& e : algorithm_catalogue())
    if (e.op == op && e.on_groups &&
        (op != CollectiveOp::ReduceScatter ||
         level_entry(CollectiveOp::AllGather, std::string(e.algorithm))))
      out += fmt::format("{}{}", out.empty() ? "" : ", ", e.algorithm);
  return out;
}

// The entry whose options a level takes: the reduce-scatter's for inner levels
// (the all-gather on the way back is the same algorithm), the all-reduce's outermost.
const AlgorithmEntry* entry_for_level(const std::string& algorithm, bool outermost) {
  if (outermost) return level_entry(CollectiveOp::AllReduce, algorithm);
  const AlgorithmEntry* rs = level_entry(CollectiveOp::ReduceScatter, algorithm);
  return rs && level_entry(CollectiveOp::AllGather, algorithm) ? rs : nullptr;
}

std::string level_problem(const std::string& algorithm, bool outermost, std::size_t level) {
  if (outermost)
    return fmt::format(
        "the outermost level all-reduces across groups: \"{}\" cannot; one of {} can", algorithm,
        group_algorithms(CollectiveOp::AllReduce));
  return fmt::format(
      "inner levels reduce-scatter and all-gather within groups; level {} asks for \"{}\", which "
      "cannot; one of {} can",
      level, algorithm, group_algorithms(CollectiveOp::ReduceScatter));
}

const AlgorithmEntry& checked_entry_for_level(const std::string& algorithm, bool outermost,
                                              std::size_t level, const std::string& where) {
  if (const AlgorithmEntry* e = entry_for_level(algorithm, outermost)) return *e;
  throw InputError(where, level_problem(algorithm, outermost, level));
}

LevelSpec parse_level(const JsonView& v, std::size_t index, std::size_t count) {
  LevelSpec level;
  level.size = static_cast<int>(v["size"].as_int(1, 1 << 20));
  if (auto a = v.find("algorithm")) level.algorithm = a->as_string();
  const bool outermost = is_outermost(index, count);
  const AlgorithmEntry& e = checked_entry_for_level(
      level.algorithm, outermost, index, v.has("algorithm") ? v["algorithm"].path() : v.path());
  std::vector<std::string_view> known = field_names(kLevelFields);
  for (const auto& d : e.options) known.push_back(d.name);
  v.allow_only(known);
  e.parse(v, level.options,
          {outermost ? CollectiveOp::AllReduce : e.op, level.size, v.path(), nullptr, {}});
  return level;
}

// A hierarchical collective's own "segments" is shorthand for its outermost level's.
void hand_segments_to_outermost(AlgorithmOptions& o, const std::string& where) {
  if (o.levels.empty() || (o.segments == 1 && !o.auto_segments)) return;
  LevelSpec& top = o.levels.back();
  const AlgorithmEntry* e = entry_for_level(top.algorithm, true);
  if (!e || !e->takes("segments")) {
    if (!o.auto_segments)
      throw InputError(where + ".segments",
                       fmt::format("segments apply to the outermost level, whose algorithm \"{}\" "
                                   "is not pipelined",
                                   top.algorithm));
  } else if (top.options.segments == 1 && !top.options.auto_segments) {
    top.options.segments = o.segments;
    top.options.auto_segments = o.auto_segments;
  }
  o.segments = 1;
  o.auto_segments = false;
}

// Read after "segments" (the entry lists it first), which it hands to the outermost level.
void parse_levels(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx) {
  auto l = object.find("levels");
  if (!l) return;
  const std::size_t n = l->size();
  if (n == 0) l->fail("at least one level");
  for (std::size_t i = 0; i < n; ++i) o.levels.push_back(parse_level((*l)[i], i, n));
  long long product = 1;
  for (const auto& level : o.levels) product *= level.size;
  if (product != ctx.ranks)
    l->fail_message(fmt::format("level sizes multiply to {}, but the collective has {} ranks",
                                product, ctx.ranks));
  hand_segments_to_outermost(o, ctx.json_path);
}

// Without "levels": the GPUs of each host, then the hosts.
std::vector<int> sizes_from_hosts(const Topology& topology, std::span<const int> placed,
                                  const std::string& where) {
  std::vector<int> per_host_run;  // lengths of runs of equal hosts along the rank order
  std::vector<int> seen_hosts;
  int last_host = -2;
  for (int r : placed) {
    const int host = topology.node(topology.gpu_of_rank(r)).host;
    if (host != last_host) {
      if (std::find(seen_hosts.begin(), seen_hosts.end(), host) != seen_hosts.end())
        throw InputError(where + ".ranks",
                         fmt::format("hierarchical needs each host's ranks next to each other; "
                                     "host {} appears twice along the rank order",
                                     host));
      seen_hosts.push_back(host);
      per_host_run.push_back(0);
      last_host = host;
    }
    ++per_host_run.back();
  }
  for (int n : per_host_run)
    if (n != per_host_run.front())
      throw InputError(where, fmt::format("hierarchical needs the same number of ranks on every "
                                          "host (found {} and {}); or give \"levels\"",
                                          per_host_run.front(), n));
  if (per_host_run.size() == 1) return {per_host_run.front()};
  return {per_host_run.front(), static_cast<int>(per_host_run.size())};
}

void levels_from_hosts(AlgorithmOptions& o, const OptionContext& ctx) {
  if (o.levels.empty() && ctx.topology) {
    for (int size : sizes_from_hosts(*ctx.topology, ctx.placed, ctx.json_path))
      o.levels.push_back({size, "ring", {}});
    hand_segments_to_outermost(o, ctx.json_path);
  }
}

Schedule hierarchical_all_reduce(const CollectiveShape& s, const AlgorithmOptions& o) {
  const std::vector<LevelSpec> levels =
      o.levels.empty() ? std::vector<LevelSpec>{{s.ranks, "ring", {}}} : o.levels;
  long long product = 1;
  for (const auto& l : levels) {
    if (l.size < 1) throw std::invalid_argument("every level needs at least one member");
    product *= l.size;
  }
  if (product != s.ranks)
    throw std::invalid_argument(
        fmt::format("the level sizes multiply to {}, not to the {} ranks", product, s.ranks));
  std::vector<const AlgorithmEntry*> entries;
  int channels = 1;
  for (std::size_t l = 0; l < levels.size(); ++l) {
    const bool outermost = is_outermost(l, levels.size());
    entries.push_back(entry_for_level(levels[l].algorithm, outermost));
    if (!entries.back())
      throw std::invalid_argument(level_problem(levels[l].algorithm, outermost, l));
    channels =
        std::max(channels, entries.back()->channels * std::max(1, levels[l].options.channels));
  }
  const Levels lv(levels);
  const int top = static_cast<int>(levels.size()) - 1;
  // A level's groups, each split over the level's channels.
  auto level_groups = [&](int l, const AlgorithmEntry& e) {
    std::vector<Group> out;
    for (const Group& g : groups_at(lv, l, s.count, s.ranks))
      for (Group& c : channel_groups(g, levels[l].options, e.channel_split, e.channels))
        out.push_back(std::move(c));
    return out;
  };
  auto b = make_builder(s, "hierarchical", {}, channels);
  // Between levels every channel waits for all: a level may use other channels than
  // the one before it.
  for (int l = 0; l < top; ++l) {
    entries[l]->on_groups(b, level_groups(l, *entries[l]), levels[l].options);
    b.join_channels();
  }
  entries[top]->on_groups(b, level_groups(top, *entries[top]), levels[top].options);
  for (int l = top - 1; l >= 0; --l) {
    b.join_channels();
    level_entry(CollectiveOp::AllGather, levels[l].algorithm)
        ->on_groups(b, level_groups(l, *entries[l]), levels[l].options);
  }
  return b.finish();
}

}  // namespace

void register_hierarchical(std::vector<AlgorithmEntry>& c) {
  c.push_back({.op = CollectiveOp::AllReduce,
               .algorithm = "hierarchical",
               .summary = "Reduce-scatter inside each group, all-reduce across groups on 1/g of "
                          "the data, all-gather inside; any number of `levels`, innermost first "
                          "(default: the GPUs of each host, then the hosts). Inner levels run an "
                          "algorithm that reduce-scatters and all-gathers on groups (ring, pat), "
                          "the outermost one that all-reduces on groups.",
               .generate = hierarchical_all_reduce,
               .options = {segments_option(), {"levels", parse_levels, levels_from_hosts}}});
}

}  // namespace collsim
