#pragma once
// A schedule folded by a rotation of its ranks. Where turning every rank r into
// r + period (mod K) maps a schedule onto itself — the same ops, with the same counts,
// kinds, steps and channels, on the turned ranks, each waiting on the turned images of
// its dependencies and needing the same of each (its data, or only that it was sent) —
// the ops of one orbit run at the same times on a network that the turn also maps onto
// itself. One op per orbit then times them all: the one run (Op::executor) by a rank
// below `period`. simulate/symmetric.h plays these; tests/test_symmetry.cpp checks them
// against the full schedule and the full simulation.
//
// Words, as the code uses them: the user asks for *symmetry* (run --symmetry); a *turn*
// is the rotation of every rank by `period`; an op's *orbit* is its images under every
// turn; the *fold* (QuotientSchedule) keeps one *representative* per orbit.
//
// Which elements an op moves is not compared: it does not change when the op runs, only
// whether its successors need its data, which each dependency keeps (Dep::only_sent).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace collsim {

struct QuotientSchedule {
  // A dependency of a representative: representative `op` turned by `shift` ranks (a
  // multiple of period, in [0, K)), and whether it is needed only sent (needs_only_sent).
  struct Dep {
    OpId op;
    std::int32_t shift;
    bool only_sent;
    bool operator==(const Dep&) const = default;
  };

  CollectiveShape shape;
  int period = 1;                      // the turn, in ranks; divides shape.ranks
  std::vector<Op> ops;                 // the representatives, in the full schedule's order
  std::vector<DepIndex> dep_begin{0};  // ops.size() + 1 offsets into deps
  std::vector<Dep> deps;
  int num_steps = 0;

  // For a generator's own fold by one rank (period 1): appends representative `op`,
  // waiting, as the builder has it, on `before`: the full schedule's ops of the step
  // before that touched op's ranks (repeats allowed), all images of representative
  // `rep`. A step lists its ops by source rank, so that is the order they are kept in;
  // each is `rep` turned to the rank running it.
  void add(const Op& op, OpId rep, std::vector<Op> before);

  std::size_t size() const { return ops.size(); }
  std::span<const Dep> deps_of(OpId id) const {
    return {deps.data() + dep_begin[id], deps.data() + dep_begin[id + 1]};
  }
  // Each representative stands for this many ops.
  int orbit_size() const { return shape.ranks / period; }
  std::uint64_t full_size() const { return ops.size() * static_cast<std::uint64_t>(orbit_size()); }
  std::int64_t bytes(const Op& op) const { return op.count * element_size(shape.dtype); }
};

// The op with every rank turned by `shift` (mod ranks); its ranges unchanged.
Op turn_ranks(const Op& op, int shift, int ranks);

// `q`, a fold by q.period ranks, as the fold by `period` ranks (a multiple of q.period
// dividing the ranks): each representative with its turns by q.period, 2 q.period, ...
// below `period`, in the full schedule's order. Where a network is not mapped onto itself
// by q's turn but is by a turn of a whole server or leaf switch (simulate/symmetric.h),
// the wider fold is played. It relies on the generators' order: each op of q's, in q's
// order, with its turns listed together by source rank (tests/test_symmetry.cpp checks
// every algorithm with a fold).
QuotientSchedule widen(const QuotientSchedule& q, int period);

// `full` folded by turns of `period` ranks, or nullopt (and `why`) when the turn does not
// map it onto itself. Reads every op: the reference the generators' own quotients
// (AlgorithmEntry::quotient) are checked against.
std::optional<QuotientSchedule> fold_by_rotation(const Schedule& full, int period,
                                                 std::string* why = nullptr);

}  // namespace collsim
