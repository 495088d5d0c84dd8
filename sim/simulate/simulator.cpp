#include "simulate/simulator.h"

#include "core/interrupt.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace collsim {
namespace {

constexpr int kMaxLegs = TransferIds::kMaxLegs;

}  // namespace

struct Simulator::TaskState {
  const ScheduleGraph* graph = nullptr;  // while it runs; null for compute tasks
  OpCosts costs;                         // none: plain α-β, the fast path
  // Switch ops: per kind of switch (NVSwitch, network: Schedule::in_network) and rank, the
  // route up to its group's SHARP switch and back down, and that switch's efficiency; per
  // op, legs still in flight. Apart, made only for a schedule with switch ops: a step's
  // millions of tasks have none.
  struct SwitchRoutes {
    std::vector<PathId> up[2], down[2];
    std::vector<double> efficiency[2];
    std::vector<std::uint16_t> legs_left;
  };
  std::unique_ptr<SwitchRoutes> switches;
};

Simulator::Simulator(const Topology& topology, Router& router, NetworkModel& model,
                     SimulationOptions options)
    : TaskRunner(topology, router, model), options_(options) {}

Simulator::~Simulator() = default;

const OpCosts& Simulator::costs(std::size_t task) const {
  return state_[task].costs;
}

template <class F>
void Simulator::each_successor(std::size_t task, OpId op, F&& f) const {
  const std::vector<Op>& ops = schedule(task).ops;
  for (OpId next : state_[task].graph->successors(op)) f(next, LazyOnlySent{ops[op], ops[next]});
}

PathId Simulator::switch_route(std::size_t task, bool network, int rank, bool up) const {
  const TaskState::SwitchRoutes& sw = *state_[task].switches;
  return up ? sw.up[network][rank] : sw.down[network][rank];
}

double Simulator::switch_efficiency(std::size_t task, bool network, int rank) const {
  return state_[task].switches->efficiency[network][rank];
}

std::uint16_t& Simulator::legs_left(std::size_t task, OpId op) {
  return state_[task].switches->legs_left[op];
}

bool Simulator::route_ops(const CollectiveTask& task, std::vector<PathId>& path) {
  const Schedule& s = *task.schedule;
  // Most ops reuse a route, and a rank mostly talks to the peer it talked to last:
  // a one-entry memo per source rank answers those without hashing. New pairs are
  // searched together, grouped by source.
  path.assign(s.size(), -1);
  std::vector<int>& memo_dst = scratch_.memo_dst;  // reused: a task per collective adds up
  std::vector<PathId>& memo_path = scratch_.memo_path;
  std::vector<std::pair<NodeId, NodeId>>& missing = scratch_.missing;
  memo_dst.assign(s.shape.ranks, -1);
  memo_path.assign(s.shape.ranks, -1);
  missing.clear();
  auto lookup = [&](const Op& op) {
    if (memo_dst[op.src_rank] == op.dst_rank) return memo_path[op.src_rank];
    const PathId p = router_.cached(task.rank_gpu[op.src_rank], task.rank_gpu[op.dst_rank]);
    memo_dst[op.src_rank] = op.dst_rank;
    memo_path[op.src_rank] = p;  // -1: not routed yet
    return p;
  };
  bool any_switch = false;
  for (OpId id = 0; id < s.size(); ++id) {
    if ((id & 0xffff) == 0) poll_interrupt();  // seconds at millions of ops
    const Op& op = s.ops[id];
    any_switch = any_switch || op.is_switch();
    if (op.is_local() || op.is_switch()) continue;            // switch ops: routes per rank below
    const bool asked = memo_dst[op.src_rank] == op.dst_rank;  // a miss is listed once
    path[id] = lookup(op);
    if (path[id] < 0 && !asked)
      missing.emplace_back(task.rank_gpu[op.src_rank], task.rank_gpu[op.dst_rank]);
  }
  if (!missing.empty()) {
    router_.prepare(missing);
    std::fill(memo_dst.begin(), memo_dst.end(), -1);
    for (OpId id = 0; id < s.size(); ++id)
      if (!s.ops[id].is_local() && !s.ops[id].is_switch() && path[id] < 0)
        path[id] = lookup(s.ops[id]);
  }
  return any_switch;
}

void Simulator::prepare_task(std::size_t index) {
  const CollectiveTask& task = (*tasks_)[index];
  if (task.is_compute()) {
    if (task.duration < 0)
      throw std::invalid_argument("task \"" + task.name + "\": negative compute time");
    state_.emplace_back();
    return;
  }
  const Schedule& s = *task.schedule;
  if (static_cast<int>(task.rank_gpu.size()) != s.shape.ranks)
    throw std::invalid_argument("task \"" + task.name +
                                "\": rank placement does not match the schedule");
  TaskState& st = state_.emplace_back();
  ++graphs_[&s].users;
  // Each op's route goes straight into the record, which the run reads as well; without
  // keep_routes, only while the task runs (routed here all the same, so an unreachable
  // pair fails before any time passes, and the router keeps the routes for its start).
  std::vector<PathId>& path =
      options_.keep_routes ? result_.tasks[index].paths : scratch_.discarded_paths;
  const bool any_switch = route_ops(task, path);
  if (any_switch) prepare_switch_routes(index, st);
  st.costs = OpCosts(task.cost.get(), s.shape);
  if (options_.record_ops) result_.tasks[index].ops.assign(s.size(), OpTiming{-1, -1});
}

