#include "schedule/generators/tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/json_view.h"
#include "schedule/generators/channels.h"
#include "topology/topology.h"

namespace collsim {
namespace {

Schedule single_plan(const CollectiveShape& s, const char* name, std::vector<Phase> phases,
                     const AlgorithmOptions& o) {
  auto b = make_builder(s, name);
  const PhasedPlan plan{whole_group(s), std::move(phases)};
  run_pipelined(b, std::span<const PhasedPlan>(&plan, 1), o.segments,
                segment_elems(s, o.segment_bytes));
  return b.finish();
}

// Binomial scatter: at distance d (halving from the top), member v with v % 2d == 0
// hands members [v + d, v + 2d) their chunks. Gather runs the same rounds backwards.
Schedule binomial_scatter_gather(const CollectiveShape& s, Direction d) {
  auto b = make_builder(s, "binomial_tree");
  const Group g = whole_group(s);
  const int K = g.size();
  const Partition chunks = g.chunks(K);
  int top = 1;
  while (top < K) top *= 2;
  std::vector<int> distances;
  for (int dist = top / 2; dist >= 1; dist /= 2) distances.push_back(dist);
  if (d == Direction::Reduce) std::reverse(distances.begin(), distances.end());
  for (int dist : distances) {
    b.next_step();
    for (int v = 0; v + dist < K; v += 2 * dist) {
      const int near = (v + s.root) % K, far = (v + dist + s.root) % K;
      // Positions [v + dist, v + 2 dist) own chunks (position + root) mod K: at most
      // two contiguous runs of chunks once the root rotates them.
      const int first = v + dist, last = std::min(v + 2 * dist, K);
      for (int c = first; c < last;) {
        const int owner = (c + s.root) % K;
        const int run = std::min(last - c, K - owner);
        const std::int64_t off = chunks.begin(owner), n = chunks.begin(owner + run) - off;
        if (d == Direction::Broadcast)
          b.copy(g.at(near, off), g.at(far, off), n);
        else
          b.copy(g.at(far, off), g.at(near, off), n);
        c += run;
      }
    }
  }
  return b.finish();
}

}  // namespace

// All groups in one pipeline (their lanes set up once, not once per group).
void binomial_all_reduce(ScheduleBuilder& b, std::span<const Group> groups, int segments) {
  std::vector<PhasedPlan> plans;
  for (const Group& g : groups) {
    auto phases = binomial_phases(g.size(), 0, Direction::Reduce);
    auto down = binomial_phases(g.size(), 0, Direction::Broadcast);
    phases.insert(phases.end(), down.begin(), down.end());
    plans.push_back({g, std::move(phases)});
  }
  run_pipelined(b, plans, segments);
}

void double_binary_tree_all_reduce(ScheduleBuilder& b, std::span<const Group> groups,
                                   int segments) {
  // Each tree carries half the data on its own channel; the second tree is the
  // first shifted by one member, so most leaves of one are inner nodes of the other.
  std::vector<PhasedPlan> plans;
  for (const Group& g : groups) {
    const std::int64_t half = g.count / 2;
    Group first = g.slice(0, half), second = g.slice(half, g.count - half);
    first.channel = g.channel;
    second.channel = g.channel + 1;
    plans.push_back({first, binary_tree_all_reduce_phases(g.size(), 0)});
    plans.push_back({second, binary_tree_all_reduce_phases(g.size(), g.size() > 1 ? 1 : 0)});
  }
  b.join_channels();
  run_pipelined(b, plans, segments);
  b.join_channels();
}

namespace {

// A pipelined entry: it reads "segments" (a number or "auto").
// A tree, or (family Ring) the chain around the ring, cut into segments.
AlgorithmEntry pipelined(CollectiveOp op, std::string_view algorithm, std::string_view summary,
                         Generator generate, NcclAlgo family = NcclAlgo::Tree) {
  return {.op = op,
          .algorithm = algorithm,
          .summary = summary,
          .generate = std::move(generate),
          .options = {segments_option()},
          .lanes = true,
          .nccl_family = family};
}

Schedule chain_or_binomial(const CollectiveShape& s, const AlgorithmOptions& o, const char* name,
                           Direction d) {
  const bool chain = std::string_view(name) == "ring";
  return single_plan(
      s, name, chain ? chain_phases(s.ranks, s.root, d) : binomial_phases(s.ranks, s.root, d), o);
}

// The ring broadcast (or reduce) on channels, as NCCL runs it: each channel's slice goes
// down the chain from the root around that channel's own ring order, so on several
// hosts the channels cross the network on different rails instead of all on one NIC.
template <Direction D>
void chain_on_groups(ScheduleBuilder& b, std::span<const Group> groups, const AlgorithmOptions& o) {
  std::vector<PhasedPlan> plans;
  for (const Group& g : groups) {
    const auto root = std::find(g.ranks.begin(), g.ranks.end(), b.shape().root);
    plans.push_back({g, chain_phases(g.size(), static_cast<int>(root - g.ranks.begin()), D)});
  }
  run_pipelined(b, plans, o.segments, segment_elems(b.shape(), o.segment_bytes, plans.size()));
}

// NCCL's tree over `hosts[m]`: a chain inside each host, and across hosts NCCL's double
// binary tree over the chains' heads (nccl_double_tree: the second tree mirrors or shifts
// the first, so a host that is a leaf of one is an inner node of the other). The second
// tree (`second`) also runs each chain the other way, so other GPUs (other rails) talk to
// the network.
// Channel `rotation` starts every chain that many members later, so channel c's heads
// are the GPUs of rail c on every host (NCCL's channels use every NIC).
TreeShape nccl_tree(const std::vector<int>& hosts, int size, bool second, int rotation) {
  std::vector<std::vector<int>> chains;  // members of each host, in member order
  std::map<int, int> index;
  for (int m = 0; m < size; ++m) {
    const int h = hosts.empty() ? 0 : hosts[m];
    auto [it, fresh] = index.try_emplace(h, static_cast<int>(chains.size()));
    if (fresh) chains.emplace_back();
    chains[it->second].push_back(m);
  }
  for (auto& c : chains) {
    std::rotate(c.begin(), c.begin() + rotation % static_cast<int>(c.size()), c.end());
    if (second) std::reverse(c.begin(), c.end());
  }
  const int n = static_cast<int>(chains.size());
  const TreeShape across = nccl_double_tree(n, second);
  TreeShape t{std::vector<int>(size, -1), std::vector<int>(size, 0)};
  for (int h = 0; h < n; ++h) {
    const auto& c = chains[h];
    for (std::size_t i = 1; i < c.size(); ++i) t.parent[c[i]] = c[i - 1];
    if (across.parent[h] >= 0) {
      t.parent[c[0]] = chains[across.parent[h]][0];
      t.slot[c[0]] = 1 + across.slot[h];  // slot 0: the head's own chain child
    }
  }
  return t;
}

// `channels` copies of the two trees, each on its own slice of the buffer (builder
// channels 2c and 2c + 1), channel c's chains rotated by c.
void nccl_tree_all_reduce(ScheduleBuilder& b, const Group& g, const std::vector<int>& hosts,
                          int segments, int channels) {
  std::vector<PhasedPlan> plans;
  const Partition slices{g.count, channels};
  for (int c = 0; c < channels; ++c) {
    const Group region = g.slice(slices.begin(c), slices.size(c));
    const std::int64_t half = region.count / 2;
    Group first = region.slice(0, half), second = region.slice(half, region.count - half);
    first.channel = 2 * c;
    second.channel = 2 * c + 1;
    plans.push_back({first, tree_all_reduce_phases(nccl_tree(hosts, g.size(), false, c))});
    plans.push_back({second, tree_all_reduce_phases(nccl_tree(hosts, g.size(), true, c))});
  }
  b.join_channels();
  run_pipelined(b, plans, segments);
  b.join_channels();
}

// "channels": a count of tree pairs (NCCL's channels), at most kMaxChannels / 2; "auto"
// (which other candidates of "algorithm": "auto" read as their rail rule) is one here.
void parse_tree_channels(const JsonView& object, AlgorithmOptions& o, const OptionContext&) {
  auto v = object.find("channels");
  if (!v) return;
  const bool automatic = v->is_string() && v->as_string() == "auto";
  o.channels = automatic ? 1 : static_cast<int>(v->as_int(1, kMaxChannels / 2));
}

// "hosts": the host of each member, given or (by default) from the topology.
void parse_hosts(const JsonView& object, AlgorithmOptions& o, const OptionContext& ctx) {
  if (auto h = object.find("hosts")) {
    o.hosts = h->as_int_list(0, 1 << 20);
    if (static_cast<int>(o.hosts.size()) != ctx.ranks)
      h->fail(fmt::format("a host index for each of the {} ranks", ctx.ranks));
  }
}

void hosts_from_topology(AlgorithmOptions& o, const OptionContext& ctx) {
  if (!o.hosts.empty() || !ctx.topology) return;
  for (int r : ctx.placed) o.hosts.push_back(ctx.topology->node(ctx.topology->gpu_of_rank(r)).host);
}

}  // namespace

namespace {

// Broadcast and reduce: the ring's pipelined chain and the binomial tree.
void register_rooted(std::vector<AlgorithmEntry>& c) {
  // "ring" broadcast and reduce are the pipelined chain around the ring.
  // The ring's take "channels" (one chain per channel, each in its own ring order).
  for (const char* name : {"ring", "binomial_tree"}) {
    const bool ring = std::string_view(name) == "ring";
    auto broadcast = pipelined(
        CollectiveOp::Broadcast, name,
        ring ? "The chain around the ring from the root, cut into `segments` that follow each "
               "other down it; `channels` C: C chains, each in its own ring order."
             : "⌈log2 K⌉ rounds of a binomial tree from the root; pipelined with `segments`.",
        [name](const CollectiveShape& s, const AlgorithmOptions& o) {
          return chain_or_binomial(s, o, name, Direction::Broadcast);
        },
        ring ? NcclAlgo::Ring : NcclAlgo::Tree);
    auto reduce = pipelined(
        CollectiveOp::Reduce, name,
        ring ? "The chain around the ring to the root, each rank adding its data to the "
               "partial sum it passes on, cut into `segments`; `channels` C: C chains."
             : "⌈log2 K⌉ rounds of a binomial tree to the root; pipelined with `segments`.",
        [name](const CollectiveShape& s, const AlgorithmOptions& o) {
          return chain_or_binomial(s, o, name, Direction::Reduce);
        },
        ring ? NcclAlgo::Ring : NcclAlgo::Tree);
    if (ring) {
      broadcast.on_groups = chain_on_groups<Direction::Broadcast>;
      reduce.on_groups = chain_on_groups<Direction::Reduce>;
      broadcast = with_channels(std::move(broadcast));
      reduce = with_channels(std::move(reduce));
    }
    c.push_back(std::move(broadcast));
    c.push_back(std::move(reduce));
  }
}

// The trees that all-reduce: binomial, NCCL-style double binary, NCCL's own.
void register_tree_all_reduces(std::vector<AlgorithmEntry>& c) {
  auto binomial = pipelined(CollectiveOp::AllReduce, "binomial_tree",
                            "A binomial-tree reduce to rank 0, then a binomial-tree broadcast "
                            "from it; pipelined with `segments`.",
                            [](const CollectiveShape& s, const AlgorithmOptions& o) {
                              auto b = make_builder(s, "binomial_tree");
                              const Group g = whole_group(s);
                              binomial_all_reduce(b, std::span(&g, 1), o.segments);
                              return b.finish();
                            });
  binomial.on_groups = [](ScheduleBuilder& b, std::span<const Group> groups,
                          const AlgorithmOptions& o) {
    binomial_all_reduce(b, groups, o.segments);
  };
  c.push_back(with_channels(std::move(binomial)));
  auto dbt = pipelined(CollectiveOp::AllReduce, "double_binary_tree",
                       "NCCL-style: two in-order binary trees, the second shifted by one rank, "
                       "each carrying half the data on its own channel (most leaves of one are "
                       "inner in the other), reduce up and broadcast down; pipelined "
                       "with `segments`.",
                       [](const CollectiveShape& s, const AlgorithmOptions& o) {
                         auto b = make_builder(s, "double_binary_tree", {}, 2);
                         const Group g = whole_group(s);
                         double_binary_tree_all_reduce(b, std::span(&g, 1), o.segments);
                         return b.finish();
                       });
  dbt.on_groups = [](ScheduleBuilder& b, std::span<const Group> groups, const AlgorithmOptions& o) {
    double_binary_tree_all_reduce(b, groups, o.segments);
  };
  dbt.channels = 2;
  c.push_back(with_channels(std::move(dbt)));
  auto nccl = pipelined(CollectiveOp::AllReduce, "nccl_tree",
                        "NCCL's tree: a chain inside each host and NCCL's double binary "
                        "tree across the hosts' chain heads (the second tree mirrors the "
                        "first for an even host count and shifts it by one for an odd one, so "
                        "a leaf of one is an inner node of the other; its chains reversed so "
                        "other GPUs talk to the network), each on half the data, reduce up "
                        "and broadcast down, "
                        "pipelined with `segments`; `hosts` defaults to the topology's; "
                        "`channels` C: C such pairs on C slices, channel c's chains starting "
                        "at rail c.",
                        [](const CollectiveShape& s, const AlgorithmOptions& o) {
                          const int channels = std::max(1, o.channels);
                          auto b = make_builder(s, "nccl_tree", {}, 2 * channels);
                          nccl_tree_all_reduce(b, whole_group(s), o.hosts, o.segments, channels);
                          return b.finish();
                        });
  nccl.options.push_back({"hosts", parse_hosts, hosts_from_topology});
  nccl.options.push_back({"channels", parse_tree_channels});
  c.push_back(std::move(nccl));
}

void register_scatter_gather(std::vector<AlgorithmEntry>& c) {
  c.push_back({.op = CollectiveOp::Scatter,
               .algorithm = "binomial_tree",
               .summary = "⌈log2 K⌉ rounds: the root sends the blocks of the far half of the "
                          "group (K rounded up to a power of two) to the member that heads it, "
                          "then both recurse on their halves.",
               .generate =
                   [](const CollectiveShape& s, const AlgorithmOptions&) {
                     return binomial_scatter_gather(s, Direction::Broadcast);
                   },
               .nccl_family = NcclAlgo::Tree});
  c.push_back({.op = CollectiveOp::Gather,
               .algorithm = "binomial_tree",
               .summary = "The scatter's rounds reversed: blocks gather in halves of the group, "
                          "doubling each round, onto the root.",
               .generate =
                   [](const CollectiveShape& s, const AlgorithmOptions&) {
                     return binomial_scatter_gather(s, Direction::Reduce);
                   },
               .nccl_family = NcclAlgo::Tree});
}

}  // namespace

void register_trees(std::vector<AlgorithmEntry>& c) {
  register_rooted(c);
  register_tree_all_reduces(c);
  register_scatter_gather(c);
}

}  // namespace collsim
