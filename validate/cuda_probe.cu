// Built only when a CUDA toolkit is found: how many CUDA devices this process sees.
// The cuda-ipc transport itself is not written yet; the command refuses cleanly.
#include <cuda_runtime.h>

extern "C" int collsim_cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}
