#include "schedule/generators/direct.h"

#include "schedule/group.h"

namespace collsim {
namespace {

// Rank s's block for d goes from its buffer 0 into d's buffer 1; the block a
// rank keeps is a local copy.
void a2a_block(ScheduleBuilder& b, const CollectiveShape& s, int src, int dst) {
  b.copy({src, 0, a2a_send_offset(s, src, dst)}, {dst, 1, a2a_recv_offset(s, src, dst)},
         a2a_count(s, src, dst));
}

// Round i sends to the rank i places ahead; round 0 is every rank's own block.
// `rounds_at_once` false gives pairwise (one round per step), true gives direct.
Schedule a2a(const CollectiveShape& s, const char* name, bool rounds_at_once) {
  auto b = make_builder(s, name);
  const int K = s.ranks;
  for (int i = 0; i < K; ++i) {
    if (!rounds_at_once || i == 0) b.next_step();
    for (int r = 0; r < K; ++r) a2a_block(b, s, r, (r + i) % K);
  }
  return b.finish();
}

Schedule one_step_scatter_gather(const CollectiveShape& s, bool scatter) {
  auto b = make_builder(s, "direct");
  const Partition chunks{s.count, s.ranks};
  b.next_step();
  for (int m = 0; m < s.ranks; ++m) {
    if (m == s.root) continue;
    const BufferRef at_root{s.root, 0, chunks.begin(m)}, at_m{m, 0, chunks.begin(m)};
    if (scatter)
      b.copy(at_root, at_m, chunks.size(m));
    else
      b.copy(at_m, at_root, chunks.size(m));
  }
  return b.finish();
}

Schedule send_recv(const CollectiveShape& s) {
  auto b = make_builder(s, "direct");
  b.next_step();
  for (int r = 0; r < s.ranks; ++r) b.copy({r, 0, 0}, {(r + 1) % s.ranks, 1, 0}, s.count);
  return b.finish();
}

}  // namespace

void register_direct(std::vector<AlgorithmEntry>& c) {
  auto entry = [](CollectiveOp op, std::string_view name,
                  Schedule (*make)(const CollectiveShape&)) {
    return AlgorithmEntry{
        .op = op,
        .algorithm = name,
        .generate = [make](const CollectiveShape& s, const AlgorithmOptions&) { return make(s); }};
  };
  c.push_back(entry(CollectiveOp::AllToAll, "direct",
                    [](const CollectiveShape& s) { return a2a(s, "direct", true); }));
  c.push_back(entry(CollectiveOp::AllToAll, "pairwise",
                    [](const CollectiveShape& s) { return a2a(s, "pairwise", false); }));
  c.push_back(entry(CollectiveOp::Scatter, "direct",
                    [](const CollectiveShape& s) { return one_step_scatter_gather(s, true); }));
  c.push_back(entry(CollectiveOp::Gather, "direct",
                    [](const CollectiveShape& s) { return one_step_scatter_gather(s, false); }));
  c.push_back(entry(CollectiveOp::SendRecv, "direct", send_recv));
}

}  // namespace collsim
