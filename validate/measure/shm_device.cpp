// The shm transport's side of a rank: its buffers are in the shared segment, so an
// op is a memcpy into the destination or an element-wise reduction, done at once.
#include <algorithm>
#include <cstring>
#include <vector>

#include "validate/measure/element_type.h"
#include "validate/measure/rank_device.h"

namespace collsim {
namespace {

// The switch's work, done by the issuing rank on its group's shared buffers: the same
// rank-order fold and the same scalar ops as the replayer, so results match bitwise.
template <class T, class Reduce>
void execute_switch(const Segment& seg, const Op& op) {
  const bool network = Schedule::in_network(op);
  const int n = static_cast<int>(seg.header().switch_group[network]);
  const int stride =
      static_cast<int>(std::max<std::uint32_t>(1, seg.header().switch_stride[network]));
  const int block = n * stride;
  const int first = op.src_rank - op.src_rank % block + op.src_rank % stride;
  auto range = [&](int j, int buffer, std::int64_t offset) {
    return reinterpret_cast<T*>(seg.buffer(first + j * stride, buffer)) + offset;
  };
  const std::size_t bytes = static_cast<std::size_t>(op.count) * sizeof(T);
  if (op.kind == OpKind::SwitchReduce || op.kind == OpKind::SwitchAllReduce) {
    std::vector<const T*> src(n);
    std::vector<T*> out;
    for (int j = 0; j < n; ++j) src[j] = range(j, op.src_buffer, op.src_offset);
    if (op.kind == OpKind::SwitchReduce)
      out.push_back(reinterpret_cast<T*>(seg.buffer(op.dst_rank, op.dst_buffer)) + op.dst_offset);
    else
      for (int j = 0; j < n; ++j) out.push_back(range(j, op.dst_buffer, op.dst_offset));
    // Fold in rank order; an input may be a result range (in place), so each element is
    // read from every rank before it is written.
    const Reduce f;
    for (std::int64_t i = 0; i < op.count; ++i) {
      T acc = src[0][i];
      for (int j = 1; j < n; ++j) acc = f(acc, src[j][i]);
      for (T* o : out) o[i] = acc;
    }
    return;
  }
  const T* from =
      reinterpret_cast<const T*>(seg.buffer(op.src_rank, op.src_buffer)) + op.src_offset;
  for (int j = 0; j < n; ++j) {
    T* to = range(j, op.dst_buffer, op.dst_offset);
    if (to != from) std::memcpy(to, from, bytes);
  }
}

template <class T, class Reduce>
void execute(const Segment& seg, const Op& op) {
  if (op.is_switch()) return execute_switch<T, Reduce>(seg, op);
  const T* src = reinterpret_cast<const T*>(seg.buffer(op.src_rank, op.src_buffer)) + op.src_offset;
  T* dst = reinterpret_cast<T*>(seg.buffer(op.dst_rank, op.dst_buffer)) + op.dst_offset;
  if (op.kind == OpKind::Copy) {
    std::memcpy(dst, src, static_cast<std::size_t>(op.count) * sizeof(T));
    return;
  }
  const Reduce f;
  for (std::int64_t i = 0; i < op.count; ++i) dst[i] = f(dst[i], src[i]);
}

class ShmDevice final : public RankDevice {
 public:
  ShmDevice(const Segment& seg, int rank) : seg_(seg), rank_(rank) {
    // One loop per (type, reduction), chosen once: the compiler vectorises each.
    const SegmentHeader& h = seg.header();
    execute_ = with_element_type(h.dtype, [&](auto element) {
      return reduction::with_reduction(
          h.reduce_op, [&](auto f) { return &execute<decltype(element), decltype(f)>; });
    });
  }

  // Each iteration starts with the rank's buffers as an application hands them over:
  // last written by their owner. Otherwise which core last touched a line depends on
  // what the previous iteration did (a broadcast's destination stays in the root's
  // cache), and the calibration's sweeps and the collectives would start from
  // different states.
  void load_inputs() override {
    auto* line = reinterpret_cast<volatile unsigned char*>(seg_.buffer(rank_, 0));
    const std::uint64_t bytes = seg_.rank_bytes(rank_);
    for (std::uint64_t i = 0; i < bytes; i += kLineBytes) line[i] = line[i];
  }

  void run(OpId id, std::int64_t* times) override {
    times[2 * id] = monotonic_ns();
    execute_(seg_, seg_.op(id));
    times[2 * id + 1] = monotonic_ns();
  }

 private:
  const Segment& seg_;
  int rank_;
  void (*execute_)(const Segment&, const Op&) = nullptr;
};

}  // namespace

std::unique_ptr<RankDevice> make_shm_device(const Segment& seg, int rank) {
  return std::make_unique<ShmDevice>(seg, rank);
}

}  // namespace collsim
