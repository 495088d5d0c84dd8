#pragma once
// Plays schedules over a network model: an op starts when its dependencies are
// done, the model says when its bytes have arrived, and the recorder keeps what
// happened. Several collectives can run at once ("after" relations decide when
// each starts), so independent collectives share — and contend for — the network.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "network/network_model.h"
#include "schedule/schedule.h"
#include "simulate/executor.h"
#include "simulate/task_runner.h"
#include "simulate/transfer_ids.h"

namespace collsim {

// A collective, or (no schedule) a compute task: `duration` on the GPUs of rank_gpu,
// which moves no bytes and takes no link.
struct CollectiveTask {
  std::string name;
  const Schedule* schedule = nullptr;
  std::vector<NodeId> rank_gpu;  // the schedule's rank r runs on GPU node rank_gpu[r]
  std::vector<int> after;        // tasks that must finish before this one starts
  // Costs beyond the links' α-β (launch, per-op overhead, size-dependent bandwidth,
  // reductions); null: none.
  std::shared_ptr<const CostModel> cost;
  Time duration = 0;  // compute tasks only

  bool is_compute() const { return schedule == nullptr; }
};

// The record of one task: when it and (with record_ops) each op ran, and the route
// each op took, so reports read what happened instead of routing again.
struct TaskTiming {
  Time start = -1;
  Time end = -1;
  Time ops_start = -1;        // when its first op began (-1: it has none)
  Time ops_end = -1;          // when its last op ended: before `end` when a least duration held it
  std::vector<OpTiming> ops;  // filled when SimulationOptions::record_ops
  std::vector<PathId> paths;  // per op: its route in SimulationResult::routes; -1 for local
                              // ops (empty after the run without keep_routes)
};

// The links of every route the ops took, by PathId: copied from the router once per
// run (one entry per distinct route, not per op), so the record outlives the router.
struct RouteTable {
  std::vector<std::uint64_t> first{0};  // route p's links are links[first[p], first[p + 1])
  std::vector<LinkId> links;

  std::size_t size() const { return first.size() - 1; }
  std::span<const LinkId> operator[](PathId p) const {
    return {links.data() + first[p], first[p + 1] - first[p]};
  }
};

struct SimulationOptions {
  bool record_ops = true;  // per-op start/end: the timeline; costs 16 bytes per op
  // Per-op routes in the record (TaskTiming::paths, SimulationResult::routes), which the
  // traffic reports read; without, a task holds its routes only while it runs (4 bytes
  // an op: a training step's thousands of 128-rank rings would hold a GB).
  bool keep_routes = true;
};

struct SimulationResult {
  std::vector<TaskTiming> tasks;
  RouteTable routes;
  LinkCounters links;
  // Each link's rate at every change (NetworkModel::keep_link_rates), where the model keeps
  // them and ops were recorded; empty otherwise.
  std::vector<std::vector<RatePoint>> link_rates;
  std::vector<std::int64_t> node_sent;      // per topology node
  std::vector<std::int64_t> node_received;  // per topology node
  std::uint64_t events = 0;
  std::uint64_t transfers = 0;
};

// The stored source of the one executor (executor.h): every task's schedule is whole
// before the run, each op's dependency count and successors come from its graph.
class Simulator final : private TaskRunner<Simulator> {
 public:
  Simulator(const Topology& topology, Router& router, NetworkModel& model,
            SimulationOptions options = {});
  ~Simulator();
  // Routes every transfer first, so an unreachable pair fails before any time passes.
  SimulationResult run(const std::vector<CollectiveTask>& tasks);
  // run() in two halves, for benchmarks that time them apart: load() routes and
  // indexes every task (the tasks must outlive run_loaded()), run_loaded() plays them.
  void load(const std::vector<CollectiveTask>& tasks);
  SimulationResult run_loaded();

 private:
  friend class Executor<Simulator>;
  friend class TaskRunner<Simulator>;
  struct TaskState;

  // --- the source, as the executor reads it ---
  static constexpr bool kSwitchOps = true;
  TransferIds::Decoded decode(TransferId id) const { return ids_.decode(id); }
  TransferId id(std::size_t task, OpId op, int leg = 0) const { return ids_.id(task, op, leg); }
  const Schedule& schedule(std::size_t task) const { return *(*tasks_)[task].schedule; }
  const Op& op(std::size_t task, OpId op) const { return schedule(task).ops[op]; }
  std::int64_t bytes(std::size_t task, OpId op) const {
    return schedule(task).bytes(schedule(task).ops[op]);
  }
  PathId path(std::size_t task, OpId op) const { return result_.tasks[task].paths[op]; }
  NodeId gpu(std::size_t task, int rank) const { return (*tasks_)[task].rank_gpu[rank]; }
  bool has_deps(std::size_t task, OpId op) const {
    const Schedule& s = schedule(task);
    return s.dep_begin[op] != s.dep_begin[op + 1];
  }
  const OpCosts& costs(std::size_t task) const;
  template <class F>
  void each_successor(std::size_t task, OpId op, F&& f) const;
  template <class F>
  void last_successors(std::size_t task, OpId op, F&& f) const {
    each_successor(task, op, f);
  }
  void began(std::size_t task, OpId op) {
    TaskTiming& timing = result_.tasks[task];
    if (timing.ops_start < 0) timing.ops_start = engine_.now();
    if (options_.record_ops) timing.ops[op].start = engine_.now();
  }
  void sent(std::size_t, OpId) {}
  void finishing(std::size_t task, OpId op, OpPhase) {
    if (options_.record_ops) result_.tasks[task].ops[op].end = engine_.now();
  }
  PathId switch_route(std::size_t task, bool network, int rank, bool up) const;
  double switch_efficiency(std::size_t task, bool network, int rank) const;
  std::uint16_t& legs_left(std::size_t task, OpId op);

  // --- the task runner's ---
  const std::string& task_name(std::size_t task) const { return (*tasks_)[task].name; }
  TaskTiming& timing(std::size_t task) { return result_.tasks[task]; }
  std::optional<Time> compute_time(std::size_t task) const {
    const CollectiveTask& t = (*tasks_)[task];
    return t.is_compute() ? std::optional<Time>(t.duration) : std::nullopt;
  }
  std::size_t open_ops(std::size_t task, std::vector<std::uint32_t>& waiting);
  void close_ops(std::size_t task);

  void prepare_task(std::size_t index);
  // Each op's route into `path` (-1 for local and switch ops); whether it has switch ops.
  bool route_ops(const CollectiveTask& task, std::vector<PathId>& path);
  void prepare_switch_routes(std::size_t index, TaskState& st);  // NVLS switch ops
  void record_routes();

  SimulationOptions options_;
  const std::vector<CollectiveTask>* tasks_ = nullptr;
  std::vector<TaskState> state_;
  // Tasks sharing a schedule (a workload's thousand identical all-reduces) share its graph,
  // built when the first of them starts and freed when the last of them ends.
  struct SharedGraph {
    std::unique_ptr<const ScheduleGraph> graph;
    std::size_t users = 0;  // tasks of this schedule not yet done
  };
  std::unordered_map<const Schedule*, SharedGraph> graphs_;
  struct RouteScratch {  // prepare_task's working lists, kept between tasks
    std::vector<int> memo_dst;
    std::vector<PathId> memo_path;
    std::vector<std::pair<NodeId, NodeId>> missing;
    std::vector<PathId> discarded_paths;  // load's routes, without keep_routes
  } scratch_;
  TransferIds ids_;  // (task, op, leg) <-> the id a network model hands back
  SimulationResult result_;
};

}  // namespace collsim
