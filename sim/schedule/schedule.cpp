#include "schedule/schedule.h"

#include <fmt/format.h>
#include <algorithm>

#include <numeric>
#include <optional>
#include <tuple>
#include "core/checked.h"
#include "core/interrupt.h"

namespace collsim {

std::size_t Schedule::memory_bytes() const {
  return ops.capacity() * sizeof(Op) + dep_begin.capacity() * sizeof(DepIndex) +
         deps.capacity() * sizeof(OpId) + buffer_counts.capacity() * sizeof(std::int64_t);
}

const Schedule& SharedSchedule::empty() {
  static const Schedule none;
  return none;
}

ScheduleGraph::ScheduleGraph(const Schedule& s) {
  const std::size_t n = s.size();
  const std::size_t edges = s.deps.size();
  const DepIndex* dep_begin = s.dep_begin.data();
  const OpId* deps = s.deps.data();
  succ_begin.assign(n + 1, 0);
  for (std::size_t e = 0; e < edges; ++e) ++succ_begin[deps[e] + 1];
  std::partial_sum(succ_begin.begin(), succ_begin.end(), succ_begin.begin());
  // Walking ops in id order appends each op's successors in increasing id order.
  succ.resize(edges);
  std::vector<DepIndex> cursor(succ_begin.begin(), succ_begin.end() - 1);
  indegree.resize(n);
  for (OpId id = 0; id < n; ++id) {
    if ((id & 0xffff) == 0) poll_interrupt();  // seconds at millions of ops
    indegree[id] =
        checked_count<std::uint32_t>(dep_begin[id + 1] - dep_begin[id], "dependencies of one op");
    for (DepIndex e = dep_begin[id]; e < dep_begin[id + 1]; ++e) succ[cursor[deps[e]]++] = id;
  }
}

// Named, not anonymous: StepwiseCheck::State holds a StepChecker (an anonymous type
// there trips -Wsubobject-linkage in unity builds).
namespace step_check {

struct Access {
  std::int32_t rank;
  std::uint8_t buffer;
  std::int64_t begin, end;
  OpId op;
};

bool overlaps(const Access& a, const Access& b) {
  return a.rank == b.rank && a.buffer == b.buffer && a.begin < b.end && b.begin < a.end;
}

bool before(const Access& a, const Access& b) {
  return std::tie(a.buffer, a.begin) < std::tie(b.buffer, b.begin);
}

// Within one step, writes must be disjoint and no read may overlap a write. The
// step's writes are grouped by rank (a counting sort over the ranks the step
// touches), and only each rank's few writes are sorted: linear in the step's ops,
// where one sort of all of them cost a log factor. The usual step, each rank written by
// one point-to-point op at most, skips all that (check_one_write_per_rank). Scratch
// space lives here, reused from step to step; `first_` is all -1 between steps.
class StepChecker {
 public:
  explicit StepChecker(int ranks) : first_(ranks, -1), count_(ranks, 0) {}

  // `op_at(id)` gives the op of that id: the stored schedule's, or a streamed step's.
  template <class Ids, class OpAt>
  std::string check(const Schedule& s, const Ids& step_ops, OpAt&& op_at) {
    if (std::optional<std::string> error = check_one_write_per_rank(step_ops, op_at)) return *error;
    collect(s, step_ops, op_at);
    std::string error = conflicts(op_at);
    for (std::int32_t r : touched_) first_[r] = -1, count_[r] = 0;
    return error;
  }

 private:
  // The usual step (a ring's, a tree level's): point-to-point ops, each rank written by
  // one op at most. Then no two writes can overlap, and a read can only meet the one
  // write on its rank: two passes over the ops, nothing copied or sorted. Returns
  // nullopt (and leaves the scratch clean) for any other step.
  template <class Ids, class OpAt>
  std::optional<std::string> check_one_write_per_rank(const Ids& step_ops, OpAt& op_at) {
    touched_.clear();
    bool simple = true;
    for (OpId id : step_ops) {
      const Op& op = op_at(id);
      if (op.is_switch() || first_[op.dst_rank] >= 0) {
        simple = false;
        break;
      }
      first_[op.dst_rank] = id;  // here: the op that writes the rank
      touched_.push_back(op.dst_rank);
    }
    std::optional<std::string> error;
    if (simple) {
      error.emplace();
      for (OpId id : step_ops) {
        const Op& rd = op_at(id);
        const std::int64_t writer = first_[rd.src_rank];
        if (writer < 0 || writer == static_cast<std::int64_t>(id)) continue;
        const Op& w = op_at(static_cast<OpId>(writer));
        if (w.dst_buffer == rd.src_buffer && w.dst_offset < rd.src_offset + rd.count &&
            rd.src_offset < w.dst_offset + w.count) {
          *error = fmt::format("op {} of step {} reads elements of rank {} that op {} writes", id,
                               rd.step, rd.src_rank, writer);
          break;
        }
      }
    }
    for (std::int32_t r : touched_) first_[r] = -1;
    touched_.clear();
    return error;
  }

