// The smoothed-aggregation AMG behind the warm eigensolver
// (aggregation_amg.h): aggregation, the Jacobi-smoothed prolongator, the
// Galerkin coarse matrices, and the single-precision V-cycle with a
// Chebyshev smoother and a dense Cholesky solve on the coarsest level.
#include "aggregation_amg.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "manifold/error.h"
#include "manifold/parallel.h"

namespace manifold::detail::warm {
namespace {

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
  parallel_for(
      0, parts, t,
      [&](int64_t q) {
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
      },
      1);
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

/// The tentative prolongator: the near-null vector b restricted to each
/// aggregate and normalised (n x nc, one entry per row), and b's coarse
/// counterpart (the aggregates' norms).
struct Tentative {
  Csr pt;
  Eigen::VectorXd bc;
};
Tentative tentative_prolongator(const std::vector<int32_t>& agg, int32_t nc, const Eigen::VectorXd& b) {
  const int64_t n = static_cast<int64_t>(agg.size());
  Tentative t;
  Eigen::VectorXd& bc = t.bc;
  bc = Eigen::VectorXd::Zero(nc);
  for (int64_t i = 0; i < n; ++i) bc[agg[static_cast<size_t>(i)]] += b[i] * b[i];
  for (int32_t a = 0; a < nc; ++a) bc[a] = std::sqrt(bc[a]);
  Csr& pt = t.pt;
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
  return t;
}

// Rows per task of the row-parallel passes over a level's matrix.
constexpr int64_t kLevelRows = 4096;

/// D^-1 of the level matrix m and rho, a bound on D^-1 m's spectrum
/// (Gershgorin, or a Lanczos estimate when that is smaller).
struct Jacobi {
  Eigen::VectorXd dinv;
  double rho = 0;
};
Jacobi jacobi_scaling(const Csr& m, int threads) {
  const int64_t n = m.rows;
  Jacobi j;
  Eigen::VectorXd& dinv = j.dinv;
  dinv.resize(n);
  const int64_t parts = (n + kLevelRows - 1) / kLevelRows;
  std::vector<double> part_rho(static_cast<size_t>(parts), 0.0);
  parallel_for(
      0, parts, threads,
      [&](int64_t q) {
    for (int64_t i = q * kLevelRows; i < std::min(n, (q + 1) * kLevelRows); ++i) {
      double diag = 0, sum = 0;
      for (int64_t e = m.ptr[static_cast<size_t>(i)]; e < m.ptr[static_cast<size_t>(i + 1)]; ++e) {
        if (m.col[static_cast<size_t>(e)] == i) diag = m.val[static_cast<size_t>(e)];
        sum += std::abs(m.val[static_cast<size_t>(e)]);
      }
      if (!(diag > 0)) throw Error("warm eigensolve: AMG level matrix is not positive definite");
      dinv[i] = 1 / diag;
      part_rho[static_cast<size_t>(q)] = std::max(part_rho[static_cast<size_t>(q)], sum / diag);
    }
      },
      1);
  double rho = 0;
  for (double r : part_rho) rho = std::max(rho, r);
  j.rho = std::min(rho, 1.1 * spectral_radius(m, dinv, threads));
  return j;
}

/// The Jacobi-smoothed prolongator P = (I - omega D^-1 M) P_tent with
/// omega = 4 / (3 rho).
Csr smoothed_prolongator(const Csr& m, const Csr& pt, const std::vector<int32_t>& agg, const Jacobi& jacobi,
                         int threads) {
  const int64_t n = m.rows;
  const int64_t parts = (n + kLevelRows - 1) / kLevelRows;
  const Eigen::VectorXd& dinv = jacobi.dinv;
  const double omega = 4.0 / (3.0 * jacobi.rho);
  // Row i of M P_tent holds column agg[i] (m_ii > 0), where P_tent's own
  // entry goes.
  Csr p = spgemm(m, pt, threads);
  parallel_for(
      0, parts, threads,
      [&](int64_t q) {
    for (int64_t i = q * kLevelRows; i < std::min(n, (q + 1) * kLevelRows); ++i)
      for (int64_t e = p.ptr[static_cast<size_t>(i)]; e < p.ptr[static_cast<size_t>(i + 1)]; ++e) {
        double& v = p.val[static_cast<size_t>(e)];
        v *= -omega * dinv[i];
        if (p.col[static_cast<size_t>(e)] == agg[static_cast<size_t>(i)]) v += pt.val[static_cast<size_t>(i)];
      }
      },
      1);
  return p;
}

/// The coarse matrix R M P (R = P^T), made exactly symmetric: it is but for
/// rounding, and its pattern is symmetric as M's is.
Csr galerkin_product(const Csr& r, const Csr& m, const Csr& p, int threads) {
  Csr mc = spgemm(r, spgemm(m, p, threads), threads);
  const Csr mct = transpose(mc);
  if (mct.ptr == mc.ptr && mct.col == mc.col)
    for (size_t e = 0; e < mc.val.size(); ++e) mc.val[e] = 0.5 * (mc.val[e] + mct.val[e]);
  return mc;
}

}  // namespace

Amg::Amg(Csr m, Eigen::VectorXd b, int smoothing, int coarse_size, int threads, int cycles)
    : smoothing_(smoothing), cycles_(cycles), threads_(threads) {
  Csr gram;  // P^T P composed down to this level (unused at the finest: identity)
  for (int level = 0; level < 20; ++level) {
    const int64_t n = m.rows;
    if (n <= coarse_size) break;
    int32_t nc = 0;
    std::vector<int32_t> agg = aggregate(m, &nc);
    if (nc >= n * 0.8 || nc < 1) break;  // not coarsening: stop here
    Tentative tentative = tentative_prolongator(agg, nc, b);
    const Jacobi jacobi = jacobi_scaling(m, threads);
    Csr p = smoothed_prolongator(m, tentative.pt, agg, jacobi, threads);
    Csr r = transpose(p);
    Csr mc = galerkin_product(r, m, p, threads);
    gram = level == 0 ? spgemm(r, p, threads) : spgemm(r, spgemm(gram, p, threads), threads);
    Level lv;
    lv.a = to_float(m, threads);
    lv.p = to_float(p, threads);
    lv.r = to_float(r, threads);
    lv.dinv.assign(jacobi.dinv.data(), jacobi.dinv.data() + n);
    lv.rho = jacobi.rho;
    levels_.push_back(std::move(lv));
    m = std::move(mc);
    b = std::move(tentative.bc);
  }
  coarse_matrix_ = dense(m);
  coarse_gram_ = levels_.empty() ? Eigen::MatrixXd::Identity(m.rows, m.rows) : dense(gram);
  coarse_.compute(coarse_matrix_);
  if (coarse_.info() != Eigen::Success) throw Error("warm eigensolve: the coarsest AMG level is not positive definite");
  coarse_rows_ = m.rows;
  coarse_nnz_ = m.nnz();
}

Block Amg::coarse_eigenvectors(int k, double shift) const {
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

void Amg::apply(const Block& r, Block& z) const {
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

std::vector<int64_t> Amg::level_rows() const {
  std::vector<int64_t> out;
  for (auto& l : levels_) out.push_back(l.a.rows);
  out.push_back(coarse_rows_);
  return out;
}

double Amg::operator_complexity() const {
  if (levels_.empty()) return 1;
  double total = static_cast<double>(coarse_nnz_);
  for (auto& l : levels_) total += static_cast<double>(l.a.nnz());
  return total / static_cast<double>(levels_[0].a.nnz());
}

void Amg::smooth(const Level& lv, const BlockF& b, BlockF& x, bool from_zero) const {
  const double hi = lv.rho, lo = lv.rho / cheb_ratio();
  const double theta = 0.5 * (hi + lo), delta = 0.5 * (hi - lo), sigma = theta / delta;
  double rho_k = 1 / sigma;
  BlockF d, xn, dn;
  if (from_zero) {
    x.resize(b.rows(), b.cols());
    d.resize(b.rows(), b.cols());
    for (Eigen::Index i = 0; i < b.rows(); ++i)
      d.row(i) = static_cast<float>(lv.dinv[static_cast<size_t>(i)] / theta) * b.row(i);
    x = d;
  } else {
    d.setZero(b.rows(), b.cols());
    cheb_step(lv.a, lv.dinv, b, x, d, 0.0f, static_cast<float>(1 / theta), xn, dn, threads_);
    x.swap(xn);
    d.swap(dn);
  }
  for (int k = 1; k < smoothing_; ++k) {
    const double rho_new = 1 / (2 * sigma - rho_k);
    cheb_step(lv.a, lv.dinv, b, x, d, static_cast<float>(rho_new * rho_k), static_cast<float>(2 * rho_new / delta), xn,
              dn, threads_);
    x.swap(xn);
    d.swap(dn);
    rho_k = rho_new;
  }
}

void Amg::cycle(size_t l, const BlockF& b, BlockF& x) const {
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

}  // namespace manifold::detail::warm
