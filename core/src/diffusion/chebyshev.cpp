// Chebyshev-filtered subspace iteration on a BlockOperator (see
// block_eigensolver.h). Each outer iteration:
//   1. filter the Ritz block X with the scaled Chebyshev polynomial
//      p(A) = T_m(t(A)) / T_m(t(upper)), t(l) = (l - c) / e, which is at most
//      1 / T_m(t(upper)) on [lower, cut] and grows fastest above the cut,
//      cut = the block's smallest Ritz value (three-term recurrence: one
//      block product per degree, the shift c folded into the operator);
//   2. orthonormalise (Cholesky QR with column equilibration, twice; a
//      shifted pass first where the Gram matrix is not numerically positive
//      definite);
//   3. Rayleigh-Ritz on the block, residuals of the Ritz pairs.
// The degree of each filter is what the worst unconverged wanted pair needs
// to reach the tolerance by the Chebyshev bound, capped so that the filtered
// block stays well conditioned.
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <utility>

#include "manifold/block_eigensolver.h"
#include "manifold/error.h"
#include "manifold/parallel.h"
#include "warm_eigensolver.h"

namespace manifold {

namespace {

using ColMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

/// out <- in R^-1 with in^T in = R^T R; returns whether the Gram matrix needed a shift.
bool cholesky_qr_pass(BlockOperator& op, int in, int out) {
  const int b = op.block();
  std::vector<double> g = op.inner(in, in);
  Eigen::Map<const ColMajor> gm(g.data(), b, b);
  if (!gm.allFinite()) throw Error("eigensolve: the block has non-finite values (a broken matrix?)");
  Eigen::VectorXd s(b);
  for (int j = 0; j < b; ++j) s[j] = gm(j, j) > 0 ? 1 / std::sqrt(gm(j, j)) : 1;
  // Equilibrated: columns of very different lengths (the filter amplifies
  // the top of the spectrum most) do not make the factor ill-conditioned.
  ColMajor gs = s.asDiagonal() * gm * s.asDiagonal();
  gs = (gs + gs.transpose()).eval() * 0.5;
  Eigen::LLT<ColMajor> llt(gs);
  bool shifted = false;
  // Shifted Cholesky QR (Fukaya et al. 2020): a shift of about b^2 u times
  // the (unit) column norms makes a numerically rank-deficient Gram matrix
  // positive definite; the passes after it restore orthogonality.
  for (double shift = 11.0 * (b + 1.0) * b * std::numeric_limits<double>::epsilon();
       llt.info() != Eigen::Success || !llt.matrixL().toDenseMatrix().allFinite(); shift *= 100) {
    if (shift > 1e-2) throw Error("eigensolve: the block lost rank beyond repair (Cholesky QR failed)");
    llt.compute(gs + shift * ColMajor::Identity(b, b));
    shifted = true;
  }
  const ColMajor r = llt.matrixU();
  ColMajor rinv = r.triangularView<Eigen::Upper>().solve(ColMajor::Identity(b, b));
  ColMajor m = s.asDiagonal() * rinv;
  op.multiply(in, std::vector<double>(m.data(), m.data() + m.size()), out);
  return shifted;
}

/// Orthonormalises slot `in`, using `spare`; returns the slot holding the result.
int orthonormalise(BlockOperator& op, int in, int spare, ChebyshevStats& st) {
  int cur = in, other = spare;
  int clean_passes = 0;
  for (int pass = 0; pass < 6 && clean_passes < 2; ++pass) {
    if (cholesky_qr_pass(op, cur, other)) {
      ++st.orthonormalisation_retries;
      clean_passes = 0;
    } else {
      ++clean_passes;
    }
    std::swap(cur, other);
  }
  if (clean_passes < 2) throw Error("eigensolve: the block could not be orthonormalised");
  return cur;
}

int free_slot(std::initializer_list<int> used) {
  for (int s = 0; s < 4; ++s)
    if (std::find(used.begin(), used.end(), s) == used.end()) return s;
  return -1;
}

struct Ritz {
  std::vector<double> theta;  ///< eigenvalues of A, descending
  std::vector<double> res;    ///< |A x - theta x|
};

/// Rayleigh-Ritz on orthonormal slot q: x_out <- Ritz vectors, w_out <- (A - shift) x_out.
Ritz rayleigh_ritz(BlockOperator& op, double shift, int q, int w, int x_out, int w_out) {
  const int b = op.block();
  op.apply(q, w, 1, 0);
  std::vector<double> h = op.inner(q, w);
  Eigen::Map<ColMajor> hm(h.data(), b, b);
  ColMajor hs = (hm + hm.transpose()) * 0.5;
  if (!hs.allFinite()) throw Error("eigensolve: non-finite Rayleigh quotient (a broken matrix?)");
  Eigen::SelfAdjointEigenSolver<ColMajor> es(hs);
  if (es.info() != Eigen::Success) throw Error("eigensolve: the small Rayleigh-Ritz problem failed");
  ColMajor u = es.eigenvectors().rowwise().reverse();  // descending
  std::vector<double> theta_shifted(static_cast<size_t>(b));
  for (int j = 0; j < b; ++j) theta_shifted[static_cast<size_t>(j)] = es.eigenvalues()[b - 1 - j];
  const std::vector<double> um(u.data(), u.data() + u.size());
  op.multiply(q, um, x_out);
  op.multiply(w, um, w_out);
  const std::vector<double> r2 = op.residual_norms2(w_out, x_out, theta_shifted);
  Ritz r;
  r.theta.resize(static_cast<size_t>(b));
  r.res.resize(static_cast<size_t>(b));
  for (int j = 0; j < b; ++j) {
    r.theta[static_cast<size_t>(j)] = theta_shifted[static_cast<size_t>(j)] + shift;
    r.res[static_cast<size_t>(j)] = std::sqrt(std::max(r2[static_cast<size_t>(j)], 0.0));
  }
  return r;
}

/// Slot 0 <- the start block: the given vectors (finite entries), random
/// columns for the rest.
void upload_start_block(BlockOperator& op, const ChebyshevOptions& o) {
  const int64_t n = op.rows();
  const int b = op.block();
  std::vector<double> host(static_cast<size_t>(n * b));
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal;
  const int given = o.start ? std::min(o.start_cols, b) : 0;
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < b; ++c) {
      double v = normal(rng);
      if (c < given) {
        const double s = o.start[static_cast<size_t>(i * o.start_cols + c)];
        if (std::isfinite(s)) v = s;
      }
      host[static_cast<size_t>(i * b + c)] = v;
    }
  op.upload(0, host.data());
}

/// |A x_j - theta_j x_j| / max(|theta_j|, floor).
double relative_residual(const Ritz& rz, int j, double floor) {
  return rz.res[static_cast<size_t>(j)] / std::max(std::abs(rz.theta[static_cast<size_t>(j)]), floor);
}

/// One Chebyshev filter: the interval [lower, cut] it damps, as centre c and
/// half-width e, the scaled reference point t_ref = t(upper), its degree.
struct Filter {
  double cut = 0, e = 0, c = 0, t_ref = 0;
  int degree = 0;
};

/// The next filter: the degree the worst unconverged wanted pair needs by the
/// Chebyshev bound, capped so that within one filter the top pair grows at
/// most kappa times over the cut (or the other directions of a column drown
/// in its top component), by max_degree and by the products left.
Filter plan_filter(const Ritz& rz, int count, const ChebyshevOptions& o, int64_t products_spent, double eps23) {
  const double kappa = 1e8;
  const int b = static_cast<int>(rz.theta.size());
  Filter f;
  f.cut = std::max(rz.theta[static_cast<size_t>(b - 1)], o.lower + 1e-12 * (o.upper - o.lower));
  f.e = (f.cut - o.lower) / 2, f.c = (f.cut + o.lower) / 2;
  f.t_ref = std::max((o.upper - f.c) / f.e, 1.0 + 1e-15);
  int degree = 4;
  for (int j = 0; j < count; ++j) {
    const double rel = relative_residual(rz, j, eps23);
    if (rel <= o.tolerance) continue;
    const double t = (rz.theta[static_cast<size_t>(j)] - f.c) / f.e;
    const double rho = std::acosh(std::max(t, 1.0 + 1e-12));
    degree = std::max(degree, static_cast<int>(std::ceil(std::acosh(rel / (0.3 * o.tolerance)) / rho)));
  }
  const double rho_top = std::acosh(std::max((rz.theta[0] - f.c) / f.e, 1.0 + 1e-12));
  degree = std::min({degree, o.max_degree, std::max(4, static_cast<int>(std::acosh(kappa) / rho_top))});
  f.degree = static_cast<int>(std::min<int64_t>(degree, std::max<int64_t>(1, o.max_products - products_spent)));
  return f;
}

/// Filters slot x by the three-term recurrence of the scaled polynomials
/// (one block product per degree, the operator shifted to the centre).
/// Returns {the filtered slot, the spare slot the recurrence used}.
std::pair<int, int> apply_filter(BlockOperator& op, int x, const Filter& f, Progress& progress) {
  op.set_shift(f.c);
  int cur = free_slot({x}), prev = x;
  double sigma = 1 / f.t_ref;
  op.apply(x, cur, sigma / f.e, 0);
  for (int i = 2; i <= f.degree; ++i) {
    const double sigma_next = 1 / (2 * f.t_ref - sigma);
    op.apply(cur, prev, 2 * sigma_next / f.e, -sigma * sigma_next);
    std::swap(cur, prev);
    sigma = sigma_next;
    if ((i & 15) == 0) progress.check_cancel();
  }
  return {cur, prev};
}

/// The first `count` Ritz pairs of slot x, vectors with the CPU solvers' signs.
Eigenpairs converged_pairs(BlockOperator& op, const Ritz& rz, int x, int count, const ChebyshevStats& st) {
  const int64_t n = op.rows();
  const int b = op.block();
  Eigenpairs ep;
  ep.count = count;
  ep.ncv = b;
  ep.iterations = st.outer_iterations;
  ep.matvecs = st.products * b;
  ep.values.assign(rz.theta.begin(), rz.theta.begin() + count);
  ep.vectors.resize(static_cast<size_t>(n * count));
  op.download(x, count, ep.vectors.data());
  detail::largest_entry_positive(ep.vectors, n, count, 0);  // signs as the CPU solvers'
  for (int j = 0; j < count; ++j) ep.max_residual = std::max(ep.max_residual, relative_residual(rz, j, 1e-300));
  ep.check_settled = true;  // a block holds repeated eigenvalues: no separate check needed
  return ep;
}

}  // namespace