  template <class Ids, class OpAt>
  void collect(const Schedule& s, const Ids& step_ops, OpAt& op_at) {
    writes_.clear();
    reads_.clear();
    touched_.clear();
    for (OpId id : step_ops) {
      const Op& op = op_at(id);
      // A switch op reads (SwitchReduce, SwitchAllReduce) or writes (Multicast,
      // SwitchAllReduce) its range on every rank of its group; a SwitchReduce also writes,
      // and a Multicast reads, the issuer's.
      const int n = op.is_switch() ? s.switch_group_size(op) : 1;
      for (int r = 0; r < (op.writes_every_rank() ? n : 1); ++r)
        writes_.push_back({op.writes_every_rank() ? s.switch_member(op, r) : op.dst_rank,
                           op.dst_buffer, op.dst_offset, op.dst_offset + op.count, id});
      for (int r = 0; r < (op.reads_every_rank() ? n : 1); ++r)
        reads_.push_back({op.reads_every_rank() ? s.switch_member(op, r) : op.src_rank,
                          op.src_buffer, op.src_offset, op.src_offset + op.count, id});
    }
    // Counting sort of the writes by rank, ranks in the order the step first writes them.
    for (const Access& w : writes_)
      if (count_[w.rank]++ == 0) touched_.push_back(w.rank);
    std::int64_t at = 0;
    for (std::int32_t r : touched_) {
      first_[r] = at;
      at += count_[r];
      count_[r] = 0;
    }
    by_rank_.resize(writes_.size());
    for (const Access& w : writes_) by_rank_[first_[w.rank] + count_[w.rank]++] = w;
    for (std::int32_t r : touched_) {  // a rank's writes in one step: usually one or two
      const auto begin = by_rank_.begin() + first_[r];
      std::sort(begin, begin + count_[r], before);
    }
  }

  template <class OpAt>
  std::string conflicts(OpAt& op_at) const {
    for (std::int32_t r : touched_) {
      for (std::int64_t i = first_[r] + 1; i < first_[r] + count_[r]; ++i)
        if (overlaps(by_rank_[i - 1], by_rank_[i]))
          return fmt::format("ops {} and {} of step {} write overlapping elements of rank {}",
                             by_rank_[i - 1].op, by_rank_[i].op, op_at(by_rank_[i].op).step, r);
    }
    for (const Access& rd : reads_) {
      if (first_[rd.rank] < 0) continue;  // nothing written on that rank
      const auto begin = by_rank_.begin() + first_[rd.rank], end = begin + count_[rd.rank];
      // Writes are disjoint and sorted: only the last one starting before the read and
      // the first one starting at or after it can overlap it.
      const auto it = std::lower_bound(begin, end, rd, before);
      for (auto cand : {it, it == begin ? it : it - 1}) {
        if (cand != end && cand->op != rd.op && overlaps(*cand, rd))
          return fmt::format("op {} of step {} reads elements of rank {} that op {} writes", rd.op,
                             op_at(rd.op).step, rd.rank, cand->op);
      }
    }
    return {};
  }

