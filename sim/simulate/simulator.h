#pragma once
// Plays schedules over a network model: an op starts when its dependencies are
// done, the model says when its bytes have arrived, and the recorder keeps what
// happened. Several collectives can run at once ("after" relations decide when
// each starts), so independent collectives share — and contend for — the network.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "network/network_model.h"
#include "schedule/schedule.h"
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
  Time ops_end = -1;  // when its last op ended: before `end` when a least duration held it
  std::vector<OpTiming> ops;  // filled when SimulationOptions::record_ops
  std::vector<PathId> paths;  // per op: its route in SimulationResult::routes; -1 for local ops
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
};

struct SimulationResult {
  std::vector<TaskTiming> tasks;
  RouteTable routes;
  LinkCounters links;
  std::vector<std::int64_t> node_sent;      // per topology node
  std::vector<std::int64_t> node_received;  // per topology node
  std::uint64_t events = 0;
  std::uint64_t transfers = 0;
};

class Simulator final : private NetworkHost {
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
  struct TaskState;

  Time now() const override { return engine_.now(); }
  void schedule_wakeup(Time at, std::uint64_t cookie) override;
  void transfer_finished(TransferId id) override;
  LinkCounters& link_counters() override { return result_.links; }

  void prepare_task(std::size_t index);
  void start_task(std::size_t index);
  void start_ready_ops(std::size_t task);
  void start_op(std::size_t task, OpId op);                      // its dependencies are done
  void begin_op(std::size_t task, OpId op);                      // its rank's overhead is paid too
  void prepare_switch_routes(std::size_t index, TaskState& st);  // NVLS switch ops
  void begin_switch_op(std::size_t task, OpId op);
  // Whether a finishing transfer was first sent (release_sent already started what needed
  // only that) or finishes whole (a local op, a switch op, a model that times its delay).
  enum class Phase : std::uint8_t { Whole, Delivered };
  void release_sent(std::size_t task, OpId op);
  PathId leg_path(std::size_t task, OpId op, int leg) const;  // a switch op's leg
  void leg_delivered(std::size_t task, OpId op, int leg);
  void finish_op(std::size_t task, OpId op, Phase phase = Phase::Whole);
  void finish_task(std::size_t index);
  const ScheduleGraph& graph_of(const Schedule& s);
  void release_graph(std::size_t index);  // its ops are done: the last user frees it
  void record_routes();

  const Topology& topology_;
  Router& router_;
  NetworkModel& model_;
  SimulationOptions options_;
  Engine engine_;
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
  } scratch_;
  TransferIds ids_;  // (task, op, leg) <-> the id a network model hands back
  std::vector<Time> rank_busy_until_;  // per topology node: CostModel::op_overhead's queue
  SimulationResult result_;
};

}  // namespace collsim
