#include "schedule/schedule.h"

#include <fmt/format.h>
#include <algorithm>
#include <numeric>
#include <tuple>

namespace collsim {

std::size_t Schedule::memory_bytes() const {
  return ops.capacity() * sizeof(Op) + dep_begin.capacity() * sizeof(std::uint32_t) +
         deps.capacity() * sizeof(OpId) + buffer_counts.capacity() * sizeof(std::int64_t);
}

ScheduleGraph::ScheduleGraph(const Schedule& s) {
  const std::size_t n = s.size();
  const std::size_t edges = s.deps.size();
  const std::uint32_t* dep_begin = s.dep_begin.data();
  const OpId* deps = s.deps.data();
  succ_begin.assign(n + 1, 0);
  for (std::size_t e = 0; e < edges; ++e) ++succ_begin[deps[e] + 1];
  std::partial_sum(succ_begin.begin(), succ_begin.end(), succ_begin.begin());
  // Walking ops in id order appends each op's successors in increasing id order.
  succ.resize(edges);
  std::vector<std::uint32_t> cursor(succ_begin.begin(), succ_begin.end() - 1);
  indegree.resize(n);
  for (OpId id = 0; id < n; ++id) {
    indegree[id] = dep_begin[id + 1] - dep_begin[id];
    for (std::uint32_t e = dep_begin[id]; e < dep_begin[id + 1]; ++e) succ[cursor[deps[e]]++] = id;
  }
}

namespace {

struct Access {
  std::int32_t rank;
  std::uint8_t buffer;
  std::int64_t begin, end;
  OpId op;

  auto key() const { return std::tie(rank, buffer, begin); }
};

bool overlaps(const Access& a, const Access& b) {
  return a.rank == b.rank && a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

// Within one step, writes must be disjoint and no read may overlap a write.
// `writes` and `reads` are scratch space, reused from step to step.
std::string check_step_conflicts(const Schedule& s, std::span<const OpId> step_ops,
                                 std::vector<Access>& writes, std::vector<Access>& reads) {
  writes.clear();
  reads.clear();
  for (OpId id : step_ops) {
    const Op& op = s.ops[id];
    // A switch op reads (SwitchReduce) or writes (Multicast) its range on every rank
    // of its group; a SwitchReduce also writes, and a Multicast reads, the issuer's.
    const int first = op.is_switch() ? s.switch_group_first(op) : 0;
    const int n = op.is_switch() ? s.switch_group_size() : 1;
    for (int r = 0; r < (op.writes_every_rank() ? n : 1); ++r)
      writes.push_back({op.writes_every_rank() ? first + r : op.dst_rank, op.dst_buffer,
                        op.dst_offset, op.dst_offset + op.count, id});
    for (int r = 0; r < (op.reads_every_rank() ? n : 1); ++r)
      reads.push_back({op.reads_every_rank() ? first + r : op.src_rank, op.src_buffer,
                       op.src_offset, op.src_offset + op.count, id});
  }
  auto by_key = [](const Access& a, const Access& b) { return a.key() < b.key(); };
  std::sort(writes.begin(), writes.end(), by_key);
  for (std::size_t i = 1; i < writes.size(); ++i) {
    if (overlaps(writes[i - 1], writes[i]))
      return fmt::format("ops {} and {} of step {} write overlapping elements of rank {}",
                         writes[i - 1].op, writes[i].op, s.ops[writes[i].op].step, writes[i].rank);
  }
  for (const Access& r : reads) {
    auto it = std::lower_bound(writes.begin(), writes.end(), r, by_key);
    for (auto cand : {it, it == writes.begin() ? it : it - 1}) {
      if (cand != writes.end() && cand->op != r.op && overlaps(*cand, r))
        return fmt::format("op {} of step {} reads elements of rank {} that op {} writes", r.op,
                           s.ops[r.op].step, r.rank, cand->op);
    }
  }
  return {};
}

}  // namespace

std::string check_schedule(const Schedule& s) {
  const int K = s.shape.ranks;
  if (s.dep_begin.size() != s.ops.size() + 1) return "dependency index has the wrong size";
  if (s.buffer_counts.size() != static_cast<std::size_t>(K) * s.num_buffers)
    return "buffer sizes do not cover every rank";
  for (OpId id = 0; id < s.size(); ++id) {
    const Op& op = s.ops[id];
    if (op.src_rank < 0 || op.src_rank >= K || op.dst_rank < 0 || op.dst_rank >= K)
      return fmt::format("op {}: rank out of range 0..{}", id, K - 1);
    if (op.src_buffer >= s.num_buffers || op.dst_buffer >= s.num_buffers)
      return fmt::format("op {}: buffer out of range", id);
    // Only a barrier's messages carry no data; anywhere else an empty op is a generator bug.
    if (s.shape.op == CollectiveOp::Barrier ? op.count != 0 : op.count <= 0)
      return fmt::format("op {}: {}", id,
                         op.count ? "a barrier message carrying data" : "empty transfer");
    if (op.kind > OpKind::Multicast) return fmt::format("op {}: unknown kind", id);
    if (op.is_switch() && op.src_rank != op.dst_rank)
      return fmt::format("op {}: a switch op's source and destination rank are its issuer", id);
    if (op.is_switch() && (s.switch_group < 0 || K % s.switch_group_size() != 0))
      return fmt::format("op {}: switch groups of {} ranks do not tile {} ranks", id,
                         s.switch_group, K);
    const int first = op.is_switch() ? s.switch_group_first(op) : 0;
    for (int r = 0; r < (op.is_switch() ? s.switch_group_size() : 1); ++r) {
      const int src = op.reads_every_rank() ? first + r : op.src_rank;
      const int dst = op.writes_every_rank() ? first + r : op.dst_rank;
      if (op.src_offset < 0 || op.src_offset + op.count > s.buffer_count(src, op.src_buffer))
        return fmt::format("op {}: source range outside rank {}'s buffer {}", id, src,
                           op.src_buffer);
      if (op.dst_offset < 0 || op.dst_offset + op.count > s.buffer_count(dst, op.dst_buffer))
        return fmt::format("op {}: destination range outside rank {}'s buffer {}", id, dst,
                           op.dst_buffer);
    }
    if (op.step < 0 || op.step >= s.num_steps) return fmt::format("op {}: step out of range", id);
    for (OpId d : s.deps_of(id)) {
      if (d >= s.size()) return fmt::format("op {}: dependency {} does not exist", id, d);
      // Steps are what the replayer and reports walk: they must follow the dependencies.
      if (s.ops[d].step >= op.step)
        return fmt::format("op {} of step {} depends on op {} of step {}", id, op.step, d,
                           s.ops[d].step);
    }
  }
  // Every dependency points to an earlier step, so the graph has no cycle.

  // Builders emit ops in step order; sort only a schedule that is not.
  std::vector<OpId> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  auto by_step = [&](OpId a, OpId b) { return s.ops[a].step < s.ops[b].step; };
  if (!std::is_sorted(order.begin(), order.end(), by_step))
    std::stable_sort(order.begin(), order.end(), by_step);
  std::vector<Access> writes, reads;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && s.ops[order[j]].step == s.ops[order[i]].step) ++j;
    if (auto e = check_step_conflicts(s, std::span(order).subspan(i, j - i), writes, reads);
        !e.empty())
      return e;
    i = j;
  }
  return {};
}

}  // namespace collsim

