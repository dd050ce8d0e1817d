#pragma once
// Private to core/src/diffusion: the warm-started eigensolver behind
// rediffuse() (LOBPCG preconditioned by a smoothed-aggregation AMG V-cycle)
// and the matrix reordering it shares with top_eigenpairs().
#include <Eigen/Dense>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "manifold/diffusion_map.h"

namespace manifold::detail {

/// Reverse Cuthill-McKee order of the matrix graph (order[new] = old).
std::vector<int32_t> rcm_order(const DiffusionMatrix& a);
/// Deterministic signs: flips each column of `vectors` (n x count,
/// row-major) whose entry of largest magnitude (the first such) is negative.
void largest_entry_positive(std::vector<double>& vectors, int64_t n, int count, int threads);
/// Whether `order` holds each of 0..n-1 exactly once.
bool is_permutation_of(const std::vector<int32_t>& order, int64_t n);
/// The rows and columns of `a` in the order `order`: row_ptr, col, val and
/// diag only.
DiffusionMatrix permuted(const DiffusionMatrix& a, const std::vector<int32_t>& order, int threads);

struct WarmOptions {
  double tolerance = 1e-10;  ///< |A v - lambda v| / |lambda| per wanted pair
  int threads = 0;
  int guard = 6;             ///< block columns beyond the wanted pairs (they speed up the last wanted ones)
  int max_iterations = 60;   ///< LOBPCG iterations before giving up (converged = false)
  double time_limit_s = 0;   ///< seconds (with the AMG setup) before giving up likewise; 0 = none
  double shift = 0;          ///< preconditioner T ~ (L + shift I)^-1; 0 = a tenth of the start's count-th Ritz value
  int smoothing = 2;         ///< degree of the Chebyshev smoother before and after each coarse-grid correction
  int cycles = 2;            ///< V-cycles per preconditioner application (the second on the first's residual)
  int coarse_size = 400;     ///< levels are added until a level has at most this many rows (dense Cholesky)
  bool guard_search = true;  ///< the guard columns get search directions too (fewer iterations, each dearer)
  bool trace = false;        ///< one line per iteration on stderr
  /// Called once with the first iterate (in A's row order, unit vectors,
  /// max_residual: the iteration's estimate) whose worst residual is at most
  /// preview_tolerance, from preview_not_before on; unset: never.
  double preview_tolerance = 0;
  std::chrono::steady_clock::time_point preview_not_before{};
  std::function<void(const Eigenpairs&)> on_preview;
};

struct WarmStats {
  int iterations = 0;                  ///< LOBPCG iterations
  int64_t matvecs = 0;                 ///< products of A with one vector (block products count per column)
  int64_t preconditioner_applies = 0;  ///< V-cycles, per column
  bool converged = false;              ///< every wanted pair reached the tolerance
  double max_residual = 0;             ///< max over the wanted pairs, recomputed from A at the end
  double setup_s = 0;                  ///< AMG hierarchy
  double solve_s = 0;                  ///< LOBPCG iterations
  double preconditioner_s = 0;         ///< of which V-cycles
  std::vector<int64_t> level_rows;     ///< rows per AMG level, finest first
  double operator_complexity = 0;      ///< sum of the levels' non-zeros / the finest level's
  double shift = 0;                    ///< the preconditioner shift used
};

/// The `count` largest eigenpairs of A (in A's row order, like
/// top_eigenpairs) by block LOBPCG on L = I - A, started from the columns of
/// `start` (n x s, A's row order; random columns make up a block of count +
/// guard), preconditioned by `options.cycles` smoothed-aggregation V-cycles
/// for L + shift I built on A itself. Runs on A in reverse Cuthill-McKee order.
/// Progress counts mat-vecs and cancels between iterations.
/// `order` (optional): a row order to run in instead of computing A's
/// reverse Cuthill-McKee order (a previous solve's, on the same points);
/// one that is not a permutation of A's rows is ignored.
Eigenpairs warm_eigenpairs(const DiffusionMatrix& a, int count, const Eigen::MatrixXd& start,
                           const WarmOptions& options, Progress& progress, WarmStats* stats,
                           const std::vector<int32_t>* order = nullptr);

}  // namespace manifold::detail
