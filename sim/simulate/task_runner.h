#pragma once
// The life of a task, written once for the sources that play whole tasks (Simulator, and
// the step fold's FoldedStepSimulator): it waits for the tasks it comes after, starts, is
// launched (its cost model's launch), plays its ops through the executor, lasts at least
// its least duration (the host's issue, NCCL's own estimate of its pick), and then
// releases the tasks waiting on it. A compute task just lasts its duration.
//
// A source derives from TaskRunner<Source> (not from Executor directly), befriends it and
// Executor<Source>, and provides,
// besides the executor's calls (executor.h) other than dependency_done and finished,
// which the runner answers:
//   task_name(task) -> std::string           timing(task) -> TaskTiming& (simulator.h)
//   compute_time(task) -> std::optional<Time>: set for a compute task, its duration
//   open_ops(task, waiting) -> std::size_t: the task starts: make what its ops need (its
//     graph of successors), fill `waiting` with each op's count of dependencies and
//     return how many ops it has
//   close_ops(task): its ops are done: free what open_ops made
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "simulate/executor.h"

namespace collsim {

template <class Source>
class TaskRunner : public Executor<Source> {
 protected:
  using Executor<Source>::Executor;
  using Executor<Source>::engine_;

  // A new run of `tasks` tasks, none of them added yet.
  void reset_tasks(std::size_t tasks) {
    progress_.clear();
    progress_.resize(tasks);
  }

  // Task `index` waits on the tasks `after` (indices); one that waits on none starts at 0.
  template <class Indices>
  void add_task(std::size_t index, const Indices& after) {
    for (const auto before : after)
      progress_[static_cast<std::size_t>(before)].dependents.push_back(index);
    progress_[index].prerequisites_left = after.size();
    if (after.empty()) engine_.schedule(0, kTaskStart, index);
  }

  // Plays every task to its end.
  void play_tasks() {
    engine_.run([this](const Event& e) { play_event(e); });
    for (std::size_t i = 0; i < progress_.size(); ++i)
      if (source().timing(i).end < 0)
        throw std::logic_error("task \"" + source().task_name(i) + "\" never finished");
  }

 private:
  friend class Executor<Source>;
  enum TaskEvent : EventTag {
    kTaskStart = kFirstSourceEvent,
    kTaskLaunched,
    kTaskIssued,  // the host has issued a collective whose ops all finished earlier
    kComputeDone
  };
  struct Progress {
    std::vector<std::uint32_t> waiting;  // per op: dependencies not yet done (while it runs)
    std::size_t ops_left = 0;
    std::size_t prerequisites_left = 0;   // tasks it waits on, not yet done
    std::vector<std::size_t> dependents;  // tasks waiting on this one
  };

  Source& source() { return static_cast<Source&>(*this); }

  void play_event(const Event& e) {
    if (this->play_executor_event(e)) return;
    const auto index = static_cast<std::size_t>(e.id);
    switch (e.tag) {
      case kTaskStart:
        return start_task(index);
      case kTaskLaunched:
        return start_ready_ops(index);
      case kTaskIssued:
      case kComputeDone:
        return finish_task(index);
    }
  }

  // --- the executor's calls the runner answers ---
  bool dependency_done(std::size_t task, OpId next) { return --progress_[task].waiting[next] == 0; }
  void finished(std::size_t task, OpId) {
    if (--progress_[task].ops_left == 0) finish_task(task);
  }

  void start_task(std::size_t index) {
    Source& src = source();
    src.timing(index).start = engine_.now();
    if (const std::optional<Time> duration = src.compute_time(index))
      return engine_.schedule(add_time(engine_.now(), *duration), kComputeDone, index);
    Progress& p = progress_[index];
    p.ops_left = src.open_ops(index, p.waiting);
    if (p.ops_left == 0) return finish_task(index);
    // The launch is part of the collective's time: its ops wait for it.
    const Time launch = src.costs(index).launch();
    if (launch > 0) return engine_.schedule(add_time(engine_.now(), launch), kTaskLaunched, index);
    start_ready_ops(index);
  }

  void start_ready_ops(std::size_t index) {
    const std::vector<std::uint32_t>& waiting = progress_[index].waiting;
    for (OpId id = 0; id < waiting.size(); ++id)
      if (waiting[id] == 0) this->start_op(index, id);
  }

  void finish_task(std::size_t index) {
    Source& src = source();
    auto& timing = src.timing(index);  // a TaskTiming (simulator.h, which includes this)
    if (timing.ops_end < 0) {
      timing.ops_end = engine_.now();
      if (!src.compute_time(index)) src.close_ops(index);
      std::vector<std::uint32_t>().swap(progress_[index].waiting);
    }
    // A collective lasts at least the host's time to issue it, and what NCCL's own model
    // says of its pick (CostModel::host_issue, nccl_floor).
    const Time issued = add_time(timing.start, src.costs(index).least_duration());
    if (engine_.now() < issued) return engine_.schedule(issued, kTaskIssued, index);
    timing.end = engine_.now();
    for (std::size_t dep : progress_[index].dependents)
      if (--progress_[dep].prerequisites_left == 0)
        engine_.schedule(engine_.now(), kTaskStart, dep);
  }

  std::vector<Progress> progress_;
};

}  // namespace collsim
