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
  Producer(ThreadedStream& s, StepQueue<Step>& queue) : s_(s), queue_(queue) {}
  void start(const Schedule& header, int channels) override {
    s_.audit_.start(header, channels);
    queue_.locked([&] {
      s_.header_ = header;
      s_.channels_ = channels;
    });
  }
  void take_step(const StepView& step) override {
    s_.audit_.take_step(step);
    queue_.push(step.ops.size(), [&](Step& s) { s.copy(step); });
  }

 private:
  ThreadedStream& s_;
  StepQueue<Step>& queue_;
};

ThreadedStream::ThreadedStream(std::function<Schedule()> generate, std::size_t max_ops)
    : steps_(max_ops, [this, generate = std::move(generate)](StepQueue<Step>& queue) {
        Producer sink(*this, queue);
        StreamScope scope(sink);
        Schedule result = generate();
        audit_.finish(result);
        result_ = std::move(result);
      }) {}

const Schedule* ThreadedStream::header(int& channels) {
  const Schedule* out = nullptr;
  steps_.queue().wait([&] { return header_.has_value(); });
  steps_.queue().locked([&] {
    channels = channels_;
    out = header_ ? &*header_ : nullptr;
  });
  return out;
}

}  // namespace collsim
