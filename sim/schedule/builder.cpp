#include "schedule/builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <stdexcept>

#include "core/interrupt.h"
#include "schedule/stream.h"

namespace collsim {
namespace {

OpId id_of(OpId id) {
  return id;
}
OpId id_of(const auto& reduction) {
  return reduction.id;
}

// Sorted by op id, without repeats; insertion sort for the usual handful.
template <class T>
void sort_unique(std::vector<T>& ids) {
  const auto less = [](const T& a, const T& b) { return id_of(a) < id_of(b); };
  if (ids.size() > 16) {
    std::sort(ids.begin(), ids.end(), less);
  } else {
    for (std::size_t i = 1; i < ids.size(); ++i)
      for (std::size_t j = i; j > 0 && less(ids[j], ids[j - 1]); --j) std::swap(ids[j - 1], ids[j]);
  }
  const auto same = [](const T& a, const T& b) { return id_of(a) == id_of(b); };
  ids.erase(std::unique(ids.begin(), ids.end(), same), ids.end());
}

// Appends to out the union of sorted, distinct a and b, with `extra` (unless kNoOp):
// sorted, distinct.
void merge_unique(std::span<const OpId> a, std::span<const OpId> b, OpId extra,
                  std::vector<OpId>& out) {
  constexpr OpId kNoOp = ScheduleBuilder::kNoOp;
  std::size_t i = 0, j = 0;
  auto put = [&](OpId id) {
    if (extra != kNoOp && extra <= id) {
      if (extra != id) out.push_back(extra);
      extra = kNoOp;
    }
    out.push_back(id);
  };
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) {
      put(a[i++]);
    } else {
      if (a[i] == b[j]) ++i;
      put(b[j++]);
    }
  }
  for (; i < a.size(); ++i) put(a[i]);
  for (; j < b.size(); ++j) put(b[j]);
  if (extra != kNoOp) out.push_back(extra);
}

}  // namespace

ScheduleBuilder::ScheduleBuilder(CollectiveShape shape, std::string algorithm, int num_buffers,
                                 std::vector<std::int64_t> buffer_counts, int channels)
    : sink_(StreamScope::take()), ranks_(shape.ranks), channels_(channels) {
  schedule_.shape = shape;
  schedule_.algorithm = std::move(algorithm);
  schedule_.num_buffers = num_buffers;
  schedule_.buffer_counts = std::move(buffer_counts);
  schedule_.dep_begin.push_back(0);
  resize_slots(static_cast<std::size_t>(channels) * ranks_);
  if (sink_) sink_->start(schedule_, channels);
}

// Every (channel, lane, rank) list empty, `slots` of each.
void ScheduleBuilder::resize_slots(std::size_t slots) {
  done_.assign(slots, {});
  open_.assign(slots, {});
  done_into_.assign(slots, {});
  open_into_.assign(slots, {});
}

ScheduleBuilder ScheduleBuilder::uniform(CollectiveShape shape, std::string algorithm,
                                         std::vector<std::int64_t> counts_per_buffer,
                                         int channels) {
  const int nb = static_cast<int>(counts_per_buffer.size());
  std::vector<std::int64_t> counts;
  counts.reserve(static_cast<std::size_t>(shape.ranks) * nb);
  for (int r = 0; r < shape.ranks; ++r)
    counts.insert(counts.end(), counts_per_buffer.begin(), counts_per_buffer.end());
  return ScheduleBuilder(shape, std::move(algorithm), nb, std::move(counts), channels);
}

void ScheduleBuilder::reserve(std::size_t ops, std::size_t deps) {
  if (sink_) return;  // a streamed schedule holds one step, never the whole
  schedule_.ops.reserve(ops);
  schedule_.dep_begin.reserve(ops + 1);
  schedule_.deps.reserve(deps);
}

void ScheduleBuilder::flush_step() {
  if (!sink_ || schedule_.ops.empty()) return;
  sink_->take_step({streamed_, schedule_.ops, schedule_.dep_begin, schedule_.deps});
  streamed_ += schedule_.ops.size();
  schedule_.ops.clear();
  schedule_.deps.clear();
  schedule_.dep_begin.resize(1);
}

void ScheduleBuilder::next_step() {
  if (!step_has_ops_) return;
  poll_interrupt();  // a big schedule takes seconds to build: Ctrl-C stops it between steps
  flush_step();
  for (int slot : touched_) {
    std::swap(done_[slot], open_[slot]);
    open_[slot].clear();
    std::swap(done_into_[slot], open_into_[slot]);
    open_into_[slot].clear();
  }
  touched_.clear();
  ++step_;
  step_has_ops_ = false;
}

