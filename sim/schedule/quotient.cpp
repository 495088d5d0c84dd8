#include "schedule/quotient.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace collsim {
namespace {

int mod(std::int64_t x, int n) {
  return static_cast<int>(((x % n) + n) % n);
}

// What decides when an op runs, its ranks turned so that its executor is below period.
using OrbitKey = std::tuple<int, int, int, std::int64_t, int, int>;

OrbitKey orbit_key(const Op& op) {
  return {op.step, op.src_rank, op.dst_rank, op.count, static_cast<int>(op.kind), op.channel};
}

// Where each op of `full` sits: its orbit's representative and the turn from it.
struct Orbits {
  std::vector<OpId> rep;       // per op: the op its orbit is represented by
  std::vector<int> shift;      // per op: it is rep turned by this many ranks
  std::vector<OpId> quotient;  // per representative op: its index among representatives
  std::vector<OpId> reps;      // the representatives, in id order
};

std::optional<Orbits> find_orbits(const Schedule& full, int period, std::string& why) {
  const int K = full.shape.ranks, turns = K / period;
  std::map<OrbitKey, std::vector<std::pair<int, OpId>>> orbits;
  Orbits o;
  o.rep.resize(full.size());
  o.shift.resize(full.size());
  o.quotient.assign(full.size(), 0);
  for (OpId id = 0; id < full.size(); ++id) {
    const Op& op = full.ops[id];
    if (op.is_switch()) {
      why = "its switch ops act on fixed groups of ranks";
      return std::nullopt;
    }
    const int turn = op.executor() / period;
    orbits[orbit_key(turn_ranks(op, -turn * period, K))].emplace_back(turn, id);
  }
  for (auto& [key, members] : orbits) {
    std::sort(members.begin(), members.end());
    bool whole = static_cast<int>(members.size()) == turns;
    for (int t = 0; whole && t < turns; ++t) whole = members[t].first == t;
    if (!whole) {
      why = fmt::format("op {} (step {}) has no image, or several, turned by {} ranks",
                        members[0].second, std::get<0>(key), period);
      return std::nullopt;
    }
    for (auto [turn, id] : members) {
      o.rep[id] = members[0].second;
      o.shift[id] = turn * period;
    }
    o.reps.push_back(members[0].second);
  }
  std::sort(o.reps.begin(), o.reps.end());
  for (std::size_t q = 0; q < o.reps.size(); ++q) o.quotient[o.reps[q]] = q;
  return o;
}

// An op's dependencies as its orbit sees them: (representative, turn relative to the op,
// needed only sent), in the order listed.
std::vector<QuotientSchedule::Dep> relative_deps(const Schedule& full, const Orbits& o, OpId id) {
  std::vector<QuotientSchedule::Dep> out;
  const int K = full.shape.ranks;
  for (OpId d : full.deps_of(id))
    out.push_back({o.quotient[o.rep[d]], mod(o.shift[d] - o.shift[id], K),
                   needs_only_sent(full.ops[d], full.ops[id])});
  return out;
}

bool same_deps(std::vector<QuotientSchedule::Dep> a, std::vector<QuotientSchedule::Dep> b) {
  const auto order = [](const QuotientSchedule::Dep& x, const QuotientSchedule::Dep& y) {
    return std::tie(x.op, x.shift, x.only_sent) < std::tie(y.op, y.shift, y.only_sent);
  };
  std::sort(a.begin(), a.end(), order);
  std::sort(b.begin(), b.end(), order);
  return a == b;
}

}  // namespace

Op turn_ranks(const Op& op, int shift, int ranks) {
  Op t = op;
  t.src_rank = mod(static_cast<std::int64_t>(op.src_rank) + shift, ranks);
  t.dst_rank = mod(static_cast<std::int64_t>(op.dst_rank) + shift, ranks);
  return t;
}

void QuotientSchedule::add(const Op& op, OpId rep, std::vector<Op> before) {
  const auto by_source = [](const Op& a, const Op& b) { return a.src_rank < b.src_rank; };
  const auto same_source = [](const Op& a, const Op& b) { return a.src_rank == b.src_rank; };
  std::sort(before.begin(), before.end(), by_source);
  before.erase(std::unique(before.begin(), before.end(), same_source), before.end());
  for (const Op& dep : before) deps.push_back({rep, dep.executor(), needs_only_sent(dep, op)});
  ops.push_back(op);
  dep_begin.push_back(deps.size());
}

