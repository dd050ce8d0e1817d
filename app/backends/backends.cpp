#include "backends/backends.h"

#include "manifold/knn.h"
#ifdef MANIFOLD_HAVE_CUDA
#include "manifold/gpu/gpu_eigensolver.h"
#include "manifold/gpu/gpu_knn_backend.h"
#endif
#ifdef MANIFOLD_HAVE_MPI
#include "manifold/mpi/mpi_knn_backend.h"
#endif

namespace manifold {

void register_all_backends() {
  register_cpu_backend();
#ifdef MANIFOLD_HAVE_CUDA
  gpu::register_gpu_backend();
  gpu::register_gpu_eigensolver();
#endif
#ifdef MANIFOLD_HAVE_MPI
  mpi::register_mpi_backend();
#endif
}

}  // namespace manifold
