#include "schedule/generators/pat.h"

#include <algorithm>
#include <utility>

namespace collsim {
namespace {

// Steps for K members: ceil(log2 K).
int pat_steps(int K) {
  int steps = 0;
  while ((1 << steps) < K) ++steps;
  return steps;
}

int max_steps(std::span<const Group> groups) {
  int steps = 0;
  for (const Group& g : groups) steps = std::max(steps, pat_steps(g.size()));
  return steps;
}

// Moves the chunks of members [first, first + n) (mod K) from member `from` to member
// `to`, at the same offsets; chunks adjacent in memory travel as one transfer.
void move_chunks(ScheduleBuilder& b, const Group& g, OpKind kind, int from, int to, int first,
                 int n) {
  const int K = g.size();
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;  // [begin, end) elements
  for (int i = 0; i < n; ++i) {
    const int c = g.chunk_of((first + i) % K);
    const std::int64_t at = g.chunk_begin(K, c);
    ranges.emplace_back(at, at + g.chunk_size(K, c));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 0; i < ranges.size();) {
    std::size_t j = i + 1;
    std::int64_t end = ranges[i].second;
    while (j < ranges.size() && ranges[j].first == end) end = ranges[j++].second;
    b.add(kind, g.at(from, ranges[i].first), g.at(to, ranges[i].first), end - ranges[i].first,
          g.channel);
    i = j;
  }
}

// Step d of Bruck's all-gather in a group (header): member m sends the n chunks from
// its own on to member m - 2^d; the reduce-scatter reverses each transfer.
void pat_step(ScheduleBuilder& b, const Group& g, int d, OpKind kind) {
  const int K = g.size();
  const int distance = 1 << d;
  if (distance >= K) return;
  const int n = std::min(distance, K - distance);
  for (int m = 0; m < K; ++m) {
    const int peer = (m - distance + K) % K;
    if (kind == OpKind::Copy)
      move_chunks(b, g, kind, m, peer, m, n);
    else
      move_chunks(b, g, kind, peer, m, m, n);
  }
}

}  // namespace

void pat_all_gather(ScheduleBuilder& b, std::span<const Group> groups) {
  const int steps = max_steps(groups);
  for (int d = 0; d < steps; ++d) {
    b.next_step();
    for (const Group& g : groups) pat_step(b, g, d, OpKind::Copy);
  }
}

void pat_reduce_scatter(ScheduleBuilder& b, std::span<const Group> groups) {
  // Groups smaller than the largest skip its first steps, so all finish together.
  for (int d = max_steps(groups) - 1; d >= 0; --d) {
    b.next_step();
    for (const Group& g : groups) pat_step(b, g, d, OpKind::Reduce);
  }
}

namespace {

template <void (*Body)(ScheduleBuilder&, std::span<const Group>)>
AlgorithmEntry pat_entry(CollectiveOp op) {
  return with_channels({.op = op,
                        .algorithm = "pat",
                        .summary = "NCCL's PAT as an in-place Bruck: ⌈log2 K⌉ steps, step d "
                                   "sending rank r−2^d the min(2^d, K−2^d) chunks from r on "
                                   "(reduce-scatter: the same, transposed); any K.",
                        .generate =
                            [](const CollectiveShape& s, const AlgorithmOptions&) {
                              auto b = make_builder(s, "pat");
                              const Group g = whole_group(s);
                              Body(b, std::span<const Group>(&g, 1));
                              return b.finish();
                            },
                        .on_groups = [](ScheduleBuilder& b, std::span<const Group> g,
                                        const AlgorithmOptions&) { Body(b, g); },
                        .channel_split = ChannelSplit::Lanes,
                        .nccl_family = NcclAlgo::Pat});
}

}  // namespace

void register_pat(std::vector<AlgorithmEntry>& c) {
  c.push_back(pat_entry<pat_reduce_scatter>(CollectiveOp::ReduceScatter));
  c.push_back(pat_entry<pat_all_gather>(CollectiveOp::AllGather));
}

}  // namespace collsim
