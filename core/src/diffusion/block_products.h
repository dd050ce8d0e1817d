#pragma once
// Private to the warm eigensolver (warm_eigensolver.cpp, aggregation_amg.cpp):
// the sparse and dense products on blocks of vectors that LOBPCG and the AMG
// preconditioner are made of. Vectors are row-major n x b blocks, so a sparse
// product reads each matrix row once for all columns; the dense
// tall-skinny products run over row blocks, each a single-threaded BLAS call.
#include <Eigen/Dense>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "manifold/diffusion_map.h"

namespace manifold::detail::warm {

using Block = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A square or rectangular CSR matrix (diagonal stored in place).
template <class T>
struct CsrT {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> ptr;
  std::vector<int32_t> col;
  std::vector<T> val;
  int64_t nnz() const { return static_cast<int64_t>(val.size()); }
};
using Csr = CsrT<double>;
// The AMG cycle runs in single precision: it is a preconditioner (its
// error is ~0.3 of the residual anyway) and its sparse passes are
// memory-bound, so half the bytes is nearly half the time.
using CsrF = CsrT<float>;
using BlockF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ---- sparse ------------------------------------------------------------------

CsrF to_float(const Csr& c, int threads);
/// L + shift I = (1 + shift) I - A as a CSR matrix with its diagonal in place.
Csr shifted_laplacian(const DiffusionMatrix& a, double shift, int threads);
/// y = M x for a block of columns.
void spmm(const Csr& m, const Block& x, Block& y, int threads);
void spmm(const CsrF& m, const BlockF& x, BlockF& y, int threads);
/// y = M x for a block, M given by its CSR arrays (ptr: rows + 1 offsets).
void spmm_csr_arrays(const int64_t* ptr, const int32_t* col, const double* val, int64_t rows, const Block& x, Block& y,
                     int threads);
/// y = M x for columns of a wider block (x: row stride ldx).
void spmm_strided(const Csr& m, const double* x, int64_t ldx, int64_t b, Block& y, int threads);
/// One Chebyshev smoothing step on every column: d' = alpha d + beta dinv
/// (b - M x), x' = x + d'. The block width is a multiple of 8.
void cheb_step(const CsrF& m, const std::vector<float>& dinv, const BlockF& b, const BlockF& x, const BlockF& d,
               float alpha, float beta, BlockF& x_out, BlockF& d_out, int threads);
/// r = b - M x.
void residual(const CsrF& m, const BlockF& b, const BlockF& x, BlockF& r, int threads);

// ---- dense, tall-skinny --------------------------------------------------------

/// Columns [c0, c0 + cols) of a row-major block, without a copy.
struct Cols {
  const double* data = nullptr;
  int64_t rows = 0;
  int ld = 0, cols = 0;
  Cols(const Block& m)  // NOLINT: a whole block converts implicitly
      : data(m.data()), rows(m.rows()), ld(static_cast<int>(m.cols())), cols(static_cast<int>(m.cols())) {}
  Cols(const Block& m, Eigen::Index c0, Eigen::Index count)
      : data(m.data() + c0), rows(m.rows()), ld(static_cast<int>(m.cols())), cols(static_cast<int>(count)) {}
};

/// a^T b; partial sums added in block order (independent of the thread count).
Eigen::MatrixXd tgram(Cols a, Cols b, int threads);
/// out = beta out + alpha a c over row blocks (out: rows x c.cols(), row stride ldo).
void times_into(Cols a, const Eigen::MatrixXd& c, double alpha, double beta, double* out, int ldo, int threads);
void times_into(Cols a, const Eigen::MatrixXd& c, double alpha, double beta, Block& out, int threads);
/// a c.
Block times(Cols a, const Eigen::MatrixXd& c, int threads);
/// a -= q c.
void subtract_times(Block& a, Cols q, const Eigen::MatrixXd& c, int threads);
/// Squared column norms of a.
Eigen::VectorXd tgram_diag(const Block& a, int threads);
/// Columns side by side.
Block hcat(std::initializer_list<const Block*> parts);
/// The transform T (cols x kept) that makes w T orthonormal (SVQB),
/// dropping directions whose share of the Gram matrix is below `drop`.
Eigen::MatrixXd svqb(const Eigen::MatrixXd& gram, double drop);
/// w made orthogonal to q (orthonormal) and orthonormal itself: two rounds
/// of block Gram-Schmidt against q, each followed by SVQB.
void orthonormalise_against(const Block& q, Block& w, int threads);
/// The same with one pass over w where rounding allows (see the definition).
void orthonormalise_against2(Cols q, Block& w, int threads);

}  // namespace manifold::detail::warm
