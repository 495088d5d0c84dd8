#pragma once
// The Schedule IR: a collective algorithm as data.
//
// A schedule is a DAG of ops over per-rank buffers. An op moves `count` elements
// from (src_rank, src_buffer, src_offset) to (dst_rank, dst_buffer, dst_offset),
// either copying or reducing into the destination. Ops and dependencies live in
// flat arrays (dependencies in CSR form), so a schedule of tens of millions of
// transfers is a handful of allocations. A schedule knows nothing of time.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/time.h"
#include "schedule/collective.h"
#include "topology/topology.h"

namespace collsim {

// A switch op's legs are told apart by 8 bits of a transfer's id (simulate/transfer_ids.h).
inline constexpr int kMaxSwitchLegs = 256;

// 64-bit: a ring all-reduce passes 2^32 ops at 46,342 ranks and 2^32 dependencies at
// 26,756. Every index into ops or dependencies is one of these.
using OpId = std::uint64_t;
using DepIndex = std::uint64_t;  // into Schedule::deps / ScheduleGraph::succ

enum class OpKind : std::uint8_t {
  Copy,    // dst = src
  Reduce,  // dst = dst (op) src
  // Switch-executed (NVLink SHARP, NVLS; InfiniBand SHARP, NCCL's CollNet). One op
  // stands for the switch's work on every rank of a switch group (Schedule::switch_group),
  // so a slice is one or two ops, not 2K: Op stays 40 bytes. src_rank == dst_rank is the
  // issuing rank (the one that runs the multimem instruction or posts the SHARP
  // operation); the range is the same on every rank of its group.
  //   SwitchReduce: the issuer's range = fold over the group's ranks, in rank order,
  //                 of each one's range (multimem.ld_reduce, result back to the issuer).
  //   Multicast:    every group rank's range = the issuer's range (multimem.st).
  //   SwitchAllReduce: every group rank's range = that fold (a SHARP all-reduce: each
  //                 rank sends its range up the switch tree and receives the result).
  SwitchReduce,
  Multicast,
  SwitchAllReduce,
};

struct Op {
  std::int64_t src_offset;  // elements
  std::int64_t dst_offset;  // elements
  std::int64_t count;       // elements
  std::int32_t src_rank;
  std::int32_t dst_rank;
  std::int32_t step;  // logical step, for reports and the replayer's trace
  OpKind kind;
  std::uint8_t src_buffer;
  std::uint8_t dst_buffer;
  std::uint8_t
      channel;  // independent dependency chains (e.g. the two trees of a double binary tree)

  // Switch ops are not local: their traffic is on every rank's link to the switch.
  bool is_switch() const { return kind >= OpKind::SwitchReduce; }
  bool is_local() const { return src_rank == dst_rank && !is_switch(); }
  bool reads_every_rank() const {
    return kind == OpKind::SwitchReduce || kind == OpKind::SwitchAllReduce;
  }
  bool writes_every_rank() const {
    return kind == OpKind::Multicast || kind == OpKind::SwitchAllReduce;
  }
  // The rank that runs the op, and so waits for its dependencies and pays the wake-up
  // after them: a copy is pushed by its source into the destination's buffer; a
  // reduction runs where its result lands (it reads the peer's buffer). The simulator
  // and the hardware runner both read it here, so they agree on who does what.
  int executor() const { return kind == OpKind::Copy ? src_rank : dst_rank; }
};

// When an op ran, simulated or measured: from its start (after any wake-up) to its end.
struct OpTiming {
  Time start;
  Time end;
};

// Whether op `q`, which depends on transfer `p`, may begin once p's last byte has left
// its sender rather than once it has arrived: unless q reads the elements p writes, or
// writes them other than as a second reduction. A rank's connections are FIFOs with several slots
// in flight (NCCL_STEPS), so what follows p only in step order (the next segment on another
// connection, a switch op on another slice) does not wait for p's latency; what needs p's data
// does. A transfer's latency is thus paid where data flows, not again by every later op of the same
// rank. The simulators order ops by this one rule.
inline bool needs_only_sent(const Op& p, const Op& q) {
  if (p.is_local() || p.is_switch()) return false;
  if (q.src_rank == p.src_rank && q.dst_rank == p.dst_rank) return true;  // FIFO
  // A message without data (a barrier's signal) says it was heard: what its receiver does
  // next waits for it to arrive. Read as data it overlapped nothing, and a dissemination
  // barrier's rounds all left at once, paying one round's latency for three.
  if (p.count == 0) return q.src_rank != p.dst_rank && q.dst_rank != p.dst_rank;
  const auto overlaps = [&](int buffer, std::int64_t offset) {
    return buffer == p.dst_buffer && offset < p.dst_offset + p.count &&
           p.dst_offset < offset + q.count;
  };
  // A switch op's range is the same on every rank it touches: comparing ranges without
  // ranks is conservative.
  const bool reads =
      (q.is_switch() || q.src_rank == p.dst_rank) && overlaps(q.src_buffer, q.src_offset);
  const bool writes =
      (q.is_switch() || q.dst_rank == p.dst_rank) && overlaps(q.dst_buffer, q.dst_offset);
  // Transfers reducing into the same elements commute: a tree's parent takes its children's
  // contributions as they arrive (NCCL receives from every child at once), so the second
  // waits for the first's bytes to leave, not to land (the replayer still sums in order;
  // a local reduction is not a transfer). What reads the sum waits for both to land: the
  // builder keeps the first among the rank's latest ops (ScheduleBuilder::note_reduction).
  const bool commutes =
      p.kind == OpKind::Reduce && q.kind == OpKind::Reduce && q.src_rank != q.dst_rank;
  return !reads && (!writes || commutes);
}

inline const char* op_kind_name(OpKind k) {
  constexpr const char* names[] = {"copy", "reduce", "switch-reduce", "multicast",
                                   "switch-all-reduce"};
  return names[static_cast<int>(k)];
}

// What a schedule claims to compute; the replayer checks the claim.
struct CollectiveShape {
  CollectiveOp op = CollectiveOp::AllReduce;
  ReduceOp reduce_op = ReduceOp::Sum;
  DType dtype = DType::F32;
  int ranks = 1;
  std::int64_t count = 0;  // elements of the nccl-tests "size" (whole buffer)
  int root = 0;
  // All-to-allv: elements rank s sends rank d at [s * ranks + d]. Empty means uniform.
  std::shared_ptr<const std::vector<std::int64_t>> matrix;

