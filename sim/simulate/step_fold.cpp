#include "simulate/step_fold.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "schedule/algorithms.h"
#include "schedule/quotient.h"
#include "simulate/planned_step.h"
#include "simulate/symmetric.h"
#include "simulate/task_runner.h"
#include "topology/routing.h"

namespace collsim {
namespace {

// How the step's tasks map under one turn of the replicas (each rank's work to the next
// replica's).
struct TaskTurn {
  std::vector<std::int64_t> image;  // per task: the task it turns into (itself across the replicas)
  std::vector<int> replica;         // per task: its replica; -1: across every replica
  // Per task; a collective across the replicas: its ranks' turn, in positions.
  std::vector<int> rotation;
};

std::uint64_t ranks_hash(const std::vector<int>& ranks) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the ranks
  for (int r : ranks) h = (h ^ static_cast<std::uint32_t>(r)) * 1099511628211ull;
  return h;
}

// Where a task's ranks lie: one replica, every replica alike (-1), else why not.
// `per_replica`: a count per replica, all zero, left zero.
std::string replica_of_task(const StepTask& task, const ReplicaTurn& turn,
                            std::vector<int>& per_replica, int& replica) {
  int used = 0;
  std::string why;
  for (int r : task.ranks) {
    if (r < 0 || r >= static_cast<int>(turn.replica.size()) || turn.replica[r] < 0) {
      why = fmt::format("task \"{}\" runs on rank {}, which is not the job's", task.name, r);
      break;
    }
    if (per_replica[turn.replica[r]]++ == 0) ++used;
  }
  bool even = true;
  for (int r : task.ranks) {
    if (r < 0 || r >= static_cast<int>(turn.replica.size()) || turn.replica[r] < 0) continue;
    even = even && per_replica[turn.replica[r]] == per_replica[turn.replica[task.ranks[0]]];
  }
  for (int r : task.ranks)
    if (r >= 0 && r < static_cast<int>(turn.replica.size()) && turn.replica[r] >= 0)
      per_replica[turn.replica[r]] = 0;
  if (!why.empty()) return why;
  replica = used == 1 ? turn.replica[task.ranks.front()] : -1;
  if (used == 1 || (used == turn.replicas && even)) return "";
  return fmt::format("task \"{}\" spans {} of the {} replicas", task.name, used, turn.replicas);
}

// The turn of a task across the replicas: its ranks as a set for compute (`in_task`: a
// mark per rank, all clear, left clear); for a collective, the rotation of its rank list
// the turn is (rank x runs on ranks[x + s]).
std::string self_turn(const StepTask& task, const ReplicaTurn& turn, std::vector<char>& in_task,
                      int& rotation) {
  const std::vector<int>& ranks = task.ranks;
  if (task.kind == StepTaskKind::Compute) {
    for (int r : ranks) in_task[r] = 1;
    const bool onto_itself =
        std::all_of(ranks.begin(), ranks.end(), [&](int r) { return in_task[turn.next[r]] != 0; });
    for (int r : ranks) in_task[r] = 0;
    if (!onto_itself) return fmt::format("task \"{}\" is not turned onto itself", task.name);
    return "";
  }
  const int n = static_cast<int>(ranks.size());
  const auto at = std::find(ranks.begin(), ranks.end(), turn.next[ranks[0]]);
  const int s = static_cast<int>(at - ranks.begin());
  for (int x = 0; x < n; ++x)
    if (turn.next[ranks[x]] != ranks[(x + s) % n])
      return fmt::format("the turn of the replicas is no rotation of collective \"{}\"'s ranks",
                         task.name);
  rotation = s;
  return "";
}

// Where two tasks become ready at one instant, the one listed first runs its first events
// first (the engine takes an instant's events in the order they were scheduled). So the
// turn must keep the step's order as each replica sees it: a replica's tasks in the order
// of their images', and every task across the replicas after as many tasks of each.
std::string order_problem(const StepGraph& g, const ReplicaTurn& turn, const TaskTurn& t) {
  std::vector<std::int64_t> last_image(turn.replicas, -1);
  std::vector<std::int64_t> seen(turn.replicas, 0);
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    const int d = t.replica[i];
    if (d >= 0) {
      if (t.image[i] <= last_image[d])
        return fmt::format("the turn of the replicas does not keep the order of task \"{}\"",
                           g.tasks[i].name);
      last_image[d] = t.image[i];
      ++seen[d];
    } else if (std::any_of(seen.begin(), seen.end(),
                           [&](std::int64_t k) { return k != seen[0]; })) {
      return fmt::format("task \"{}\" across the replicas comes after more tasks of some",
                         g.tasks[i].name);
    }
  }
  return "";
}

