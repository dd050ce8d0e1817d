// The warm-started eigensolver behind rediffuse(): block LOBPCG (Knyazev)
// on L = I - A with an orthonormal basis [X, P, W] (Hetmaniuk-Lehoucq),
// soft locking of converged columns, preconditioned by symmetric
// smoothed-aggregation AMG V-cycles (Vanek-Mandel-Brezina) for L + shift I.
//
// Why: the top of a diffusion spectrum is tightly clustered (1 - lambda
// ~1e-5..1e-4 at N = 1e5), so Krylov methods on A need thousands of
// mat-vecs whatever the start. A preconditioner that inverts L on the smooth
// end of its spectrum removes that dependence: the k-NN graph Laplacian is
// the textbook case for aggregation multigrid, and the previous embedding's
// eigenvectors are already close to the new ones, so a few preconditioned
// block iterations reach the solver tolerance.
//
// Everything runs on A in reverse Cuthill-McKee order. The three parts, one
// file each: this one (LOBPCG), aggregation_amg.cpp (the preconditioner) and
// block_products.cpp (the sparse and dense block products both are made of).
#include "warm_eigensolver.h"

#include <cblas.h>  // openblas_{get,set}_num_threads

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "aggregation_amg.h"
#include "block_products.h"
#include "manifold/error.h"
#include "manifold/parallel.h"

namespace manifold::detail {
namespace {

using warm::Amg;
using warm::Block;
using warm::Cols;
using warm::Csr;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// OpenBLAS single-threaded while it lives: the dense products run on our
/// threads over row blocks, each a single-threaded OpenBLAS call (its own
/// threads would oversubscribe).
class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : saved_(openblas_get_num_threads()) { openblas_set_num_threads(1); }
  ~SingleThreadedBlas() { openblas_set_num_threads(saved_); }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_;
};

/// The Ritz pairs' residuals in one iteration.
struct RitzResiduals {
  Block r;                           ///< L x - theta x per column
  double worst = 0;                  ///< max over the wanted pairs, relative to |1 - theta|
  std::vector<Eigen::Index> active;  ///< columns that get a search direction
};

/// One warm solve. Phases: the matrix in its row order (constructor), the
/// start block and the preconditioner's shift, the AMG hierarchy, the rest of
/// the block, the LOBPCG iterations, the result in A's row order with its
/// residuals recomputed from A.
class WarmSolve {
 public:
  WarmSolve(const DiffusionMatrix& original, int count, const WarmOptions& options, Progress& progress,
            const std::vector<int32_t>* order_hint);
  Eigenpairs run(const Eigen::MatrixXd& start);
  const WarmStats& stats() const { return st_; }

 private:
  void load_start(const Eigen::MatrixXd& start);
  double choose_shift();
  Amg build_preconditioner(double shift) const;
  void fill_block(const Amg& amg, double shift);
  void iterate(const Amg& amg);
  RitzResiduals ritz_residuals(int it) const;
  void offer_preview(int it, double worst);
  bool out_of_budget(int it) const;
  Block search_directions(const RitzResiduals& rr, const Amg& amg);
  void rayleigh_ritz_xpw(const Block& w, const std::vector<Eigen::Index>& active);
  void keep_x_orthonormal(int it);
  Eigenpairs with_residuals_from_a();

  void apply_l(const Block& v, Block& out);
  void rayleigh_ritz(int keep);
  Eigenpairs in_original_order(const Block& xs, const Eigen::VectorXd& th) const;

