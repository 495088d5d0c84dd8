#pragma once
// Streamed schedules: a generator's steps handed over one at a time instead of stored.
//
// A ScheduleBuilder built while a StreamScope is alive on its thread keeps only the
// step it is writing. Each finished step goes to the scope's StepSink (ops with global
// ids, and their dependencies), and finish() returns the schedule's header (shape,
// buffers, step count) with no ops. Generators are unchanged: they write steps as
// they always do, and whoever consumes the stream (the streamed simulator, a digest,
// a check) sees exactly the ops and dependencies a stored schedule would hold.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/step_queue.h"

namespace collsim {

struct StepView {
  OpId first = 0;                       // global id of ops[0]
  std::span<const Op> ops;              // one step's ops, in id order
  std::span<const DepIndex> dep_begin;  // ops.size() + 1 offsets into deps
  std::span<const OpId> deps;           // global ids of earlier ops

  std::span<const OpId> deps_of(std::size_t i) const {
    return deps.subspan(dep_begin[i], dep_begin[i + 1] - dep_begin[i]);
  }
};

class StepSink {
 public:
  // Once, before any step: the header (no ops yet) and the builder's channel count.
  virtual void start(const Schedule& header, int channels) = 0;
  virtual void take_step(const StepView& step) = 0;

 protected:
  ~StepSink() = default;
};

// While alive, the next ScheduleBuilder constructed on this thread streams to `sink`
// (one builder per generated schedule; a builder takes the sink and clears it).
// Scoped and per thread, so a sweep's threads each stream their own.
class StreamScope {
 public:
  explicit StreamScope(StepSink& sink);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

  // The sink a builder constructed now takes (and clears), or null.
  static StepSink* take();

 private:
  StepSink* previous_;
};

// What check_schedule, schedule_digest and Schedule::size say of the stored schedule,
// from its stream (memory: one step's). An invalid step throws std::logic_error: a
// generator bug must never be timed as if it were a result.
class StreamAudit final : public StepSink {
 public:
  void start(const Schedule& header, int channels) override;
  void take_step(const StepView& step) override;
  // After the generator returned: checks the step count (std::logic_error).
  void finish(const Schedule& header) const;
  // After the generator returned: the digest of everything streamed.
  std::uint64_t digest() const;
  std::uint64_t ops() const { return ops_; }
  std::uint64_t deps() const { return deps_; }

 private:
  std::optional<DigestBuilder> builder_;
  std::optional<StepwiseCheck> check_;
  std::string what_;  // "ring all_reduce", for the error
  std::uint64_t ops_ = 0;
  std::uint64_t deps_ = 0;
};

// A generator run on a thread of its own, its steps queued for a consumer on this one
// (schedule/step_queue.h): generating the next steps overlaps with consuming the last. The
// queue holds at most `max_ops` ops ahead (at least one step), so memory stays bounded.
// What the consumer sees is the same sequence of steps whatever the threads' timing.
class ThreadedStream {
 public:
  using Step = OwnedStep<StepView, OpId>;

  // Starts `generate` on the producer thread.
  ThreadedStream(std::function<Schedule()> generate, std::size_t max_ops = std::size_t{1} << 18);
  ThreadedStream(const ThreadedStream&) = delete;
  ThreadedStream& operator=(const ThreadedStream&) = delete;

  // The header and channel count (StepSink::start); waits for the producer. Null when
  // the generator ended without building a schedule (then next() rethrows its error).
  const Schedule* header(int& channels);
  // The next step, or null once the generator returned; rethrows what the generator
  // threw. The step stays valid until the next call.
  const Step* next() { return steps_.next(); }
  // The schedule finish() returned (its header: steps counted), and the digest and op
  // count of everything streamed (computed on the producer's thread); after next() is null.
  const Schedule& result() const { return result_; }
  std::uint64_t digest() const { return audit_.digest(); }

 private:
  class Producer;

  std::optional<Schedule> header_;  // handed over under the queue's lock
  int channels_ = 1;
  Schedule result_;    // the producer's until it closes the queue
  StreamAudit audit_;  // the producer's alone until it is done
  // Last: its thread uses the members above, and is stopped and joined before they go.
  ThreadedSteps<Step> steps_;
};

}  // namespace collsim
