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

// The op rank src runs to send its block to dst, numbered `step`.
Op a2a_op(const CollectiveShape& s, int src, int dst, int step) {
  return Op{a2a_send_offset(s, src, dst),
            a2a_recv_offset(s, src, dst),
            a2a_count(s, src, dst),
            src,
            dst,
            step,
            OpKind::Copy,
            0,
            1,
            0};
}

// Whether every rank sends as much i places ahead (no matrix, or a circulant one).
bool same_rounds(const CollectiveShape& s) {
  if (!s.matrix) return true;
  for (int src = 0; src < s.ranks; ++src)
    for (int dst = 0; dst < s.ranks; ++dst)
      if (a2a_count(s, src, dst) != a2a_count(s, 0, (dst - src + s.ranks) % s.ranks)) return false;
  return true;
}

// An all-to-all whose rounds are the same for every rank is the same turned by one: round
// i's representative is rank 0's send to rank i (empty rounds are left out whole, as the
// builder leaves out empty blocks). Pairwise, it waits on the previous round's sends that
// touched ranks 0 and i (members 0, -j, i, i - j of round j), each that round's
// representative turned to the rank sending it; direct rounds share one step, with no deps.
std::optional<QuotientSchedule> a2a_quotient(const CollectiveShape& s, bool rounds_at_once) {
  const int K = s.ranks;
  if (!same_rounds(s)) return std::nullopt;
  // All rounds at once put blocks of every size on a link together, and the flow model's
  // max-min sums their rates in an order a turn changes (last-bit differences, measured):
  // direct folds only in equal blocks.
  if (rounds_at_once)
    for (int i = 1; i < K; ++i)
      if (a2a_count(s, 0, i) != a2a_count(s, 0, 1)) return std::nullopt;
  QuotientSchedule q;
  q.shape = s;
  int step = -1, previous = -1;  // the last round with ops
  for (int i = 0; i < K; ++i) {
    if (a2a_count(s, 0, i) <= 0) continue;
    if (!rounds_at_once || step < 0) ++step;
    std::vector<Op> before;
    if (!rounds_at_once && previous >= 0) {
      const int j = previous;
      for (int x : {0, (K - j) % K, i, (i - j + K) % K})
        before.push_back(a2a_op(s, x, (x + j) % K, step - 1));
    }
    q.add(a2a_op(s, 0, i, step), q.ops.size() - 1, std::move(before));
    previous = i;
  }
  q.num_steps = step + 1;
  return q;
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
  auto entry = [](CollectiveOp op, std::string_view name, std::string_view summary,
                  Schedule (*make)(const CollectiveShape&)) {
    return AlgorithmEntry{
        .op = op,
        .algorithm = name,
        .summary = summary,
        .generate = [make](const CollectiveShape& s, const AlgorithmOptions&) { return make(s); }};
  };
  c.push_back(entry(CollectiveOp::AllToAll, "direct", "Every transfer in one step.",
                    [](const CollectiveShape& s) { return a2a(s, "direct", true); }));
  c.back().quotient = [](const CollectiveShape& s, const AlgorithmOptions&) {
    return a2a_quotient(s, true);
  };
  c.push_back(entry(CollectiveOp::AllToAll, "pairwise",
                    "K−1 rounds, round i sending rank r's block to rank r + i.",
                    [](const CollectiveShape& s) { return a2a(s, "pairwise", false); }));
  c.back().quotient = [](const CollectiveShape& s, const AlgorithmOptions&) {
    return a2a_quotient(s, false);
  };
  c.push_back(entry(CollectiveOp::Scatter, "direct",
                    "The root sends every rank its block in one step.",
                    [](const CollectiveShape& s) { return one_step_scatter_gather(s, true); }));
  c.push_back(entry(CollectiveOp::Gather, "direct",
                    "Every rank sends the root its block in one step.",
                    [](const CollectiveShape& s) { return one_step_scatter_gather(s, false); }));
  c.push_back(entry(CollectiveOp::SendRecv, "direct",
                    "Every rank sends its buffer to the next one (r to r + 1 mod K, as nccl-tests' "
                    "sendrecv), in one step.",
                    send_recv));
}

}  // namespace collsim