// What the whole run would refuse (simulator.h): it runs whole, and says so.
std::string graph_problem(const StepGraph& g) {
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    const StepTask& t = g.tasks[i];
    if (t.kind == StepTaskKind::Compute && t.duration_s < 0)
      return fmt::format("task \"{}\" has a negative compute time", t.name);
    for (std::int32_t before : t.after)
      if (before < 0 || static_cast<std::size_t>(before) >= i)
        return fmt::format("task \"{}\" waits on a later task", t.name);
  }
  return "";
}

// That `turn` turns each replica's ranks onto the next replica's, one to one.
std::string turn_problem(const ReplicaTurn& turn) {
  std::vector<char> reached(turn.next.size(), 0);
  for (std::size_t r = 0; r < turn.next.size(); ++r) {
    if (turn.replica[r] < 0) continue;
    const int to = turn.next[r];
    if (to < 0 || to >= static_cast<int>(turn.next.size()) || reached[to] ||
        turn.replica[to] != (turn.replica[r] + 1) % turn.replicas)
      return fmt::format("the replicas' turn does not take rank {} to the next replica", r);
    reached[to] = 1;
  }
  return "";
}

// The step's tasks under one turn (TaskTurn), or why the turn does not map the step onto
// itself: the same plan, duration and category, and the turned images of what it waits on.
std::string turn_tasks(const StepGraph& g, const PlannedStep& planned, const ReplicaTurn& turn,
                       TaskTurn& out) {
  const std::size_t n = g.tasks.size();
  out.image.assign(n, -1);
  out.replica.assign(n, -1);
  out.rotation.assign(n, 0);
  // The k-th task of one replica on a rank list turns into the k-th task on the turned
  // list: per hash of a list, the tasks of each list with it.
  std::unordered_map<std::uint64_t, std::vector<std::vector<std::int64_t>>> on_ranks;
  auto tasks_on = [&](const std::vector<int>& ranks) -> std::vector<std::int64_t>* {
    auto it = on_ranks.find(ranks_hash(ranks));
    if (it == on_ranks.end()) return nullptr;
    for (auto& list : it->second)
      if (g.tasks[list.front()].ranks == ranks) return &list;
    return nullptr;
  };
  std::vector<std::int64_t> occurrence(n, 0);
  std::vector<int> per_replica(turn.replicas, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const StepTask& task = g.tasks[i];
    if (std::string why = replica_of_task(task, turn, per_replica, out.replica[i]); !why.empty())
      return why;
    if (out.replica[i] < 0) continue;
    std::vector<std::int64_t>* list = tasks_on(task.ranks);
    if (!list) list = &on_ranks[ranks_hash(task.ranks)].emplace_back();
    occurrence[i] = static_cast<std::int64_t>(list->size());
    list->push_back(static_cast<std::int64_t>(i));
  }
  std::vector<int> turned;
  std::vector<char> in_task(turn.next.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const StepTask& task = g.tasks[i];
    if (out.replica[i] < 0) {
      if (std::string why = self_turn(task, turn, in_task, out.rotation[i]); !why.empty())
        return why;
      out.image[i] = static_cast<std::int64_t>(i);
      continue;
    }
    turned.clear();
    for (int r : task.ranks) turned.push_back(turn.next[r]);
    const std::vector<std::int64_t>* list = tasks_on(turned);
    if (!list || occurrence[i] >= static_cast<std::int64_t>(list->size()))
      return fmt::format("task \"{}\" has no image on the next replica", task.name);
    out.image[i] = (*list)[occurrence[i]];
  }
  if (std::string why = order_problem(g, turn, out); !why.empty()) return why;
  std::vector<std::int64_t> mine, theirs;
  for (std::size_t i = 0; i < n; ++i) {
    const auto j = static_cast<std::size_t>(out.image[i]);
    const StepTask &a = g.tasks[i], &b = g.tasks[j];
    if (a.kind != b.kind || a.category != b.category || a.duration_s != b.duration_s ||
        planned.plan_of_task[i] != planned.plan_of_task[j])
      return fmt::format("tasks \"{}\" and \"{}\" differ, which the turn maps onto each other",
                         a.name, b.name);
    mine.clear();
    theirs.assign(b.after.begin(), b.after.end());
    for (std::int32_t before : a.after) mine.push_back(out.image[before]);
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    if (mine != theirs)
      return fmt::format("task \"{}\" waits on other tasks than the turn of \"{}\"", b.name,
                         a.name);
  }
  return "";
}

