#pragma once
// The cluster backend: `manifold knn DATA --backend mpi ...` started by
// `mpirun -np P`. Every rank runs the same command; the exact k-NN graph is
// computed with Dashti et al.'s scheme (P row blocks, the blocks on and above
// the diagonal spread over the ranks, per-row and per-column candidate lists
// merged by the owner of each row block) and is identical to the
// single-process CPU backend's. Rank 0 returns the graph; the other ranks
// return a KnnGraph with output_rank = false.
//
// Data: each rank reads only the rows of its blocks (about 2/3 of them at P = 3,
// 0.6 to 0.8 at P = 4, towards half for large P) when
// the input is a float32 .npy, which is memory-mapped. Every other format
// (IDX, other .npy types, images, MRC, HDF5) is loaded whole by every rank
// before the backend runs, so each rank then holds the full data in memory.
// Rank 0 also reads the whole input once for the fingerprint in graph.json.
// Rows that share a large common part are moved about their mean as the CPU
// backend moves them (manifold/exact/translation.h), by one translation that
// rank 0 decides from its sample rows and every rank checks on the rows it
// owns (mpi/src/shared_translation.h); graph.json reports it as the CPU
// backend does (translated_columns, translation_norm_ratio, translation_exact).
//
// MPI is initialised lazily (MPI_THREAD_FUNNELED) by the first build() and
// finalised at exit, so build() must always be called from the same thread.
//
// Environment (read once per process: mpi/src/settings.h; a bad value is
// one line naming the variable):
//   MANIFOLD_PROGRESS_FILE   rank 0 appends the aggregated progress of all
//                            ranks there as JSON lines (see manifold/cluster.h)
//   MANIFOLD_MPI_LOCAL       the engine of each rank: "auto" (default: the GPU
//                            backend on sub-problems when every rank has a GPU,
//                            else exact CPU tiles), "tiles", or a registered
//                            backend name run on sub-problems (e.g. "cpu")
//   MANIFOLD_MPI_FAIL_RANK   testing: this rank fails (at MANIFOLD_MPI_FAIL_STAGE
//                            = prepare | knn | merge, default knn; with
//                            MANIFOLD_MPI_FAIL_MODE=crash it aborts, =fail
//                            (default) it throws)
namespace manifold::mpi {

/// Registers the "mpi" backend (name "mpi").
void register_mpi_backend();

/// This process's rank as told by the MPI launcher's environment (OpenMPI,
/// MPICH/Hydra, Slurm), or -1 when not started by a launcher. Needs no MPI
/// call, so the CLI can quieten ranks other than 0 before anything runs.
int launcher_rank();

}  // namespace manifold::mpi
