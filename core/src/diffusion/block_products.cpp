// The sparse and dense block products of the warm eigensolver
// (block_products.h): the CSR row kernels, compiled for AVX2 + FMA and for
// the baseline, and the tall-skinny dense products over row blocks.
#include "block_products.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "manifold/parallel.h"

namespace manifold::detail::warm {
namespace {

/// Row ranges of about equal non-zeros, several per thread, of the CSR
/// matrix with row offsets ptr[0..rows].
template <class Rows>
void for_ptr_ranges(const int64_t* ptr, int64_t rows, int64_t width, int threads, Rows&& f) {
  const int64_t total = ptr[rows];
  const int t = total * width < 400000 ? 1 : hardware_threads(threads);
  if (t == 1) {
    f(int64_t{0}, rows);
    return;
  }
  const int64_t parts = static_cast<int64_t>(t) * 16;
  auto bound = [&](int64_t part) {
    if (part >= parts) return rows;
    return static_cast<int64_t>(std::lower_bound(ptr, ptr + rows + 1, total * part / parts) - ptr);
  };
  parallel_for(
      0, parts, t, [&](int64_t c) { f(bound(c), bound(c + 1)); }, 1);
}

template <class M, class Rows>
void for_row_ranges(const M& m, int64_t width, int threads, Rows&& rows) {
  for_ptr_ranges(m.ptr.data(), m.rows, width, threads, rows);
}

// The row kernels are built twice on x86-64, for AVX2 + FMA and for the
// baseline, and the loader picks one for the machine (GCC function
// multi-versioning): the block products are compute-bound with SSE2 alone.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MANIFOLD_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MANIFOLD_KERNEL_CLONES
#endif

/// Row i, columns [c0, c0 + W) of y = M x: W accumulators that stay in
/// registers over the row's non-zeros (a runtime width would keep them in
/// memory, a store-to-load chain per non-zero).
template <class T, int W>
__attribute__((always_inline)) inline void spmm_chunk(const int64_t* __restrict ptr, const int32_t* __restrict col,
                                                      const T* __restrict val, const T* __restrict x, int64_t ldx,
                                                      T* __restrict y, int64_t b, int64_t c0, int64_t i) {
  T acc[W] = {};
  for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
    const T v = val[e];
    const T* xj = x + static_cast<int64_t>(col[e]) * ldx + c0;
    for (int k = 0; k < W; ++k) acc[k] += v * xj[k];
  }
  T* yi = y + i * b + c0;
  for (int k = 0; k < W; ++k) yi[k] = acc[k];
}

template <class T>
__attribute__((always_inline)) inline void spmm_rows_impl(const int64_t* __restrict ptr, const int32_t* __restrict col,
                                                          const T* __restrict val, const T* __restrict x, int64_t ldx,
                                                          T* __restrict y, int64_t b, int64_t r0, int64_t r1) {
  constexpr int wide = 64 / sizeof(T), half = wide / 2, quarter = wide / 4;
  for (int64_t i = r0; i < r1; ++i) {
    int64_t c0 = 0;
    for (; c0 + wide <= b; c0 += wide) spmm_chunk<T, wide>(ptr, col, val, x, ldx, y, b, c0, i);
    if (c0 + half <= b) {
      spmm_chunk<T, half>(ptr, col, val, x, ldx, y, b, c0, i);
      c0 += half;
    }
    if (c0 + quarter <= b) {
      spmm_chunk<T, quarter>(ptr, col, val, x, ldx, y, b, c0, i);
      c0 += quarter;
    }
    for (; c0 < b; ++c0) spmm_chunk<T, 1>(ptr, col, val, x, ldx, y, b, c0, i);
  }
}

MANIFOLD_KERNEL_CLONES
void spmm_rows(const int64_t* ptr, const int32_t* col, const double* val, const double* x, int64_t ldx, double* y,
               int64_t b, int64_t r0, int64_t r1) {
  spmm_rows_impl<double>(ptr, col, val, x, ldx, y, b, r0, r1);
}

MANIFOLD_KERNEL_CLONES
void spmm_rows(const int64_t* ptr, const int32_t* col, const float* val, const float* x, int64_t ldx, float* y,
               int64_t b, int64_t r0, int64_t r1) {
  spmm_rows_impl<float>(ptr, col, val, x, ldx, y, b, r0, r1);
}

/// y = M x for a block of columns.
template <class T>
void spmm_block(const CsrT<T>& m, const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& x,
                Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& y, int threads) {
  const int64_t b = x.cols();
  y.resize(static_cast<Eigen::Index>(m.rows), static_cast<Eigen::Index>(b));
  for_row_ranges(m, b, threads, [&](int64_t r0, int64_t r1) {
    spmm_rows(m.ptr.data(), m.col.data(), m.val.data(), x.data(), b, y.data(), b, r0, r1);
  });
}

/// One fused Chebyshev step, row by row: d' = alpha d + beta dinv (b - M x),
/// x' = x + d' (x and d are read, x' and d' written: no row depends on an
/// updated neighbour).
template <int W>
__attribute__((always_inline)) inline void cheb_chunk(const int64_t* __restrict ptr, const int32_t* __restrict col,
                                                      const float* __restrict val, float wi, const float* __restrict b,
                                                      const float* __restrict x, const float* __restrict d, float alpha,
                                                      float* __restrict x_out, float* __restrict d_out, int64_t s,
                                                      int64_t c0, int64_t i) {
  float acc[W];
  const float* bi = b + i * s + c0;
  for (int k = 0; k < W; ++k) acc[k] = bi[k];
  for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
    const float v = val[e];
    const float* xj = x + static_cast<int64_t>(col[e]) * s + c0;
    for (int k = 0; k < W; ++k) acc[k] -= v * xj[k];
  }
  const float* xi = x + i * s + c0;
  const float* di = d + i * s + c0;
  float* xo = x_out + i * s + c0;
  float* dout = d_out + i * s + c0;
  for (int k = 0; k < W; ++k) {
    const float dn = alpha * di[k] + wi * acc[k];
    dout[k] = dn;
    xo[k] = xi[k] + dn;
  }
}

