// Small kernels of the GPU eigensolver (gpu/eigen/): the operator's shift on
// the CSR diagonal and the residual column norms of a Ritz block.
#include <algorithm>

#include "impl/eigen_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu {

namespace {

__global__ void shift_diagonal_kernel(double* __restrict__ values, const int* __restrict__ diag_pos,
                                      const double* __restrict__ diag, double shift, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    values[diag_pos[i]] = diag[i] - shift;
}

// Block (x: column, y: row group); each block writes its partial sums of
// (aw - theta x)^2 per column to partial[blockIdx.x * b + column]: summed on
// the host in a fixed order, so the norms do not depend on scheduling.
__global__ void residual_partials_kernel(const double* __restrict__ aw, const double* __restrict__ x,
                                         const double* __restrict__ theta, int64_t n, int b,
                                         double* __restrict__ partial) {
  extern __shared__ double sums[];  // blockDim.y x blockDim.x
  const int c = threadIdx.x;
  double s = 0;
  if (c < b) {
    const double t = theta[c];
    for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.y) + threadIdx.y; r < n;
         r += static_cast<int64_t>(gridDim.x) * blockDim.y) {
      const double d = aw[r * b + c] - t * x[r * b + c];
      s += d * d;
    }
  }
  sums[threadIdx.y * blockDim.x + c] = s;
  __syncthreads();
  for (int h = blockDim.y / 2; h > 0; h /= 2) {
    if (threadIdx.y < h) sums[threadIdx.y * blockDim.x + c] += sums[(threadIdx.y + h) * blockDim.x + c];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < b) partial[blockIdx.x * static_cast<int64_t>(b) + c] = sums[c];
}

}  // namespace

void launch_shift_diagonal(double* values, const int* diag_pos, const double* diag, double shift, int64_t n,
                           cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  shift_diagonal_kernel<<<blocks, threads, 0, stream>>>(values, diag_pos, diag, shift, n);
  launch_check("shift_diagonal_kernel");
}

int residual_partial_blocks() { return 256; }

void launch_residual_partials(const double* aw, const double* x, const double* theta, int64_t n, int b,
                              double* partial, cudaStream_t stream) {
  // Columns on x (rounded up to a warp), rows on y; at most 1024 threads.
  const int bx = (b + 31) / 32 * 32;
  int by = 1;
  while (by * 2 * bx <= 256) by *= 2;
  const dim3 threads(bx, by);
  const size_t shared = static_cast<size_t>(bx) * by * sizeof(double);
  residual_partials_kernel<<<residual_partial_blocks(), threads, shared, stream>>>(aw, x, theta, n, b, partial);
  launch_check("residual_partials_kernel");
}

}  // namespace manifold::gpu
