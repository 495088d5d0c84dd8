#include "simulate/step_breakdown.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "core/time.h"
#include "schedule/collective.h"

namespace collsim {
namespace step_breakdown_detail {

// The kinds the kept tasks fall into, numbered in order of first appearance.
struct Kinds {
  std::vector<StepShare> shares;
  std::vector<int> of_task;   // -1: a task not kept
  std::vector<int> category;  // per kind: its index among the categories
  std::vector<std::string> categories;
};

Kinds kinds_of(const StepGraph& graph, const std::vector<bool>& keep) {
  Kinds k;
  std::map<std::pair<std::string, std::string>, int> index;
  std::map<std::string, int> category_index;
  k.of_task.assign(graph.tasks.size(), -1);
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    if (!keep.empty() && !keep[i]) continue;
    const StepTask& t = graph.tasks[i];
    const bool compute = t.kind == StepTaskKind::Compute;
    std::string op = compute ? "" : std::string(name_of(t.collective->shape.op));
    const auto [it, fresh] = index.try_emplace({t.category, op}, static_cast<int>(k.shares.size()));
    if (fresh) {
      k.shares.push_back({.category = t.category, .op = std::move(op), .compute = compute});
      const auto c = category_index.try_emplace(t.category, static_cast<int>(k.categories.size()));
      if (c.second) k.categories.push_back(t.category);
      k.category.push_back(c.first->second);
    }
    k.of_task[i] = it->second;
    StepShare& s = k.shares[it->second];
    ++s.tasks;
    if (!compute) s.bytes += t.collective->bytes;
  }
  return k;
}

struct Event {
  Time at;
  int kind;
  int delta;  // +1: a task of the kind begins on the rank; -1: one ends
  auto operator<=>(const Event&) const = default;
};

// Per job rank (by its position in `ranks`), the begin and end of every kept task on it.
std::vector<std::vector<Event>> events_per_rank(const StepGraph& graph, const StepResult& r,
                                                const Kinds& kinds, const std::vector<int>& ranks) {
  std::vector<int> slot;
  for (std::size_t s = 0; s < ranks.size(); ++s) {
    if (ranks[s] >= static_cast<int>(slot.size())) slot.resize(ranks[s] + 1, -1);
    slot[ranks[s]] = static_cast<int>(s);
  }
  std::vector<std::vector<Event>> out(ranks.size());
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    const int kind = kinds.of_task[i];
    const TaskTiming& when = r.sim.tasks[i];
    if (kind < 0 || when.end <= when.start) continue;  // an instant occupies no time
    for (int rank : graph.tasks[i].ranks) {
      const int s = rank < static_cast<int>(slot.size()) ? slot[rank] : -1;
      if (s < 0) continue;
      out[s].push_back({when.start, kind, +1});
      out[s].push_back({when.end, kind, -1});
    }
  }
  return out;
}

// Walks one rank's timeline, charging each stretch between events to what is in flight
// then (the definition in the header), and adds the rank's figures to the sums.
class RankSweep {
 public:
  RankSweep(const Kinds& kinds, StepBreakdown& sums, std::vector<double>& category_busy_s)
      : kinds_(kinds),
        sums_(sums),
        category_busy_s_(category_busy_s),
        count_(kinds.shares.size(), 0),
        busy_(kinds.shares.size(), 0),
        exposed_(kinds.shares.size(), 0.0),
        category_busy_(kinds.categories.size(), 0),
        category_seen_(kinds.categories.size(), 0) {}

  void run(std::vector<Event>& events, Time step) {
    std::sort(events.begin(), events.end());
    Time at = 0;
    for (const Event& e : events) {
      if (e.at > at) stretch(e.at - at);
      at = std::max(at, e.at);
      count_[e.kind] += e.delta;
    }
    stretch(step - at);  // nothing in flight after the rank's last task: bubble
    fold();
  }

 private:
  void stretch(Time dt) {
    if (dt <= 0) return;
    int computing = 0, communicating = 0;
    for (std::size_t k = 0; k < count_.size(); ++k)
      if (count_[k] > 0) ++(kinds_.shares[k].compute ? computing : communicating);
    if (computing > 0) compute_ += dt;
    if (communicating > 0) comm_ += dt;
    if (computing + communicating == 0) bubble_ += dt;
    // Compute hides communication; kinds of the class charged share the stretch evenly.
    const bool charge_compute = computing > 0;
    const double share = to_seconds(dt) / (charge_compute ? computing : communicating);
    for (std::size_t k = 0; k < count_.size(); ++k) {
      if (count_[k] <= 0) continue;
      busy_[k] += dt;
      category_seen_[kinds_.category[k]] = 1;
      if (kinds_.shares[k].compute == charge_compute) exposed_[k] += share;
    }
    for (std::size_t c = 0; c < category_seen_.size(); ++c)
      if (std::exchange(category_seen_[c], 0)) category_busy_[c] += dt;
  }

