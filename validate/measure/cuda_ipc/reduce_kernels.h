#pragma once
// The reduction kernels of the cuda-ipc transport, behind a plain C++ interface so
// that only reduce_kernels.cu goes through nvcc.
#include <cstdint>

#include "schedule/collective.h"

namespace collsim {

// Enqueues dst[i] = dst[i] (op) src[i] for i < count on `stream` (a cudaStream_t);
// the arithmetic is the replayer's (replay/scalar_ops.h), so results match bit for bit.
// Returns the launch's cudaError_t as an int (0: success).
int enqueue_reduction(DType dtype, ReduceOp op, void* dst, const void* src, std::int64_t count,
                      void* stream);

}  // namespace collsim
