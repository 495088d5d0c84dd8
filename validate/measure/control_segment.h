#pragma once
// The shared-memory segment through which the runner and its rank processes talk,
// whatever the transport: the schedule, per-op "done" counters that ranks wait on
// with futexes, per-op timestamps, the phase the run is in, each rank's error text,
// handles the transport exchanges (CUDA IPC memory and event handles), and the
// staging area holding every rank's buffers (the buffers themselves for shm).
#include <atomic>
#include <cstdint>
#include <string>

#include "schedule/schedule.h"

namespace collsim {

enum class Backend : std::uint8_t { Shm, CudaIpc };

// Bytes reserved per exchanged handle (cudaIpcMemHandle_t and cudaIpcEventHandle_t are 64).
constexpr std::size_t kHandleBytes = 64;
constexpr std::size_t kErrorBytes = 256;
constexpr std::uint64_t kLineBytes = 64;  // one cache line

// Where each array sits in the segment (byte offsets from its start).
struct SegmentLayout {
  std::uint64_t off_ops, off_dep_begin, off_deps, off_done, off_times, off_starts, off_current,
      off_buffer_at, off_errors, off_rank_handles, off_op_handles, off_affinity, off_data, size;
};

// The run goes through phases 1..iterations (run the schedule once each), then
// collect_phase() (outputs into the staging area, peers' handles closed), then
// exit_phase() (release everything and exit). Separate phases because a rank may
// only free what its peers have stopped using.
struct SegmentHeader {
  std::uint64_t magic;
  Backend backend;
  std::uint32_t ranks, num_ops, num_buffers, iterations;
  // Schedule::switch_groups: the ranks a switch op spans and how far apart they are, on an
  // NVSwitch [0] and in the network [1].
  std::uint32_t switch_group[2], switch_stride[2];
  std::int32_t kill_rank;      // fault injection (tests): this rank kills itself at its first op
  std::int32_t fail_rank;      // ... this rank reports an error at its first op
  DType dtype;
  ReduceOp reduce_op;
  std::int64_t spin_ns;  // how long a waiting rank spins before it sleeps
  SegmentLayout layout;
  std::atomic<std::uint32_t> ready;    // ranks whose transport is set up and handles published
  std::atomic<std::uint32_t> loaded;   // ranks x iterations whose inputs are in place
  std::atomic<std::uint32_t> go;       // the iteration whose start time is set
  std::atomic<std::int64_t> start_ns;  // when every rank starts it (CLOCK_MONOTONIC)
  std::atomic<std::uint32_t> phase;
  std::atomic<std::uint32_t> finished;  // ranks done with the current phase
  std::atomic<std::uint32_t> abort;
  // Ranks inside (or about to enter) a futex wait for an op or a start: a rank finishing
  // an op skips the wake-up system call when none is, which would otherwise delay its
  // next op by about half a microsecond. (The runner sleeps only on phase barriers.)
  std::atomic<std::uint32_t> sleepers;

  std::uint32_t collect_phase() const { return iterations + 1; }
  std::uint32_t exit_phase() const { return iterations + 2; }
};

// A mapped segment and typed views into it.
struct Segment {
  void* base = nullptr;
  std::size_t size = 0;

  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base); }
  template <class T>
  T* at(std::uint64_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
  }
  const SegmentLayout& layout() const { return header().layout; }
  Op* ops() const { return at<Op>(layout().off_ops); }
  const Op& op(OpId id) const { return ops()[id]; }
  DepIndex* dep_begin() const { return at<DepIndex>(layout().off_dep_begin); }
  OpId* deps() const { return at<OpId>(layout().off_deps); }
  // Each counter a rank writes sits on its own cache line: two ranks storing into one
  // line while a third spins on it would bounce it between cores, a delay on every op
  // that a transport with per-peer flags (and the simulator's op overhead) has not.
  std::atomic<std::uint32_t>& done(OpId id) const {
    return *at<std::atomic<std::uint32_t>>(layout().off_done + std::uint64_t{id} * kLineBytes);
  }
  // [iteration][op][start, end], nanoseconds of CLOCK_MONOTONIC.
  std::int64_t* iteration_times(std::uint32_t iteration) const {
    return at<std::int64_t>(layout().off_times) +
           static_cast<std::size_t>(iteration) * header().num_ops * 2;
  }
  std::atomic<std::int32_t>& current(int rank) const {
    return *at<std::atomic<std::int32_t>>(layout().off_current +
                                          static_cast<std::uint64_t>(rank) * kLineBytes);
  }
  // When iteration `iteration` (0-based) released every rank (CLOCK_MONOTONIC ns).
  std::int64_t& iteration_start(std::uint32_t iteration) const {
    return at<std::int64_t>(layout().off_starts)[iteration];
  }
  char* error(int rank) const { return at<char>(layout().off_errors) + rank * kErrorBytes; }
  char* rank_handle(int rank) const {
    return at<char>(layout().off_rank_handles) + rank * kHandleBytes;
  }
  char* op_handle(OpId id) const {
    return at<char>(layout().off_op_handles) + static_cast<std::size_t>(id) * kHandleBytes;
  }
  // What each rank's process reads back of its own CPU affinity: {CPUs allowed, the
  // lowest of them}, written by the rank itself so that a test sees what the kernel holds.
  std::int32_t* affinity(int rank) const {
    return at<std::int32_t>(layout().off_affinity) + 2 * rank;
  }
  std::uint64_t* buffer_at() const { return at<std::uint64_t>(layout().off_buffer_at); }
  // Offset of a rank's buffer within the data area.
  std::uint64_t buffer_offset(int rank, int b) const {
    return buffer_at()[static_cast<std::size_t>(rank) * header().num_buffers + b];
  }
  char* buffer(int rank, int b) const {
    return at<char>(layout().off_data + buffer_offset(rank, b));
  }
  // A rank's buffers lie back to back: this many bytes from buffer(rank, 0).
  std::uint64_t rank_bytes(int rank) const;
};

std::int64_t monotonic_ns();

// Shared (not process-private) futexes: the waiters live in other processes.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, long timeout_ns);
void futex_wake_all(std::atomic<std::uint32_t>& word);
// Sleeps while `word` still holds `seen` (or timeout_ns passes), counted in sleepers.
void sleep_on(const Segment& seg, std::atomic<std::uint32_t>& word, std::uint32_t seen,
              long timeout_ns);
// Wakes the waiters on `word` after a change, if anyone sleeps at all.
void wake(const Segment& seg, std::atomic<std::uint32_t>& word);
// Waits for `word` to reach `target`; false if the runner called the run off.
bool wait_for(const Segment& seg, std::atomic<std::uint32_t>& word, std::uint32_t target);
// Adds one to `word` and wakes its waiters.
void arrive(const Segment& seg, std::atomic<std::uint32_t>& word);

}  // namespace collsim