int chebyshev_block(int count, int64_t n, int requested) {
  int64_t b = requested > 0 ? requested : count + std::max(10, count);
  b = std::max<int64_t>(b, count);
  return static_cast<int>(std::min<int64_t>(b, n));
}

Eigenpairs chebyshev_eigenpairs(BlockOperator& op, int count, const ChebyshevOptions& o, Progress& progress,
                                ChebyshevStats* stats_out) {
  const int64_t n = op.rows();
  const int b = op.block();
  if (count < 1 || count > b || b > n)
    throw UsageError("eigensolve: " + std::to_string(count) + " eigenpairs with a block of " + std::to_string(b) +
                     " on " + std::to_string(n) + " rows");
  if (!(o.upper > o.lower)) throw UsageError("eigensolve: the spectrum's bounds are empty");
  ChebyshevStats st;
  const double eps23 = std::pow(std::numeric_limits<double>::epsilon(), 2.0 / 3.0);

  upload_start_block(op, o);
  const auto t_start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  progress.stage("eigensolve", static_cast<uint64_t>(o.max_products), "block products", true);
  double shift = 0;
  op.set_shift(shift);
  int q = orthonormalise(op, 0, 1, st);
  int x = free_slot({q}), wx = free_slot({q, x});
  Ritz rz = rayleigh_ritz(op, shift, q, free_slot({q, x, wx}), x, wx);
  st.products += 1;
  for (;;) {
    double worst = 0;
    int worst_j = -1;
    for (int j = 0; j < count; ++j) {
      const double rel = relative_residual(rz, j, eps23);
      if (rel > o.tolerance && (worst_j < 0 || rel > worst)) worst = rel, worst_j = j;
    }
    if (worst_j < 0) break;
    if (st.products >= o.max_products || (o.time_limit_s > 0 && seconds() >= o.time_limit_s))
      throw EigensolveBudgetExceeded("eigensolve: Chebyshev subspace iteration did not converge within its budget (" +
                                         std::to_string(st.products) + " block products, worst relative residual " +
                                         std::to_string(worst) + ")",
                                     st.products, seconds());
    const Filter filter = plan_filter(rz, count, o, st.products, eps23);
    if (o.trace)
      std::fprintf(stderr, "chebyshev: outer %d, worst residual %.3e (pair %d), cut %.9f, degree %d\n",
                   st.outer_iterations, worst, worst_j, filter.cut, filter.degree);
    shift = filter.c;
    const auto [cur, prev] = apply_filter(op, x, filter, progress);
    st.products += filter.degree;
    st.degrees.push_back(filter.degree);
    progress.advance(static_cast<uint64_t>(filter.degree));
    progress.check_cancel();
    q = orthonormalise(op, cur, prev, st);
    x = free_slot({q});
    wx = free_slot({q, x});
    const int w = free_slot({q, x, wx});
    rz = rayleigh_ritz(op, shift, q, w, x, wx);
    st.products += 1;
    ++st.outer_iterations;
  }
  Eigenpairs ep = converged_pairs(op, rz, x, count, st);
  progress.finish();
  if (stats_out) *stats_out = st;
  return ep;
}

