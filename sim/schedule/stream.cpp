#include "schedule/stream.h"

#include <optional>
#include <stdexcept>

#include "core/interrupt.h"

namespace collsim {
namespace {

thread_local StepSink* current_sink = nullptr;

}  // namespace

StreamScope::StreamScope(StepSink& sink) : previous_(current_sink) {
  current_sink = &sink;
}

StreamScope::~StreamScope() {
  current_sink = previous_;
}

StepSink* StreamScope::take() {
  StepSink* sink = current_sink;
  current_sink = nullptr;
  return sink;
}

void StreamAudit::start(const Schedule& header, int) {
  builder_.emplace(header);
  check_.emplace(header);
  what_ = header.algorithm + " " + std::string(name_of(header.shape.op));
  ops_ = deps_ = 0;
}

void StreamAudit::take_step(const StepView& step) {
  if (std::string e = check_->check_step(step.first, step.ops, step.dep_begin, step.deps);
      !e.empty())
    throw std::logic_error(what_ + " generated an invalid schedule: " + e);
  for (std::size_t i = 0; i < step.ops.size(); ++i) builder_->add_op(step.ops[i], step.deps_of(i));
  ops_ += step.ops.size();
  deps_ += step.deps.size();
}

void StreamAudit::finish(const Schedule& header) const {
  if (!check_) return;
  if (std::string e = check_->finish(header.num_steps); !e.empty())
    throw std::logic_error(what_ + " generated an invalid schedule: " + e);
}

std::uint64_t StreamAudit::digest() const {
  return builder_ ? builder_->finish(ops_) : 0;
}

// The producer thread's sink: copies each step into a queue buffer and waits while
// the queue is full.
class ThreadedStream::Producer final : public StepSink {
 public:
  explicit Producer(ThreadedStream& q) : q_(q) {}
  void start(const Schedule& header, int channels) override {
    q_.audit_.start(header, channels);
    std::lock_guard lock(q_.mutex_);
    q_.header_ = header;
    q_.channels_ = channels;
    q_.changed_.notify_all();
  }
  void take_step(const StepView& step) override {
    q_.audit_.take_step(step);
    std::unique_lock lock(q_.mutex_);
    q_.changed_.wait(lock, [&] {
      return q_.cancelled_ || q_.queue_.empty() || q_.queued_ops_ + step.ops.size() <= q_.max_ops_;
    });
    if (q_.cancelled_) throw Cancelled{};
    Step s;
    if (!q_.spare_.empty()) {
      s = std::move(q_.spare_.back());
      q_.spare_.pop_back();
    }
    lock.unlock();  // copy outside the lock
    s.first = step.first;
    s.ops.assign(step.ops.begin(), step.ops.end());
    s.dep_begin.assign(step.dep_begin.begin(), step.dep_begin.end());
    s.deps.assign(step.deps.begin(), step.deps.end());
    lock.lock();
    q_.queued_ops_ += s.ops.size();
    q_.queue_.push_back(std::move(s));
    q_.changed_.notify_all();
  }

 private:
  ThreadedStream& q_;
};

ThreadedStream::ThreadedStream(std::function<Schedule()> generate, std::size_t max_ops)
    : max_ops_(max_ops) {
  thread_ = std::thread(with_stop_token([this, generate = std::move(generate)] {
    Producer sink(*this);
    std::exception_ptr error;
    Schedule result;
    try {
      StreamScope scope(sink);
      result = generate();
      audit_.finish(result);
    } catch (const Cancelled&) {
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    result_ = std::move(result);
    error_ = error;
    done_ = true;
    changed_.notify_all();
  }));
}

ThreadedStream::~ThreadedStream() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    changed_.notify_all();
  }
  thread_.join();
}

const Schedule* ThreadedStream::header(int& channels) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return header_ || done_; });
  channels = channels_;
  return header_ ? &*header_ : nullptr;
}

const ThreadedStream::Step* ThreadedStream::next() {
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
  current_ = std::move(queue_.front());
  queue_.pop_front();
  queued_ops_ -= current_->ops.size();
  changed_.notify_all();
  return &*current_;
}

}  // namespace collsim
