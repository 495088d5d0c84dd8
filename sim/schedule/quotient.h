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
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "schedule/schedule.h"

namespace collsim {

// The most representatives a stored fold may hold: 2^24 ops, about 2.7 GB with their
// dependencies and successor graph. A ring's own fold past it is not stored (nullopt; it is
// made a step at a time instead, StreamedQuotient), and a stored fold is widened to several
// ranks only within it (simulate/symmetric.h).
constexpr std::size_t kMostRepresentatives = std::size_t{1} << 24;

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

// One step of a fold's representatives, as a generator hands it over (StreamedQuotient).
struct QuotientStepView {
  OpId first = 0;                               // the id of ops[0], counted over the whole fold
  std::span<const Op> ops;                      // the step's representatives, in the fold's order
  std::span<const DepIndex> dep_begin;          // ops.size() + 1 offsets into deps, from 0
  std::span<const QuotientSchedule::Dep> deps;  // on earlier representatives, by id

  std::span<const QuotientSchedule::Dep> deps_of(std::size_t i) const {
    return deps.subspan(dep_begin[i], dep_begin[i + 1] - dep_begin[i]);
  }
};

// A fold made a step at a time instead of stored: past kMostRepresentatives (1 GiB of
// float32 on 100,000 ranks folds by a turn of 3,125 of them: 6.25e8 representatives), it is
// played as it is made (simulate/symmetric.h), in the memory of the ops in flight.
struct StreamedQuotient {
  CollectiveShape shape;
  int period = 1;
  int channels = 1;
  int num_steps = 0;
  std::uint64_t size = 0;  // representatives
  // The distinct (source, destination) ranks of its transfers: the network's check.
  std::vector<std::pair<int, int>> pairs;
  // Hands its steps, in order, to `take`; may be called again.
  std::function<void(const std::function<void(const QuotientStepView&)>& take)> emit;

  int orbit_size() const { return shape.ranks / period; }
  std::uint64_t full_size() const { return size * static_cast<std::uint64_t>(orbit_size()); }
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
