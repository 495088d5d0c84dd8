#include <cuda_runtime.h>

#include <algorithm>

#include "replay/scalar_ops.h"
#include "validate/measure/cuda_ipc/reduce_kernels.h"

namespace collsim {
namespace {

// Grid-stride, one element per thread per pass: the op is memory bound, and dst may be
// this GPU's memory while src is a peer's (read over NVLink/PCIe through the IPC mapping).
template <class T, class Reduce>
__global__ void reduce_kernel(T* __restrict__ dst, const T* __restrict__ src, std::int64_t count) {
  const Reduce f;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dst[i] = f(dst[i], src[i]);
}

template <class T, class Reduce>
cudaError_t launch(void* dst, const void* src, std::int64_t count, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t blocks = std::min<std::int64_t>((count + kThreads - 1) / kThreads, 4096);
  reduce_kernel<T, Reduce><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<T*>(dst), static_cast<const T*>(src), count);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_for(ReduceOp op, void* dst, const void* src, std::int64_t count,
                       cudaStream_t stream) {
  return reduction::with_reduction(
      op, [&](auto f) { return launch<T, decltype(f)>(dst, src, count, stream); });
}

}  // namespace

int enqueue_reduction(DType dtype, ReduceOp op, void* dst, const void* src, std::int64_t count,
                      void* stream) {
  if (count <= 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::F32:
      return launch_for<float>(op, dst, src, count, s);
    case DType::F64:
      return launch_for<double>(op, dst, src, count, s);
    case DType::I32:
      return launch_for<std::int32_t>(op, dst, src, count, s);
    case DType::I64:
      return launch_for<std::int64_t>(op, dst, src, count, s);
    case DType::BF16:
      return launch_for<BFloat16>(op, dst, src, count, s);
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

}  // namespace collsim
