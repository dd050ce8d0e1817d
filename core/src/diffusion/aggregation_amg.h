#pragma once
// Private to the warm eigensolver: the smoothed-aggregation AMG V-cycle
// (Vanek, Mandel, Brezina 1996) that preconditions LOBPCG, for the SPD
// matrix L + shift I. The k-NN graph Laplacian is the textbook case for
// aggregation multigrid: it inverts L on the smooth end of its spectrum,
// where the wanted eigenvectors are.
#include <Eigen/Dense>

#include <cstdint>
#include <vector>

#include "block_products.h"

namespace manifold::detail::warm {

class Amg {
 public:
  /// Hierarchy for the SPD matrix m0 with near-null vector b (the constant
  /// of the Markov chain in the symmetric conjugate: sqrt(d)).
  Amg(Csr m, Eigen::VectorXd b, int smoothing, int coarse_size, int threads, int cycles = 1);

  /// The k smallest eigenvectors of the Galerkin problem on the coarsest
  /// level (P^T (L + shift) P y = mu P^T P y), prolonged to the finest: smooth
  /// approximations of L's lowest eigenvectors.
  Block coarse_eigenvectors(int k, double shift) const;

  /// z = T r: `cycles` V-cycles from z = 0 (each after the first on the
  /// residual of the ones before).
  void apply(const Block& r, Block& z) const;

  std::vector<int64_t> level_rows() const;
  double operator_complexity() const;

 private:
  struct Level {
    CsrF a, p, r;
    std::vector<float> dinv;  // 1 / a_ii
    double rho = 2;           // bound on the spectrum of D^-1 a
  };

  /// Chebyshev smoothing of degree smoothing_ on [rho / ratio, rho] of
  /// D^-1 a (Saad, Alg. 12.1), from x (zero when `from_zero`).
  void smooth(const Level& lv, const BlockF& b, BlockF& x, bool from_zero) const;
  /// The smoother damps D^-1 a's spectrum on [rho / 10, rho]; below that
  /// is the coarse grid's part.
  static constexpr double cheb_ratio() { return 10.0; }
  /// One V-cycle from level l down: x = V_l b.
  void cycle(size_t l, const BlockF& b, BlockF& x) const;

  std::vector<Level> levels_;
  Eigen::LLT<Eigen::MatrixXd> coarse_;
  Eigen::MatrixXd coarse_matrix_, coarse_gram_;
  int64_t coarse_rows_ = 0, coarse_nnz_ = 0;
  int smoothing_;
  int cycles_;
  int threads_;
};

}  // namespace manifold::detail::warm