  const DiffusionMatrix& original_;
  const int count_;
  WarmOptions o_;  // on_preview is cleared once called
  Progress& progress_;
  const int64_t n_;
  const int threads_;
  const int b_;  // block columns: count_ wanted + guard
  WarmStats st_;
  SingleThreadedBlas blas_;
  Clock::time_point t_pre_;
  std::vector<int32_t> order_;  // order_[new] = old
  DiffusionMatrix a_;           // A in order_
  Csr lap_;                     // L = I - A in order_
  double pre_perm_s_ = 0;
  std::mt19937_64 rng_{23};
  std::uniform_real_distribution<double> u_{-0.5, 0.5};
  // The iteration's state: X (Ritz vectors, orthonormal) and L X; in the
  // LOBPCG loop [X P] side by side in xp_ (one product where there would be
  // two) and hxp_ = [X P]^T L [X P].
  Block x_, lx_, xp_;
  Eigen::VectorXd theta_;
  Eigen::MatrixXd hxp_;
};

/// The block's columns: `count` wanted pairs and the guard columns; throws
/// UsageError when A has too few rows for a block method.
int block_columns(int count, int guard, int64_t n) {
  const int b = static_cast<int>(std::min<int64_t>(count + std::max(guard, 0), n));
  if (count < 1 || 3 * static_cast<int64_t>(b) + 1 > n)
    throw UsageError("warm eigensolve: " + std::to_string(count) + " eigenpairs from a " + std::to_string(n) +
                     "-row matrix; too few rows for a block method");
  return b;
}

WarmSolve::WarmSolve(const DiffusionMatrix& original, int count, const WarmOptions& options, Progress& progress,
                     const std::vector<int32_t>* order_hint)
    : original_(original),
      count_(count),
      o_(options),
      progress_(progress),
      n_(original.n),
      threads_(options.threads),
      b_(block_columns(count, options.guard, original.n)) {
  t_pre_ = Clock::now();
  order_ = order_hint && is_permutation_of(*order_hint, n_) ? *order_hint : rcm_order(original_);
  a_ = permuted(original_, order_, threads_);
  lap_ = warm::shifted_laplacian(a_, 0.0, threads_);
  pre_perm_s_ = seconds_since(t_pre_);
}

Eigenpairs WarmSolve::run(const Eigen::MatrixXd& start) {
  load_start(start);
  progress_.stage("eigensolve (warm)", 0, "mat-vecs");
  const double shift = choose_shift();
  st_.shift = shift;
  const double pre_start = seconds_since(t_pre_) - pre_perm_s_;

  const auto t_setup = Clock::now();
  const Amg amg = build_preconditioner(shift);
  st_.setup_s = seconds_since(t_setup);
  st_.level_rows = amg.level_rows();
  st_.operator_complexity = amg.operator_complexity();
  fill_block(amg, shift);
  const double t_extra = seconds_since(t_setup) - st_.setup_s;

  const auto t_solve = Clock::now();
  iterate(amg);
  st_.solve_s = seconds_since(t_solve);
  if (o_.trace)
    std::fprintf(stderr,
                 "warm eigensolve: order %.3f s, start %.3f s, AMG setup %.3f s, extra %.3f s, iterations %.3f s "
                 "(V-cycles %.3f s)\n",
                 pre_perm_s_, pre_start, st_.setup_s, t_extra, st_.solve_s, st_.preconditioner_s);
  const auto t_fin = Clock::now();
  Eigenpairs e = with_residuals_from_a();
  progress_.finish();
  if (o_.trace) std::fprintf(stderr, "warm eigensolve: final %.3f s\n", seconds_since(t_fin));
  return e;
}

/// x: the given start columns (at most the block's) in the solve's row
/// order, orthonormalised.
void WarmSolve::load_start(const Eigen::MatrixXd& start) {
  const int given = static_cast<int>(std::min<Eigen::Index>(start.cols(), b_));
  x_.resize(n_, given);
  for (int64_t i = 0; i < n_; ++i) {
    const int64_t oi = order_[static_cast<size_t>(i)];
    for (int c = 0; c < given; ++c) x_(i, c) = start(oi, c);
  }
  if (!x_.allFinite()) throw Error("warm eigensolve: the start vectors are not finite");
  warm::orthonormalise_against(Block(n_, 0), x_, threads_);
}

/// The preconditioner's shift: options.shift, or a tenth of the largest
/// wanted eigenvalue of L from the start's Ritz values. That keeps the AMG
/// well conditioned (L is singular) while T stays a good inverse on the
/// wanted end of the spectrum; the iteration count hardly depends on it
/// (N = 1e5: the same from 1e-5 to 3e-4).
double WarmSolve::choose_shift() {
  double shift = o_.shift;
  if (!(shift > 0)) {
    if (x_.cols() > 0) {
      rayleigh_ritz(static_cast<int>(x_.cols()));
      shift = 0.1 * theta_[std::min<Eigen::Index>(count_, theta_.size()) - 1];
    }
    shift = std::max(shift, 1e-8);
  }
  return shift;
}

/// V-cycles for L + shift I, with the near-null vector sqrt(d).
Amg WarmSolve::build_preconditioner(double shift) const {
  Eigen::VectorXd near_null(n_);
  for (int64_t i = 0; i < n_; ++i)
    near_null[i] = std::sqrt(original_.degree[static_cast<size_t>(order_[static_cast<size_t>(i)])]);
  return Amg(warm::shifted_laplacian(a_, shift, threads_), near_null, std::max(o_.smoothing, 1),
             std::max(o_.coarse_size, 10), threads_, std::max(o_.cycles, 1));
}

/// The rest of the block (and a second guess at the rest of the wanted
/// space): the coarsest level's lowest eigenvectors, prolonged; random
/// columns if that falls short. One Rayleigh-Ritz step on all of it keeps
/// the best b.
void WarmSolve::fill_block(const Amg& amg, double shift) {
  Block extra = amg.coarse_eigenvectors(b_, shift);
  if (extra.rows() != n_) extra.resize(n_, 0);
  warm::orthonormalise_against(x_, extra, threads_);
  x_ = warm::hcat({&x_, &extra});
  while (x_.cols() < b_) {
    Block more(n_, b_ - x_.cols());
    for (int64_t i = 0; i < n_; ++i)
      for (Eigen::Index c = 0; c < more.cols(); ++c) more(i, c) = u_(rng_);
    warm::orthonormalise_against(x_, more, threads_);
    x_ = warm::hcat({&x_, &more});
  }
  rayleigh_ritz(b_);
}

/// LOBPCG until the wanted pairs reach the tolerance, the iteration cap or
/// the time budget, or the search space stops growing. hxp_ is known from
/// the previous Rayleigh-Ritz step without touching n-vectors; L X is
/// computed afresh each iteration.
void WarmSolve::iterate(const Amg& amg) {
  xp_ = std::move(x_);
  hxp_ = theta_.asDiagonal();
  for (int it = 0;; ++it) {
    const RitzResiduals rr = ritz_residuals(it);
    if (rr.worst <= o_.tolerance) {
      st_.converged = true;
      break;
    }
    offer_preview(it, rr.worst);
    if (out_of_budget(it)) break;
    st_.iterations = it + 1;
    const Block w = search_directions(rr, amg);
    if (w.cols() == 0) break;  // nothing new: the space is invariant to rounding
    rayleigh_ritz_xpw(w, rr.active);
    keep_x_orthonormal(it);
    warm::spmm_strided(lap_, xp_.data(), xp_.cols(), b_, lx_, threads_);
    st_.matvecs += b_;
    progress_.advance(static_cast<uint64_t>(b_));
  }
  x_ = xp_.leftCols(b_);
}

/// Residuals of the Ritz pairs, relative to |lambda| = |1 - theta|; the
/// active columns: the wanted ones above the tolerance, and the guard
/// columns when they search too.
RitzResiduals WarmSolve::ritz_residuals(int it) const {
  RitzResiduals rr;
  const int64_t ld = xp_.cols();
  rr.r = lx_;
  parallel_for(
      0, n_, threads_,
      [&](int64_t i) {
    double* ri = rr.r.data() + i * b_;
    const double* xi = xp_.data() + i * ld;
    for (int c = 0; c < b_; ++c) ri[c] -= theta_[c] * xi[c];
      },
      4096);
  const Eigen::VectorXd rn2 = warm::tgram_diag(rr.r, threads_);
  for (int c = 0; c < b_; ++c) {
    const double res = std::sqrt(std::max(rn2[c], 0.0)) / std::max(std::abs(1 - theta_[c]), 1e-300);
    if (c < count_) rr.worst = std::max(rr.worst, res);
    if ((c >= count_ && o_.guard_search) || (c < count_ && res > o_.tolerance)) rr.active.push_back(c);
  }
  if (o_.trace)
    std::fprintf(stderr, "warm eigensolve: iteration %d, worst residual %.2e, %zu active\n", it, rr.worst,
                 rr.active.size());
  return rr;
}

/// The first iterate within the preview tolerance, once the preview's
/// earliest time has come, goes to on_preview (once).
void WarmSolve::offer_preview(int it, double worst) {
  if (!(o_.on_preview && worst <= o_.preview_tolerance && Clock::now() >= o_.preview_not_before)) return;
  Eigenpairs pe = in_original_order(xp_, theta_);
  pe.max_residual = worst;
  pe.iterations = it;
  o_.on_preview(pe);
  o_.on_preview = nullptr;
}

/// The iteration cap, or the time budget: they stop the solve with a
/// preview, not an error.
bool WarmSolve::out_of_budget(int it) const {
  return it >= o_.max_iterations || (o_.time_limit_s > 0 && seconds_since(t_pre_) >= o_.time_limit_s);
}

/// W: the preconditioned residuals of the active columns, orthonormal and
/// orthogonal to [X P].
Block WarmSolve::search_directions(const RitzResiduals& rr, const Amg& amg) {
  const std::vector<Eigen::Index>& active = rr.active;
  Block ra(n_, static_cast<Eigen::Index>(active.size()));
  parallel_for(
      0, n_, threads_,
      [&](int64_t i) {
    for (size_t c = 0; c < active.size(); ++c) ra(i, static_cast<Eigen::Index>(c)) = rr.r(i, active[c]);
      },
      4096);
  Block w;
  const auto t_cycle = Clock::now();
  amg.apply(ra, w);
  st_.preconditioner_s += seconds_since(t_cycle);
  st_.preconditioner_applies += w.cols() * std::max(o_.cycles, 1);
  warm::orthonormalise_against2(xp_, w, threads_);
  return w;
}

/// Rayleigh-Ritz on span [X, P, W] (orthonormal): the new X and theta, and
/// the new P, the part of the new active columns outside the old X,
/// orthonormalised in coefficient space against the new X. The [X P] block
/// of the projected matrix is known from the previous step.
void WarmSolve::rayleigh_ritz_xpw(const Block& w, const std::vector<Eigen::Index>& active) {
  Block lw;
  apply_l(w, lw);
  const Eigen::Index kxp = xp_.cols(), m = kxp + w.cols();
  Eigen::MatrixXd h(m, m);
  h.topLeftCorner(kxp, kxp) = hxp_;
  h.topRightCorner(kxp, w.cols()) = warm::tgram(xp_, lw, threads_);
  h.bottomRightCorner(w.cols(), w.cols()) = warm::tgram(w, lw, threads_);
  h.bottomLeftCorner(w.cols(), kxp) = h.topRightCorner(kxp, w.cols()).transpose();
  h = 0.5 * (h + h.transpose()).eval();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h);
  const Eigen::MatrixXd cx = es.eigenvectors().leftCols(b_);
  theta_ = es.eigenvalues().head(b_);
  Eigen::MatrixXd z = Eigen::MatrixXd::Zero(m, static_cast<Eigen::Index>(active.size()));
  for (size_t c = 0; c < active.size(); ++c)
    z.col(static_cast<Eigen::Index>(c)).tail(m - b_) = cx.col(active[c]).tail(m - b_);
  for (int pass = 0; pass < 2; ++pass) z -= cx * (cx.transpose() * z);
  z = z * warm::svqb(z.transpose() * z, 1e-12);
  Eigen::MatrixXd cn(m, b_ + z.cols());
  cn << cx, z;
  Block y(n_, cn.cols());
  warm::times_into(xp_, cn.topRows(kxp), 1.0, 0.0, y, threads_);
  warm::times_into(w, cn.bottomRows(w.cols()), 1.0, 1.0, y, threads_);
  xp_.swap(y);
  hxp_ = cn.transpose() * h * cn;
}