QuotientSchedule widen(const QuotientSchedule& q, int period) {
  const int K = q.shape.ranks;
  if (period < 1 || K % period != 0 || period % q.period != 0)
    throw std::invalid_argument(
        fmt::format("cannot widen a fold by {} ranks to {} of {}", q.period, period, K));
  // Representative `op` of q turned by `turn` x q.period (< period) is this one of the
  // wider fold.
  const int turns = period / q.period;
  struct Image {
    OpId op;
    int turn;  // in turns of q.period ranks
  };
  std::vector<Image> images;
  images.reserve(q.size() * turns);
  for (OpId op = 0; op < q.size(); ++op)
    for (int turn = 0; turn < turns; ++turn) images.push_back({op, turn});
  // The full schedule lists each op of q's, in q's order, with its turns by source rank
  // (the generators' order; tests/test_symmetry.cpp checks it against fold_by_rotation).
  const auto place = [&](OpId op, std::int64_t ranks) {
    return std::pair{op, mod(q.ops[op].src_rank + ranks, K)};
  };
  std::sort(images.begin(), images.end(), [&](const Image& a, const Image& b) {
    return place(a.op, std::int64_t{a.turn} * q.period) <
           place(b.op, std::int64_t{b.turn} * q.period);
  });
  std::vector<OpId> index(images.size());
  for (OpId i = 0; i < images.size(); ++i) index[images[i].op * turns + images[i].turn] = i;

  QuotientSchedule w;
  w.shape = q.shape;
  w.period = period;
  w.num_steps = q.num_steps;
  w.ops.reserve(images.size());
  w.dep_begin.reserve(images.size() + 1);
  for (const Image& i : images) {
    const int own = i.turn * q.period;  // in ranks
    w.ops.push_back(turn_ranks(q.ops[i.op], own, K));
    // Its dependency, turned by `shift` from q's representative, is turned by shift + own
    // from it: the wider fold's representative by the remainder, turned by the rest. They
    // are listed in the full schedule's order, which the turn can change.
    const auto first = w.deps.size();
    for (const QuotientSchedule::Dep& d : q.deps_of(i.op)) {
      const int shift = mod(std::int64_t{d.shift} + own, K);
      w.deps.push_back(
          {index[d.op * turns + shift % period / q.period], shift - shift % period, d.only_sent});
    }
    std::sort(w.deps.begin() + first, w.deps.end(), [&](const auto& a, const auto& b) {
      const Image& x = images[a.op];
      const Image& y = images[b.op];
      return place(x.op, std::int64_t{x.turn} * q.period + a.shift) <
             place(y.op, std::int64_t{y.turn} * q.period + b.shift);
    });
    w.dep_begin.push_back(w.deps.size());
  }
  return w;
}

std::optional<QuotientSchedule> fold_by_rotation(const Schedule& full, int period,
                                                 std::string* why) {
  std::string reason;
  auto refuse = [&](std::string r) -> std::optional<QuotientSchedule> {
    if (why) *why = std::move(r);
    return std::nullopt;
  };
  const int K = full.shape.ranks;
  if (period < 1 || K % period != 0)
    return refuse(fmt::format("a turn of {} ranks does not divide {} ranks", period, K));
  const std::optional<Orbits> orbits = find_orbits(full, period, reason);
  if (!orbits) return refuse(reason);

  QuotientSchedule q;
  q.shape = full.shape;
  q.period = period;
  q.num_steps = full.num_steps;
  for (OpId rep : orbits->reps) {
    q.ops.push_back(full.ops[rep]);
    for (const auto& d : relative_deps(full, *orbits, rep)) q.deps.push_back(d);
    q.dep_begin.push_back(q.deps.size());
  }
  for (OpId id = 0; id < full.size(); ++id)
    if (!same_deps(relative_deps(full, *orbits, id), relative_deps(full, *orbits, orbits->rep[id])))
      return refuse(fmt::format("op {} (step {}) waits on other ops than its turned image does", id,
                                full.ops[id].step));
  return q;
}

}  // namespace collsim
