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
#include <optional>
#include <span>

#include "schedule/schedule.h"

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

// The digest and op count schedule_digest and Schedule::size give for the stored
// schedule, from its stream (memory: one step's).
class StreamDigest final : public StepSink {
 public:
  void start(const Schedule& header, int channels) override;
  void take_step(const StepView& step) override;
  // Call after the generator returned: the digest of everything streamed.
  std::uint64_t digest() const;
  std::uint64_t ops() const { return ops_; }
  std::uint64_t deps() const { return deps_; }

 private:
  std::optional<DigestBuilder> builder_;
  std::uint64_t ops_ = 0;
  std::uint64_t deps_ = 0;
};

}  // namespace collsim
