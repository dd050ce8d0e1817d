// The warm-started eigensolver behind rediffuse(): block LOBPCG (Knyazev)
// on L = I - A with an orthonormal basis [X, P, W] (Hetmaniuk-Lehoucq),
// soft locking of converged columns, preconditioned by one symmetric
// smoothed-aggregation AMG V-cycle (Vanek-Mandel-Brezina) for L + shift I.
//
// Why: the top of a diffusion spectrum is tightly clustered (1 - lambda
// ~1e-5..1e-4 at N = 1e5), so Krylov methods on A need thousands of
// mat-vecs whatever the start. A preconditioner that inverts L on the smooth
// end of its spectrum removes that dependence: the k-NN graph Laplacian is
// the textbook case for aggregation multigrid, and the previous embedding's
// eigenvectors are already close to the new ones, so a few preconditioned
// block iterations reach the solver tolerance.
//
// Everything runs on A in reverse Cuthill-McKee order; vectors are kept as
// row-major n x b blocks so a sparse product reads each matrix row once for
// all columns.
#include "warm_eigensolver.h"

#include <cblas.h>  // openblas_{get,set}_num_threads

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <cstdio>
#include <cstdlib>

#include "manifold/error.h"
#include "manifold/parallel.h"

namespace manifold::detail {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

CsrF to_float(const Csr& c, int threads) {
  CsrF f;
  f.rows = c.rows;
  f.cols = c.cols;
  f.ptr = c.ptr;
  f.col = c.col;
  f.val.resize(c.val.size());
  const int64_t nnz = static_cast<int64_t>(c.val.size());
  constexpr int64_t kChunk = 1 << 16;
  parallel_for(0, (nnz + kChunk - 1) / kChunk, threads, [&](int64_t q) {
    for (int64_t e = q * kChunk; e < std::min(nnz, (q + 1) * kChunk); ++e)
      f.val[static_cast<size_t>(e)] = static_cast<float>(c.val[static_cast<size_t>(e)]);
  }, 1);
  return f;
}

/// L + shift I = (1 + shift) I - A, diagonal merged in column order (A's
/// off-diagonal rows hold no diagonal entry, so row i gains exactly one:
/// its offset is A's plus i, and the rows fill independently).
Csr shifted_laplacian(const DiffusionMatrix& a, double shift, int threads) {
  Csr c;
  c.rows = c.cols = a.n;
  c.ptr.resize(static_cast<size_t>(a.n + 1));
  for (int64_t i = 0; i <= a.n; ++i) c.ptr[static_cast<size_t>(i)] = a.row_ptr[static_cast<size_t>(i)] + i;
  c.col.resize(static_cast<size_t>(c.ptr.back()));
  c.val.resize(static_cast<size_t>(c.ptr.back()));
  constexpr int64_t kRows = 4096;
  parallel_for(0, (a.n + kRows - 1) / kRows, threads, [&](int64_t q) {
    for (int64_t i = q * kRows; i < std::min(a.n, (q + 1) * kRows); ++i) {
      int64_t out = c.ptr[static_cast<size_t>(i)];
      bool diag_done = false;
      const double d = 1 + shift - a.diag[static_cast<size_t>(i)];
      for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e) {
        const int32_t j = a.col[static_cast<size_t>(e)];
        if (!diag_done && j > i) {
          c.col[static_cast<size_t>(out)] = static_cast<int32_t>(i);
          c.val[static_cast<size_t>(out++)] = d;
          diag_done = true;
        }
        c.col[static_cast<size_t>(out)] = j;
        c.val[static_cast<size_t>(out++)] = -a.val[static_cast<size_t>(e)];
      }
      if (!diag_done) {
        c.col[static_cast<size_t>(out)] = static_cast<int32_t>(i);
        c.val[static_cast<size_t>(out++)] = d;
      }
    }
  }, 1);
  return c;
}

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
  parallel_for(0, parts, t, [&](int64_t c) { f(bound(c), bound(c + 1)); }, 1);
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
__attribute__((always_inline)) inline void spmm_rows_impl(const int64_t* __restrict ptr,
                                                          const int32_t* __restrict col, const T* __restrict val,
                                                          const T* __restrict x, int64_t ldx, T* __restrict y,
                                                          int64_t b, int64_t r0, int64_t r1) {
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
void spmm(const CsrT<T>& m, const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& x,
          Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& y, int threads) {
  const int64_t b = x.cols();
  y.resize(static_cast<Eigen::Index>(m.rows), static_cast<Eigen::Index>(b));
  for_row_ranges(m, b, threads, [&](int64_t r0, int64_t r1) {
    spmm_rows(m.ptr.data(), m.col.data(), m.val.data(), x.data(), b, y.data(), b, r0, r1);
  });
}

/// y = M x for a block, M given by its CSR arrays (ptr: rows + 1 offsets).
void spmm_csr_arrays(const int64_t* ptr, const int32_t* col, const double* val, int64_t rows, const Block& x,
                     Block& y, int threads) {
  const int64_t b = x.cols();
  y.resize(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(b));
  for_ptr_ranges(ptr, rows, b, threads, [&](int64_t r0, int64_t r1) {
    spmm_rows(ptr, col, val, x.data(), b, y.data(), b, r0, r1);
  });
}

/// y = M x for columns of a wider block (x: row stride ldx).
void spmm_strided(const Csr& m, const double* x, int64_t ldx, int64_t b, Block& y, int threads) {
  y.resize(static_cast<Eigen::Index>(m.rows), static_cast<Eigen::Index>(b));
  for_row_ranges(m, b, threads, [&](int64_t r0, int64_t r1) {
    spmm_rows(m.ptr.data(), m.col.data(), m.val.data(), x, ldx, y.data(), b, r0, r1);
  });
}

/// One fused Chebyshev step, row by row: d' = alpha d + beta dinv (b - M x),
/// x' = x + d' (x and d are read, x' and d' written: no row depends on an
/// updated neighbour).
template <int W>
__attribute__((always_inline)) inline void cheb_chunk(const int64_t* __restrict ptr, const int32_t* __restrict col,
                                                      const float* __restrict val, float wi, const float* __restrict b,
                                                      const float* __restrict x, const float* __restrict d,
                                                      float alpha, float* __restrict x_out, float* __restrict d_out,
                                                      int64_t s, int64_t c0, int64_t i) {
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
               const float* __restrict d, float alpha, float beta, float* __restrict x_out,
               float* __restrict d_out, int64_t s, int64_t r0, int64_t r1) {
  for (int64_t i = r0; i < r1; ++i) {
    const float wi = beta * dinv[i];
    int64_t c0 = 0;
    for (; c0 + 16 <= s; c0 += 16) cheb_chunk<16>(ptr, col, val, wi, b, x, d, alpha, x_out, d_out, s, c0, i);
    if (c0 + 8 <= s) cheb_chunk<8>(ptr, col, val, wi, b, x, d, alpha, x_out, d_out, s, c0, i);
  }
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
Eigen::MatrixXd tgram(Cols a, Cols b, int threads) {
  const int64_t n = a.rows;
  const int ka = a.cols, kb = b.cols;
  Eigen::MatrixXd g = Eigen::MatrixXd::Zero(ka, kb);
  if (ka == 0 || kb == 0 || n == 0) return g;
  const int64_t parts = row_parts(n, threads);
  std::vector<Eigen::MatrixXd> part(static_cast<size_t>(parts));
  parallel_for(0, parts, threads, [&](int64_t p) {
    const int64_t r0 = n * p / parts, r1 = n * (p + 1) / parts;
    Eigen::MatrixXd& out = part[static_cast<size_t>(p)];
    out.resize(ka, kb);
    gemm('N', 'T', ka, kb, static_cast<int>(r1 - r0), 1.0, a.data + r0 * a.ld, a.ld, b.data + r0 * b.ld, b.ld, 0.0,
         out.data(), ka);
  }, 1);
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
  parallel_for(0, parts, threads, [&](int64_t p) {
    const int64_t r0 = n * p / parts, r1 = n * (p + 1) / parts;
    gemm('T', 'N', kc, static_cast<int>(r1 - r0), ka, alpha, c.data(), static_cast<int>(c.rows()),
         a.data + r0 * a.ld, a.ld, beta, out + r0 * ldo, ldo);
  }, 1);
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
  parallel_for(0, parts, threads, [&](int64_t p) {
    const int64_t r0 = n * p / parts, r1 = n * (p + 1) / parts;
    part[static_cast<size_t>(p)] = a.middleRows(r0, r1 - r0).colwise().squaredNorm().transpose();
  }, 1);
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

// ---- smoothed-aggregation AMG ----------------------------------------------

/// Aggregates of the matrix graph (Vanek, Mandel, Brezina 1996): roots
/// whose neighbourhood is still free take it whole; the rest join the
/// neighbouring aggregate they are most strongly connected to, or form their
/// own. agg[i] = aggregate of row i.
std::vector<int32_t> aggregate(const Csr& m, int32_t* count) {
  const int64_t n = m.rows;
  std::vector<int32_t> agg(static_cast<size_t>(n), -1);
  int32_t next = 0;
  const int64_t* ptr = m.ptr.data();
  const int32_t* idx = m.col.data();
  const double* val = m.val.data();
  for (int64_t i = 0; i < n; ++i) {
    if (agg[static_cast<size_t>(i)] >= 0) continue;
    bool free = true;
    for (int64_t e = ptr[i]; e < ptr[i + 1] && free; ++e)
      if (idx[e] != i && agg[static_cast<size_t>(idx[e])] >= 0) free = false;
    if (!free) continue;
    agg[static_cast<size_t>(i)] = next;
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) agg[static_cast<size_t>(idx[e])] = next;
    ++next;
  }
  std::vector<int32_t> first = agg;
  for (int64_t i = 0; i < n; ++i) {
    if (agg[static_cast<size_t>(i)] >= 0) continue;
    double best = 0;
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
      const int32_t a = first[static_cast<size_t>(idx[e])];
      if (idx[e] != i && a >= 0 && std::abs(val[e]) > best) {
        best = std::abs(val[e]);
        agg[static_cast<size_t>(i)] = a;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (agg[static_cast<size_t>(i)] >= 0) continue;
    agg[static_cast<size_t>(i)] = next;
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e)
      if (agg[static_cast<size_t>(idx[e])] < 0) agg[static_cast<size_t>(idx[e])] = next;
    ++next;
  }
  *count = next;
  return agg;
}

/// Largest eigenvalue of D^-1 m (symmetric m, positive diagonal): the top
/// Ritz value of 12 Lanczos steps on D^-1/2 m D^-1/2 (from below, but close
/// for an extreme eigenvalue).
double spectral_radius(const Csr& c, const Eigen::VectorXd& dinv, int threads) {
  const int64_t n = c.rows;
  const Eigen::VectorXd s = dinv.cwiseSqrt();
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  Block q(n, 1), q_prev = Block::Zero(n, 1), w(n, 1);
  for (int64_t i = 0; i < n; ++i) q(i, 0) = u(rng);
  q /= q.norm();
  const int steps = static_cast<int>(std::min<int64_t>(12, n));
  std::vector<double> alpha, beta;
  for (int j = 0; j < steps; ++j) {
    Block t = q.cwiseProduct(s);
    spmm(c, t, w, threads);
    w = w.cwiseProduct(s);
    if (j > 0) w -= beta.back() * q_prev;
    alpha.push_back(q.col(0).dot(w.col(0)));
    w -= alpha.back() * q;
    const double nb = w.norm();
    if (!(nb > 1e-12 * std::abs(alpha.back())) || j + 1 == steps) break;
    beta.push_back(nb);
    q_prev.swap(q);
    q = w / nb;
  }
  const Eigen::Index k = static_cast<Eigen::Index>(alpha.size());
  Eigen::MatrixXd t = Eigen::MatrixXd::Zero(k, k);
  for (Eigen::Index i = 0; i < k; ++i) {
    t(i, i) = alpha[static_cast<size_t>(i)];
    if (i + 1 < k) t(i, i + 1) = t(i + 1, i) = beta[static_cast<size_t>(i)];
  }
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(t, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff();
}

/// c = a b by rows (Gustavson), rows in parallel with a dense accumulator
/// over b's columns per worker (b.cols is a coarse level's size here).
Csr spgemm(const Csr& a, const Csr& b, int threads) {
  const int64_t n = a.rows, nc = b.cols;
  constexpr int64_t kRows = 2048;
  const int64_t parts = std::max<int64_t>(1, (n + kRows - 1) / kRows);
  std::vector<std::vector<int32_t>> cols(static_cast<size_t>(parts));
  std::vector<std::vector<double>> vals(static_cast<size_t>(parts));
  std::vector<std::vector<int64_t>> lens(static_cast<size_t>(parts));
  const int t = a.nnz() < 100000 ? 1 : hardware_threads(threads);
  parallel_for(0, parts, t, [&](int64_t q) {
    std::vector<double> acc(static_cast<size_t>(nc), 0.0);
    std::vector<char> mark(static_cast<size_t>(nc), 0);
    std::vector<int32_t> touched;
    auto& oc = cols[static_cast<size_t>(q)];
    auto& ov = vals[static_cast<size_t>(q)];
    auto& ol = lens[static_cast<size_t>(q)];
    for (int64_t i = q * kRows; i < std::min(n, (q + 1) * kRows); ++i) {
      touched.clear();
      for (int64_t e = a.ptr[static_cast<size_t>(i)]; e < a.ptr[static_cast<size_t>(i + 1)]; ++e) {
        const int64_t j = a.col[static_cast<size_t>(e)];
        const double v = a.val[static_cast<size_t>(e)];
        for (int64_t f = b.ptr[static_cast<size_t>(j)]; f < b.ptr[static_cast<size_t>(j + 1)]; ++f) {
          const int32_t c = b.col[static_cast<size_t>(f)];
          if (!mark[static_cast<size_t>(c)]) {
            mark[static_cast<size_t>(c)] = 1;
            touched.push_back(c);
          }
          acc[static_cast<size_t>(c)] += v * b.val[static_cast<size_t>(f)];
        }
      }
      std::sort(touched.begin(), touched.end());
      for (int32_t c : touched) {
        oc.push_back(c);
        ov.push_back(acc[static_cast<size_t>(c)]);
        acc[static_cast<size_t>(c)] = 0;
        mark[static_cast<size_t>(c)] = 0;
      }
      ol.push_back(static_cast<int64_t>(touched.size()));
    }
  }, 1);
  Csr c;
  c.rows = n;
  c.cols = nc;
  c.ptr.assign(static_cast<size_t>(n + 1), 0);
  int64_t row = 0;
  for (int64_t q = 0; q < parts; ++q)
    for (int64_t len : lens[static_cast<size_t>(q)]) {
      c.ptr[static_cast<size_t>(row + 1)] = c.ptr[static_cast<size_t>(row)] + len;
      ++row;
    }
  c.col.reserve(static_cast<size_t>(c.ptr.back()));
  c.val.reserve(static_cast<size_t>(c.ptr.back()));
  for (int64_t q = 0; q < parts; ++q) {
    c.col.insert(c.col.end(), cols[static_cast<size_t>(q)].begin(), cols[static_cast<size_t>(q)].end());
    c.val.insert(c.val.end(), vals[static_cast<size_t>(q)].begin(), vals[static_cast<size_t>(q)].end());
  }
  return c;
}

/// a^T (columns ascending per row, as a counting sort leaves them).
Csr transpose(const Csr& a) {
  Csr t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.ptr.assign(static_cast<size_t>(t.rows + 1), 0);
  for (int32_t c : a.col) ++t.ptr[static_cast<size_t>(c) + 1];
  for (int64_t i = 0; i < t.rows; ++i) t.ptr[static_cast<size_t>(i + 1)] += t.ptr[static_cast<size_t>(i)];
  t.col.resize(a.col.size());
  t.val.resize(a.val.size());
  std::vector<int64_t> at(t.ptr.begin(), t.ptr.end() - 1);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.ptr[static_cast<size_t>(i)]; e < a.ptr[static_cast<size_t>(i + 1)]; ++e) {
      const int64_t o = at[static_cast<size_t>(a.col[static_cast<size_t>(e)])]++;
      t.col[static_cast<size_t>(o)] = static_cast<int32_t>(i);
      t.val[static_cast<size_t>(o)] = a.val[static_cast<size_t>(e)];
    }
  return t;
}

Eigen::MatrixXd dense(const Csr& a) {
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(a.rows, a.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.ptr[static_cast<size_t>(i)]; e < a.ptr[static_cast<size_t>(i + 1)]; ++e)
      d(i, a.col[static_cast<size_t>(e)]) += a.val[static_cast<size_t>(e)];
  return d;
}

class Amg {
 public:
  /// Hierarchy for the SPD matrix m0 with near-null vector b (the constant
  /// of the Markov chain in the symmetric conjugate: sqrt(d)).
  Amg(Csr m, Eigen::VectorXd b, int smoothing, int coarse_size, int threads, int cycles = 1)
      : smoothing_(smoothing), cycles_(cycles), threads_(threads) {
    Csr gram;  // P^T P composed down to this level (unused at the finest: identity)
    for (int level = 0; level < 20; ++level) {
      const int64_t n = m.rows;
      if (n <= coarse_size) break;
      int32_t nc = 0;
      std::vector<int32_t> agg = aggregate(m, &nc);
      if (nc >= n * 0.8 || nc < 1) break;  // not coarsening: stop here
      // Tentative prolongator: b restricted to each aggregate, normalised.
      Eigen::VectorXd bc = Eigen::VectorXd::Zero(nc);
      for (int64_t i = 0; i < n; ++i) bc[agg[static_cast<size_t>(i)]] += b[i] * b[i];
      for (int32_t a = 0; a < nc; ++a) bc[a] = std::sqrt(bc[a]);
      Csr pt;
      pt.rows = n;
      pt.cols = nc;
      pt.ptr.resize(static_cast<size_t>(n + 1));
      pt.col.resize(static_cast<size_t>(n));
      pt.val.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const int32_t a = agg[static_cast<size_t>(i)];
        pt.ptr[static_cast<size_t>(i)] = i;
        pt.col[static_cast<size_t>(i)] = a;
        pt.val[static_cast<size_t>(i)] = bc[a] > 0 ? b[i] / bc[a] : 1.0;
      }
      pt.ptr[static_cast<size_t>(n)] = n;
      // Jacobi-smoothed prolongator P = (I - omega D^-1 M) P_tent with
      // omega = 4 / (3 rho), rho bounding D^-1 M's spectrum (Gershgorin,
      // or a Lanczos estimate when that is smaller).
      Eigen::VectorXd dinv(n);
      constexpr int64_t kRows = 4096;
      const int64_t parts = (n + kRows - 1) / kRows;
      std::vector<double> part_rho(static_cast<size_t>(parts), 0.0);
      parallel_for(0, parts, threads, [&](int64_t q) {
        for (int64_t i = q * kRows; i < std::min(n, (q + 1) * kRows); ++i) {
          double diag = 0, sum = 0;
          for (int64_t e = m.ptr[static_cast<size_t>(i)]; e < m.ptr[static_cast<size_t>(i + 1)]; ++e) {
            if (m.col[static_cast<size_t>(e)] == i) diag = m.val[static_cast<size_t>(e)];
            sum += std::abs(m.val[static_cast<size_t>(e)]);
          }
          if (!(diag > 0)) throw Error("warm eigensolve: AMG level matrix is not positive definite");
          dinv[i] = 1 / diag;
          part_rho[static_cast<size_t>(q)] = std::max(part_rho[static_cast<size_t>(q)], sum / diag);
        }
      }, 1);
      double rho = 0;
      for (double r : part_rho) rho = std::max(rho, r);
      rho = std::min(rho, 1.1 * spectral_radius(m, dinv, threads));
      const double omega = 4.0 / (3.0 * rho);
      // Row i of M P_tent holds column agg[i] (m_ii > 0), where P_tent's own
      // entry goes.
      Csr p = spgemm(m, pt, threads);
      parallel_for(0, parts, threads, [&](int64_t q) {
        for (int64_t i = q * kRows; i < std::min(n, (q + 1) * kRows); ++i)
          for (int64_t e = p.ptr[static_cast<size_t>(i)]; e < p.ptr[static_cast<size_t>(i + 1)]; ++e) {
            double& v = p.val[static_cast<size_t>(e)];
            v *= -omega * dinv[i];
            if (p.col[static_cast<size_t>(e)] == agg[static_cast<size_t>(i)]) v += pt.val[static_cast<size_t>(i)];
          }
      }, 1);
      Csr r = transpose(p);
      Csr mc = spgemm(r, spgemm(m, p, threads), threads);
      // P^T M P is symmetric but for rounding; make it exactly so (same
      // pattern: M's is symmetric).
      const Csr mct = transpose(mc);
      if (mct.ptr == mc.ptr && mct.col == mc.col)
        for (size_t e = 0; e < mc.val.size(); ++e) mc.val[e] = 0.5 * (mc.val[e] + mct.val[e]);
      gram = level == 0 ? spgemm(r, p, threads) : spgemm(r, spgemm(gram, p, threads), threads);
      Level lv;
      lv.a = to_float(m, threads);
      lv.p = to_float(p, threads);
      lv.r = to_float(r, threads);
      lv.dinv.assign(dinv.data(), dinv.data() + n);
      lv.rho = rho;
      levels_.push_back(std::move(lv));
      m = std::move(mc);
      b = std::move(bc);
    }
    coarse_matrix_ = dense(m);
    coarse_gram_ = levels_.empty() ? Eigen::MatrixXd::Identity(m.rows, m.rows) : dense(gram);
    coarse_.compute(coarse_matrix_);
    if (coarse_.info() != Eigen::Success) throw Error("warm eigensolve: the coarsest AMG level is not positive definite");
    coarse_rows_ = m.rows;
    coarse_nnz_ = m.nnz();
  }

  /// The k smallest eigenvectors of the Galerkin problem on the coarsest
  /// level (P^T (L + shift) P y = mu P^T P y), prolonged to the finest: smooth
  /// approximations of L's lowest eigenvectors.
  Block coarse_eigenvectors(int k, double shift) const {
    Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> es(coarse_matrix_ - shift * coarse_gram_, coarse_gram_);
    if (es.info() != Eigen::Success) return Block();
    k = static_cast<int>(std::min<Eigen::Index>(k, coarse_matrix_.rows()));
    BlockF y = BlockF::Zero(coarse_matrix_.rows(), (k + 7) / 8 * 8);
    y.leftCols(k) = es.eigenvectors().leftCols(k).cast<float>();
    for (size_t l = levels_.size(); l-- > 0;) {
      BlockF t;
      spmm(levels_[l].p, y, t, threads_);
      y.swap(t);
    }
    return y.leftCols(k).cast<double>();
  }

  /// z = T r: one V-cycle from z = 0.
  void apply(const Block& r, Block& z) const {
    // Padded to whole AVX registers (8 floats) with zero columns, which
    // stay zero: the cycle is linear.
    const Eigen::Index s = r.cols(), padded = (s + 7) / 8 * 8;
    BlockF rf = BlockF::Zero(r.rows(), padded);
    rf.leftCols(s) = r.cast<float>();
    BlockF zf;
    cycle(0, rf, zf);
    for (int c = 1; c < cycles_ && !levels_.empty(); ++c) {
      // Another V-cycle on the residual: z += V (r - M z).
      BlockF t, dz;
      residual(levels_[0].a, rf, zf, t, threads_);
      cycle(0, t, dz);
      zf += dz;
    }
    z = zf.leftCols(s).cast<double>();
  }

  std::vector<int64_t> level_rows() const {
    std::vector<int64_t> out;
    for (auto& l : levels_) out.push_back(l.a.rows);
    out.push_back(coarse_rows_);
    return out;
  }
  double operator_complexity() const {
    if (levels_.empty()) return 1;
    double total = static_cast<double>(coarse_nnz_);
    for (auto& l : levels_) total += static_cast<double>(l.a.nnz());
    return total / static_cast<double>(levels_[0].a.nnz());
  }

 private:
  struct Level {
    CsrF a, p, r;
    std::vector<float> dinv;   // 1 / a_ii
    double rho = 2;            // bound on the spectrum of D^-1 a
  };

  /// Chebyshev smoothing of degree smoothing_ on [rho / ratio, rho] of
  /// D^-1 a (Saad, Alg. 12.1), from x (zero when `from_zero`).
  void smooth(const Level& lv, const BlockF& b, BlockF& x, bool from_zero) const {
    const double hi = lv.rho, lo = lv.rho / cheb_ratio();
    const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo), sigma = theta / delta;
    double rho_k = 1 / sigma;
    BlockF d, xn, dn;
    if (from_zero) {
      x.resize(b.rows(), b.cols());
      d.resize(b.rows(), b.cols());
      for (Eigen::Index i = 0; i < b.rows(); ++i) d.row(i) = static_cast<float>(lv.dinv[static_cast<size_t>(i)] / theta) * b.row(i);
      x = d;
    } else {
      d.setZero(b.rows(), b.cols());
      cheb_step(lv.a, lv.dinv, b, x, d, 0.0f, static_cast<float>(1 / theta), xn, dn, threads_);
      x.swap(xn);
      d.swap(dn);
    }
    for (int k = 1; k < smoothing_; ++k) {
      const double rho_new = 1 / (2 * sigma - rho_k);
      cheb_step(lv.a, lv.dinv, b, x, d, static_cast<float>(rho_new * rho_k), static_cast<float>(2 * rho_new / delta),
                xn, dn, threads_);
      x.swap(xn);
      d.swap(dn);
      rho_k = rho_new;
    }
  }
  /// The smoother damps D^-1 a's spectrum on [rho / 10, rho]; below that
  /// is the coarse grid's part.
  static constexpr double cheb_ratio() { return 10.0; }

  void cycle(size_t l, const BlockF& b, BlockF& x) const {
    if (l == levels_.size()) {
      x = coarse_.solve(b.cast<double>()).cast<float>();
      return;
    }
    const Level& lv = levels_[l];
    smooth(lv, b, x, true);
    BlockF t;
    residual(lv.a, b, x, t, threads_);
    BlockF bc, xc;
    spmm(lv.r, t, bc, threads_);
    cycle(l + 1, bc, xc);
    spmm(lv.p, xc, t, threads_);
    x += t;
    smooth(lv, b, x, false);
  }

  std::vector<Level> levels_;
  Eigen::LLT<Eigen::MatrixXd> coarse_;
  Eigen::MatrixXd coarse_matrix_, coarse_gram_;
  int64_t coarse_rows_ = 0, coarse_nnz_ = 0;
  int smoothing_;
  int cycles_;
  int threads_;
};

}  // namespace

