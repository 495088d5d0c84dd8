#include "schedule/stream.h"

#include <optional>

namespace collsim {
namespace {

thread_local StepSink* current_sink = nullptr;

}  // namespace

StreamScope::StreamScope(StepSink& sink) : previous_(current_sink) { current_sink = &sink; }

StreamScope::~StreamScope() { current_sink = previous_; }

StepSink* StreamScope::take() {
  StepSink* sink = current_sink;
  current_sink = nullptr;
  return sink;
}

void StreamDigest::start(const Schedule& header, int) {
  builder_.emplace(header);
  ops_ = deps_ = 0;
}

void StreamDigest::take_step(const StepView& step) {
  for (std::size_t i = 0; i < step.ops.size(); ++i) builder_->add_op(step.ops[i], step.deps_of(i));
  ops_ += step.ops.size();
  deps_ += step.deps.size();
}

std::uint64_t StreamDigest::digest() const { return builder_ ? builder_->finish(ops_) : 0; }

}  // namespace collsim