  // Per rank: its writes' start in by_rank_ (in check_one_write_per_rank: the op that
  // writes it), or -1.
  std::vector<std::int64_t> first_;
  std::vector<std::int64_t> count_;  // per rank: how many
  std::vector<std::int32_t> touched_;
  std::vector<Access> writes_, reads_, by_rank_;
};

}  // namespace step_check

namespace {

using step_check::StepChecker;

// A run of consecutive op ids, iterable. (std::views::iota would do, but clang 14 with
// libstdc++ 12, the fuzz build's pair, cannot compile iota_view.)
struct IdRun {
  struct Iterator {
    OpId id;
    OpId operator*() const { return id; }
    Iterator& operator++() { return ++id, *this; }
    bool operator!=(const Iterator& other) const { return id != other.id; }
  };
  OpId first, last;
  Iterator begin() const { return {first}; }
  Iterator end() const { return {last}; }
};

// Calls f(ids) with each step's ops in id order: straight runs of ids when the ops are
// in step order (as builders emit them), else a counting sort by step.
template <class F>
std::string for_each_step(const Schedule& s, F&& f) {
  const std::size_t n = s.size();
  bool sorted = true;
  for (std::size_t i = 1; i < n && sorted; ++i) sorted = s.ops[i - 1].step <= s.ops[i].step;
  if (sorted) {
    for (std::size_t i = 0; i < n;) {
      std::size_t j = i;
      while (j < n && s.ops[j].step == s.ops[i].step) ++j;
      poll_interrupt();
      if (auto e = f(IdRun{OpId{i}, OpId{j}}); !e.empty()) return e;
      i = j;
    }
    return {};
  }
  std::vector<std::size_t> step_first(static_cast<std::size_t>(s.num_steps) + 1, 0);
  for (const Op& op : s.ops) ++step_first[op.step + 1];
  std::partial_sum(step_first.begin(), step_first.end(), step_first.begin());
  std::vector<OpId> order(n);
  std::vector<std::size_t> cursor(step_first.begin(), step_first.end() - 1);
  for (OpId id = 0; id < n; ++id) order[cursor[s.ops[id].step]++] = id;
  for (int step = 0; step < s.num_steps; ++step)
    if (auto e =
            f(std::span(order).subspan(step_first[step], step_first[step + 1] - step_first[step]));
        !e.empty())
      return e;
  return {};
}

// An op's ranks, buffers, kind and ranges, against the schedule's shape and buffers.
std::string check_op(const Schedule& s, OpId id, const Op& op) {
  const int K = s.shape.ranks;
  if (op.src_rank < 0 || op.src_rank >= K || op.dst_rank < 0 || op.dst_rank >= K)
    return fmt::format("op {}: rank out of range 0..{}", id, K - 1);
  if (op.src_buffer >= s.num_buffers || op.dst_buffer >= s.num_buffers)
    return fmt::format("op {}: buffer out of range", id);
  // Only a barrier's messages carry no data; anywhere else an empty op is a generator bug.
  if (s.shape.op == CollectiveOp::Barrier ? op.count != 0 : op.count <= 0)
    return fmt::format("op {}: {}", id,
                       op.count ? "a barrier message carrying data" : "empty transfer");
  if (op.kind > OpKind::SwitchAllReduce) return fmt::format("op {}: unknown kind", id);
  if (op.is_switch() && op.src_rank != op.dst_rank)
    return fmt::format("op {}: a switch op's source and destination rank are its issuer", id);
  if (op.is_switch() && !s.switch_groups_tile(Schedule::in_network(op))) {
    const auto [n, stride] = s.switch_groups(Schedule::in_network(op));
    return fmt::format("op {}: {} groups of {} ranks {} apart do not tile {} ranks", id,
                       Schedule::in_network(op) ? "network switch" : "NVSwitch", n, stride, K);
  }
  for (int r = 0; r < (op.is_switch() ? s.switch_group_size(op) : 1); ++r) {
    const int src = op.reads_every_rank() ? s.switch_member(op, r) : op.src_rank;
    const int dst = op.writes_every_rank() ? s.switch_member(op, r) : op.dst_rank;
    if (op.src_offset < 0 || op.src_offset + op.count > s.buffer_count(src, op.src_buffer))
      return fmt::format("op {}: source range outside rank {}'s buffer {}", id, src, op.src_buffer);
    if (op.dst_offset < 0 || op.dst_offset + op.count > s.buffer_count(dst, op.dst_buffer))
      return fmt::format("op {}: destination range outside rank {}'s buffer {}", id, dst,
                         op.dst_buffer);
  }
  return {};
}

}  // namespace

std::string check_schedule(const Schedule& s) {
  const int K = s.shape.ranks;
  if (s.dep_begin.size() != s.ops.size() + 1) return "dependency index has the wrong size";
  if (s.dep_begin.front() != 0 || !std::is_sorted(s.dep_begin.begin(), s.dep_begin.end()) ||
      s.dep_begin.back() != s.deps.size())
    return "dependency index does not cover the dependencies";
  if (s.buffer_counts.size() != static_cast<std::size_t>(K) * s.num_buffers)
    return "buffer sizes do not cover every rank";
  for (OpId id = 0; id < s.size(); ++id) {
    const Op& op = s.ops[id];
    if (std::string e = check_op(s, id, op); !e.empty()) return e;
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
  StepChecker checker(K);
  auto op_at = [&](OpId id) -> const Op& { return s.ops[id]; };
  return for_each_step(s, [&](const auto& ids) { return checker.check(s, ids, op_at); });
}

struct StepwiseCheck::State {
  Schedule header;
  step_check::StepChecker steps;
  int last_step = -1;
};

StepwiseCheck::StepwiseCheck(const Schedule& header)
    : state_(std::make_unique<State>(State{header, StepChecker(header.shape.ranks)})) {}

StepwiseCheck::~StepwiseCheck() = default;

std::string StepwiseCheck::check_step(OpId first, std::span<const Op> ops,
                                      std::span<const DepIndex> dep_begin,
                                      std::span<const OpId> deps) {
  const Schedule& s = state_->header;
  if (ops.empty()) return {};
  const int step = ops.front().step;
  if (step <= state_->last_step)
    return fmt::format("op {}: step {} comes after step {}", first, step, state_->last_step);
  state_->last_step = step;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpId id = first + i;
    if (std::string e = check_op(s, id, ops[i]); !e.empty()) return e;
    if (ops[i].step != step) return fmt::format("op {}: not of its step {}", id, step);
    for (DepIndex e = dep_begin[i]; e < dep_begin[i + 1]; ++e)
      if (deps[e] >= first)  // steps arrive in order: earlier steps hold the earlier ids
        return fmt::format("op {} of step {} depends on op {}, not of an earlier step", id, step,
                           deps[e]);
  }
  auto op_at = [&](OpId id) -> const Op& { return ops[id - first]; };
  return state_->steps.check(s, IdRun{first, first + ops.size()}, op_at);
}

std::string StepwiseCheck::finish(int num_steps) const {
  if (state_->last_step >= num_steps)
    return fmt::format("step {} out of range: the schedule has {} steps", state_->last_step,
                       num_steps);
  return {};
}

}  // namespace collsim

