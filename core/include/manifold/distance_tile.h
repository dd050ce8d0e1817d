#pragma once
// The CPU building block of the exact k-NN graph: one tile of squared
// distances |x|^2 + |y|^2 - 2 x.y from OpenBLAS SGEMM, offered to bounded
// (distance, index) lists of its rows and of its columns. The CPU backend and
// the MPI backend's per-rank engine both assemble graphs from it, so their
// candidates are bit-identical.
#include <cstdint>

#include "manifold/topk.h"

namespace manifold {

/// Edge of the CPU tiles: 512 x 512 floats (1 MiB) stay in L2 while both their
/// rows and their columns are scanned. The MPI engine cuts row blocks on these
/// boundaries so that it computes the very same tiles.
inline constexpr int64_t kCpuTile = 512;

/// Largest squared row norm the float32 tiles hold: a tile entry
/// |x|^2 + |y|^2 - 2 x.y stays below 4 x this, far from FLT_MAX (3.4e38).
inline constexpr double kMaxSquaredNorm = 5.3e36;  // ~2^122

/// Row norms |x|^2 accumulated in double, rounded to float. Throws Error
/// for a row of finite values whose squared norm exceeds kMaxSquaredNorm
/// (its float32 distances would overflow into a wrong graph); rows holding
/// NaN or infinity are left to the ranking, which puts them last.
void squared_norms(const float* rows, int64_t n, int64_t d, float* norms, int threads = 0);

/// tile[i*cn + j] = norms_r[i] + norms_c[j] - 2 <r_i, c_j> for rn rows `r`
/// and cn rows `c` of dimension d (row-major). Single-threaded (callers run
/// tiles in parallel).
void distance_tile(const float* r, const float* norms_r, int64_t rn, const float* c, const float* norms_c, int64_t cn,
                   int64_t d, float* tile);

/// Offers each tile row i to lists[i] with column ids c0 + j; skips the pair
/// of a point with itself (global ids equal) unless keep_self.
void offer_to_rows(const float* tile, int64_t rn, int64_t cn, int64_t r0, int64_t c0, TopK* lists, bool keep_self);

/// Offers each tile column j to lists[j] with row ids r0 + i (the transposed
/// tile: the other half of a symmetric distance matrix).
void offer_to_columns(const float* tile, int64_t rn, int64_t cn, int64_t r0, int64_t c0, TopK* lists, bool keep_self);

/// While alive, BLAS runs one thread per call: the tile loops already run one
/// tile per core, and BLAS threads on top would oversubscribe them. The old
/// thread count comes back on destruction.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_threads_;
};

}  // namespace manifold
