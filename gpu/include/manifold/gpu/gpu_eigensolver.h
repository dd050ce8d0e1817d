#pragma once
// The diffusion-map eigensolve on a GPU, behind a CUDA-free header:
// Chebyshev-filtered subspace iteration (core's chebyshev_eigenpairs) with
// the block products on the device -- our CSR SpMM kernel (float64,
// row-major blocks; cuSPARSE's for blocks wider than it takes) and cuBLAS DGEMM.
#include "manifold/diffusion_map.h"
#include "manifold/progress.h"

namespace manifold::gpu {

/// Registers it as the device eigensolver "gpu" (register_device_eigensolver),
/// available when a CUDA device is present.
void register_gpu_eigensolver();

/// The `count` largest eigenpairs of A on `device`, as top_eigenpairs returns
/// them (eigenvalues descending, unit vectors, max_residual), to
/// options.tolerance; options.start_block starts the block, options.ncv > 0
/// sets its size. `details` records the block products, outer iterations,
/// filter degrees and the upload and solve times. Throws DeviceOutOfMemory
/// (an Error) when the matrix and four blocks do not fit, Error when it does
/// not converge.
Eigenpairs gpu_top_eigenpairs(const DiffusionMatrix& a, int count, const EigenOptions& options, Progress& progress,
                              int device = 0);

}  // namespace manifold::gpu
