#include "simulate/simulator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace collsim {
namespace {

enum EventTag : std::uint32_t { kTaskStart, kNetworkWakeup, kLocalOpDone };

// A transfer id carries its task in the high bits, so no lookup is needed; between
// them and the op, a switch op's leg (which rank's link it crosses).
constexpr int kOpBits = 40;
constexpr int kMaxLegs = 1 << (kOpBits - 32);
TransferId transfer_id(std::size_t task, OpId op, int leg = 0) {
  return (static_cast<TransferId>(task) << kOpBits) | (static_cast<TransferId>(leg) << 32) | op;
}
std::size_t task_of(TransferId id) {
  return static_cast<std::size_t>(id >> kOpBits);
}
OpId op_of(TransferId id) {
  return static_cast<OpId>(id & 0xffffffffu);
}
int leg_of(TransferId id) {
  return static_cast<int>((id >> 32) & (kMaxLegs - 1));
}

}  // namespace

struct Simulator::TaskState {
  ScheduleGraph graph;
  std::vector<std::uint32_t> waiting;  // per op: dependencies not yet done
  std::size_t ops_left = 0;
  std::size_t prerequisites_left = 0;
  std::vector<std::size_t> dependents;  // tasks waiting on this one
  // Switch ops (NVLS): per rank, the route up to the task's SHARP switch and back down;
  // per op, legs still in flight.
  std::vector<PathId> up, down;
  std::vector<std::uint16_t> legs_left;

  explicit TaskState(const Schedule& s) : graph(s) {}
};

Simulator::Simulator(const Topology& topology, Router& router, NetworkModel& model,
                     SimulationOptions options)
    : topology_(topology), router_(router), model_(model), options_(options) {}

Simulator::~Simulator() = default;

void Simulator::schedule_wakeup(Time at, std::uint64_t cookie) {
  engine_.schedule(at, kNetworkWakeup, cookie);
}

void Simulator::transfer_finished(TransferId id) {
  const std::size_t task = task_of(id);
  const OpId op = op_of(id);
  const Op& o = (*tasks_)[task].schedule->ops[op];
  if (o.is_switch()) {
    // The reduce's legs carry each rank's range up; the multicast's carry the result down.
    const int leg = leg_of(id);
    const NodeId gpu = (*tasks_)[task].rank_gpu[leg];
    if (o.kind == OpKind::Multicast)
      result_.node_received[gpu] += (*tasks_)[task].schedule->bytes(o);
    if (--state_[task].legs_left[op] > 0) return;
  }
  finish_op(task, op);
}

void Simulator::prepare_task(std::size_t index) {
  const CollectiveTask& task = (*tasks_)[index];
  const Schedule& s = *task.schedule;
  if (static_cast<int>(task.rank_gpu.size()) != s.shape.ranks)
    throw std::invalid_argument("task \"" + task.name +
                                "\": rank placement does not match the schedule");
  TaskState& st = state_.emplace_back(s);
  // Each op's route goes straight into the record, which the run reads as well.
  std::vector<PathId>& path = result_.tasks[index].paths;
  // Most ops reuse a route, and a rank mostly talks to the peer it talked to last:
  // a one-entry memo per source rank answers those without hashing. New pairs are
  // searched together, grouped by source.
  path.assign(s.size(), -1);
  std::vector<int> memo_dst(s.shape.ranks, -1);
  std::vector<PathId> memo_path(s.shape.ranks, -1);
  std::vector<std::pair<NodeId, NodeId>> missing;
  auto lookup = [&](const Op& op) {
    if (memo_dst[op.src_rank] == op.dst_rank) return memo_path[op.src_rank];
    const PathId p = router_.cached(task.rank_gpu[op.src_rank], task.rank_gpu[op.dst_rank]);
    if (p >= 0) {
      memo_dst[op.src_rank] = op.dst_rank;
      memo_path[op.src_rank] = p;
    }
    return p;
  };
  bool any_switch = false;
  for (OpId id = 0; id < s.size(); ++id) {
    const Op& op = s.ops[id];
    any_switch = any_switch || op.is_switch();
    if (op.is_local() || op.is_switch()) continue;  // switch ops: routes per rank below
    path[id] = lookup(op);
    if (path[id] < 0) missing.emplace_back(task.rank_gpu[op.src_rank], task.rank_gpu[op.dst_rank]);
  }
  if (!missing.empty()) {
    router_.prepare(missing);
    for (OpId id = 0; id < s.size(); ++id)
      if (!s.ops[id].is_local() && !s.ops[id].is_switch() && path[id] < 0)
        path[id] = lookup(s.ops[id]);
  }
  if (any_switch) {
    const auto sw = sharp_switch_of(topology_, task.rank_gpu);
    if (!sw)
      throw std::invalid_argument("task \"" + task.name +
                                  "\": switch ops need every GPU on one \"sharp\" NVSwitch");
    if (s.shape.ranks > kMaxLegs)
      throw std::invalid_argument("task \"" + task.name + "\": switch ops span at most " +
                                  std::to_string(kMaxLegs) + " ranks");
    for (NodeId g : task.rank_gpu) {
      st.up.push_back(router_.route(g, *sw));
      st.down.push_back(router_.route(*sw, g));
    }
    st.legs_left.assign(s.size(), 0);
  }
  st.waiting = std::move(st.graph.indegree);  // the graph's copy is not needed again
  st.ops_left = s.size();
  if (options_.record_ops) result_.tasks[index].ops.assign(s.size(), OpTiming{-1, -1});
}

