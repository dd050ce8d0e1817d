#pragma once
// Chebyshev-filtered subspace iteration (Zhou & Saad 2007) for the largest
// eigenpairs of a symmetric operator whose spectrum lies in [lower, 1], on an
// abstract block back end. The algorithm is here, in core, once; a back end
// supplies only the block products -- the GPU's is cuSPARSE SpMM + cuBLAS
// (gpu/eigensolver.cpp), the CPU's (`CsrBlockOperator`) serves the tests and
// as the reference.
//
// Why this method for a GPU: every step is a sparse-times-block product
// (the matrix read once for the whole block) or a tall-skinny GEMM, with no
// single-vector Krylov recurrence and its many small launches, and a block
// holds repeated eigenvalues (a circle's pairs, a sphere's triplet) without a
// separate lock check. The block starts from previous eigenvectors when there
// are some (re-embedding after a change of k' or epsilon).
#include <cstdint>
#include <string>
#include <vector>

#include "manifold/diffusion_map.h"
#include "manifold/progress.h"

namespace manifold {

/// Blocks are `rows() x block()` row-major arrays of double held by the back
/// end (host or device), addressed by slot 0..3. Small matrices travel as
/// column-major std::vector<double> on the host.
class BlockOperator {
 public:
  virtual ~BlockOperator() = default;
  virtual int64_t rows() const = 0;
  virtual int block() const = 0;
  /// slot <- host (rows x block, row-major).
  virtual void upload(int slot, const double* host) = 0;
  /// The first `cols` columns of slot -> host (rows x cols, row-major).
  virtual void download(int slot, int cols, double* host) = 0;
  /// The operator is A - shift I from now on.
  virtual void set_shift(double shift) = 0;
  /// out <- alpha (A - shift I) in + beta out (out != in; beta = 0 ignores out's contents).
  virtual void apply(int in, int out, double alpha, double beta) = 0;
  /// a^T b (block x block, column-major).
  virtual std::vector<double> inner(int a, int b) = 0;
  /// out <- in M (M block x block, column-major; out != in).
  virtual void multiply(int in, const std::vector<double>& m, int out) = 0;
  /// Squared column norms of aw - x diag(theta) (block values).
  virtual std::vector<double> residual_norms2(int aw, int x, const std::vector<double>& theta) = 0;
};

struct ChebyshevOptions {
  double tolerance = 1e-10;       ///< |A v - lambda v| <= tolerance * max(|lambda|, eps^(2/3)) for every wanted pair
  double lower = -1;              ///< a lower bound of the spectrum (-1 for a diffusion operator: |lambda| <= 1)
  double upper = 1;               ///< the top of the spectrum (the filter is scaled to 1 there)
  int max_degree = 400;           ///< filter degree per outer iteration, at most
  int64_t max_products = 200000;  ///< block products in all before giving up (EigensolveBudgetExceeded)
  double time_limit_s = 0;        ///< seconds before giving up (EigensolveBudgetExceeded); 0 = none
  uint64_t seed = 0x5eed;         ///< random columns of the start block
  /// Start vectors (rows x start_cols, row-major, need not be orthonormal);
  /// the rest of the block is random.
  const double* start = nullptr;
  int start_cols = 0;
  bool trace = false;  ///< one line per outer iteration on stderr
};

struct ChebyshevStats {
  int outer_iterations = 0;
  int64_t products = 0;                ///< block products (each block() mat-vecs)
  int orthonormalisation_retries = 0;  ///< Cholesky QR passes that needed a shift
  std::vector<int> degrees;            ///< filter degree of each outer iteration
};

/// The `count` largest eigenpairs of the back end's operator. Returns
/// eigenvalues descending and unit eigenvectors (rows x count, row-major);
/// max_residual as Eigenpairs documents. Throws EigensolveBudgetExceeded
/// when it does not converge within max_products or time_limit_s,
/// Cancelled when progress is cancelled.
Eigenpairs chebyshev_eigenpairs(BlockOperator& op, int count, const ChebyshevOptions& options, Progress& progress,
                                ChebyshevStats* stats = nullptr);

/// Block size for `count` wanted pairs out of n: count plus guard vectors
/// (the filter's cut sits at the block's smallest Ritz value, so guards widen
/// the gap it converges by); `requested` > 0 overrides.
int chebyshev_block(int count, int64_t n, int requested = 0);

/// The CPU back end on a DiffusionMatrix (multi-threaded row loops).
class CsrBlockOperator final : public BlockOperator {
 public:
  CsrBlockOperator(const DiffusionMatrix& a, int block, int threads = 0);
  int64_t rows() const override { return a_.n; }
  int block() const override { return b_; }
  void upload(int slot, const double* host) override;
  void download(int slot, int cols, double* host) override;
  void set_shift(double shift) override { shift_ = shift; }
  void apply(int in, int out, double alpha, double beta) override;
  std::vector<double> inner(int a, int b) override;
  void multiply(int in, const std::vector<double>& m, int out) override;
  std::vector<double> residual_norms2(int aw, int x, const std::vector<double>& theta) override;

 private:
  const DiffusionMatrix& a_;
  int b_;
  int threads_;
  double shift_ = 0;
  std::vector<double> slot_[4];
};

}  // namespace manifold
