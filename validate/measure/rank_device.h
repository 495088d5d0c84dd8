#pragma once
// What a transport does inside one rank process: where the rank's buffers live and
// how it runs an op. The rank loop around it (waiting for dependencies, phases,
// fault reporting) is the runner's and the same for every transport.
#include <cstdint>
#include <memory>
#include <string>

#include "validate/measure/control_segment.h"

namespace collsim {

class RankDevice {
 public:
  virtual ~RankDevice() = default;
  // After every rank's constructor has published its handles: open the peers'.
  virtual void connect() {}
  // The iteration's inputs are in the staging area: put them where the ops run.
  virtual void load_inputs() {}
  // Runs op `id` of this rank, whose dependencies are all started (done counters);
  // a transport that only enqueues work must order it after them itself. Writes
  // [start, end] ns into times[2 id] now or at end_iteration.
  virtual void run(OpId id, std::int64_t* times) = 0;
  // Waits for this rank's ops of the iteration to complete.
  virtual void end_iteration(std::int64_t* times) { (void)times; }
  // After the last iteration: outputs into the staging area; stop using peers' memory.
  virtual void collect_outputs() {}
};

// Buffers are the staging area itself; ops are memcpy or a reduction loop.
std::unique_ptr<RankDevice> make_shm_device(const Segment& seg, int rank);

#ifdef COLLSIM_HAVE_CUDA
// Buffers in cudaMalloc'ed memory on GPU rank % devices, shared by CUDA IPC.
std::unique_ptr<RankDevice> make_cuda_ipc_device(const Segment& seg, int rank);
// "2 x NVIDIA H200"; throws ValidationError("... no CUDA device") when there is none.
std::string cuda_device_summary();
int cuda_device_count();
#endif

}  // namespace collsim