bool is_permutation_of(const std::vector<int32_t>& order, int64_t n) {
  if (static_cast<int64_t>(order.size()) != n) return false;
  std::vector<char> seen(static_cast<size_t>(n), 0);
  for (const int32_t i : order) {
    if (i < 0 || i >= n || seen[static_cast<size_t>(i)]) return false;
    seen[static_cast<size_t>(i)] = 1;
  }
  return true;
}

Eigenpairs warm_eigenpairs(const DiffusionMatrix& original, int count, const Eigen::MatrixXd& start,
                           const WarmOptions& options, Progress& progress, WarmStats* stats_out,
                           const std::vector<int32_t>* order_hint) {
  WarmStats st;
  WarmOptions o = options;  // on_preview is cleared once called
  const int64_t n = original.n;
  const int threads = o.threads;
  const int b = static_cast<int>(std::min<int64_t>(count + std::max(o.guard, 0), n));
  if (count < 1 || 3 * static_cast<int64_t>(b) + 1 > n)
    throw UsageError("warm eigensolve: " + std::to_string(count) + " eigenpairs from a " + std::to_string(n) +
                     "-row matrix; too few rows for a block method");
  // The dense products run on our threads over row blocks, each a
  // single-threaded OpenBLAS call (its own threads would oversubscribe).
  const int saved_blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  struct RestoreBlas {
    int n;
    ~RestoreBlas() { openblas_set_num_threads(n); }
  } restore_blas{saved_blas_threads};
  const auto t_pre = Clock::now();
  const std::vector<int32_t> order =
      order_hint && is_permutation_of(*order_hint, n) ? *order_hint : rcm_order(original);
  const DiffusionMatrix a = permuted(original, order, threads);
  const Csr lap = shifted_laplacian(a, 0.0, threads);

  const double pre_perm = seconds_since(t_pre);
  // Start block: the given columns in RCM order, orthonormalised.
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  const int given = static_cast<int>(std::min<Eigen::Index>(start.cols(), b));
  Block x(n, given);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t oi = order[static_cast<size_t>(i)];
    for (int c = 0; c < given; ++c) x(i, c) = start(oi, c);
  }
  if (!x.allFinite()) throw Error("warm eigensolve: the start vectors are not finite");
  orthonormalise_against(Block(n, 0), x, threads);
  progress.stage("eigensolve (warm)", 0, "mat-vecs");
  Block lx;
  auto apply_l = [&](const Block& v, Block& out) {
    if (v.cols() % 4 == 0) {
      spmm(lap, v, out, threads);
    } else {  // padded to whole AVX registers (4 doubles)
      Block vp = Block::Zero(n, (v.cols() + 3) / 4 * 4), op;
      vp.leftCols(v.cols()) = v;
      spmm(lap, vp, op, threads);
      out = op.leftCols(v.cols());
    }
    st.matvecs += v.cols();
    progress.advance(static_cast<uint64_t>(v.cols()));
  };
  // Rayleigh-Ritz on x: its Ritz values and vectors (lx = L x kept).
  Eigen::VectorXd theta;
  auto rayleigh_ritz = [&](int keep) {
    apply_l(x, lx);
    Eigen::MatrixXd h = tgram(x, lx, threads);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (h + h.transpose()));
    const Eigen::MatrixXd c = es.eigenvectors().leftCols(keep);
    theta = es.eigenvalues().head(keep);
    x = times(x, c, threads);
    lx = times(lx, c, threads);
  };
  double shift = o.shift;
  if (!(shift > 0)) {
    // A tenth of the largest wanted eigenvalue of L, from the start's Ritz
    // values: keeps the AMG well conditioned (L is singular) while T stays a
    // good inverse on the wanted end of the spectrum; the iteration count
    // hardly depends on it (N = 1e5: the same from 1e-5 to 3e-4).
    if (x.cols() > 0) {
      rayleigh_ritz(static_cast<int>(x.cols()));
      shift = 0.1 * theta[std::min<Eigen::Index>(count, theta.size()) - 1];
    }
    shift = std::max(shift, 1e-8);
  }
  st.shift = shift;
  const double pre_start = seconds_since(t_pre) - pre_perm;

  // The preconditioner: a V-cycle for L + shift I.
  const auto t_setup = Clock::now();
  Eigen::VectorXd near_null(n);
  for (int64_t i = 0; i < n; ++i) near_null[i] = std::sqrt(original.degree[static_cast<size_t>(order[static_cast<size_t>(i)])]);
  const Amg amg(shifted_laplacian(a, shift, threads), near_null, std::max(o.smoothing, 1), std::max(o.coarse_size, 10), threads,
                std::max(o.cycles, 1));
  st.setup_s = seconds_since(t_setup);
  st.level_rows = amg.level_rows();
  st.operator_complexity = amg.operator_complexity();

  // The rest of the block (and a second guess at the rest of the wanted
  // space): the coarsest level's lowest eigenvectors, prolonged; random
  // columns if that falls short. One Rayleigh-Ritz step on all of it keeps
  // the best b.
  {
    Block extra = amg.coarse_eigenvectors(b, shift);
    if (extra.rows() != n) extra.resize(n, 0);
    orthonormalise_against(x, extra, threads);
    x = hcat({&x, &extra});
    while (x.cols() < b) {
      Block more(n, b - x.cols());
      for (int64_t i = 0; i < n; ++i)
        for (Eigen::Index c = 0; c < more.cols(); ++c) more(i, c) = u(rng);
      orthonormalise_against(x, more, threads);
      x = hcat({&x, &more});
    }
    rayleigh_ritz(b);
  }

  // The first `count` Ritz pairs of x (RCM order, row stride x.cols()) in A's
  // row order: eigenvalues 1 - theta, each vector's largest entry positive.
  auto in_original_order = [&](const Block& xs, const Eigen::VectorXd& th) {
    Eigenpairs out;
    out.count = count;
    out.values.resize(static_cast<size_t>(count));
    for (int c = 0; c < count; ++c) out.values[static_cast<size_t>(c)] = 1 - th[c];
    out.vectors.resize(static_cast<size_t>(n * count));
    parallel_for(0, n, threads, [&](int64_t i) {
      for (int c = 0; c < count; ++c)
        out.vectors[static_cast<size_t>(order[static_cast<size_t>(i)] * count + c)] = xs(i, c);
    }, 4096);
    largest_entry_positive(out.vectors, n, count, threads);
    out.row_order = order;
    return out;
  };
  const double t_extra = seconds_since(t_setup) - st.setup_s;
  const auto t_solve = Clock::now();
  // State: X (Ritz vectors, orthonormal), L X (computed afresh each
  // iteration), P (orthonormal, orthogonal to X) and hxp = [X P]^T L [X P],
  // known from the previous Rayleigh-Ritz step without touching n-vectors.
  // [X P] side by side in one block (one product where there would be two).
  Block xp = std::move(x);
  Eigen::MatrixXd hxp = theta.asDiagonal();
  Eigen::VectorXd res(b);
  for (int it = 0;; ++it) {
    const int64_t ld = xp.cols();
    // Residuals of the Ritz pairs, relative to |lambda| = |1 - theta|.
    Block r = lx;
    parallel_for(0, n, threads, [&](int64_t i) {
      double* ri = r.data() + i * b;
      const double* xi = xp.data() + i * ld;
      for (int c = 0; c < b; ++c) ri[c] -= theta[c] * xi[c];
    }, 4096);
    const Eigen::VectorXd rn2 = tgram_diag(r, threads);
    double worst = 0;
    std::vector<Eigen::Index> active;
    for (int c = 0; c < b; ++c) {
      res[c] = std::sqrt(std::max(rn2[c], 0.0)) / std::max(std::abs(1 - theta[c]), 1e-300);
      if (c < count) worst = std::max(worst, res[c]);
      if ((c >= count && o.guard_search) || (c < count && res[c] > o.tolerance)) active.push_back(c);
    }
    if (o.trace) std::fprintf(stderr, "warm eigensolve: iteration %d, worst residual %.2e, %zu active\n", it, worst, active.size());
    if (worst <= o.tolerance) {
      st.converged = true;
      break;
    }
    if (o.on_preview && worst <= o.preview_tolerance && Clock::now() >= o.preview_not_before) {
      Eigenpairs pe = in_original_order(xp, theta);
      pe.max_residual = worst;
      pe.iterations = it;
      o.on_preview(pe);
      o.on_preview = nullptr;  // once
    }
    // The time budget stops it like the iteration cap: a preview, not an error.
    if (it >= o.max_iterations || (o.time_limit_s > 0 && seconds_since(t_pre) >= o.time_limit_s)) break;
    st.iterations = it + 1;
    // Search directions: the preconditioned residuals of the active columns.
    Block ra(n, static_cast<Eigen::Index>(active.size()));
    parallel_for(0, n, threads, [&](int64_t i) {
      for (size_t c = 0; c < active.size(); ++c) ra(i, static_cast<Eigen::Index>(c)) = r(i, active[c]);
    }, 4096);
    Block w;
    const auto t_cycle = Clock::now();
    amg.apply(ra, w);
    st.preconditioner_s += seconds_since(t_cycle);
    st.preconditioner_applies += w.cols() * std::max(o.cycles, 1);
    orthonormalise_against2(xp, w, threads);
    if (w.cols() == 0) break;  // nothing new: the space is invariant to rounding
    Block lw;
    apply_l(w, lw);
    // Rayleigh-Ritz on span [X, P, W] (orthonormal); the [X P] block of the
    // projected matrix is known from the previous step.
    const Eigen::Index kxp = xp.cols(), m = kxp + w.cols();
    Eigen::MatrixXd h(m, m);
    h.topLeftCorner(kxp, kxp) = hxp;
    h.topRightCorner(kxp, w.cols()) = tgram(xp, lw, threads);
    h.bottomRightCorner(w.cols(), w.cols()) = tgram(w, lw, threads);
    h.bottomLeftCorner(w.cols(), kxp) = h.topRightCorner(kxp, w.cols()).transpose();
    h = 0.5 * (h + h.transpose()).eval();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h);
    const Eigen::MatrixXd cx = es.eigenvectors().leftCols(b);
    theta = es.eigenvalues().head(b);
    // New P: the part of the new active columns outside the old X,
    // orthonormalised in coefficient space against the new X.
    Eigen::MatrixXd z = Eigen::MatrixXd::Zero(m, static_cast<Eigen::Index>(active.size()));
    for (size_t c = 0; c < active.size(); ++c) z.col(static_cast<Eigen::Index>(c)).tail(m - b) = cx.col(active[c]).tail(m - b);
    for (int pass = 0; pass < 2; ++pass) z -= cx * (cx.transpose() * z);
    z = z * svqb(z.transpose() * z, 1e-12);
    Eigen::MatrixXd cn(m, b + z.cols());
    cn << cx, z;
    Block y(n, cn.cols());
    times_into(xp, cn.topRows(kxp), 1.0, 0.0, y, threads);
    times_into(w, cn.bottomRows(w.cols()), 1.0, 1.0, y, threads);
    xp.swap(y);
    hxp = cn.transpose() * h * cn;
    // Keep X orthonormal against rounding drift (checked every few
    // iterations: it grows by rounding steps only).
    const Cols xc(xp, 0, b);
    Eigen::MatrixXd g = it % 4 == 3 ? tgram(xc, xc, threads) : Eigen::MatrixXd::Identity(b, b);
    if ((g - Eigen::MatrixXd::Identity(b, b)).cwiseAbs().maxCoeff() > 1e-12) {
      Eigen::LLT<Eigen::MatrixXd> llt(g);
      const Eigen::MatrixXd rinv = llt.matrixU().solve(Eigen::MatrixXd::Identity(b, b));
      const Block xr = times(xc, rinv, threads);
      xp.leftCols(b) = xr;
      Eigen::MatrixXd t = Eigen::MatrixXd::Identity(hxp.rows(), hxp.cols());
      t.topLeftCorner(b, b) = rinv;
      hxp = t.transpose() * hxp * t;
    }
    spmm_strided(lap, xp.data(), xp.cols(), b, lx, threads);
    st.matvecs += b;
    progress.advance(static_cast<uint64_t>(b));
  }
  x = xp.leftCols(b);
  st.solve_s = seconds_since(t_solve);
  if (o.trace)
    std::fprintf(stderr, "warm eigensolve: order %.3f s, start %.3f s, AMG setup %.3f s, extra %.3f s, iterations %.3f s (V-cycles %.3f s)\n",
                 pre_perm, pre_start, st.setup_s, t_extra, st.solve_s, st.preconditioner_s);
  const auto t_fin = Clock::now();

  // Back to A's row order; residuals from A as given, by one block product
  // A V over A's own arrays (off-diagonal CSR + diagonal).
  Eigenpairs e = in_original_order(x, theta);
  Block v(n, count), av;
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < count; ++c) v(i, c) = e.vectors[static_cast<size_t>(i * count + c)];
  spmm_csr_arrays(original.row_ptr.data(), original.col.data(), original.val.data(), n, v, av, threads);
  st.matvecs += count;
  Eigen::VectorXd res2 = Eigen::VectorXd::Zero(count);
  for (int64_t i = 0; i < n; ++i) {
    const double di = original.diag[static_cast<size_t>(i)];
    for (int c = 0; c < count; ++c) {
      const double r = av(i, c) + (di - e.values[static_cast<size_t>(c)]) * v(i, c);
      res2[c] += r * r;
    }
  }
  for (int c = 0; c < count; ++c)
    e.max_residual = std::max(e.max_residual, std::sqrt(res2[c]) / std::max(std::abs(e.values[static_cast<size_t>(c)]), 1e-300));
  e.matvecs = st.matvecs;
  e.iterations = st.iterations;
  st.max_residual = e.max_residual;
  st.converged = st.converged && e.max_residual <= o.tolerance;
  progress.finish();
  if (o.trace) std::fprintf(stderr, "warm eigensolve: final %.3f s\n", seconds_since(t_fin));
  if (stats_out) *stats_out = st;
  return e;
}

}  // namespace manifold::detail