/// X re-orthonormalised against rounding drift (checked every few
/// iterations: it grows by rounding steps only).
void WarmSolve::keep_x_orthonormal(int it) {
  const Cols xc(xp_, 0, b_);
  Eigen::MatrixXd g = it % 4 == 3 ? warm::tgram(xc, xc, threads_) : Eigen::MatrixXd::Identity(b_, b_);
  if (!((g - Eigen::MatrixXd::Identity(b_, b_)).cwiseAbs().maxCoeff() > 1e-12)) return;
  Eigen::LLT<Eigen::MatrixXd> llt(g);
  const Eigen::MatrixXd rinv = llt.matrixU().solve(Eigen::MatrixXd::Identity(b_, b_));
  const Block xr = warm::times(xc, rinv, threads_);
  xp_.leftCols(b_) = xr;
  Eigen::MatrixXd t = Eigen::MatrixXd::Identity(hxp_.rows(), hxp_.cols());
  t.topLeftCorner(b_, b_) = rinv;
  hxp_ = t.transpose() * hxp_ * t;
}

/// The result in A's row order, its residuals from A as given, by one block
/// product A V over A's own arrays (off-diagonal CSR + diagonal).
Eigenpairs WarmSolve::with_residuals_from_a() {
  Eigenpairs e = in_original_order(x_, theta_);
  Block v(n_, count_), av;
  for (int64_t i = 0; i < n_; ++i)
    for (int c = 0; c < count_; ++c) v(i, c) = e.vectors[static_cast<size_t>(i * count_ + c)];
  warm::spmm_csr_arrays(original_.row_ptr.data(), original_.col.data(), original_.val.data(), n_, v, av, threads_);
  st_.matvecs += count_;
  Eigen::VectorXd res2 = Eigen::VectorXd::Zero(count_);
  for (int64_t i = 0; i < n_; ++i) {
    const double di = original_.diag[static_cast<size_t>(i)];
    for (int c = 0; c < count_; ++c) {
      const double r = av(i, c) + (di - e.values[static_cast<size_t>(c)]) * v(i, c);
      res2[c] += r * r;
    }
  }
  for (int c = 0; c < count_; ++c)
    e.max_residual = std::max(e.max_residual,
                              std::sqrt(res2[c]) / std::max(std::abs(e.values[static_cast<size_t>(c)]), 1e-300));
  e.matvecs = st_.matvecs;
  e.iterations = st_.iterations;
  st_.max_residual = e.max_residual;
  st_.converged = st_.converged && e.max_residual <= o_.tolerance;
  return e;
}