int ScheduleBuilder::begin_lanes(std::int64_t asked) {
  next_step();
  if (lanes_ != 1) throw std::logic_error("a pipeline's lanes begun twice");
  const std::int64_t slots = std::int64_t{channels_} * ranks_;
  const int lanes = static_cast<int>(std::clamp<std::int64_t>(
      std::min(asked, kMaxLaneSlots / std::max<std::int64_t>(1, slots)), 1, 1 << 20));
  if (lanes == 1) return 1;
  if (sink_) throw std::invalid_argument("a pipeline's lanes cannot be streamed");
  // Every lane starts after what came before: a lane's list stays empty, and reads the
  // rank's latest step from before (before_), until the lane first touches the rank.
  before_ = std::move(done_);
  before_into_ = std::move(done_into_);
  resize_slots(before_.size() * lanes);
  lanes_ = lanes;
  return lanes;
}

void ScheduleBuilder::end_lanes() {
  next_step();
  if (lanes_ == 1) return;
  // What follows waits for every lane: each rank's latest ops, lane by lane.
  std::vector<std::vector<OpId>> done(static_cast<std::size_t>(channels_) * ranks_);
  std::vector<std::vector<Reduction>> into(done.size());
  for (int c = 0; c < channels_; ++c)
    for (int r = 0; r < ranks_; ++r) {
      auto& merged = done[c * ranks_ + r];
      auto& merged_into = into[c * ranks_ + r];
      for (int l = 0; l < lanes_; ++l) {
        const auto& lane = latest(c, l, r);
        merged.insert(merged.end(), lane.begin(), lane.end());
        const auto& lane_into = latest_into(c, l, r);
        merged_into.insert(merged_into.end(), lane_into.begin(), lane_into.end());
      }
      sort_unique(merged);
      sort_unique(merged_into);
    }
  resize_slots(done.size());
  done_ = std::move(done);
  done_into_ = std::move(into);
  before_.clear();
  before_into_.clear();
  lanes_ = 1;
}

const std::vector<OpId>& ScheduleBuilder::latest(int channel, int lane, int rank) const {
  const auto& own = done_[slot(channel, lane, rank)];
  return own.empty() && lanes_ > 1 ? before_[channel * ranks_ + rank] : own;
}

const std::vector<ScheduleBuilder::Reduction>& ScheduleBuilder::latest_into(int channel, int lane,
                                                                            int rank) const {
  const int at = slot(channel, lane, rank);
  return done_[at].empty() && lanes_ > 1 ? before_into_[channel * ranks_ + rank] : done_into_[at];
}

void ScheduleBuilder::join_channels() {
  next_step();
  if (lanes_ != 1) throw std::logic_error("channels joined inside a pipeline's lanes");
  if (channels_ == 1) return;
  std::vector<OpId> merged;
  std::vector<Reduction> into;
  for (int rank = 0; rank < ranks_; ++rank) {
    merged.clear();
    into.clear();
    for (int c = 0; c < channels_; ++c) {
      const auto& done = done_list(c, rank);
      merged.insert(merged.end(), done.begin(), done.end());
      const auto& done_into = done_into_[slot(c, 0, rank)];
      into.insert(into.end(), done_into.begin(), done_into.end());
    }
    sort_unique(merged);
    sort_unique(into);
    for (int c = 0; c < channels_; ++c) {
      done_list(c, rank) = merged;
      done_into_[slot(c, 0, rank)] = into;
    }
  }
}

void ScheduleBuilder::add(OpKind kind, BufferRef src, BufferRef dst, std::int64_t count,
                          int channel) {
  // Inside lanes a plain op would wait for lane 0 alone.
  if (lanes_ != 1) throw std::logic_error("a plain op added inside a pipeline's lanes");
  if (count > 0) append(kind, src, dst, count, channel);  // empty chunks (count < ranks)
}

OpId ScheduleBuilder::add_in_lane(OpKind kind, BufferRef src, BufferRef dst, std::int64_t count,
                                  int channel, int lane, OpId after) {
  if (lane < 0 || lane >= lanes_) throw std::logic_error("schedule lane out of range");
  return count > 0 ? append(kind, src, dst, count, channel, lane, after) : kNoOp;
}

