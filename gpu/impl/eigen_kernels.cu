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

// y = alpha A x + beta y for a CSR matrix and row-major n x b blocks: a warp
// per row, lanes over the block's columns (COLS columns each, b <= 32 COLS).
// The row's (column, value) pairs are read by the warp together and
// broadcast, so each non-zero costs one coalesced read of x's row.
template <int COLS>
__global__ void __launch_bounds__(256)
    csr_spmm_kernel(const int* __restrict__ ptr, const int* __restrict__ col, const double* __restrict__ val,
                    const double* __restrict__ x, double* __restrict__ y, int64_t n, int b, double alpha, double beta) {
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; i < n; i += warps) {
    double acc[COLS];
#pragma unroll
    for (int q = 0; q < COLS; ++q) acc[q] = 0;
    const int start = ptr[i], end = ptr[i + 1];
    for (int base = start; base < end; base += 32) {
      const int p = base + lane;
      int cj = 0;
      double vj = 0;
      if (p < end) cj = col[p], vj = val[p];
      const int count = min(32, end - base);
#pragma unroll 4
      for (int t = 0; t < count; ++t) {
        const int j = __shfl_sync(kAll, cj, t);
        const double v = __shfl_sync(kAll, vj, t);
        const double* xr = x + static_cast<int64_t>(j) * b;
#pragma unroll
        for (int q = 0; q < COLS; ++q) {
          const int c = lane + 32 * q;
          if (c < b) acc[q] = fma(v, __ldg(xr + c), acc[q]);
        }
      }
    }
    double* yr = y + i * b;
#pragma unroll
    for (int q = 0; q < COLS; ++q) {
      const int c = lane + 32 * q;
      if (c < b) yr[c] = beta == 0 ? alpha * acc[q] : fma(alpha, acc[q], beta * yr[c]);
    }
  }
}

}  // namespace

bool csr_spmm_supports(int b) { return b >= 1 && b <= 128; }

void launch_csr_spmm(const int* ptr, const int* col, const double* val, const double* x, double* y, int64_t n, int b,
                     double alpha, double beta, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + 7) / 8, 65535));
  switch ((b + 31) / 32) {
    case 1: csr_spmm_kernel<1><<<blocks, threads, 0, stream>>>(ptr, col, val, x, y, n, b, alpha, beta); break;
    case 2: csr_spmm_kernel<2><<<blocks, threads, 0, stream>>>(ptr, col, val, x, y, n, b, alpha, beta); break;
    case 3: csr_spmm_kernel<3><<<blocks, threads, 0, stream>>>(ptr, col, val, x, y, n, b, alpha, beta); break;
    case 4: csr_spmm_kernel<4><<<blocks, threads, 0, stream>>>(ptr, col, val, x, y, n, b, alpha, beta); break;
    default: throw Error("csr_spmm: blocks of more than 128 columns are not supported");
  }
  launch_check("csr_spmm_kernel");
}

void launch_shift_diagonal(double* values, const int* diag_pos, const double* diag, double shift, int64_t n,
                           cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 4096));
  shift_diagonal_kernel<<<blocks, threads, 0, stream>>>(values, diag_pos, diag, shift, n);
  launch_check("shift_diagonal_kernel");
}

int residual_partial_blocks() { return 256; }

void launch_residual_partials(const double* aw, const double* x, const double* theta, int64_t n, int b, double* partial,
                              cudaStream_t stream) {
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