  // Equal matrices by content (a training step's layers route alike).
  bool operator==(const CollectiveShape& o) const {
    const bool same_matrix = matrix == o.matrix || (matrix && o.matrix && *matrix == *o.matrix);
    return op == o.op && reduce_op == o.reduce_op && dtype == o.dtype && ranks == o.ranks &&
           count == o.count && root == o.root && same_matrix;
  }
};

class Schedule {
 public:
  CollectiveShape shape;
  std::string algorithm;
  int num_buffers = 1;
  std::vector<std::int64_t> buffer_counts;  // [rank * num_buffers + buffer], in elements
  std::vector<Op> ops;
  std::vector<DepIndex> dep_begin;  // size ops.size() + 1
  std::vector<OpId> deps;
  int num_steps = 0;
  // NVLink SHARP: SwitchReduce and Multicast act on aligned blocks of `switch_group`
  // consecutive ranks (the GPUs of one NVSwitch): the block holding the issuer. 0: every rank.
  int switch_group = 0;
  // InfiniBand SHARP: SwitchAllReduce acts on groups of `network_group` ranks,
  // `network_stride` apart (one rank of each host, the GPUs of one rail, under a network
  // switch): the group holding the issuer. 0: the schedule has none.
  int network_group = 0;
  int network_stride = 1;

  std::size_t size() const { return ops.size(); }

  // The groups of switch ops in the network (SwitchAllReduce) or on NVSwitches.
  struct SwitchGroups {
    int size;
    int stride;
  };
  static bool in_network(const Op& op) { return op.kind == OpKind::SwitchAllReduce; }
  SwitchGroups switch_groups(bool network) const {
    return network ? SwitchGroups{network_group, std::max(1, network_stride)}
                   : SwitchGroups{switch_group > 0 ? switch_group : shape.ranks, 1};
  }
  int switch_group_size(const Op& op) const { return switch_groups(in_network(op)).size; }
  // The j-th rank (0 <= j < switch_group_size(op)) of the group a switch op acts on.
  int switch_member(const Op& op, int j) const {
    return switch_member(in_network(op), op.src_rank, j);
  }
  int switch_member(bool network, int rank, int j) const {
    const auto [n, stride] = switch_groups(network);
    const int block = n * stride;
    return rank - rank % block + rank % stride + j * stride;
  }
  // Whether the groups tile the ranks (each rank in one group).
  bool switch_groups_tile(bool network) const {
    const auto [n, stride] = switch_groups(network);
    return n > 0 && stride > 0 && shape.ranks % (n * stride) == 0;
  }
  // The place of the group starting at `first` in switch_group_firsts.
  int switch_group_index(bool network, int first) const {
    const auto [n, stride] = switch_groups(network);
    return first / (n * stride) * stride + first % (n * stride);
  }
  // The first rank of every group, in rank order.
  std::vector<int> switch_group_firsts(bool network) const {
    std::vector<int> firsts;
    const auto [n, stride] = switch_groups(network);
    for (int b = 0; b + n * stride <= shape.ranks; b += n * stride)
      for (int k = 0; k < stride; ++k) firsts.push_back(b + k);
    return firsts;
  }
  // A switch op as the network carries it: legs between the switch and the group's ranks,
  // each one rank's range up to the switch or down from it. SwitchReduce: n up (every
  // rank's range) and one down (the result to the issuer); Multicast: n down and one up
  // (the issuer's store); SwitchAllReduce: n up and n down. Legs 0..n-1 are the group's
  // ranks in order; the rest the issuer's (n) or, for SwitchAllReduce, the group's again.
  struct SwitchLeg {
    int rank;
    bool up;
  };
  int switch_legs(const Op& op) const {
    const int n = switch_group_size(op);
    return in_network(op) ? 2 * n : n + 1;
  }
  SwitchLeg switch_leg(const Op& op, int leg) const {
    const int n = switch_group_size(op);
    if (in_network(op)) return {switch_member(op, leg % n), leg < n};
    const bool reduce = op.kind == OpKind::SwitchReduce;
    return {leg < n ? switch_member(op, leg) : op.src_rank, reduce == (leg < n)};
  }
  std::span<const OpId> deps_of(OpId id) const {
    return {deps.data() + dep_begin[id], deps.data() + dep_begin[id + 1]};
  }
  std::int64_t element_bytes() const { return element_size(shape.dtype); }
  std::int64_t bytes(const Op& op) const { return op.count * element_bytes(); }
  std::int64_t buffer_count(int rank, int buffer) const {
    return buffer_counts[static_cast<std::size_t>(rank) * num_buffers + buffer];
  }
  // Bytes of memory the schedule occupies (for the benchmark's bytes-per-transfer figure).
  std::size_t memory_bytes() const;
};

// What a schedule's switch ops need: its groups of each kind (NVSwitch, network, indexed
// by Schedule::in_network) and the most legs one op has.
struct SwitchUse {
  bool kind[2] = {false, false};
  int most_legs = 0;
};
SwitchUse switch_use(const Schedule& s);

// The kind of switch a switch op runs on, for sharp_switch_of.
inline SharpReach sharp_reach(bool network) {
  return network ? SharpReach::Network : SharpReach::NvLink;
}

// A finished schedule, held by every collective that runs it: collectives asking for the
// same thing share one (plan/plan.h), so 100,000 identical all-reduces hold one schedule,
// not 100,000. Read-only; empty (no ops) until one is given.
class SharedSchedule {
 public:
  SharedSchedule() = default;
  explicit SharedSchedule(Schedule s) : s_(std::make_shared<const Schedule>(std::move(s))) {}

