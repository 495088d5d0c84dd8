#include "simulate/simulator.h"

#include <algorithm>
#include <stdexcept>

namespace collsim {
namespace {

enum EventTag : std::uint32_t { kTaskStart, kTaskLaunched, kNetworkWakeup, kOpReady, kLocalOpDone };

// A transfer id carries its task in the high bits, so no lookup is needed.
constexpr int kOpBits = 40;
TransferId transfer_id(std::size_t task, OpId op) {
  return (static_cast<TransferId>(task) << kOpBits) | op;
}
std::size_t task_of(TransferId id) {
  return static_cast<std::size_t>(id >> kOpBits);
}
OpId op_of(TransferId id) {
  return static_cast<OpId>(id & ((TransferId{1} << kOpBits) - 1));
}

}  // namespace

struct Simulator::TaskState {
  ScheduleGraph graph;
  std::vector<std::uint32_t> waiting;  // per op: dependencies not yet done
  std::size_t ops_left = 0;
  std::size_t prerequisites_left = 0;
  std::vector<std::size_t> dependents;  // tasks waiting on this one
  const CostModel* cost = nullptr;      // null: plain α-β, the fast path
  const SizeCurve* reduce = nullptr;    // the cost of this collective's reductions
  const SizeCurve* reduce_memory = nullptr;  // the host memory as they see it

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
  finish_op(task_of(id), op_of(id));
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
  for (OpId id = 0; id < s.size(); ++id) {
    const Op& op = s.ops[id];
    if (op.is_local()) continue;
    path[id] = lookup(op);
    if (path[id] < 0) missing.emplace_back(task.rank_gpu[op.src_rank], task.rank_gpu[op.dst_rank]);
  }
  if (!missing.empty()) {
    router_.prepare(missing);
    for (OpId id = 0; id < s.size(); ++id)
      if (!s.ops[id].is_local() && path[id] < 0) path[id] = lookup(s.ops[id]);
  }
  if (task.cost && !task.cost->trivial()) {
    st.cost = task.cost.get();
    st.reduce = st.cost->reduce_rate(name_of(s.shape.dtype), name_of(s.shape.reduce_op));
    st.reduce_memory =
        st.cost->memory_for_reduce(name_of(s.shape.dtype), name_of(s.shape.reduce_op));
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
  rank_busy_until_.assign(topology_.nodes().size(), 0);
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
      case kTaskLaunched:
        start_ready_ops(static_cast<std::size_t>(e.id));
        break;
      case kOpReady:
        begin_op(task_of(e.id), op_of(e.id));
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
  // The launch is part of the collective's time: its ops wait for it.
  if (st.cost && st.cost->launch > 0)
    return engine_.schedule(add_time(engine_.now(), st.cost->launch), kTaskLaunched, index);
  start_ready_ops(index);
}

void Simulator::start_ready_ops(std::size_t index) {
  TaskState& st = state_[index];
  for (OpId id = 0; id < st.waiting.size(); ++id)
    if (st.waiting[id] == 0) start_op(index, id);
}

void Simulator::start_op(std::size_t task, OpId id) {
  if (options_.record_ops) result_.tasks[task].ops[id].start = engine_.now();
  const CostModel* cost = state_[task].cost;
  const CollectiveTask& t = (*tasks_)[task];
  // The overhead is the wake-up after a dependency: ops that wait on none start with
  // the collective (its launch covers them), as a real run's first ops do.
  const Schedule& s = *t.schedule;
  if (!cost || cost->op_overhead == 0 || s.dep_begin[id] == s.dep_begin[id + 1])
    return begin_op(task, id);
  // The rank that completes the op (the receiver: it waits, wakes and reduces) handles
  // one op's overhead at a time, so a step's ops on one rank queue behind each other.
  Time& busy = rank_busy_until_[t.rank_gpu[t.schedule->ops[id].dst_rank]];
  busy = add_time(std::max(busy, engine_.now()), cost->op_overhead);
  engine_.schedule(busy, kOpReady, transfer_id(task, id));
}

void Simulator::begin_op(std::size_t task, OpId id) {
  const CollectiveTask& t = (*tasks_)[task];
  const TaskState& st = state_[task];
  const Op& op = t.schedule->ops[id];
  const std::int64_t bytes = t.schedule->bytes(op);
  const SizeCurve* reduce = op.kind == OpKind::Reduce ? st.reduce : nullptr;
  if (op.is_local()) {
    const Time took = st.cost ? local_op_time(*st.cost, bytes, reduce) : 0;
    engine_.schedule(add_time(engine_.now(), took), kLocalOpDone, transfer_id(task, id));
    return;
  }
  result_.node_sent[t.rank_gpu[op.src_rank]] += bytes;
  ++result_.transfers;
  const PathId path = result_.tasks[task].paths[id];
  const TransferCost cost =
      st.cost ? transfer_cost(*st.cost, topology_, router_.links(path), bytes, reduce,
                              op.kind == OpKind::Reduce ? st.reduce_memory : nullptr)
              : TransferCost{};
  model_.start_transfer(*this, transfer_id(task, id), path, bytes, cost);
}

void Simulator::finish_op(std::size_t task, OpId id) {
  const CollectiveTask& t = (*tasks_)[task];
  const Op& op = t.schedule->ops[id];
  if (options_.record_ops) result_.tasks[task].ops[id].end = engine_.now();
  if (!op.is_local()) result_.node_received[t.rank_gpu[op.dst_rank]] += t.schedule->bytes(op);
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