/// One fused Chebyshev step, row by row: d' = alpha d + beta dinv (b - M x),
/// x' = x + d' (x and d are read, x' and d' written: no row depends on an
/// updated neighbour). s is a multiple of 8 (the cycle pads).
MANIFOLD_KERNEL_CLONES
void cheb_rows(const int64_t* __restrict ptr, const int32_t* __restrict col, const float* __restrict val,
               const float* __restrict dinv, const float* __restrict b, const float* __restrict x,
               const float* __restrict d, float alpha, float beta, float* __restrict x_out, float* __restrict d_out,
               int64_t s, int64_t r0, int64_t r1) {
  for (int64_t i = r0; i < r1; ++i) {
    const float wi = beta * dinv[i];
    int64_t c0 = 0;
    for (; c0 + 16 <= s; c0 += 16) cheb_chunk<16>(ptr, col, val, wi, b, x, d, alpha, x_out, d_out, s, c0, i);
    if (c0 + 8 <= s) cheb_chunk<8>(ptr, col, val, wi, b, x, d, alpha, x_out, d_out, s, c0, i);
  }
}

// OpenBLAS's dgemm (column-major): a row-major n x k block with row stride
// k is the column-major k x n matrix of its transpose.
extern "C" void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
                       const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
                       const int* ldc, size_t, size_t);

void gemm(char ta, char tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
  if (m == 0 || n == 0) return;
  dgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
}

/// Row blocks for the tall-skinny products: a few per thread.
int64_t row_parts(int64_t n, int threads) {
  const int t = n < 4096 ? 1 : hardware_threads(threads);
  return std::max<int64_t>(1, std::min<int64_t>(4 * t, n / 1024));
}

}  // namespace

CsrF to_float(const Csr& c, int threads) {
  CsrF f;
  f.rows = c.rows;
  f.cols = c.cols;
  f.ptr = c.ptr;
  f.col = c.col;
  f.val.resize(c.val.size());
  const int64_t nnz = static_cast<int64_t>(c.val.size());
  constexpr int64_t kChunk = 1 << 16;
  parallel_for(
      0, (nnz + kChunk - 1) / kChunk, threads,
      [&](int64_t q) {
    for (int64_t e = q * kChunk; e < std::min(nnz, (q + 1) * kChunk); ++e)
      f.val[static_cast<size_t>(e)] = static_cast<float>(c.val[static_cast<size_t>(e)]);
      },
      1);
  return f;
}

/// L + shift I = (1 + shift) I - A, diagonal merged in column order
/// (visit_with_diagonal).
Csr shifted_laplacian(const DiffusionMatrix& a, double shift, int threads) {
  Csr c;
  c.rows = c.cols = a.n;
  c.ptr.resize(static_cast<size_t>(a.n + 1));
  for (int64_t i = 0; i <= a.n; ++i) c.ptr[static_cast<size_t>(i)] = a.row_ptr[static_cast<size_t>(i)] + i;
  c.col.resize(static_cast<size_t>(c.ptr.back()));
  c.val.resize(static_cast<size_t>(c.ptr.back()));
  visit_with_diagonal(a, threads, [&](int64_t i, int64_t pos, int32_t j, double v) {
    c.col[static_cast<size_t>(pos)] = j;
    c.val[static_cast<size_t>(pos)] = j == i ? 1 + shift - v : -v;
  });
  return c;
}