// A task of the first group of replicas, or across the replicas, as played.
struct PlayedTask {
  std::size_t graph_task = 0;
  CollectiveTask task;                         // as the simulator takes it: plan, duration
  const QuotientSchedule* quotient = nullptr;  // across the replicas: its representatives
  std::vector<NodeId> rank_gpu;   // per schedule rank: the GPU whose queue and counters it uses
  std::vector<NodeId> route_gpu;  // per schedule rank: the GPU it runs on (routes)
  std::vector<PathId> paths;      // per op: its route over canonical links; -1 none
  // Per kind of switch (Schedule::in_network) and rank: its GPU and its group's SHARP
  // switch; switch ops' routes to and from that switch, and its efficiency.
  std::vector<NodePair> switch_pairs[2];
  std::vector<PathId> up[2], down[2];
  std::vector<double> efficiency[2];
  std::vector<std::uint16_t> legs_left;
  std::vector<std::size_t> after;  // played tasks it waits on
};

// The played tasks, as the one executor (executor.h) reads them: the stored source of
// Simulator, with a collective across the replicas played by its representatives.
class FoldedStepSimulator final : private TaskRunner<FoldedStepSimulator> {
 public:
  FoldedStepSimulator(const Topology& topology, Router& router, NetworkModel& model,
                      std::vector<PlayedTask>& played)
      : TaskRunner(topology, router, model), played_(played), state_(played.size()) {
    std::vector<std::size_t> ops;
    for (const PlayedTask& p : played) ops.push_back(p.task.is_compute() ? 0 : size(p));
    ids_.assign(ops);
    timing_.resize(played.size());
    reset_tasks(played.size());
    for (std::size_t i = 0; i < played.size(); ++i) {
      const PlayedTask& p = played[i];
      if (!p.task.is_compute()) {
        state_[i].costs = OpCosts(p.task.cost.get(), p.task.schedule->shape);
        ++graphs_[graph_key(p)].users;
      }
      add_task(i, p.after);
    }
  }

  SimulationResult run() {
    play_tasks();
    SimulationResult r;
    r.tasks = std::move(timing_);
    r.links = std::move(traffic_.links);
    r.node_sent = std::move(traffic_.node_sent);
    r.node_received = std::move(traffic_.node_received);
    r.transfers = traffic_.transfers;
    r.events = engine_.events_processed();
    return r;
  }

 private:
  friend class Executor<FoldedStepSimulator>;
  friend class TaskRunner<FoldedStepSimulator>;
  struct State {
    const ScheduleGraph* graph = nullptr;     // a schedule played whole
    const QuotientGraph* quotient = nullptr;  // a collective across the replicas
    OpCosts costs;
  };

  static std::size_t size(const PlayedTask& p) {
    return p.quotient ? p.quotient->size() : p.task.schedule->size();
  }