  const Schedule& get() const { return s_ ? *s_ : empty(); }
  const Schedule& operator*() const { return get(); }
  const Schedule* operator->() const { return &get(); }
  // Whether both hold the very same schedule (not merely equal ones).
  bool same_as(const SharedSchedule& other) const { return s_ && s_ == other.s_; }

 private:
  static const Schedule& empty();
  std::shared_ptr<const Schedule> s_;
};

// Successor lists and in-degrees, derived once from a schedule's dependencies:
// what the simulator, the replayer and the validity check all walk.
struct ScheduleGraph {
  std::vector<DepIndex> succ_begin;
  std::vector<OpId> succ;
  std::vector<std::uint32_t> indegree;  // one op's dependency count (checked on the way in)

  explicit ScheduleGraph(const Schedule& s);
  std::span<const OpId> successors(OpId id) const {
    return {succ.data() + succ_begin[id], succ.data() + succ_begin[id + 1]};
  }
};

// Structural check: every dependency points to an op of an earlier step (so the
// graph is acyclic and steps are a valid execution order), ranks in range, element
// ranges inside their buffers, no two ops of one step writing overlapping elements
// of a rank, nor one reading what another writes.
// Returns an empty string when valid, else a description of the first problem.
std::string check_schedule(const Schedule& s);

// check_schedule for a schedule that arrives one step at a time (schedule/stream.h),
// in one step's memory: the same checks of each op, and of each step's ops against
// each other. Steps arrive in order, so a dependency on an earlier step is one on an
// earlier id.
class StepwiseCheck {
 public:
  explicit StepwiseCheck(const Schedule& header);  // shape and buffers; ops ignored
  ~StepwiseCheck();
  // One step's ops (ids from `first`) and their dependencies: "" or the first problem.
  std::string check_step(OpId first, std::span<const Op> ops, std::span<const DepIndex> dep_begin,
                         std::span<const OpId> deps);
  // After the last step: "" or the problem (a step past the schedule's count).
  std::string finish(int num_steps) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A 64-bit fingerprint of everything that defines the schedule (shape, buffers,
// every op and dependency in order): two schedules with the same digest are, for
// every practical purpose, the same schedule op for op.
std::uint64_t schedule_digest(const Schedule& s);

// schedule_digest one op at a time, for schedules that are streamed (schedule/stream.h)
// rather than stored: the header's words, then each op with its dependencies, then
// the op count.
class DigestBuilder {
 public:
  explicit DigestBuilder(const Schedule& header);  // shape and buffers; ops ignored
  void add_op(const Op& op, std::span<const OpId> deps);
  std::uint64_t finish(std::uint64_t ops) const;

 private:
  void add(std::uint64_t v) {
    h_ = (h_ ^ v) * 0x9e3779b97f4a7c15ULL;  // word-at-a-time multiply-xorshift
    h_ ^= h_ >> 29;
  }
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace collsim
