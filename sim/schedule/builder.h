#pragma once
// Builds a Schedule step by step and derives its dependencies.
//
// Generators say *what* moves in each step; the builder says *when*: an op of
// step s on channel c depends on every op of the most recent earlier step (on
// channel c) in which its source or destination rank took part. Each rank thus
// walks its steps in order, which orders every pair of ops that touch the same
// rank on one channel. Ops of the same step must not conflict (check_schedule
// verifies it); channels are independent, so generators give them disjoint data. A
// transfer reducing into elements an earlier one reduced into keeps that one among the
// rank's latest ops: the two commute (schedule.h, needs_only_sent), so the second may
// land first, and what reads the sum must wait for both.
//
// A pipeline (generators/pipeline.h) runs in lanes: segment t on lane t % lanes, the
// step rule applied per lane, and each connection's ops in segment order. Segments
// are disjoint, so a rank's op on one segment need not wait for its ops on another:
// as in NCCL, where a connection holds NCCL_STEPS chunks in flight, a rank forwards
// the next segment while the one before is still on its way.
#include <stdexcept>
#include <vector>

#include "schedule/schedule.h"

namespace collsim {

// The most ops one step of a streamed schedule may hold: about 1 GB while it is made, refused
// before a one-step all-to-all of 8,192 GPUs (2^26 ops) outgrows the machine; 4,096 fit.
inline constexpr std::size_t kMostStreamedStepOps = std::size_t{1} << 24;

class StepSink;

struct BufferRef {
  int rank;
  int buffer;
  std::int64_t offset;  // elements
};

class ScheduleBuilder {
 public:
  // `buffer_counts` gives each rank's buffers: [rank * num_buffers + b].
  ScheduleBuilder(CollectiveShape shape, std::string algorithm, int num_buffers,
                  std::vector<std::int64_t> buffer_counts, int channels = 1);
  // Same buffer sizes on every rank.
  static ScheduleBuilder uniform(CollectiveShape shape, std::string algorithm,
                                 std::vector<std::int64_t> counts_per_buffer, int channels = 1);

  // Ends the current step (if it has ops); later ops belong to the next one.
  void next_step();
  // Ends the current step and makes every channel wait for all of them: later ops
  // of a rank, on any channel, depend on that rank's latest step on every channel.
  // Algorithms that fan out over channels call it before and after.
  void join_channels();
  void copy(BufferRef src, BufferRef dst, std::int64_t count, int channel = 0) {
    add(OpKind::Copy, src, dst, count, channel);
  }
  void reduce(BufferRef src, BufferRef dst, std::int64_t count, int channel = 0) {
    add(OpKind::Reduce, src, dst, count, channel);
  }
  // Switch ops act on groups of ranks: NVSwitch ones (SwitchReduce, Multicast) on aligned
  // blocks of `ranks` (0: all), network ones (SwitchAllReduce) on `ranks` ranks `stride`
  // apart (Schedule::switch_group, network_group). Their ops are added with add(a switch
  // OpKind, issuer's range, same range, ...): they order after each group rank's latest step.
  void set_switch_group(int ranks) { schedule_.switch_group = ranks; }
  void set_network_group(int ranks, int stride) {
    schedule_.network_group = ranks;
    schedule_.network_stride = stride;
  }
  // Adds a transfer; an empty one (count <= 0) moves nothing and is left out.
  void add(OpKind kind, BufferRef src, BufferRef dst, std::int64_t count, int channel);

  // Lanes (above): between begin_lanes and end_lanes, add_in_lane orders an op after the
  // latest step of its ranks on its channel and lane only, and after `after` (the
  // connection's previous op; kNoOp for none). Ops before begin_lanes order every lane;
  // ops after end_lanes wait for every lane. A stream cannot carry lanes (its simulator
  // relies on each rank's ops following its latest): std::invalid_argument.
  static constexpr OpId kNoOp = ~OpId{0};
  // Returns the lanes it keeps: fewer than asked where lanes x channels x ranks would pass
  // kMaxLaneSlots (each four lists: op ids and reductions, done and open), at least 1.
  static constexpr std::int64_t kMaxLaneSlots = std::int64_t{1} << 20;
  int begin_lanes(std::int64_t lanes);
  void end_lanes();
  // The op's id, or kNoOp when it is empty.
  OpId add_in_lane(OpKind kind, BufferRef src, BufferRef dst, std::int64_t count, int channel,
                   int lane, OpId after);
  // A message without data (barriers): it costs its latency and orders what follows.
  void signal(int src_rank, int dst_rank, int channel = 0) {
    if (lanes_ != 1) throw std::logic_error("a signal added inside a pipeline's lanes");
    append(OpKind::Copy, {src_rank, 0, 0}, {dst_rank, 0, 0}, 0, channel);
  }

  // Optional: room for `ops` ops and `deps` dependencies, to avoid regrowing.
  void reserve(std::size_t ops, std::size_t deps);
  const CollectiveShape& shape() const { return schedule_.shape; }
  // Stored: the schedule. Streamed (schedule/stream.h): its header, without ops.
  Schedule finish();

 private:
  void flush_step();  // streamed: hands the open step to the sink
  OpId append(OpKind kind, BufferRef src, BufferRef dst, std::int64_t count, int channel,
              int lane = 0, OpId after = kNoOp);
  int slot(int channel, int lane, int rank) const {
    return (channel * lanes_ + lane) * ranks_ + rank;
  }
  std::vector<OpId>& done_list(int channel, int rank) { return done_[slot(channel, 0, rank)]; }
  // The ops an op on (channel, lane, rank) orders after: the lane's latest step on the
  // rank, or, until the lane first touches it, the rank's latest step before the lanes.
  const std::vector<OpId>& latest(int channel, int lane, int rank) const;

  // A non-local reduction into `rank`: recorded with the rank's latest ops, and carried
  // into them by a later reduction into the same elements (schedule.h, needs_only_sent:
  // reductions commute, so the later one may start once the earlier one's bytes have left;
  // what follows it then waits for the earlier one's data as well, carried here).
  struct Reduction {
    OpId id;
    std::int64_t begin, end;  // elements of the destination buffer
    int buffer;
  };
  void note_reduction(int channel, int lane, int rank, const Reduction& r);
  void resize_slots(std::size_t slots);
  // latest()'s reductions into the rank.
  const std::vector<Reduction>& latest_into(int channel, int lane, int rank) const;

  Schedule schedule_;  // streamed: the header and the open step's ops only
  StepSink* sink_ = nullptr;
  OpId streamed_ = 0;  // ops already handed to the sink: the open step's first id
  int ranks_;
  int channels_;
  int lanes_ = 1;
  int step_ = 0;
  bool step_has_ops_ = false;
  // Per (channel, lane, rank): ops of the rank's latest finished step, and of the open step.
  std::vector<std::vector<OpId>> done_;
  std::vector<std::vector<OpId>> open_;
  std::vector<std::vector<OpId>> before_;  // inside lanes: per (channel, rank), done_ before them
  // Per (channel, lane, rank), beside done_ and open_: the reductions into the rank among
  // them.
  std::vector<std::vector<Reduction>> done_into_, open_into_, before_into_;
  std::vector<int> touched_;  // (channel, lane, rank) slots with ops in the open step
  std::vector<OpId> scratch_deps_;
};

}  // namespace collsim