  // --- the source, as the executor reads it ---
  static constexpr bool kSwitchOps = true;
  TransferIds::Decoded decode(TransferId id) const { return ids_.decode(id); }
  TransferId id(std::size_t task, OpId op, int leg = 0) const { return ids_.id(task, op, leg); }
  const Schedule& schedule(std::size_t task) const { return *played_[task].task.schedule; }
  const Op& op(std::size_t task, OpId op) const {
    const PlayedTask& p = played_[task];
    return p.quotient ? p.quotient->ops[op] : p.task.schedule->ops[op];
  }
  std::int64_t bytes(std::size_t task, OpId id) const {
    return played_[task].task.schedule->bytes(op(task, id));
  }
  PathId path(std::size_t task, OpId op) const { return played_[task].paths[op]; }
  NodeId gpu(std::size_t task, int rank) const { return played_[task].rank_gpu[rank]; }
  bool has_deps(std::size_t task, OpId op) const {
    const PlayedTask& p = played_[task];
    if (p.quotient) return p.quotient->dep_begin[op] != p.quotient->dep_begin[op + 1];
    return p.task.schedule->dep_begin[op] != p.task.schedule->dep_begin[op + 1];
  }
  const OpCosts& costs(std::size_t task) const { return state_[task].costs; }
  template <class F>
  void each_successor(std::size_t task, OpId id, F&& f) const {
    const State& st = state_[task];
    if (st.quotient) {
      const QuotientGraph& q = *st.quotient;
      for (std::uint32_t i = q.succ_begin[id]; i < q.succ_begin[id + 1]; ++i)
        f(q.succ[i].op, q.succ[i].only_sent);
      return;
    }
    const std::vector<Op>& ops = played_[task].task.schedule->ops;
    for (OpId next : st.graph->successors(id)) f(next, LazyOnlySent{ops[id], ops[next]});
  }
  template <class F>
  void last_successors(std::size_t task, OpId op, F&& f) const {
    each_successor(task, op, f);
  }
  void began(std::size_t task, OpId) {
    if (timing_[task].ops_start < 0) timing_[task].ops_start = engine_.now();
  }
  void sent(std::size_t, OpId) {}
  void finishing(std::size_t, OpId, OpPhase) {}
  PathId switch_route(std::size_t task, bool network, int rank, bool up) const {
    return up ? played_[task].up[network][rank] : played_[task].down[network][rank];
  }
  double switch_efficiency(std::size_t task, bool network, int rank) const {
    return played_[task].efficiency[network][rank];
  }
  std::uint16_t& legs_left(std::size_t task, OpId op) { return played_[task].legs_left[op]; }

  // The tasks of one schedule (or fold) share its graph, made when the first starts and
  // freed when the last ends (as Simulator keeps them).
  struct SharedGraph {
    std::unique_ptr<const ScheduleGraph> graph;
    std::unique_ptr<const QuotientGraph> quotient;
    std::size_t users = 0;  // tasks of it not yet done
  };
  static const void* graph_key(const PlayedTask& p) {
    return p.quotient ? static_cast<const void*>(p.quotient)
                      : static_cast<const void*>(p.task.schedule);
  }

  // --- the task runner's ---
  const std::string& task_name(std::size_t task) const { return played_[task].task.name; }
  TaskTiming& timing(std::size_t task) { return timing_[task]; }
  std::optional<Time> compute_time(std::size_t task) const {
    const CollectiveTask& t = played_[task].task;
    return t.is_compute() ? std::optional<Time>(t.duration) : std::nullopt;
  }
  std::size_t open_ops(std::size_t index, std::vector<std::uint32_t>& waiting) {
    const PlayedTask& p = played_[index];
    State& st = state_[index];
    SharedGraph& shared = graphs_.at(graph_key(p));
    if (p.quotient) {
      if (!shared.quotient) shared.quotient = std::make_unique<const QuotientGraph>(*p.quotient);
      st.quotient = shared.quotient.get();
      waiting = st.quotient->indegree;
    } else {
      if (!shared.graph) shared.graph = std::make_unique<const ScheduleGraph>(*p.task.schedule);
      st.graph = shared.graph.get();
      waiting = st.graph->indegree;
    }
    return size(p);
  }
  void close_ops(std::size_t index) {
    const auto it = graphs_.find(graph_key(played_[index]));
    if (--it->second.users == 0) graphs_.erase(it);
    state_[index].graph = nullptr;
    state_[index].quotient = nullptr;
  }

  std::vector<PlayedTask>& played_;
  std::vector<State> state_;
  std::vector<TaskTiming> timing_;
  std::unordered_map<const void*, SharedGraph> graphs_;
  TransferIds ids_;
};

// Why `kind` cannot play a fold of the step with these costs, or "".
std::string model_problem(NetworkModelKind kind, const PlannedStep& planned) {
  if (kind == NetworkModelKind::Packet)
    return "the packet model is folded by turns of one rank only";
  for (const PlannedCollective& c : planned.planned)
    if (std::string why = fold_model_problem(kind, c.cost.get()); !why.empty()) return why;
  return fold_model_problem(kind, nullptr);
}

// A fold by `group` replicas: which tasks play, each as what, over which links.
class StepFolder {
 public:
  StepFolder(const Scenario& scenario, Router& router, const StepGraph& graph,
             const PlannedStep& planned, const ReplicaTurn& turn, const TaskTurn& tasks, int group)
      : s_(scenario),
        topo_(scenario.topology),
        router_(router),
        g_(graph),
        planned_(planned),
        turn_(turn),
        tasks_(tasks),
        group_(group),
        turns_(turn.replicas / group) {}