  // Whole-time figures of the rank into the sums, in seconds (summed over many ranks,
  // picoseconds could overflow).
  void fold() {
    for (std::size_t k = 0; k < busy_.size(); ++k) {
      sums_.kinds[k].busy_s += to_seconds(busy_[k]);
      sums_.kinds[k].exposed_s += exposed_[k];
    }
    for (std::size_t c = 0; c < category_busy_.size(); ++c)
      category_busy_s_[c] += to_seconds(category_busy_[c]);
    sums_.compute_s += to_seconds(compute_);
    sums_.comm_s += to_seconds(comm_);
    sums_.bubble_s += to_seconds(bubble_);
  }

  const Kinds& kinds_;
  StepBreakdown& sums_;
  std::vector<double>& category_busy_s_;
  std::vector<int> count_;  // tasks of each kind in flight
  std::vector<Time> busy_;
  std::vector<double> exposed_;  // seconds: a shared stretch splits unevenly into picoseconds
  std::vector<Time> category_busy_;
  std::vector<char> category_seen_;  // scratch: categories in flight in this stretch
  Time compute_ = 0, comm_ = 0, bubble_ = 0;
};

// Compute kinds first, then collectives; by category, then op.
bool listed_before(const StepShare& a, const StepShare& b) {
  if (a.compute != b.compute) return a.compute;
  return std::tie(a.category, a.op) < std::tie(b.category, b.op);
}

// Per category: tasks, bytes and exposed summed over its kinds; busy from the sweep.
std::vector<StepShare> per_category(const Kinds& kinds, const StepBreakdown& b,
                                    const std::vector<double>& category_busy_s) {
  std::vector<StepShare> out(kinds.categories.size());
  for (std::size_t c = 0; c < out.size(); ++c) {
    out[c].category = kinds.categories[c];
    out[c].busy_s = category_busy_s[c];
  }
  for (std::size_t k = 0; k < b.kinds.size(); ++k) {
    StepShare& c = out[kinds.category[k]];
    c.compute = b.kinds[k].compute;
    c.tasks += b.kinds[k].tasks;
    c.bytes += b.kinds[k].bytes;
    c.exposed_s += b.kinds[k].exposed_s;
  }
  return out;
}

void divide(StepShare& s, double n) {
  s.busy_s /= n;
  s.exposed_s /= n;
}

}  // namespace step_breakdown_detail

StepBreakdown step_breakdown(const StepGraph& graph, const StepResult& r,
                             const std::vector<int>& ranks, const std::vector<bool>& keep) {
  using namespace step_breakdown_detail;
  const Kinds kinds = kinds_of(graph, keep);
  StepBreakdown out;
  out.ranks = static_cast<int>(ranks.size());
  out.kinds = kinds.shares;
  Time step = 0;
  for (std::size_t i = 0; i < graph.tasks.size(); ++i)
    if (kinds.of_task[i] >= 0) step = std::max(step, r.sim.tasks[i].end);
  out.step_s = to_seconds(step);
  std::vector<double> category_busy_s(kinds.categories.size(), 0.0);
  auto events = events_per_rank(graph, r, kinds, ranks);
  for (auto& rank_events : events) RankSweep(kinds, out, category_busy_s).run(rank_events, step);
  out.categories = per_category(kinds, out, category_busy_s);
  if (out.ranks > 0) {
    const double n = out.ranks;
    for (auto& s : out.kinds) divide(s, n);
    for (auto& s : out.categories) divide(s, n);
    out.compute_s /= n;
    out.comm_s /= n;
    out.bubble_s /= n;
  }
  for (const auto& s : out.kinds)
    if (!s.compute) out.exposed_comm_s += s.exposed_s;
  std::stable_sort(out.kinds.begin(), out.kinds.end(), listed_before);
  std::stable_sort(out.categories.begin(), out.categories.end(), listed_before);
  return out;
}

}  // namespace collsim