// ---- the CPU back end -------------------------------------------------------

CsrBlockOperator::CsrBlockOperator(const DiffusionMatrix& a, int block, int threads)
    : a_(a), b_(block), threads_(threads) {
  for (auto& s : slot_) s.assign(static_cast<size_t>(a.n * block), 0.0);
}

void CsrBlockOperator::upload(int slot, const double* host) { std::copy(host, host + a_.n * b_, slot_[slot].begin()); }

void CsrBlockOperator::download(int slot, int cols, double* host) {
  for (int64_t i = 0; i < a_.n; ++i)
    for (int c = 0; c < cols; ++c) host[i * cols + c] = slot_[slot][static_cast<size_t>(i * b_ + c)];
}

void CsrBlockOperator::apply(int in, int out, double alpha, double beta) {
  const double* x = slot_[in].data();
  double* y = slot_[out].data();
  const int b = b_;
  parallel_for(0, a_.n, threads_, [&](int64_t i) {
    thread_local std::vector<double> acc;
    acc.resize(static_cast<size_t>(b));
    double* s = acc.data();
    const double d = a_.diag[static_cast<size_t>(i)] - shift_;
    for (int c = 0; c < b; ++c) s[c] = d * x[i * b + c];
    for (int64_t p = a_.row_ptr[static_cast<size_t>(i)]; p < a_.row_ptr[static_cast<size_t>(i) + 1]; ++p) {
      const double v = a_.val[static_cast<size_t>(p)];
      const double* xj = x + static_cast<int64_t>(a_.col[static_cast<size_t>(p)]) * b;
      for (int c = 0; c < b; ++c) s[c] += v * xj[c];
    }
    for (int c = 0; c < b; ++c) y[i * b + c] = alpha * s[c] + (beta == 0 ? 0.0 : beta * y[i * b + c]);
  });
}

std::vector<double> CsrBlockOperator::inner(int a, int b) {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMajor> ma(slot_[a].data(), a_.n, b_), mb(slot_[b].data(), a_.n, b_);
  ColMajor g = ma.transpose() * mb;
  return std::vector<double>(g.data(), g.data() + g.size());
}

void CsrBlockOperator::multiply(int in, const std::vector<double>& m, int out) {
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMajor> x(slot_[in].data(), a_.n, b_);
  Eigen::Map<RowMajor> y(slot_[out].data(), a_.n, b_);
  Eigen::Map<const ColMajor> mm(m.data(), b_, b_);
  y.noalias() = x * mm;
}

std::vector<double> CsrBlockOperator::residual_norms2(int aw, int x, const std::vector<double>& theta) {
  std::vector<double> r(static_cast<size_t>(b_), 0.0);
  const double* w = slot_[aw].data();
  const double* v = slot_[x].data();
  for (int64_t i = 0; i < a_.n; ++i)
    for (int c = 0; c < b_; ++c) {
      const double d = w[i * b_ + c] - theta[static_cast<size_t>(c)] * v[i * b_ + c];
      r[static_cast<size_t>(c)] += d * d;
    }
  return r;
}

}  // namespace manifold