OpId ScheduleBuilder::append(OpKind kind, BufferRef src, BufferRef dst, std::int64_t count,
                             int channel, int lane, OpId after) {
  if (channel < 0 || channel >= channels_) throw std::logic_error("schedule channel out of range");
  const OpId id = streamed_ + schedule_.ops.size();
  // A stream holds a whole step: one past kMostStreamedStepOps is refused before it outgrows
  // the machine (a direct all-to-all's one step on 16,384 GPUs: 2^28 ops).
  if (sink_ && schedule_.ops.size() >= kMostStreamedStepOps)
    throw std::invalid_argument(
        fmt::format("one step of more than {} ops: a streamed schedule holds a whole step at "
                    "once; use an algorithm of more, smaller steps (pairwise for direct), or "
                    "fewer ranks",
                    kMostStreamedStepOps));

  // Switch ops touch every rank of their group; others their source and destination.
  const bool every_rank = kind >= OpKind::SwitchReduce;
  const bool network = kind == OpKind::SwitchAllReduce;
  const int group = every_rank ? schedule_.switch_groups(network).size : 0;
  if (every_rank) {
    // A switch op waits on the latest ops of every rank of its group: gathered, sorted.
    scratch_deps_.clear();
    for (int j = 0; j < group; ++j)
      for (OpId d : latest(channel, lane, schedule_.switch_member(network, src.rank, j)))
        scratch_deps_.push_back(d);
    if (after != kNoOp) scratch_deps_.push_back(after);
    sort_unique(scratch_deps_);
    schedule_.deps.insert(schedule_.deps.end(), scratch_deps_.begin(), scratch_deps_.end());
  } else {
    // The generators' hot loop: a rank's latest ops are sorted and distinct, so the two
    // ranks' lists merge (sorting them anew stalled on its own stores).
    merge_unique(latest(channel, lane, src.rank),
                 dst.rank == src.rank ? std::span<const OpId>{} : latest(channel, lane, dst.rank),
                 after, schedule_.deps);
  }
  schedule_.dep_begin.push_back(schedule_.deps.size());

  schedule_.ops.push_back(Op{src.offset, dst.offset, count, src.rank, dst.rank, step_, kind,
                             static_cast<std::uint8_t>(src.buffer),
                             static_cast<std::uint8_t>(dst.buffer),
                             static_cast<std::uint8_t>(channel)});
  auto touch = [&](int rank) {
    const int at = slot(channel, lane, rank);
    if (open_[at].empty()) touched_.push_back(at);
    if (open_[at].empty() || open_[at].back() != id) open_[at].push_back(id);
  };
  if (every_rank) {
    for (int j = 0; j < group; ++j) touch(schedule_.switch_member(network, src.rank, j));
  } else {
    touch(src.rank);
    touch(dst.rank);
  }
  if (kind == OpKind::Reduce && src.rank != dst.rank)
    note_reduction(channel, lane, dst.rank, {id, dst.offset, dst.offset + count, dst.buffer});
  step_has_ops_ = true;
  return id;
}

// The rank's latest reductions into elements `r` also writes stay among its latest ops
// (sorted, distinct), so what next reads them waits for each to land. Nothing is carried on
// a ring (each step reduces into other elements); a tree's parent carries its earlier
// children (up to log2 of its children on a binomial root, log2 K on PAT's reduce-scatter).
// Only the rank's latest step is looked at: an op on other elements between two
// reductions into the same ones (a lane shared by two segments of a tree) ends the carry.
void ScheduleBuilder::note_reduction(int channel, int lane, int rank, const Reduction& r) {
  const int at = slot(channel, lane, rank);
  auto& ids = open_[at];
  auto& into = open_into_[at];
  for (const Reduction& earlier : latest_into(channel, lane, rank)) {
    if (earlier.buffer != r.buffer || earlier.end <= r.begin || r.end <= earlier.begin) continue;
    const auto pos = std::lower_bound(ids.begin(), ids.end(), earlier.id);
    if (pos != ids.end() && *pos == earlier.id) continue;
    ids.insert(pos, earlier.id);
    into.push_back(earlier);
  }
  into.push_back(r);
}

Schedule ScheduleBuilder::finish() {
  schedule_.num_steps = step_has_ops_ ? step_ + 1 : step_;
  flush_step();
  // Generators that reserved exactly pay nothing here; others give back the slack.
  schedule_.ops.shrink_to_fit();
  schedule_.deps.shrink_to_fit();
  schedule_.dep_begin.shrink_to_fit();
  return std::move(schedule_);
}

}  // namespace collsim