/// out = L v, counted as v.cols() mat-vecs.
void WarmSolve::apply_l(const Block& v, Block& out) {
  if (v.cols() % 4 == 0) {
    warm::spmm(lap_, v, out, threads_);
  } else {  // padded to whole AVX registers (4 doubles)
    Block vp = Block::Zero(n_, (v.cols() + 3) / 4 * 4), op;
    vp.leftCols(v.cols()) = v;
    warm::spmm(lap_, vp, op, threads_);
    out = op.leftCols(v.cols());
  }
  st_.matvecs += v.cols();
  progress_.advance(static_cast<uint64_t>(v.cols()));
}

/// Rayleigh-Ritz on x_: its `keep` lowest Ritz values and vectors (lx_ =
/// L x_ kept).
void WarmSolve::rayleigh_ritz(int keep) {
  apply_l(x_, lx_);
  Eigen::MatrixXd h = warm::tgram(x_, lx_, threads_);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (h + h.transpose()));
  const Eigen::MatrixXd c = es.eigenvectors().leftCols(keep);
  theta_ = es.eigenvalues().head(keep);
  x_ = warm::times(x_, c, threads_);
  lx_ = warm::times(lx_, c, threads_);
}

/// The first `count` Ritz pairs of xs (the solve's row order, row stride
/// xs.cols()) in A's row order: eigenvalues 1 - theta, each vector's largest
/// entry positive.
Eigenpairs WarmSolve::in_original_order(const Block& xs, const Eigen::VectorXd& th) const {
  Eigenpairs out;
  out.count = count_;
  out.values.resize(static_cast<size_t>(count_));
  for (int c = 0; c < count_; ++c) out.values[static_cast<size_t>(c)] = 1 - th[c];
  out.vectors.resize(static_cast<size_t>(n_ * count_));
  parallel_for(
      0, n_, threads_,
      [&](int64_t i) {
    for (int c = 0; c < count_; ++c)
      out.vectors[static_cast<size_t>(order_[static_cast<size_t>(i)] * count_ + c)] = xs(i, c);
      },
      4096);
  largest_entry_positive(out.vectors, n_, count_, threads_);
  out.row_order = order_;
  return out;
}

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
  WarmSolve solve(original, count, options, progress, order_hint);
  Eigenpairs e = solve.run(start);
  if (stats_out) *stats_out = solve.stats();
  return e;
}

}  // namespace manifold::detail