// Each switch group's GPUs and the SHARP switch of its kind they share: the routes of every
// rank up to it and back, and its efficiency.
void Simulator::prepare_switch_routes(std::size_t index, TaskState& st) {
  const CollectiveTask& task = (*tasks_)[index];
  const Schedule& s = *task.schedule;
  const SwitchUse use = switch_use(s);
  if (use.most_legs > kMaxLegs)
    throw std::invalid_argument("task \"" + task.name + "\": switch ops have at most " +
                                std::to_string(kMaxLegs) + " legs");
  st.switches = std::make_unique<TaskState::SwitchRoutes>();
  TaskState::SwitchRoutes& routes = *st.switches;
  const auto K = static_cast<std::size_t>(s.shape.ranks);
  for (bool network : {false, true}) {
    if (!use.kind[network]) continue;
    const auto [n, stride] = s.switch_groups(network);
    if (!s.switch_groups_tile(network))
      throw std::invalid_argument("task \"" + task.name + "\": switch groups of " +
                                  std::to_string(n) + " ranks do not tile its " +
                                  std::to_string(s.shape.ranks));
    routes.up[network].assign(K, PathId{-1});
    routes.down[network].assign(K, PathId{-1});
    routes.efficiency[network].assign(K, 1.0);
    for (int first : s.switch_group_firsts(network)) {
      std::vector<int> members;
      std::vector<NodeId> gpus;
      for (int j = 0; j < n; ++j) {
        members.push_back(s.switch_member(network, first, j));
        gpus.push_back(task.rank_gpu[members.back()]);
      }
      // The rails' groups share out the network switches as near as each other.
      const auto group = sharp_group(topology_, router_, gpus, sharp_reach(network),
                                     s.switch_group_index(network, first));
      if (!group)
        throw std::invalid_argument(
            "task \"" + task.name + "\": switch ops need ranks " + std::to_string(members.front()) +
            (stride > 1 ? ", " + std::to_string(members.front() + stride) + ", .. " : "..") +
            std::to_string(members.back()) +
            (network ? " under one network switch" : " on one NVSwitch") + " with \"sharp\": true");
      for (std::size_t j = 0; j < members.size(); ++j) {
        const auto r = static_cast<std::size_t>(members[j]);
        routes.up[network][r] = router_.route(gpus[j], group->ends[j]);
        routes.down[network][r] = router_.route(group->ends[j], gpus[j]);
        routes.efficiency[network][r] = topology_.node(group->root).sharp_efficiency;
      }
    }
  }
  routes.legs_left.assign(s.size(), 0);
}

SimulationResult Simulator::run(const std::vector<CollectiveTask>& tasks) {
  load(tasks);
  return run_loaded();
}

void Simulator::load(const std::vector<CollectiveTask>& tasks) {
  tasks_ = &tasks;
  result_ = SimulationResult{};
  result_.tasks.resize(tasks.size());
  reset();
  reset_tasks(tasks.size());
  state_.clear();
  state_.reserve(tasks.size());
  graphs_.clear();
  std::vector<std::size_t> ops_per_task;
  for (const CollectiveTask& t : tasks)
    ops_per_task.push_back(t.is_compute() ? 0 : t.schedule->size());
  ids_.assign(ops_per_task);
  for (std::size_t i = 0; i < tasks.size(); ++i) prepare_task(i);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    for (int before : tasks[i].after)
      if (before < 0 || static_cast<std::size_t>(before) >= i)
        throw std::invalid_argument("task \"" + tasks[i].name +
                                    "\" may only wait on earlier tasks");
    add_task(i, tasks[i].after);
  }
}

SimulationResult Simulator::run_loaded() {
  if (options_.record_ops) model_.keep_link_rates();
  play_tasks();
  result_.link_rates = model_.take_link_rates();
  result_.events = engine_.events_processed();
  result_.links = std::move(traffic_.links);
  result_.node_sent = std::move(traffic_.node_sent);
  result_.node_received = std::move(traffic_.node_received);
  result_.transfers = traffic_.transfers;
  record_routes();
  tasks_ = nullptr;
  return std::move(result_);
}

// Successors only while the task runs: a run of a million collectives one after another
// holds one graph at a time, not a million. Tasks of one schedule share its graph.
std::size_t Simulator::open_ops(std::size_t index, std::vector<std::uint32_t>& waiting) {
  const CollectiveTask& task = (*tasks_)[index];
  auto& slot = graphs_[task.schedule].graph;
  if (!slot) slot = std::make_unique<const ScheduleGraph>(*task.schedule);
  state_[index].graph = slot.get();
  waiting = slot->indegree;
  if (!options_.keep_routes) route_ops(task, result_.tasks[index].paths);
  return task.schedule->size();
}

// The last task of a schedule frees its graph.
void Simulator::close_ops(std::size_t index) {
  state_[index].graph = nullptr;
  const auto it = graphs_.find((*tasks_)[index].schedule);
  if (--it->second.users == 0) graphs_.erase(it);
  if (!options_.keep_routes) std::vector<PathId>().swap(result_.tasks[index].paths);
}

void Simulator::record_routes() {
  // Path ids are dense from 0; the table holds every id up to the highest any op uses.
  PathId most = -1;
  for (const TaskTiming& t : result_.tasks)
    for (PathId p : t.paths) most = std::max(most, p);
  RouteTable& routes = result_.routes;
  routes.first.assign(1, 0);
  routes.first.reserve(static_cast<std::size_t>(most) + 2);
  for (PathId p = 0; p <= most; ++p) {
    const auto links = router_.links(p);
    routes.links.insert(routes.links.end(), links.begin(), links.end());
    routes.first.push_back(routes.links.size());
  }
}

}  // namespace collsim
