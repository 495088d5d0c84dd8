#pragma once
// Steps made on a producer thread and played on the consumer's: a bounded queue of owned
// step buffers, recycled, so that making the next steps overlaps with playing the last.
// The queue holds at most `max_ops` ops ahead (at least one step), so memory stays bounded,
// and the consumer sees the steps in the order they were pushed whatever the threads'
// timing. ThreadedSteps runs the producer; ThreadedStream (a generator's steps) and the
// folded simulator (a fold's representatives, simulate/streamed.cpp) use it.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/interrupt.h"
#include "schedule/schedule.h"

namespace collsim {

// A step's ops and dependencies, owned, for the queue: copied from a view of spans
// (StepView, QuotientStepView, whose dependencies are `Dep`) and read back as one.
template <class View, class Dep>
struct OwnedStep {
  OpId first = 0;
  std::vector<Op> ops;
  std::vector<DepIndex> dep_begin;
  std::vector<Dep> deps;

  void copy(const View& step) {
    first = step.first;
    ops.assign(step.ops.begin(), step.ops.end());
    dep_begin.assign(step.dep_begin.begin(), step.dep_begin.end());
    deps.assign(step.deps.begin(), step.deps.end());
  }
  View view() const { return {first, ops, dep_begin, deps}; }
};

template <class Step>
class StepQueue {
 public:
  // Thrown to the producer once the consumer gave up (cancel): it unwinds and closes.
  struct Cancelled {};

  explicit StepQueue(std::size_t max_ops) : max_ops_(max_ops) {}

  // Producer: a step of `ops` ops, written by `fill(Step&)` into a recycled buffer outside
  // the lock, once the queue has room.
  template <class Fill>
  void push(std::size_t ops, Fill&& fill) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock,
                  [&] { return cancelled_ || queue_.empty() || queued_ops_ + ops <= max_ops_; });
    if (cancelled_) throw Cancelled{};
    Step s;
    if (!spare_.empty()) {
      s = std::move(spare_.back());
      spare_.pop_back();
    }
    lock.unlock();
    fill(s);
    lock.lock();
    queued_ops_ += ops;
    queue_.push_back({std::move(s), ops});
    changed_.notify_all();
  }

  // Producer, last: no more steps; `error` (may be null) is rethrown to the consumer.
  void close(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    error_ = error;
    done_ = true;
    changed_.notify_all();
  }

  // Consumer: the next step, valid until the next call; null once the producer closed and
  // every step was taken; rethrows what the producer closed with.
  const Step* next() {
    std::unique_lock lock(mutex_);
    if (current_) {
      spare_.push_back(std::move(*current_));
      current_.reset();
    }
    changed_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return nullptr;
    }
    current_ = std::move(queue_.front().step);
    queued_ops_ -= queue_.front().ops;
    queue_.pop_front();
    changed_.notify_all();
    return &*current_;
  }

  // Consumer: stop the producer at its next push (then join its thread).
  void cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    changed_.notify_all();
  }

  // Either side: runs `f` under the queue's lock and wakes the other side (state handed
  // over beside the steps).
  template <class F>
  void locked(F&& f) {
    std::lock_guard lock(mutex_);
    f();
    changed_.notify_all();
  }
  // Waits until `ready()` (read under the lock) or the producer closed.
  template <class Ready>
  void wait(Ready&& ready) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return done_ || ready(); });
  }

 private:
  struct Queued {
    Step step;
    std::size_t ops;
  };

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Queued> queue_;
  std::vector<Step> spare_;
  std::optional<Step> current_;
  std::size_t queued_ops_ = 0;
  std::size_t max_ops_;
  bool done_ = false;
  bool cancelled_ = false;
  std::exception_ptr error_;
};

// `produce(queue)` run on a thread of its own, under the caller's stop token, pushing its
// steps; what it throws reaches the consumer at next(). Destroyed, it stops the producer
// at its next push (the consumer may give up early: an error, Ctrl-C) and joins it.
template <class Step>
class ThreadedSteps {
 public:
  template <class Produce>
  ThreadedSteps(std::size_t max_ops, Produce produce) : queue_(max_ops) {
    thread_ = std::thread(with_stop_token([this, produce = std::move(produce)]() mutable {
      std::exception_ptr error;
      try {
        produce(queue_);
      } catch (const typename StepQueue<Step>::Cancelled&) {
      } catch (...) {
        error = std::current_exception();
      }
      queue_.close(error);
    }));
  }
  ~ThreadedSteps() {
    queue_.cancel();
    thread_.join();
  }
  ThreadedSteps(const ThreadedSteps&) = delete;
  ThreadedSteps& operator=(const ThreadedSteps&) = delete;

  const Step* next() { return queue_.next(); }
  StepQueue<Step>& queue() { return queue_; }

 private:
  StepQueue<Step> queue_;
  std::thread thread_;
};

}  // namespace collsim
