#pragma once
// Every CUDA and cuBLAS call is checked; a failure becomes manifold::Error with
// one line naming the device, what was being done and the driver's reason.
// Out-of-memory is its own type so the planner can retry with smaller tiles.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "manifold/error.h"
#include "utils/format.h"

namespace manifold::gpu {

class DeviceOutOfMemory : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* what);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* what);

inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw_cuda_error(status, what);
}
inline void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, what);
}
/// After a kernel launch: catches bad launch configurations at once (faults
/// inside the kernel surface at the next synchronising call, also checked).
inline void launch_check(const char* kernel) { cuda_check(cudaGetLastError(), kernel); }

}  // namespace manifold::gpu