namespace collsim {
namespace {

// A word-at-a-time multiply-xorshift hash, fed field by field (never raw structs:
// padding bytes are not data). Not cryptographic: it tells schedules apart.
class WordHash {
 public:
  void add(std::uint64_t v) {
    h_ = (h_ ^ v) * 0x9e3779b97f4a7c15ULL;
    h_ ^= h_ >> 29;
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::uint64_t schedule_digest(const Schedule& s) {
  WordHash h;
  h.add(static_cast<std::uint64_t>(s.shape.op));
  h.add(static_cast<std::uint64_t>(s.shape.reduce_op));
  h.add(static_cast<std::uint64_t>(s.shape.dtype));
  h.add(static_cast<std::uint64_t>(s.shape.ranks));
  h.add(static_cast<std::uint64_t>(s.shape.count));
  h.add(static_cast<std::uint64_t>(s.shape.root));
  h.add(static_cast<std::uint64_t>(s.num_buffers));
  h.add(static_cast<std::uint64_t>(s.switch_group));
  if (s.shape.matrix)
    for (std::int64_t x : *s.shape.matrix) h.add(static_cast<std::uint64_t>(x));
  for (std::int64_t c : s.buffer_counts) h.add(static_cast<std::uint64_t>(c));
  h.add(s.ops.size());
  for (const Op& op : s.ops) {
    h.add(static_cast<std::uint64_t>(op.src_offset));
    h.add(static_cast<std::uint64_t>(op.dst_offset));
    h.add(static_cast<std::uint64_t>(op.count));
    h.add(static_cast<std::uint64_t>(op.src_rank) << 32 | static_cast<std::uint32_t>(op.dst_rank));
    h.add(static_cast<std::uint64_t>(op.step));
    h.add(static_cast<std::uint64_t>(op.kind) | op.src_buffer << 8 | op.dst_buffer << 16 |
          op.channel << 24);
  }
  for (std::uint32_t b : s.dep_begin) h.add(b);
  for (OpId d : s.deps) h.add(d);
  return h.value();
}

}  // namespace collsim