SimulationResult Simulator::run(const std::vector<CollectiveTask>& tasks) {
  load(tasks);
  return run_loaded();
}

void Simulator::load(const std::vector<CollectiveTask>& tasks) {
  tasks_ = &tasks;
  result_ = SimulationResult{};
  result_.tasks.resize(tasks.size());
  result_.links.resize(topology_.links().size());
  result_.node_sent.assign(topology_.nodes().size(), 0);
  result_.node_received.assign(topology_.nodes().size(), 0);
  state_.clear();
  state_.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) prepare_task(i);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    for (int before : tasks[i].after) {
      if (before < 0 || static_cast<std::size_t>(before) >= i)
        throw std::invalid_argument("task \"" + tasks[i].name +
                                    "\" may only wait on earlier tasks");
      state_[before].dependents.push_back(i);
    }
    state_[i].prerequisites_left = tasks[i].after.size();
    if (tasks[i].after.empty()) engine_.schedule(0, kTaskStart, i);
  }
}

SimulationResult Simulator::run_loaded() {
  const auto& tasks = *tasks_;
  engine_.run([this](const Event& e) {
    switch (e.tag) {
      case kTaskStart:
        start_task(static_cast<std::size_t>(e.id));
        break;
      case kNetworkWakeup:
        model_.wakeup(*this, e.id);
        break;
      case kLocalOpDone:
        finish_op(task_of(e.id), op_of(e.id));
        break;
    }
  });
  result_.events = engine_.events_processed();
  record_routes();
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (result_.tasks[i].end < 0)
      throw std::logic_error("task \"" + tasks[i].name + "\" never finished (dependency cycle?)");
  tasks_ = nullptr;
  return std::move(result_);
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
    routes.first.push_back(static_cast<std::uint32_t>(routes.links.size()));
  }
}

void Simulator::start_task(std::size_t index) {
  result_.tasks[index].start = engine_.now();
  TaskState& st = state_[index];
  if (st.ops_left == 0) return finish_task(index);
  for (OpId id = 0; id < st.waiting.size(); ++id)
    if (st.waiting[id] == 0) start_op(index, id);
}

void Simulator::start_op(std::size_t task, OpId id) {
  const CollectiveTask& t = (*tasks_)[task];
  const Op& op = t.schedule->ops[id];
  if (options_.record_ops) result_.tasks[task].ops[id].start = engine_.now();
  if (op.is_local()) {
    engine_.schedule(engine_.now(), kLocalOpDone, transfer_id(task, id));
    return;
  }
  const std::int64_t bytes = t.schedule->bytes(op);
  if (op.is_switch()) {
    // One transfer per rank's link: the switch fans in (reduce) or out (multicast).
    TaskState& st = state_[task];
    const int K = t.schedule->shape.ranks;
    st.legs_left[id] = static_cast<std::uint16_t>(K);
    for (int r = 0; r < K; ++r) {
      if (op.kind == OpKind::SwitchReduce) result_.node_sent[t.rank_gpu[r]] += bytes;
      ++result_.transfers;
      const PathId p = op.kind == OpKind::SwitchReduce ? st.up[r] : st.down[r];
      model_.start_transfer(*this, transfer_id(task, id, r), p, bytes);
    }
    return;
  }
  result_.node_sent[t.rank_gpu[op.src_rank]] += bytes;
  ++result_.transfers;
  model_.start_transfer(*this, transfer_id(task, id), result_.tasks[task].paths[id], bytes);
}

void Simulator::finish_op(std::size_t task, OpId id) {
  const CollectiveTask& t = (*tasks_)[task];
  const Op& op = t.schedule->ops[id];
  if (options_.record_ops) result_.tasks[task].ops[id].end = engine_.now();
  if (!op.is_local() && !op.is_switch())
    result_.node_received[t.rank_gpu[op.dst_rank]] += t.schedule->bytes(op);
  TaskState& st = state_[task];
  for (OpId next : st.graph.successors(id))
    if (--st.waiting[next] == 0) start_op(task, next);
  if (--st.ops_left == 0) finish_task(task);
}

void Simulator::finish_task(std::size_t index) {
  result_.tasks[index].end = engine_.now();
  for (std::size_t dep : state_[index].dependents)
    if (--state_[dep].prerequisites_left == 0) engine_.schedule(engine_.now(), kTaskStart, dep);
}

}  // namespace collsim