  // Chooses the played tasks and checks the network; "" when the fold holds.
  std::string prepare() {
    rank_of_.assign(topo_.nodes().size(), -1);
    for (int r = 0; r < topo_.num_ranks(); ++r) rank_of_[topo_.gpu_of_rank(r)] = r;
    turned_rank_ = turn_.next;
    for (int k = 1; k < group_; ++k)
      for (int& r : turned_rank_)
        if (r >= 0) r = turn_.next[r];
    // Every rank's m-th turn, once: the network check asks for each pair's every turn.
    const std::size_t ranks = turned_rank_.size();
    rank_turns_.resize(static_cast<std::size_t>(turns_) * ranks);
    for (std::size_t r = 0; r < ranks; ++r) rank_turns_[r] = static_cast<int>(r);
    for (std::size_t m = 1; m < static_cast<std::size_t>(turns_); ++m)
      for (std::size_t r = 0; r < ranks; ++r) {
        const int before = rank_turns_[(m - 1) * ranks + r];
        rank_turns_[m * ranks + r] = before < 0 ? -1 : turned_rank_[before];
      }
    if (std::string why = choose_tasks(); !why.empty()) return why;
    std::vector<NodePair> pairs;
    if (std::string why = transfer_pairs(pairs); !why.empty()) return why;
    return fold_network(
        topo_, router_, pairs, turns_,
        [&](const NodePair& p, int m) {
          return NodePair{image(p.first, m), image(p.second, m)};
        },
        &fold_);
  }

  // Plays the chosen tasks, and gives every task, link and GPU its image's record.
  SimulationResult play(NetworkModel& model) {
    std::map<NodePair, PathId> stand_in;
    for (const auto& [pair, links] : fold_.routes)
      stand_in.emplace(pair, router_.add_stand_in(links));
    for (PlayedTask& p : played_) route(p, stand_in);
    FoldedStepSimulator sim(topo_, router_, model, played_);
    SimulationResult r = sim.run();
    return unfold(std::move(r));
  }