void spmm(const Csr& m, const Block& x, Block& y, int threads) { spmm_block(m, x, y, threads); }
void spmm(const CsrF& m, const BlockF& x, BlockF& y, int threads) { spmm_block(m, x, y, threads); }

/// y = M x for a block, M given by its CSR arrays (ptr: rows + 1 offsets).
void spmm_csr_arrays(const int64_t* ptr, const int32_t* col, const double* val, int64_t rows, const Block& x, Block& y,
                     int threads) {
  const int64_t b = x.cols();
  y.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(b));
  for_ptr_ranges(ptr, rows, b, threads,
                 [&](int64_t r0, int64_t r1) { spmm_rows(ptr, col, val, x.data(), b, y.data(), b, r0, r1); });
}

/// y = M x for columns of a wider block (x: row stride ldx).
void spmm_strided(const Csr& m, const double* x, int64_t ldx, int64_t b, Block& y, int threads) {
  y.resize(static_cast<Eigen::Index>(m.rows), static_cast<Eigen::Index>(b));
  for_row_ranges(m, b, threads, [&](int64_t r0, int64_t r1) {
    spmm_rows(m.ptr.data(), m.col.data(), m.val.data(), x, ldx, y.data(), b, r0, r1);
  });
}

void cheb_step(const CsrF& m, const std::vector<float>& dinv, const BlockF& b, const BlockF& x, const BlockF& d,
               float alpha, float beta, BlockF& x_out, BlockF& d_out, int threads) {
  const int64_t s = x.cols();
  if (s % 8 != 0) throw std::logic_error("cheb_step: block width not a multiple of 8");
  x_out.resize(x.rows(), x.cols());
  d_out.resize(x.rows(), x.cols());
  for_row_ranges(m, s, threads, [&](int64_t r0, int64_t r1) {
    cheb_rows(m.ptr.data(), m.col.data(), m.val.data(), dinv.data(), b.data(), x.data(), d.data(), alpha, beta,
              x_out.data(), d_out.data(), s, r0, r1);
  });
}

/// r = b - M x.
void residual(const CsrF& m, const BlockF& b, const BlockF& x, BlockF& r, int threads) {
  spmm(m, x, r, threads);
  r = b - r;
}

// ---- tall-skinny dense products over row blocks ---------------------------

/// a^T b; partial sums added in block order (independent of the thread count).
Eigen::MatrixXd tgram(Cols a, Cols b, int threads) {
  const int64_t n = a.rows;
  const int ka = a.cols, kb = b.cols;
  Eigen::MatrixXd g = Eigen::MatrixXd::Zero(ka, kb);
  if (ka == 0 || kb == 0 || n == 0) return g;
  const int64_t parts = row_parts(n, threads);
  std::vector<Eigen::MatrixXd> part(static_cast<size_t>(parts));
  parallel_for(
      0, parts, threads,
      [&](int64_t p) {
    const int64_t r0 = n * p / parts, r1 = n * (p + 1) / parts;
    Eigen::MatrixXd& out = part[static_cast<size_t>(p)];
    out.resize(ka, kb);
    gemm('N', 'T', ka, kb, static_cast<int>(r1 - r0), 1.0, a.data + r0 * a.ld, a.ld, b.data + r0 * b.ld, b.ld, 0.0,
         out.data(), ka);
      },
      1);
  for (auto& m : part) g += m;
  return g;
}

/// out = beta out + alpha a c over row blocks (out: rows x c.cols(), row stride ldo).
void times_into(Cols a, const Eigen::MatrixXd& c, double alpha, double beta, double* out, int ldo, int threads) {
  const int64_t n = a.rows;
  const int ka = a.cols, kc = static_cast<int>(c.cols());
  if (kc == 0 || n == 0) return;
  if (ka == 0) {
    if (beta == 0)
      for (int64_t i = 0; i < n; ++i) std::fill(out + i * ldo, out + i * ldo + kc, 0.0);
    return;
  }
  const int64_t parts = row_parts(n, threads);
  parallel_for(
      0, parts, threads,
      [&](int64_t p) {
    const int64_t r0 = n * p / parts, r1 = n * (p + 1) / parts;
    gemm('T', 'N', kc, static_cast<int>(r1 - r0), ka, alpha, c.data(), static_cast<int>(c.rows()), a.data + r0 * a.ld,
         a.ld, beta, out + r0 * ldo, ldo);
      },
      1);
}

