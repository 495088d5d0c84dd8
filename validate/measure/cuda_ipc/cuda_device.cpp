// The cuda-ipc transport's side of a rank. Its buffers are one cudaMalloc on GPU
// rank % devices, exported with cudaIpcGetMemHandle; peers open the handle and copy
// into it (cudaMemcpyAsync to the peer's pointer) or reduce from it (a kernel). The
// host waits only until an op's dependencies are *enqueued*; the GPU order comes
// from interprocess events recorded after each op and waited on by the streams of
// the ranks that depend on it. Per-op times: CUDA events, placed on the host's
// CLOCK_MONOTONIC through an epoch event recorded at the start of every iteration.
#include <stdexcept>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "validate/measure/cuda_ipc/reduce_kernels.h"
#include "validate/measure/element_type.h"
#include "validate/measure/rank_device.h"

namespace collsim {
namespace {

static_assert(sizeof(cudaIpcMemHandle_t) <= kHandleBytes);
static_assert(sizeof(cudaIpcEventHandle_t) <= kHandleBytes);

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw ValidationError(
        fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
}

class CudaIpcDevice final : public RankDevice {
 public:
  CudaIpcDevice(const Segment& seg, int rank)
      : seg_(seg),
        rank_(rank),
        element_(with_element_type(seg.header().dtype, [](auto e) { return sizeof(e); })) {
    const SegmentHeader& h = seg.header();
    int devices = 0;
    check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices == 0) throw ValidationError("no CUDA device");
    check(cudaSetDevice(rank % devices), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&epoch_), "cudaEventCreate");

    bytes_ = seg.rank_bytes(rank);
    check(cudaMalloc(&base_, std::max<std::uint64_t>(bytes_, 256)), "cudaMalloc");
    cudaIpcMemHandle_t memory{};
    check(cudaIpcGetMemHandle(&memory, base_), "cudaIpcGetMemHandle");
    std::memcpy(seg.rank_handle(rank), &memory, sizeof memory);

    // Timing events for this rank's ops; an interprocess event after each op that an
    // op of another rank depends on.
    const std::vector<bool> awaited = awaited_by_other_ranks();
    slot_.assign(h.num_ops, -1);
    own_event_.assign(h.num_ops, nullptr);
    for (OpId id = 0; id < h.num_ops; ++id) {
      if (seg.op(id).executor() != rank) continue;
      slot_[id] = static_cast<int>(start_.size());
      start_.push_back(new_event(cudaEventDefault));
      end_.push_back(new_event(cudaEventDefault));
      if (!awaited[id]) continue;
      own_event_[id] = new_event(cudaEventDisableTiming | cudaEventInterprocess);
      cudaIpcEventHandle_t handle{};
      check(cudaIpcGetEventHandle(&handle, own_event_[id]), "cudaIpcGetEventHandle");
      std::memcpy(seg.op_handle(id), &handle, sizeof handle);
    }
  }