 private:
  // The played tasks: those of the first `group_` replicas and those across them all, in
  // the step's order; each other task's image among them (rep_).
  std::string choose_tasks() {
    const std::size_t n = g_.tasks.size();
    rep_.assign(n, -1);
    played_index_.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      const int replica = tasks_.replica[i];
      if (replica >= group_) continue;
      played_index_[i] = static_cast<std::int64_t>(played_.size());
      rep_[i] = static_cast<std::int64_t>(i);
      PlayedTask& p = played_.emplace_back();
      p.graph_task = i;
      p.task = collective_task(s_, g_.tasks[i], planned_, planned_.plan_of_task[i]);
      if (replica >= 0) {  // its turns by the group, one per turn
        std::int64_t j = static_cast<std::int64_t>(i);
        for (int m = 1; m < turns_; ++m) {
          for (int k = 0; k < group_; ++k) j = tasks_.image[j];
          if (rep_[j] >= 0)
            return fmt::format("task \"{}\" comes back to a played task in fewer than {} turns",
                               g_.tasks[i].name, turns_);
          rep_[j] = static_cast<std::int64_t>(i);
        }
      } else if (std::string why = fold_across(p); !why.empty()) {
        return why;
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      if (rep_[i] < 0)
        return fmt::format("task \"{}\" is no turn of a played one", g_.tasks[i].name);
    // What a played task waits on, each once: a stage's compute waits on every replica's
    // last exchange, turns of a few played ones.
    for (PlayedTask& p : played_) {
      for (std::int32_t before : g_.tasks[p.graph_task].after)
        p.after.push_back(static_cast<std::size_t>(played_index_[rep_[before]]));
      std::sort(p.after.begin(), p.after.end());
      p.after.erase(std::unique(p.after.begin(), p.after.end()), p.after.end());
    }
    // Every rank's counters are those of its turn in the first group.
    canonical_rank_.assign(turn_.next.size(), -1);
    for (int r = 0; r < static_cast<int>(turn_.next.size()); ++r) {
      if (turn_.replica[r] < 0 || turn_.replica[r] >= group_) continue;
      for (int j = r, m = 0; m < turns_; ++m, j = turned_rank_[j]) canonical_rank_[j] = r;
    }
    for (PlayedTask& p : played_) {
      for (int r : g_.tasks[p.graph_task].ranks) {
        p.route_gpu.push_back(topo_.gpu_of_rank(r));
        p.rank_gpu.push_back(topo_.gpu_of_rank(canonical_rank_[r]));
      }
    }
    return "";
  }

  // A collective across the replicas plays its representatives: folded by the rotation of
  // its ranks a turn of the group is. Turned by the group its list rotates by some `turn`
  // positions; the turns make up the rotations by multiples of gcd(turn, n) (a rank list
  // in a stride, as [0, 3, 6, 1, 4, 7, 2, 5], turns by 3 where a fold by 1 is the same
  // orbits), and they must be `turns_` distinct ones.
  std::string fold_across(PlayedTask& p) {
    if (p.task.is_compute()) return "";
    const StepTask& t = g_.tasks[p.graph_task];
    const int n = static_cast<int>(t.ranks.size());
    const int turn =
        static_cast<int>((static_cast<std::int64_t>(tasks_.rotation[p.graph_task]) * group_) % n);
    const int period = std::gcd(turn, n);
    if (turn == 0 || n / period != turns_)
      return fmt::format(
          "collective \"{}\": a turn of {} replicas is no turn of its ranks by a "
          "divisor of them",
          t.name, group_);
    // The fold read off its schedule checks its structure, not the order in which ops
    // that become ready at one instant reach a rank's overhead queue (symmetric.h): with a
    // per-op overhead, only an algorithm whose own fold is tested against its full run
    // (tests/test_symmetry.cpp) folds.
    const PlannedCollective& plan = planned_.planned[planned_.plan_of_task[p.graph_task]];
    const AlgorithmEntry* entry = find_algorithm(plan.spec.shape.op, plan.spec.algorithm);
    if ((!entry || !entry->quotient) && plan.cost && plan.cost->op_overhead > 0)
      return fmt::format(
          "collective \"{}\": {} has no fold of its own, and its ops pay an "
          "overhead in turn",
          t.name, plan.spec.algorithm);
    const Schedule& s = *p.task.schedule;
    auto& slot = quotients_[{&s, period}];
    if (!slot) {
      std::string why;
      auto q = own_fold(entry, plan, period, why);
      if (!q && why.empty()) q = fold_by_rotation(s, period, &why);
      if (!q)
        return fmt::format("collective \"{}\" does not fold by {} ranks: {}", t.name, period, why);
      slot = std::make_unique<QuotientSchedule>(std::move(*q));
    }
    p.quotient = slot.get();
    return "";
  }

  // The algorithm's own fold (AlgorithmEntry::quotient), widened to `period` ranks: made
  // without the full schedule, where fold_by_rotation reads and maps every op. A step's
  // all-reduce across 2,944 replicas has 24 million, and the fold was tried at every group
  // size: the default run took 50 s where the whole step streamed in 9. tests/test_symmetry
  // checks each own fold against fold_by_rotation. Where the algorithm has a fold of its own
  // and refuses this shape (chunks no turn below all the ranks maps onto chunks of their
  // sizes, or a fold too large to store), `why`
  // says so and nothing reads the full schedule; nullopt and no `why`: fold_by_rotation
  // decides.
  static std::optional<QuotientSchedule> own_fold(const AlgorithmEntry* entry,
                                                  const PlannedCollective& plan, int period,
                                                  std::string& why) {
    if (!entry || !entry->quotient) return std::nullopt;
    std::optional<QuotientSchedule> own = run_quotient(plan.spec, why);
    if (!own || period % own->period != 0) return std::nullopt;
    if (period == own->period) return own;
    return entry->fold_at(plan.spec.shape, plan.spec.options, *own, period);
  }

  NodeId image(NodeId node, int m) const {
    if (topo_.node(node).kind == NodeKind::Gpu)
      return topo_.gpu_of_rank(
          rank_turns_[static_cast<std::size_t>(m) * turned_rank_.size() + rank_of_[node]]);
    return switch_image_.at({node, m});
  }

  // Every (from, to) node pair the played ops send between, switch legs included.
  std::string transfer_pairs(std::vector<NodePair>& pairs) {
    std::unordered_set<std::uint64_t> seen;  // a step's millions of ops cross few pairs
    auto add_pair = [&](NodeId a, NodeId b) {
      if (seen.insert(static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint32_t>(b)).second)
        pairs.emplace_back(a, b);
    };
    for (PlayedTask& p : played_) {
      if (p.task.is_compute()) continue;
      const std::vector<NodeId>& gpu = p.route_gpu;
      auto add = [&](const Op& op) {
        if (!op.is_local() && !op.is_switch()) add_pair(gpu[op.src_rank], gpu[op.dst_rank]);
      };
      if (p.quotient)
        for (const Op& op : p.quotient->ops) add(op);
      else
        for (const Op& op : p.task.schedule->ops) add(op);
      if (p.quotient || !has_switch_ops(*p.task.schedule)) continue;
      if (std::string why = switches_of_ranks(p); !why.empty()) return why;
      for (const auto& pairs_of_kind : p.switch_pairs)
        for (const auto& [g, sw] : pairs_of_kind) {
          if (sw < 0) continue;
          add_pair(g, sw);
          add_pair(sw, g);
        }
    }
    std::sort(pairs.begin(), pairs.end());
    return "";
  }

  static bool has_switch_ops(const Schedule& s) {
    return std::any_of(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.is_switch(); });
  }

