#include "utils/cuda_check.h"

#include <cstdio>

#include "utils/resources.h"

namespace manifold::gpu {

namespace {
std::string where() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) return "GPU";
  return "GPU " + std::to_string(dev);
}
}  // namespace

void throw_cuda_error(cudaError_t status, const char* what) {
  std::string msg = where() + ": " + what + " failed: " + cudaGetErrorString(status);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so a retry with smaller tiles can proceed
    throw DeviceOutOfMemory(msg);
  }
  throw Error(msg);
}

void throw_cublas_error(cublasStatus_t status, const char* what) {
  std::string msg = where() + ": " + what + " failed: " + cublasGetStatusString(status);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw DeviceOutOfMemory(msg);
  throw Error(msg);
}

cublasMath_t engine_math_mode() { return CUBLAS_PEDANTIC_MATH; }

const char* engine_math_mode_name() { return "pedantic"; }

}  // namespace manifold::gpu