void times_into(Cols a, const Eigen::MatrixXd& c, double alpha, double beta, Block& out, int threads) {
  times_into(a, c, alpha, beta, out.data(), static_cast<int>(out.cols()), threads);
}

/// a c.
Block times(Cols a, const Eigen::MatrixXd& c, int threads) {
  Block out(a.rows, c.cols());
  times_into(a, c, 1.0, 0.0, out, threads);
  return out;
}

/// a -= q c.
void subtract_times(Block& a, Cols q, const Eigen::MatrixXd& c, int threads) {
  if (q.cols == 0) return;
  times_into(q, c, -1.0, 1.0, a, threads);
}

/// Squared column norms of a.
Eigen::VectorXd tgram_diag(const Block& a, int threads) {
  const int64_t n = a.rows();
  const int64_t parts = row_parts(n, threads);
  std::vector<Eigen::VectorXd> part(static_cast<size_t>(parts));
  parallel_for(
      0, parts, threads,
      [&](int64_t p) {
    const int64_t r0 = n * p / parts, r1 = n * (p + 1) / parts;
    part[static_cast<size_t>(p)] = a.middleRows(r0, r1 - r0).colwise().squaredNorm().transpose();
      },
      1);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(a.cols());
  for (auto& v : part) g += v;
  return g;
}

/// Columns side by side.
Block hcat(std::initializer_list<const Block*> parts) {
  Eigen::Index cols = 0, rows = 0;
  for (const Block* p : parts) {
    cols += p->cols();
    if (p->cols()) rows = p->rows();
  }
  Block out(rows, cols);
  Eigen::Index at = 0;
  for (const Block* p : parts) {
    if (p->cols()) out.middleCols(at, p->cols()) = *p;
    at += p->cols();
  }
  return out;
}

/// The transform T (cols x kept) that makes w T orthonormal (SVQB: scaled
/// Gram matrix, eigen-decomposition), dropping directions whose share of
/// the Gram matrix is below `drop`.
Eigen::MatrixXd svqb(const Eigen::MatrixXd& gram, double drop) {
  const Eigen::Index m = gram.rows();
  Eigen::VectorXd d(m);
  for (Eigen::Index i = 0; i < m; ++i) d[i] = gram(i, i) > 0 ? 1 / std::sqrt(gram(i, i)) : 0;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(d.asDiagonal() * gram * d.asDiagonal());
  const Eigen::VectorXd ev = es.eigenvalues();
  const double top = m ? ev.maxCoeff() : 0;
  std::vector<Eigen::Index> keep;
  for (Eigen::Index i = 0; i < m; ++i)
    if (ev[i] > drop * top && ev[i] > 0) keep.push_back(i);
  Eigen::MatrixXd t(m, static_cast<Eigen::Index>(keep.size()));
  for (size_t c = 0; c < keep.size(); ++c)
    t.col(static_cast<Eigen::Index>(c)) = d.asDiagonal() * es.eigenvectors().col(keep[c]) / std::sqrt(ev[keep[c]]);
  return t;
}

/// w made orthogonal to q (orthonormal) and orthonormal itself: two rounds
/// of block Gram-Schmidt against q, each followed by SVQB.
void orthonormalise_against(const Block& q, Block& w, int threads) {
  for (int pass = 0; pass < 2 && w.cols() > 0; ++pass) {
    if (q.cols() > 0) subtract_times(w, q, tgram(q, w, threads), threads);
    w = times(w, svqb(tgram(w, w, threads), pass == 0 ? 1e-14 : 1e-10), threads);
  }
}

/// w made orthogonal to q (orthonormal columns) and orthonormal itself:
/// block Gram-Schmidt, then SVQB. One pass computes [q w]^T w, which gives
/// both the projection c = q^T w and the Gram matrix of w - q c
/// (w^T w - c^T c, q being orthonormal) without another pass over w; when a
/// column lost more than 1 - 1e-3 of its norm to q (cancellation: that
/// difference is inaccurate) the Gram matrix is recomputed and the pass
/// repeated.
void orthonormalise_against2(Cols q, Block& w, int threads) {
  for (int pass = 0; pass < 3 && w.cols() > 0; ++pass) {
    const Eigen::MatrixXd qw = tgram(q, w, threads), ww = tgram(w, w, threads);
    subtract_times(w, q, qw, threads);
    Eigen::MatrixXd g = ww - qw.transpose() * qw;
    bool again = false;
    for (Eigen::Index c = 0; c < g.rows(); ++c)
      if (g(c, c) < 1e-6 * ww(c, c)) again = true;
    if (again) g = tgram(w, w, threads);
    w = times(w, svqb(g, pass == 0 ? 1e-14 : 1e-10), threads);
    if (!again) break;
  }
}

}  // namespace manifold::detail::warm