  // Each rank's GPU and the SHARP switch of its group (Simulator::prepare_switch_routes)
  // into p.switch_pairs, each switch's turns noted: they must be switches alike, one per
  // turn. Why not, where they are not (the step then runs whole, where the same is checked).
  std::string switches_of_ranks(PlayedTask& p) {
    const Schedule& s = *p.task.schedule;
    const SwitchUse use = switch_use(s);
    // The network's SHARP groups share out its switches and reduce in levels on the way up:
    // a turn of the ranks is not a turn of them. Such a step runs whole.
    if (use.kind[true])
      return fmt::format("task \"{}\": its SHARP groups in the network do not fold", p.task.name);
    if (use.most_legs > TransferIds::kMaxLegs || !s.switch_groups_tile(false))
      return fmt::format("task \"{}\": its switch groups do not tile its ranks", p.task.name);
    std::vector<NodePair>& pairs = p.switch_pairs[false];
    pairs.assign(static_cast<std::size_t>(s.shape.ranks), NodePair{-1, -1});
    const int n = s.switch_groups(false).size;
    for (int first : s.switch_group_firsts(false)) {
      std::vector<NodeId> gpus;
      for (int j = 0; j < n; ++j) gpus.push_back(p.route_gpu[s.switch_member(false, first, j)]);
      const auto sw = sharp_switch_of(topo_, gpus, SharpReach::NvLink);
      if (!sw) return fmt::format("task \"{}\": switch ops need a SHARP switch", p.task.name);
      for (int m = 1; m < turns_; ++m) {
        std::vector<NodeId> turned;
        for (NodeId g : gpus) turned.push_back(image(g, m));
        const auto tsw = sharp_switch_of(topo_, turned, SharpReach::NvLink);
        const auto [at, fresh] = switch_image_.emplace(std::pair{*sw, m}, tsw.value_or(-1));
        if (!tsw || at->second != *tsw ||
            topo_.node(*tsw).sharp_efficiency != topo_.node(*sw).sharp_efficiency)
          return fmt::format("the turns of {}'s GPUs are not on one switch alike each",
                             topo_.node(*sw).name);
      }
      for (int j = 0; j < n; ++j)
        pairs[static_cast<std::size_t>(s.switch_member(false, first, j))] = {gpus[j], *sw};
    }
    return "";
  }

  void route(PlayedTask& p, const std::map<NodePair, PathId>& stand_in) {
    if (p.task.is_compute()) return;
    const std::vector<NodeId>& gpu = p.route_gpu;
    auto path_of = [&](const Op& op) {
      return op.is_local() || op.is_switch() ? PathId{-1}
                                             : stand_in.at({gpu[op.src_rank], gpu[op.dst_rank]});
    };
    if (p.quotient) {
      for (const Op& op : p.quotient->ops) p.paths.push_back(path_of(op));
      return;
    }
    const Schedule& s = *p.task.schedule;
    for (const Op& op : s.ops) p.paths.push_back(path_of(op));
    if (!has_switch_ops(s)) return;
    for (int network = 0; network < 2; ++network)
      for (const auto& [g, sw] : p.switch_pairs[network]) {
        const bool none = sw < 0;  // a rank of no group of this kind
        p.up[network].push_back(none ? PathId{-1} : stand_in.at({g, sw}));
        p.down[network].push_back(none ? PathId{-1} : stand_in.at({sw, g}));
        p.efficiency[network].push_back(none ? 1.0 : topo_.node(sw).sharp_efficiency);
      }
    p.legs_left.assign(s.size(), 0);
  }