  ~CudaIpcDevice() override {
    // Only reached once every peer has closed this rank's memory (the exit phase), or
    // on a failure, where the runner kills everyone anyway.
    close_peers();
    for (cudaEvent_t e : owned_events_) cudaEventDestroy(e);
    if (base_) cudaFree(base_);
    if (epoch_) cudaEventDestroy(epoch_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void connect() override {
    const SegmentHeader& h = seg_.header();
    peer_base_.assign(h.ranks, nullptr);
    peer_base_[rank_] = static_cast<char*>(base_);
    peer_event_.assign(h.num_ops, nullptr);
    for (OpId id = 0; id < h.num_ops; ++id) {
      if (slot_[id] < 0) continue;
      const Op& op = seg_.op(id);
      open_memory(op.src_rank);
      open_memory(op.dst_rank);
      for (DepIndex d = seg_.dep_begin()[id]; d < seg_.dep_begin()[id + 1]; ++d)
        open_event(seg_.deps()[d]);
    }
  }

  void load_inputs() override {
    check(cudaMemcpyAsync(base_, seg_.buffer(rank_, 0), bytes_, cudaMemcpyHostToDevice, stream_),
          "copying the inputs to the GPU");
    check(cudaStreamSynchronize(stream_), "copying the inputs to the GPU");
    // The epoch: its GPU timestamp lies between these two host clock readings.
    const std::int64_t before = monotonic_ns();
    check(cudaEventRecord(epoch_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(epoch_), "cudaEventSynchronize");
    epoch_ns_ = before + (monotonic_ns() - before) / 2;
  }

  void run(OpId id, std::int64_t*) override {
    const Op& op = seg_.op(id);
    if (op.is_switch())  // would need multimem (NVLS), a SHARP network, or a per-peer fallback
      throw std::runtime_error(
          "the CUDA IPC transport does not run switch ops (NVLS, CollNet) yet");
    for (DepIndex d = seg_.dep_begin()[id]; d < seg_.dep_begin()[id + 1]; ++d)
      if (cudaEvent_t e = peer_event_[seg_.deps()[d]])
        check(cudaStreamWaitEvent(stream_, e, 0), "cudaStreamWaitEvent");
    const int slot = slot_[id];
    check(cudaEventRecord(start_[slot], stream_), "cudaEventRecord");
    char* dst = pointer(op.dst_rank, op.dst_buffer, op.dst_offset);
    const char* src = pointer(op.src_rank, op.src_buffer, op.src_offset);
    if (op.count > 0) {
      if (op.kind == OpKind::Copy)
        check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(op.count) * element_,
                              cudaMemcpyDefault, stream_),
              "cudaMemcpyAsync to a peer");
      else
        check(static_cast<cudaError_t>(enqueue_reduction(
                  seg_.header().dtype, seg_.header().reduce_op, dst, src, op.count, stream_)),
              "launching a reduction kernel");
    }
    check(cudaEventRecord(end_[slot], stream_), "cudaEventRecord");
    if (own_event_[id])
      check(cudaEventRecord(own_event_[id], stream_), "cudaEventRecord (interprocess)");
  }

  void end_iteration(std::int64_t* times) override {
    check(cudaStreamSynchronize(stream_), "running the schedule on the GPU");
    for (OpId id = 0; id < slot_.size(); ++id) {
      if (slot_[id] < 0) continue;
      times[2 * id] = since_epoch(start_[slot_[id]]);
      times[2 * id + 1] = since_epoch(end_[slot_[id]]);
    }
  }

  void collect_outputs() override {
    check(cudaMemcpy(seg_.buffer(rank_, 0), base_, bytes_, cudaMemcpyDeviceToHost),
          "copying the outputs from the GPU");
    close_peers();
  }

 private:
  cudaEvent_t new_event(unsigned flags) {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, flags), "cudaEventCreateWithFlags");
    owned_events_.push_back(e);
    return e;
  }

  // Ops whose completion an op run by another rank must wait for.
  std::vector<bool> awaited_by_other_ranks() const {
    const SegmentHeader& h = seg_.header();
    std::vector<bool> awaited(h.num_ops, false);
    for (OpId id = 0; id < h.num_ops; ++id)
      for (DepIndex d = seg_.dep_begin()[id]; d < seg_.dep_begin()[id + 1]; ++d) {
        const OpId dep = seg_.deps()[d];
        if (seg_.op(dep).executor() != seg_.op(id).executor()) awaited[dep] = true;
      }
    return awaited;
  }

  void open_memory(int rank) {
    if (peer_base_[rank]) return;
    cudaIpcMemHandle_t handle{};
    std::memcpy(&handle, seg_.rank_handle(rank), sizeof handle);
    void* p = nullptr;
    check(cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess),
          fmt::format("cudaIpcOpenMemHandle of rank {}", rank).c_str());
    peer_base_[rank] = static_cast<char*>(p);
    opened_memory_.push_back(p);
  }

  void open_event(OpId dep) {
    if (seg_.op(dep).executor() == rank_ || peer_event_[dep]) return;  // own stream orders it
    cudaIpcEventHandle_t handle{};
    std::memcpy(&handle, seg_.op_handle(dep), sizeof handle);
    check(cudaIpcOpenEventHandle(&peer_event_[dep], handle),
          fmt::format("cudaIpcOpenEventHandle of op {}", dep).c_str());
    opened_events_.push_back(peer_event_[dep]);
  }

  void close_peers() {
    for (void* p : opened_memory_) cudaIpcCloseMemHandle(p);
    for (cudaEvent_t e : opened_events_) cudaEventDestroy(e);
    opened_memory_.clear();
    opened_events_.clear();
  }

  char* pointer(int rank, int buffer, std::int64_t offset_elements) const {
    const std::uint64_t within_rank =
        seg_.buffer_offset(rank, buffer) - seg_.buffer_offset(rank, 0);
    return peer_base_[rank] + within_rank + static_cast<std::uint64_t>(offset_elements) * element_;
  }

  std::int64_t since_epoch(cudaEvent_t e) const {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, epoch_, e), "cudaEventElapsedTime");
    return epoch_ns_ + std::llround(static_cast<double>(ms) * 1e6);
  }

  const Segment& seg_;
  const int rank_;
  const std::size_t element_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t epoch_ = nullptr;
  std::int64_t epoch_ns_ = 0;
  void* base_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::vector<int> slot_;                  // per op: index into start_/end_, -1 if not ours
  std::vector<cudaEvent_t> start_, end_;   // timing events of our ops
  std::vector<cudaEvent_t> own_event_;     // per op: interprocess event recorded after it
  std::vector<cudaEvent_t> owned_events_;  // everything above, to destroy
  std::vector<char*> peer_base_;           // per rank: where its buffers are mapped here
  std::vector<cudaEvent_t> peer_event_;    // per op of another rank: its opened event
  std::vector<void*> opened_memory_;
  std::vector<cudaEvent_t> opened_events_;
};

}  // namespace

std::unique_ptr<RankDevice> make_cuda_ipc_device(const Segment& seg, int rank) {
  return std::make_unique<CudaIpcDevice>(seg, rank);
}

int cuda_device_count() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

std::string cuda_device_summary() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    throw ValidationError(fmt::format("--backend cuda-ipc: no CUDA device ({})",
                                      e != cudaSuccess ? cudaGetErrorString(e) : "none visible"));
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return fmt::format("{} x {}", devices, prop.name);
}

}  // namespace collsim
