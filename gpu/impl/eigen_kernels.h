#pragma once
// Launchers of the GPU eigensolver's kernels (impl/eigen_kernels.cu).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace manifold::gpu {

/// values[diag_pos[i]] = diag[i] - shift for i < n (the CSR's diagonal entries).
void launch_shift_diagonal(double* values, const int* diag_pos, const double* diag, double shift, int64_t n,
                           cudaStream_t stream);

/// y = alpha A x + beta y: A in CSR (int32 offsets and columns), x and y
/// row-major n x b (x != y); beta = 0 ignores y's contents. b <= 128
/// (csr_spmm_supports).
bool csr_spmm_supports(int b);
void launch_csr_spmm(const int* ptr, const int* col, const double* val, const double* x, double* y, int64_t n, int b,
                     double alpha, double beta, cudaStream_t stream);

/// Blocks launch_residual_partials uses (partial holds blocks x b values).
int residual_partial_blocks();
/// partial[blk * b + c] = sum over blk's rows of (aw[r,c] - theta[c] x[r,c])^2;
/// aw, x row-major n x b (b <= 1024).
void launch_residual_partials(const double* aw, const double* x, const double* theta, int64_t n, int b, double* partial,
                              cudaStream_t stream);

}  // namespace manifold::gpu