  SimulationResult unfold(SimulationResult played) {
    SimulationResult r;
    r.tasks.resize(g_.tasks.size());
    for (std::size_t i = 0; i < g_.tasks.size(); ++i)
      r.tasks[i] = played.tasks[static_cast<std::size_t>(played_index_[rep_[i]])];
    r.links = std::move(played.links);
    for (const std::vector<LinkId>& links : fold_.members)
      for (LinkId l : links)
        if (l != fold_.canonical[l]) r.links.copy_link(fold_.canonical[l], l);
    r.node_sent = std::move(played.node_sent);
    r.node_received = std::move(played.node_received);
    for (int rank = 0; rank < static_cast<int>(canonical_rank_.size()); ++rank) {
      const int c = canonical_rank_[rank];
      if (c < 0 || c == rank) continue;
      const NodeId to = topo_.gpu_of_rank(rank), from = topo_.gpu_of_rank(c);
      r.node_sent[to] = r.node_sent[from];
      r.node_received[to] = r.node_received[from];
    }
    r.transfers = played.transfers * static_cast<std::uint64_t>(turns_);
    r.events = played.events;
    return r;
  }

  const Scenario& s_;
  const Topology& topo_;
  Router& router_;
  const StepGraph& g_;
  const PlannedStep& planned_;
  const ReplicaTurn& turn_;
  const TaskTurn& tasks_;
  int group_, turns_;
  std::vector<int> turned_rank_;     // by rank: its work's rank one turn of the group on
  std::vector<int> rank_turns_;      // [m * ranks + r]: rank r turned m times; -1: not the job's
  std::vector<int> canonical_rank_;  // by rank: its turn in the first group; -1: not the job's
  std::vector<std::int64_t> rep_;    // per task: the played task it is a turn of
  std::vector<std::int64_t> played_index_;  // per task: its index among the played; -1
  std::vector<PlayedTask> played_;
  std::map<std::pair<const Schedule*, int>, std::unique_ptr<QuotientSchedule>> quotients_;
  std::map<std::pair<NodeId, int>, NodeId> switch_image_;
  std::vector<int> rank_of_;  // by GPU node: its topology rank
  NetworkFold fold_;
};

}  // namespace

std::optional<FoldedStep> simulate_step_folded(const Scenario& scenario, const StepGraph& graph,
                                               const ReplicaTurn& turn, std::string& why,
                                               PlannedStep* planned_out) {
  if (turn.replicas < 2) {
    why =
        "the job has no replicas to turn (one replica, a Chakra trace, or expert or "
        "context parallelism)";
    return std::nullopt;
  }
  Router router(scenario.topology, scenario.network.routing);
  if (why = turn_problem(turn); !why.empty()) return std::nullopt;
  if (why = graph_problem(graph); !why.empty()) return std::nullopt;
  PlannedStep planned = plan_step(scenario, router, graph, /*tasks=*/false);
  const auto unfolded = [&] {  // the plan goes to the whole run
    if (planned_out) *planned_out = std::move(planned);
    return std::nullopt;
  };
  if (why = model_problem(scenario.network.model, planned); !why.empty()) return unfolded();
  TaskTurn tasks;
  if (why = turn_tasks(graph, planned, turn, tasks); !why.empty()) return unfolded();
  std::string wider;
  for (int group = 1; group <= turn.replicas / 2; ++group) {
    if (turn.replicas % group != 0) continue;
    StepFolder folder(scenario, router, graph, planned, turn, tasks, group);
    std::string problem = folder.prepare();
    if (problem.empty()) {
      auto model = make_network_model(scenario.network, scenario.topology, router);
      FoldedStep out;
      out.result = step_result(planned, folder.play(*model));
      out.replicas = turn.replicas;
      out.played = group;
      return out;
    }
    if (group == 1)
      why = problem;
    else
      wider = fmt::format("{} replicas: {}", group, problem);
  }
  if (!wider.empty()) why += "; nor a turn of " + wider;
  return unfolded();
}

}  // namespace collsim