namespace collsim {

SwitchUse switch_use(const Schedule& s) {
  SwitchUse use;
  for (const Op& op : s.ops) {
    if (!op.is_switch()) continue;
    use.kind[Schedule::in_network(op)] = true;
    use.most_legs = std::max(use.most_legs, s.switch_legs(op));
  }
  return use;
}

// Not cryptographic: it tells schedules apart. Fed field by field, never raw structs
// (padding bytes are not data), in an order a stream can follow.
DigestBuilder::DigestBuilder(const Schedule& s) {
  add(static_cast<std::uint64_t>(s.shape.op));
  add(static_cast<std::uint64_t>(s.shape.reduce_op));
  add(static_cast<std::uint64_t>(s.shape.dtype));
  add(static_cast<std::uint64_t>(s.shape.ranks));
  add(static_cast<std::uint64_t>(s.shape.count));
  add(static_cast<std::uint64_t>(s.shape.root));
  add(static_cast<std::uint64_t>(s.num_buffers));
  add(static_cast<std::uint64_t>(s.switch_group));
  if (s.network_group > 0) {
    add(static_cast<std::uint64_t>(s.network_group));
    add(static_cast<std::uint64_t>(s.network_stride));
  }
  if (s.shape.matrix)
    for (std::int64_t x : *s.shape.matrix) add(static_cast<std::uint64_t>(x));
  for (std::int64_t c : s.buffer_counts) add(static_cast<std::uint64_t>(c));
}

void DigestBuilder::add_op(const Op& op, std::span<const OpId> deps) {
  add(static_cast<std::uint64_t>(op.src_offset));
  add(static_cast<std::uint64_t>(op.dst_offset));
  add(static_cast<std::uint64_t>(op.count));
  add(static_cast<std::uint64_t>(op.src_rank) << 32 | static_cast<std::uint32_t>(op.dst_rank));
  add(static_cast<std::uint64_t>(static_cast<std::uint32_t>(op.step)) << 32 |
      static_cast<std::uint64_t>(op.kind) | op.src_buffer << 8 | op.dst_buffer << 16 |
      op.channel << 24);
  add(deps.size());
  for (OpId d : deps) add(d);
}

std::uint64_t DigestBuilder::finish(std::uint64_t ops) const {
  DigestBuilder last = *this;
  last.add(ops);
  return last.h_;
}

std::uint64_t schedule_digest(const Schedule& s) {
  DigestBuilder h(s);
  for (OpId id = 0; id < s.size(); ++id) h.add_op(s.ops[id], s.deps_of(id));
  return h.finish(s.size());
}

}  // namespace collsim
