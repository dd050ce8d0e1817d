// The SGEMM rate the benchmark compares against: cuBLAS float32 GEMM in the
// engine's layout (C = A^T B) and math mode, timed with CUDA events.
#include <algorithm>
#include <vector>

#include "impl/kernels.h"
#include "manifold/error.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "utils/resources.h"

namespace manifold::gpu {

SgemmRate measure_sgemm(int device, int64_t m, int64_t n, int64_t k, int repeats) {
  if (m < 1 || n < 1 || k < 1 || repeats < 1) throw UsageError("SGEMM rate: sizes and repeats must be positive");
  DeviceScope scope(device);
  Stream stream;
  CublasHandle handle;
  cublas_check(cublasSetStream(handle, stream), "binding cuBLAS to its stream");
  DeviceBuffer<float> a(static_cast<size_t>(m * k), "allocating SGEMM operands");
  DeviceBuffer<float> b(static_cast<size_t>(n * k), "allocating SGEMM operands");
  DeviceBuffer<float> c(static_cast<size_t>(m * n), "allocating SGEMM operands");
  launch_fill_random(a.data(), m * k, 11, stream);
  launch_fill_random(b.data(), n * k, 12, stream);
  const float one = 1.f, zero = 0.f;
  auto gemm = [&] {
    cublas_check(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n),
                             static_cast<int>(k), &one, a.data(), static_cast<int>(k), b.data(), static_cast<int>(k),
                             &zero, c.data(), static_cast<int>(m)),
                 "cublasSgemm");
  };
  gemm();  // warm-up: kernel selection and module loading stay out of the timing
  stream.synchronize();
  std::vector<double> times;
  Event start, stop;
  for (int r = 0; r < repeats; ++r) {
    start.record(stream);
    gemm();
    stop.record(stream);
    stop.synchronize("timing cublasSgemm");
    times.push_back(stop.since(start) / 1e3);
  }
  std::sort(times.begin(), times.end());
  SgemmRate rate;
  rate.device = device;
  rate.m = m, rate.n = n, rate.k = k;
  rate.median_s = times[times.size() / 2];
  rate.tflops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / rate.median_s / 1e12;
  rate.math_mode = engine_math_mode_name();
  return rate;
}

}  // namespace manifold::gpu
