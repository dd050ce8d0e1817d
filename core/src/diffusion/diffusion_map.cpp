// Stages 7-8: the eigensolve (Spectra on a CSR operator) and the Markov
// eigenvectors / diffusion coordinates.
#include <Eigen/Dense>
#include <Eigen/SVD>

#include <Spectra/SymEigsSolver.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/parallel.h"
#include "manifold/settings.h"
#include "warm_eigensolver.h"

namespace manifold::detail {

/// Thrown through Spectra when the budget is spent; top_eigenpairs turns it
/// into EigensolveBudgetExceeded with the user's line.
struct BudgetSpent {};

/// An eigensolve's budget: mat-vecs and seconds (0: no limit).
class SolveBudget {
 public:
  SolveBudget(int64_t max_matvecs, double time_limit_s)
      : max_matvecs_(max_matvecs), time_limit_s_(time_limit_s), start_(std::chrono::steady_clock::now()) {}
  /// Counts one mat-vec; throws BudgetSpent once either limit is passed.
  void spend() {
    ++used_;
    if (max_matvecs_ > 0 && used_ > max_matvecs_) throw BudgetSpent{};
    // The clock is read every 64 products: cheap beside a sparse mat-vec.
    if (time_limit_s_ > 0 && (used_ & 63) == 0 && seconds() > time_limit_s_) throw BudgetSpent{};
  }
  int64_t used() const { return used_; }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  int64_t max_matvecs_;
  double time_limit_s_;
  std::chrono::steady_clock::time_point start_;
  int64_t used_ = 0;
};

/// Spectra's operator concept over the CSR matrix, optionally restricted to
/// the complement of locked eigenvectors V. Every
/// Lanczos step is one multi-threaded sparse mat-vec (A is never dense) and
/// a chance to report progress and to cancel.
class DiffusionOperator {
 public:
  using Scalar = double;
  DiffusionOperator(const DiffusionMatrix& a, int threads, Progress& progress, const Eigen::MatrixXd* locked,
                    SolveBudget& budget)
      : a_(a), threads_(threads), progress_(progress), locked_(locked), budget_(budget) {}
  Eigen::Index rows() const { return static_cast<Eigen::Index>(a_.n); }
  Eigen::Index cols() const { return static_cast<Eigen::Index>(a_.n); }
  int64_t matvecs() const { return matvecs_; }
  /// Threads worth using for `work` doubles streamed (one, below a cache's worth).
  int threads_for(int64_t work) const { return work < 200000 ? 1 : hardware_threads(threads_); }

  void perform_op(const double* x, double* y) const {
    budget_.spend();
    if (locked_) {
      // (I - V V^T) A x equals (I - V V^T) A (I - V V^T) x while V spans an
      // invariant subspace (to the solver's tolerance): A V = V Lambda is
      // projected out anyway, so one projection per product is enough.
      Eigen::Map<Eigen::VectorXd> yout(y, a_.n);
      a_.multiply(x, y, threads_);
      // noalias: no n-sized temporary (a fresh mapping, page faults and all, per step).
      coef_.noalias() = locked_->transpose() * yout;
      yout.noalias() -= *locked_ * coef_;
    } else {
      a_.multiply(x, y, threads_);
    }
    ++matvecs_;
    progress_.advance(1);
  }

 private:
  const DiffusionMatrix& a_;
  int threads_;
  Progress& progress_;
  const Eigen::MatrixXd* locked_;
  SolveBudget& budget_;
  mutable Eigen::VectorXd coef_;
  mutable int64_t matvecs_ = 0;
};

}  // namespace manifold::detail

namespace manifold {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace
}  // namespace manifold

namespace manifold::detail {

/// Row blocks (about 1 MiB each) of an n x m column-major basis, several per
/// thread, handed out dynamically: on a busy machine a descheduled thread
/// must not hold up the pass.
inline int64_t basis_chunks(int64_t n, int64_t m) {
  const int64_t rows = std::max<int64_t>(512, (int64_t{1} << 17) / std::max<int64_t>(m, 1));
  return std::max<int64_t>(1, (n + rows - 1) / rows);
}

/// c = V^T f over row blocks on `threads` threads; partial sums are added in
/// block order, so the result does not depend on the thread count.
template <class MatV, class VecF>
void basis_trans_product(const MatV& v, const VecF& f, Eigen::Ref<Eigen::VectorXd> c, int threads) {
  const int64_t n = v.rows(), m = v.cols();
  const int64_t parts = basis_chunks(n, m);
  if (threads <= 1 || parts == 1) {
    c.noalias() = v.transpose() * f;
    return;
  }
  Eigen::MatrixXd part(m, parts);
  manifold::parallel_for(
      0, parts, threads,
      [&](int64_t b) {
    const int64_t r0 = n * b / parts, r1 = n * (b + 1) / parts;
    part.col(b).noalias() = v.middleRows(r0, r1 - r0).transpose() * f.segment(r0, r1 - r0);
      },
      1);
  c = part.rowwise().sum();
}

/// One classical Gram-Schmidt correction f -= V c and |f|^2, in one pass
/// over V by row blocks on `threads` threads.
inline void basis_correct(const Eigen::Ref<const Eigen::MatrixXd>& v, const Eigen::VectorXd& c, Eigen::VectorXd& f,
                          double& norm2, int threads) {
  const int64_t n = v.rows(), m = v.cols();
  const int64_t parts = basis_chunks(n, m);
  Eigen::VectorXd sq(parts);
  manifold::parallel_for(
      0, parts, threads <= 1 ? 1 : threads,
      [&](int64_t b) {
    const int64_t r0 = n * b / parts, r1 = n * (b + 1) / parts;
    auto fb = f.segment(r0, r1 - r0);
    fb.noalias() -= v.middleRows(r0, r1 - r0) * c;
    sq[b] = fb.squaredNorm();
      },
      1);
  norm2 = sq.sum();
}

}  // namespace manifold::detail

// Spectra's Lanczos reorthogonalises every step against the whole basis V
// (n x ncv) with one V^T f product and, usually several times, a V h update
// and another V^T f; its restart forms V Q one column at a time. For large n
// these single-threaded passes over a basis larger than the cache cost more
// than the sparse mat-vec itself. These specialisations for our operator do
// the same recurrence and the same restart in multi-threaded passes, and
// accept a DGKS correction by ARPACK's test (|f| barely changed) instead of
// another V^T f pass: two passes over V per step instead of three to five.
template <>
class Spectra::ArnoldiOp<double, manifold::detail::DiffusionOperator, Spectra::IdentityBOp> {
  using Index = Eigen::Index;
  using Vector = Eigen::VectorXd;
  const manifold::detail::DiffusionOperator& m_op;

 public:
  ArnoldiOp(const manifold::detail::DiffusionOperator& op, const IdentityBOp&) : m_op(op) {}
  Index rows() const { return m_op.rows(); }
  int threads_for(int64_t work) const { return m_op.threads_for(work); }
  template <typename Arg1, typename Arg2>
  double inner_product(const Arg1& x, const Arg2& y) const {
    return x.dot(y);
  }
  template <typename Arg1, typename Arg2>
  void trans_product(const Arg1& x, const Arg2& y, Eigen::Ref<Vector> res) const {
    manifold::detail::basis_trans_product(x, y, res, m_op.threads_for(x.rows() * x.cols()));
  }
  template <typename Arg>
  double norm(const Arg& x) const {
    return x.norm();
  }
  void perform_op(const double* x_in, double* y_out) const { m_op.perform_op(x_in, y_out); }
};

template <>
class Spectra::Lanczos<double, Spectra::ArnoldiOp<double, manifold::detail::DiffusionOperator, Spectra::IdentityBOp>>
    : public Spectra::Arnoldi<double,
                              Spectra::ArnoldiOp<double, manifold::detail::DiffusionOperator, Spectra::IdentityBOp>> {
  using OpType = Spectra::ArnoldiOp<double, manifold::detail::DiffusionOperator, Spectra::IdentityBOp>;
  using Base = Spectra::Arnoldi<double, OpType>;
  using Index = Eigen::Index;
  using Matrix = Eigen::MatrixXd;
  using Vector = Eigen::VectorXd;
  using MapVec = Eigen::Map<Vector>;
  using MapConstMat = Eigen::Map<const Matrix>;
  using Base::m_beta;
  using Base::m_eps;
  using Base::m_fac_f;
  using Base::m_fac_H;
  using Base::m_fac_V;
  using Base::m_k;
  using Base::m_m;
  using Base::m_n;
  using Base::m_near_0;
  using Base::m_op;

 public:
  template <typename T>
  Lanczos(T&& op, Index m) : Base(std::forward<T>(op), m) {}

  // As Spectra::Lanczos::factorize_from, with the passes over V on all
  // cores and a DGKS correction accepted by ARPACK's test (below).
  void factorize_from(Index from_k, Index to_m, Index& op_counter) override {
    if (to_m <= from_k) return;
    if (from_k > m_k)
      throw std::invalid_argument("Lanczos: from_k (= " + std::to_string(from_k) +
                                  ") is larger than the current subspace dimension (= " + std::to_string(m_k) + ")");
    const double beta_thresh = m_eps * std::sqrt(double(m_n));
    Vector vf(to_m);
    Vector w(m_n);
    m_fac_H.rightCols(m_m - from_k).setZero();
    m_fac_H.block(from_k, 0, m_m - from_k, from_k).setZero();
    for (Index i = from_k; i <= to_m - 1; i++) {
      bool restart = false;
      if (m_beta < m_near_0) {
        MapConstMat V(m_fac_V.data(), m_n, i);
        this->expand_basis(V, 2 * i, m_fac_f, m_beta, op_counter);
        restart = true;
      }
      MapVec v(&m_fac_V(0, i), m_n);
      v.noalias() = m_fac_f / m_beta;
      m_fac_H(i, i - 1) = restart ? 0.0 : m_beta;
      m_fac_H(i - 1, i) = m_fac_H(i, i - 1);
      m_op.perform_op(v.data(), w.data());
      op_counter++;
      if (!restart) w.noalias() -= m_fac_H(i, i - 1) * m_fac_V.col(i - 1);
      m_fac_H(i, i) = v.dot(w);
      m_fac_f.noalias() = w - m_fac_H(i, i) * v;
      m_beta = m_fac_f.norm();
      const Index i1 = i + 1;
      const int threads = m_op.threads_for(m_n * i1);
      auto vs = m_fac_V.leftCols(i1);
      manifold::detail::basis_trans_product(vs, m_fac_f, vf.head(i1), threads);
      double ortho_err = vf.head(i1).cwiseAbs().maxCoeff();
      int count = 0;
      while (count < 5 && ortho_err > m_eps * m_beta) {
        if (m_beta < beta_thresh) {
          m_fac_f.setZero();
          m_beta = 0;
          break;
        }
        double norm2 = 0;
        const Vector c = vf.head(i1);
        const double before = m_beta;
        manifold::detail::basis_correct(vs, c, m_fac_f, norm2, threads);
        m_fac_H(i - 1, i) += c[i - 1];
        m_fac_H(i, i - 1) = m_fac_H(i - 1, i);
        m_fac_H(i, i) += c[i];
        m_beta = std::sqrt(norm2);
        count++;
        // DGKS as in ARPACK's dsaitr: a correction that removed little of f
        // (|f| kept above 0.717 of its size) leaves f orthogonal to V to
        // working precision, so Spectra's test pass over V is skipped.
        if (m_beta > 0.717 * before) break;
        manifold::detail::basis_trans_product(vs, m_fac_f, vf.head(i1), threads);
        ortho_err = vf.head(i1).cwiseAbs().maxCoeff();
      }
    }
    m_k = to_m;
  }

  void compress_H(const Spectra::TridiagQR<double>& decomp) {
    decomp.matrix_QtHQ(m_fac_H);
    m_k--;
  }

  // As Spectra::Arnoldi::compress_V: V[:, 0..k] <- V Q[:, 0..k], here one
  // product per row block (rows are independent, so in place) on all cores.
  void compress_V(const Matrix& Q) {
    const Index k1 = m_k + 1;
    Matrix qk = Q.leftCols(k1);
    // Column i < k of Q has its nonzeros in the first m - k + i + 1 rows.
    for (Index i = 0; i < m_k; i++) qk.col(i).tail(m_k - i - 1).setZero();
    const int64_t parts = manifold::detail::basis_chunks(m_n, m_m);
    manifold::parallel_for(
        0, parts, m_op.threads_for(m_n * m_m),
        [&](int64_t b) {
      const Index r0 = m_n * b / parts, r1 = m_n * (b + 1) / parts;
      const Matrix block = m_fac_V.middleRows(r0, r1 - r0) * qk;
      m_fac_V.block(r0, 0, r1 - r0, k1) = block;
        },
        1);
    Vector fk = m_fac_f * Q(m_m - 1, m_k - 1) + m_fac_V.col(m_k) * m_fac_H(m_k, m_k - 1);
    m_fac_f.swap(fk);
    m_beta = m_fac_f.norm();
  }
};

namespace manifold {
namespace {

using detail::DiffusionOperator;

struct SolveResult {
  Eigen::VectorXd values;  // descending
  Eigen::MatrixXd vectors;
  int64_t matvecs = 0, iterations = 0;
  bool ok = false;
  int64_t converged = 0;
};

/// Relative size of the random part of a start vector built from a guess.
constexpr double kGuessNoise = 1e-3;

SolveResult spectra_solve(const DiffusionMatrix& a, const Eigen::MatrixXd* locked, int count, int ncv, double tolerance,
                          int threads, Progress& progress, detail::SolveBudget& budget, uint64_t seed,
                          const Eigen::VectorXd* guess = nullptr) {
  DiffusionOperator op(a, threads, progress, locked, budget);
  Spectra::SymEigsSolver<DiffusionOperator> solver(op, count, ncv);
  // A fixed seed per role keeps results repeatable; the lock check needs a
  // start vector other than the first solve's (see top_eigenpairs).
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  Eigen::VectorXd start(a.n);
  for (int64_t i = 0; i < a.n; ++i) start[i] = u(rng);
  if (guess) {
    // Mostly the guess, with a random part that keeps every direction in the
    // Krylov space.
    start *= kGuessNoise / start.norm();
    start += *guess / guess->norm();
  }
  if (locked) start -= *locked * (locked->transpose() * start);
  solver.init(start.data());
  SolveResult r;
  r.converged = solver.compute(Spectra::SortRule::LargestAlge, 100000, tolerance, Spectra::SortRule::LargestAlge);
  r.ok = solver.info() == Spectra::CompInfo::Successful && r.converged >= count;
  r.matvecs = op.matvecs();
  r.iterations = solver.num_iterations();
  if (r.ok) {
    r.values = solver.eigenvalues();
    r.vectors = solver.eigenvectors();
  }
  return r;
}

// LAPACK (OpenBLAS ships it): the top eigenpair of a symmetric tridiagonal
// matrix by bisection and inverse iteration, O(j) each.
extern "C" {
void dstebz_(const char* range, const char* order, const int* n, const double* vl, const double* vu, const int* il,
             const int* iu, const double* abstol, const double* d, const double* e, int* m, int* nsplit, double* w,
             int* iblock, int* isplit, double* work, int* iwork, int* info, size_t range_len, size_t order_len);
void dstein_(const int* n, const double* d, const double* e, const int* m, const double* w, const int* iblock,
             const int* isplit, double* z, const int* ldz, double* work, int* iwork, int* ifail, int* info);
}

/// Largest eigenvalue theta of the j x j tridiagonal (alpha, beta) and the
/// last component of its unit eigenvector (the Lanczos residual of the Ritz
/// pair is beta_j |last|). False when LAPACK fails.
bool top_ritz(const std::vector<double>& alpha, const std::vector<double>& beta, int j, double* theta, double* last) {
  const int one = 1;
  const double zero = 0, abstol = 0;  // 0: LAPACK's default, eps |T|
  int m = 0, nsplit = 0, info = 0;
  std::vector<double> w(static_cast<size_t>(j)), work(static_cast<size_t>(5 * j)), z(static_cast<size_t>(j));
  std::vector<int> iblock(static_cast<size_t>(j)), isplit(static_cast<size_t>(j)), iwork(static_cast<size_t>(3 * j));
  dstebz_("I", "B", &j, &zero, &zero, &j, &j, &abstol, alpha.data(), beta.data(), &m, &nsplit, w.data(), iblock.data(),
          isplit.data(), work.data(), iwork.data(), &info, 1, 1);
  if (info != 0 || m != 1) return false;
  int ifail = 0;
  dstein_(&j, alpha.data(), beta.data(), &one, w.data(), iblock.data(), isplit.data(), z.data(), &j, work.data(),
          iwork.data(), &ifail, &info);
  if (info != 0) return false;
  *theta = w[0];
  *last = z[static_cast<size_t>(j - 1)];
  return true;
}

/// What the lock check learnt about B = (I - V V^T) A (I - V V^T).
struct DeflatedTop {
  bool above = false;    ///< a Ritz value of B beats lmin + margin: B has an eigenvalue there
  bool settled = false;  ///< B's top Ritz pair converged below lmin
  double theta = 0, residual = 0;
  int64_t matvecs = 0;
};

/// The lock check's search: Lanczos on B from a random start vector, without
/// reorthogonalisation (only Ritz values are wanted, and rounding cannot push
/// a Ritz value above B's top eigenvalue), so a step costs one mat-vec and
/// one projection against V. It stops as soon as
///  * the top Ritz value theta exceeds lmin + margin: a Ritz value is a
///    Rayleigh quotient of B, so B has an eigenvalue above lmin, one that the
///    first solve missed (above = true); or
///  * the top Ritz pair has converged below lmin: residual rho <= (lmin -
///    theta) / 4, so at most 1/16 of the Ritz vector's weight lies on
///    eigenvalues >= lmin, i.e. the extreme eigenvalue that Lanczos finds
///    first is below lmin (settled = true); or
///  * the Krylov space is invariant, or `max_steps` are spent.
DeflatedTop deflated_top(const DiffusionMatrix& a, const Eigen::MatrixXd& v, double lmin, double margin, int threads,
                         Progress& progress, detail::SolveBudget& budget, uint64_t seed, int64_t max_steps) {
  DeflatedTop r;
  const int64_t n = a.n;
  // Threads for the projection only when V is larger than a cache's worth.
  const int t = n * v.cols() < 200000 ? 1 : hardware_threads(threads);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  Eigen::VectorXd q(n), q_prev = Eigen::VectorXd::Zero(n), w(n), c(v.cols());
  for (int64_t i = 0; i < n; ++i) q[i] = u(rng);
  auto project = [&](Eigen::VectorXd& x) {
    detail::basis_trans_product(v, x, c, t);
    const int64_t parts = detail::basis_chunks(n, v.cols());
    parallel_for(
        0, parts, t,
        [&](int64_t b) {
      const int64_t r0 = n * b / parts, r1 = n * (b + 1) / parts;
      x.segment(r0, r1 - r0).noalias() -= v.middleRows(r0, r1 - r0) * c;
        },
        1);
  };
  project(q);
  project(q);
  q.normalize();
  std::vector<double> alpha, beta;
  const double anorm = 1;  // |A| <= 1: a Markov conjugate
  for (int64_t j = 0; j < max_steps; ++j) {
    budget.spend();
    a.multiply(q.data(), w.data(), threads);
    ++r.matvecs;
    progress.advance(1);
    project(w);
    if (j > 0) w.noalias() -= beta.back() * q_prev;
    alpha.push_back(q.dot(w));
    w.noalias() -= alpha.back() * q;
    beta.push_back(w.norm());
    const int steps = static_cast<int>(j + 1);
    const bool invariant = beta.back() <= 1e-12 * anorm;
    if (steps % 10 == 0 || invariant || j + 1 == max_steps) {
      double theta = 0, last = 0;
      if (top_ritz(alpha, beta, steps, &theta, &last)) {
        r.theta = theta;
        r.residual = beta.back() * std::abs(last);
        if (theta > lmin + margin) {
          r.above = true;
          return r;
        }
        if (invariant || (steps >= 20 && r.residual <= 0.25 * (lmin - theta))) {
          r.settled = true;
          return r;
        }
      }
    }
    if (invariant) return r;
    q_prev.swap(q);
    q = w / beta.back();
  }
  return r;
}

/// Spectra's Lanczos for the `count` top pairs, then the lock check; adds
/// the counts to `e`.
void lanczos_with_lock_check(const DiffusionMatrix& a, int count, int ncv, const EigenOptions& o,
                             const Eigen::VectorXd* guess, Progress& progress, detail::SolveBudget& budget,
                             Eigenpairs& e, Eigen::VectorXd& vals, Eigen::MatrixXd& vecs) {
  auto fail = [&](const SolveResult& s) {
    throw Error("eigensolve: Spectra did not converge (" + std::to_string(s.converged) + " of " +
                std::to_string(count) + " eigenpairs after " + std::to_string(s.matvecs) +
                " mat-vecs); try a larger --epsilon, a larger --k or fewer --components");
  };
  SolveResult s = spectra_solve(a, nullptr, count, ncv, o.tolerance, o.threads, progress, budget, 1, guess);
  e.matvecs += s.matvecs;
  e.iterations += s.iterations;
  if (!s.ok) fail(s);
  vals = s.values;
  vecs = s.vectors;

  // Lock check. A single-vector Krylov method sees one direction per
  // eigenspace of its start vector, so a repeated eigenvalue (a circle's
  // pairs, a sphere's triplet) can come back once. Search A with the found
  // vectors locked out, from another start vector (deflated_top: cheap
  // Lanczos steps that stop as soon as the answer is clear); only when B has
  // an eigenvalue above the smallest found one is it solved to the
  // tolerance and swapped in, and the search repeats.
  const int check_ncv = static_cast<int>(std::min<int64_t>(a.n - count, ncv));
  const int64_t check_steps = std::min<int64_t>(a.n - count, 4000);
  for (int round = 0; o.lock_check && round <= count && check_ncv > 1; ++round) {
    const double lmin = vals[count - 1];
    // A Ritz value never exceeds the top eigenvalue of what it was taken
    // from, so one above lmin proves a missed eigenvalue; the margin only
    // keeps rounding-level ties at the cut from swapping.
    const double margin = 100 * o.tolerance * std::max(std::abs(lmin), 1e-3);
    const DeflatedTop top = deflated_top(a, vecs, lmin, margin, o.threads, progress, budget,
                                         1000 + static_cast<uint64_t>(round), check_steps);
    e.matvecs += top.matvecs;
    e.check_matvecs += top.matvecs;
    e.check_settled = top.settled || top.above;
    if (!top.above) break;
    SolveResult k = spectra_solve(a, &vecs, 1, check_ncv, o.tolerance, o.threads, progress, budget,
                                  2000 + static_cast<uint64_t>(round));
    e.matvecs += k.matvecs;
    e.check_matvecs += k.matvecs;
    e.iterations += k.iterations;
    if (!k.ok) fail(k);
    if (!(k.values[0] > lmin + margin)) break;
    // Insert in order, dropping the smallest found pair.
    int pos = count - 1;
    while (pos > 0 && vals[pos - 1] < k.values[0]) {
      vals[pos] = vals[pos - 1];
      vecs.col(pos) = vecs.col(pos - 1);
      --pos;
    }
    vals[pos] = k.values[0];
    vecs.col(pos) = k.vectors.col(0);
    ++e.recovered;
  }
}

}  // namespace

namespace detail {

void largest_entry_positive(std::vector<double>& vectors, int64_t n, int count, int threads) {
  parallel_for(
      0, count, threads,
      [&](int64_t c) {
    double big = 0, sign = 1;
    for (int64_t i = 0; i < n; ++i) {
      const double v = vectors[static_cast<size_t>(i * count + c)];
      if (std::abs(v) > big) big = std::abs(v), sign = v < 0 ? -1.0 : 1.0;
    }
    if (sign < 0)
      for (int64_t i = 0; i < n; ++i) vectors[static_cast<size_t>(i * count + c)] *= -1;
      },
      1);
}

/// Reverse Cuthill-McKee order of the matrix graph: breadth-first from a
/// pseudo-peripheral row, neighbours by ascending degree, reversed. Rows
/// joined by an edge end up close, so the mat-vec's reads of x stay in
/// cache (the graph's own order is the data's, random for sampled points).
/// order[new] = old.
std::vector<int32_t> rcm_order(const DiffusionMatrix& a) {
  const int64_t n = a.n;
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(n));
  std::vector<char> seen(static_cast<size_t>(n), 0);
  auto degree = [&](int32_t i) { return a.row_ptr[static_cast<size_t>(i) + 1] - a.row_ptr[static_cast<size_t>(i)]; };
  std::vector<int32_t> next;
  // Appends the breadth-first order of root's component to `order`.
  auto bfs = [&](int32_t root) {
    size_t head = order.size();
    order.push_back(root);
    seen[static_cast<size_t>(root)] = 1;
    while (head < order.size()) {
      const int32_t i = order[head++];
      next.clear();
      for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i) + 1]; ++e) {
        const int32_t j = a.col[static_cast<size_t>(e)];
        if (!seen[static_cast<size_t>(j)]) {
          seen[static_cast<size_t>(j)] = 1;
          next.push_back(j);
        }
      }
      std::stable_sort(next.begin(), next.end(), [&](int32_t x, int32_t y) { return degree(x) < degree(y); });
      order.insert(order.end(), next.begin(), next.end());
    }
  };
  for (int64_t start = 0; start < n; ++start) {
    if (seen[static_cast<size_t>(start)]) continue;
    // Pseudo-peripheral root: the last row reached from `start`.
    const size_t first = order.size();
    bfs(static_cast<int32_t>(start));
    const int32_t far = order.back();
    for (size_t r = first; r < order.size(); ++r) seen[static_cast<size_t>(order[r])] = 0;
    order.resize(first);
    bfs(far);
    std::reverse(order.begin() + static_cast<std::ptrdiff_t>(first), order.end());
  }
  return order;
}

/// The rows and columns of `a` in the order `order` (order[new] = old):
/// what the mat-vec needs (row_ptr, col, val, diag), nothing else.
DiffusionMatrix permuted(const DiffusionMatrix& a, const std::vector<int32_t>& order, int threads) {
  const int64_t n = a.n;
  std::vector<int32_t> inv(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) inv[static_cast<size_t>(order[static_cast<size_t>(i)])] = static_cast<int32_t>(i);
  DiffusionMatrix b;
  b.n = n;
  b.row_ptr.assign(static_cast<size_t>(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) {
    const size_t o = static_cast<size_t>(order[static_cast<size_t>(i)]);
    b.row_ptr[static_cast<size_t>(i + 1)] = b.row_ptr[static_cast<size_t>(i)] + (a.row_ptr[o + 1] - a.row_ptr[o]);
  }
  b.col.resize(a.col.size());
  b.val.resize(a.val.size());
  b.diag.resize(static_cast<size_t>(n));
  constexpr int64_t kRows = 4096;
  parallel_for(
      0, (n + kRows - 1) / kRows, threads,
      [&](int64_t blk) {
    std::vector<std::pair<int32_t, double>> row;
    for (int64_t i = blk * kRows; i < std::min(n, (blk + 1) * kRows); ++i) {
      const size_t o = static_cast<size_t>(order[static_cast<size_t>(i)]);
      b.diag[static_cast<size_t>(i)] = a.diag[o];
      row.clear();
      for (int64_t e = a.row_ptr[o]; e < a.row_ptr[o + 1]; ++e)
        row.emplace_back(inv[static_cast<size_t>(a.col[static_cast<size_t>(e)])], a.val[static_cast<size_t>(e)]);
      std::sort(row.begin(), row.end());
      int64_t out = b.row_ptr[static_cast<size_t>(i)];
      for (auto& [c, v] : row) {
        b.col[static_cast<size_t>(out)] = c;
        b.val[static_cast<size_t>(out++)] = v;
      }
    }
      },
      1);
  return b;
}

}  // namespace detail

namespace {

/// lambda^t; for a negative lambda and fractional t the odd extension
/// sign(lambda) |lambda|^t keeps the coordinate real.
double lambda_power(double l, double t) {
  if (t == std::floor(t)) return std::pow(l, t);
  return std::copysign(std::pow(std::abs(l), t), l);
}

}  // namespace

Eigenpairs top_eigenpairs(const DiffusionMatrix& original, int count, const EigenOptions& o, Progress& progress) {
  if (count < 1 || count >= original.n)
    throw UsageError("eigensolve: " + std::to_string(count) + " eigenpairs requested from a " +
                     std::to_string(original.n) + "-point graph; need fewer than the points");
  // The solve runs on the matrix in reverse Cuthill-McKee order (the same
  // matrix, symmetrically permuted: the same eigenvalues, eigenvectors
  // permuted back at the end).
  std::vector<int32_t> order;
  DiffusionMatrix reordered;
  if (o.reorder) {
    order = detail::rcm_order(original);
    reordered = detail::permuted(original, order, o.threads);
  }
  const DiffusionMatrix& a = o.reorder ? reordered : original;
  int ncv = o.ncv;
  // A basis of about three times the wanted pairs converges in few restarts
  // for the clustered top of a diffusion spectrum, where ARPACK's default
  // 2 nev + 1 restarts often.
  if (ncv <= 0) ncv = static_cast<int>(std::max<int64_t>(3 * count + 10, 40));
  ncv = static_cast<int>(std::min<int64_t>(ncv, a.n));
  if (ncv <= count) ncv = static_cast<int>(std::min<int64_t>(a.n, count + 1));
  progress.stage("eigensolve", static_cast<uint64_t>(std::max<int64_t>(o.max_matvecs, 0)), "mat-vecs", true);
  detail::SolveBudget budget(o.max_matvecs, o.time_limit_s);
  Eigenpairs e;
  e.count = count;
  e.ncv = ncv;
  Eigen::VectorXd guess;
  if (!o.start.empty()) {
    if (static_cast<int64_t>(o.start.size()) != original.n)
      throw Error("eigensolve: the start vector has " + std::to_string(o.start.size()) + " values for " +
                  std::to_string(original.n) + " rows");
    guess.resize(a.n);
    for (int64_t i = 0; i < a.n; ++i)
      guess[i] = o.start[static_cast<size_t>(o.reorder ? order[static_cast<size_t>(i)] : i)];
    if (!(guess.norm() > 0) || !guess.allFinite()) guess.resize(0);
  }
  Eigen::VectorXd vals;
  Eigen::MatrixXd vecs;
  try {
    lanczos_with_lock_check(a, count, ncv, o, guess.size() ? &guess : nullptr, progress, budget, e, vals, vecs);
  } catch (const detail::BudgetSpent&) {
    throw EigensolveBudgetExceeded(budget_message(original, budget.used(), budget.seconds(), o), budget.used(),
                                   budget.seconds());
  }

  // Back to the matrix's own row order.
  if (o.reorder) {
    Eigen::MatrixXd back(vecs.rows(), vecs.cols());
    for (int64_t i = 0; i < a.n; ++i) back.row(order[static_cast<size_t>(i)]) = vecs.row(i);
    vecs.swap(back);
  }
  // Residuals in terms of A as given, whatever operator was iterated.
  {
    Eigen::VectorXd av(original.n);
    for (int col = 0; col < count; ++col) {
      original.multiply(vecs.col(col).data(), av.data(), o.threads);
      const double r = (av - vals[col] * vecs.col(col)).norm() / std::max(std::abs(vals[col]), 1e-300);
      e.max_residual = std::max(e.max_residual, r);
    }
    e.matvecs += count;
  }
  progress.finish();

  e.values.assign(vals.data(), vals.data() + count);
  e.vectors.resize(static_cast<size_t>(a.n * count));
  for (int col = 0; col < count; ++col)
    for (int64_t i = 0; i < a.n; ++i) e.vectors[static_cast<size_t>(i * count + col)] = vecs(i, col);
  detail::largest_entry_positive(e.vectors, a.n, count, o.threads);
  e.row_order = std::move(order);
  return e;
}

namespace {

/// Stage 8 from the eigenpairs of A: psi = v / sqrt(d) scaled so psi_0 = 1,
/// coordinates lambda^t psi.
DiffusionResult finish(const DiffusionMatrix& a, const Eigenpairs& e, const DiffusionParams& params) {
  const int m = params.components;
  const int nev = m + 1;
  // The trivial pair is lambda = 1 with v_0 = sqrt(d) / |sqrt(d)| whenever
  // the graph is connected; anything else means a broken matrix.
  if (std::abs(e.values[0] - 1.0) > 1e-6)
    throw Error("eigensolve: the top eigenvalue is " + std::to_string(e.values[0]) +
                ", not 1; the kernel matrix is not a Markov conjugate");
  DiffusionResult r;
  r.n = a.n;
  r.m = m;
  r.eigenvalues = e.values;
  r.row_order = e.row_order;
  r.epsilon = a.epsilon;
  r.graph_components = a.graph_components;
  r.largest_graph_components = a.largest_graph_components;
  r.identical_components = a.identical_components;
  r.identical_component_points = a.identical_component_points;
  r.kernel_components = a.kernel_components;
  r.weakly_joined_points = a.weakly_joined_points;
  r.duplicate_scaled_points = a.duplicate_scaled_points;
  r.metric = a.metric;
  r.local_scaling = a.local_scaling;
  r.point_index = a.point_index;
  r.bgh = a.bgh;
  r.graph_points = a.graph_points;
  r.k = a.k;
  r.density = a.density;
  r.sigma = a.sigma;
  double dsum = 0;
  for (double d : a.degree) dsum += d;
  const double scale = std::sqrt(dsum);
  // psi_0 = v_0 scale / sqrt(d) must be +1, not -1.
  double v0sign = 0;
  for (int64_t i = 0; i < a.n; ++i) v0sign += e.vectors[static_cast<size_t>(i * nev)];
  const double s0 = v0sign < 0 ? -1.0 : 1.0;
  r.psi.resize(static_cast<size_t>(a.n * nev));
  r.coordinates.resize(static_cast<size_t>(a.n * m));
  std::vector<double> lt(static_cast<size_t>(nev));
  for (int c = 0; c < nev; ++c) lt[static_cast<size_t>(c)] = lambda_power(e.values[static_cast<size_t>(c)], params.t);
  parallel_for(0, a.n, params.threads, [&](int64_t i) {
    const double f = scale / std::sqrt(a.degree[static_cast<size_t>(i)]);
    for (int c = 0; c < nev; ++c) {
      double v = e.vectors[static_cast<size_t>(i * nev + c)] * f;
      if (c == 0) v *= s0;
      r.psi[static_cast<size_t>(i * nev + c)] = v;
      if (c > 0) r.coordinates[static_cast<size_t>(i * m + c - 1)] = lt[static_cast<size_t>(c)] * v;
    }
  });
  r.diagnostics = diagnose(r, a.degree);
  return r;
}

void check_component_size(const DiffusionMatrix& a, int m) {
  if (m + 1 < a.n) return;
  if (a.kernel_components > a.graph_components) {
    // The kernel, not the graph, broke the points apart: epsilon is too small.
    char eps[32], weight[32];
    std::snprintf(eps, sizeof eps, "%.3g", a.epsilon);
    std::snprintf(weight, sizeof weight, "%g", kNegligibleWeight);
    throw UsageError("--epsilon " + std::string(eps) + ": the kernel joins at most " + std::to_string(a.n) + " of " +
                     std::to_string(a.graph_points) + " points (" + std::to_string(a.kernel_components) +
                     " pieces joined by weights below " + weight + "), too few for " + std::to_string(m) +
                     " components; use a larger --epsilon (the default is the median rule)");
  }
  throw UsageError("--components " + std::to_string(m) + ": the embedded component has only " + std::to_string(a.n) +
                   " points (the graph has " + std::to_string(a.graph_components) +
                   " connected components); use fewer components or a larger --k");
}

/// The previous embedding's Markov eigenvectors in this conjugate's
/// coordinates, v = sqrt(d) psi, each column of unit norm (n x p0, row-major).
std::vector<double> conjugate_vectors(const DiffusionMatrix& a, const DiffusionResult& previous, int p0) {
  std::vector<double> v(static_cast<size_t>(a.n * p0));
  std::vector<double> norm2(static_cast<size_t>(p0), 0.0);
  for (int64_t i = 0; i < a.n; ++i) {
    const double sd = std::sqrt(a.degree[static_cast<size_t>(i)]);
    for (int c = 0; c < p0; ++c) {
      const double x = sd * previous.psi[static_cast<size_t>(i * p0 + c)];
      v[static_cast<size_t>(i * p0 + c)] = x;
      norm2[static_cast<size_t>(c)] += x * x;
    }
  }
  for (int c = 0; c < p0; ++c) {
    const double s = norm2[static_cast<size_t>(c)] > 0 ? 1 / std::sqrt(norm2[static_cast<size_t>(c)]) : 0;
    for (int64_t i = 0; i < a.n; ++i) v[static_cast<size_t>(i * p0 + c)] *= s;
  }
  return v;
}

/// The device eigensolver params.eigensolver asks for on an n-point
/// component, or null for the CPU.
const DeviceEigensolver* device_for(const DiffusionParams& params, int64_t n) {
  const DeviceEigensolver* d = device_eigensolver();
  if (params.eigensolver == "cpu" || !d) return nullptr;
  if (params.eigensolver == "gpu") return d;
  const int64_t least = d->warm && d->warm() ? kDeviceEigensolveWarmMinRows : kDeviceEigensolveMinRows;
  return n >= least && d->available() ? d : nullptr;
}

/// The device's start-up (driver and context: a tenth of a second or more
/// in a fresh process) on another thread while the CPU builds the matrix,
/// when params would solve on a device for a graph of n points. wait()
/// returns the seconds the solve still had to wait for it.
class DeviceStart {
 public:
  DeviceStart(const DiffusionParams& params, int64_t n) {
    const DeviceEigensolver* d = device_eigensolver();
    if (!d || !d->start || params.eigensolver == "cpu") return;
    if (d->warm && d->warm()) return;  // started already
    if (params.eigensolver != "gpu" && n < kDeviceEigensolveMinRows) return;
    started_ = std::async(std::launch::async, [d] {
      try {
        if (d->available()) d->start();
      } catch (...) {
        // The solve itself meets the same failure and reports it.
      }
    });
  }
  ~DeviceStart() { wait(); }
  DeviceStart(const DeviceStart&) = delete;
  DeviceStart& operator=(const DeviceStart&) = delete;
  double wait() {
    if (!started_.valid()) return 0;
    const auto t = Clock::now();
    started_.get();
    return seconds_since(t);
  }

 private:
  std::future<void> started_;
};

/// Solves on `device`; with eigensolver = auto a device failure (out of
/// memory, no convergence) is recorded in `fallback` and `device` set to
/// null so the caller solves on the CPU.
Eigenpairs solve_on_device(const DeviceEigensolver*& device, const DiffusionParams& params, const DiffusionMatrix& a,
                           int count, const EigenOptions& eo, Progress& progress, std::string* fallback) {
  if (!device) return {};
  try {
    return device->solve(a, count, eo, progress);
  } catch (const Cancelled&) {
    throw;
  } catch (const EigensolveBudgetExceeded& spent) {
    // The CPU would spend its budget on the same spectrum: say why, once.
    throw EigensolveBudgetExceeded(budget_message(a, spent.matvecs, spent.seconds, eo), spent.matvecs, spent.seconds);
  } catch (const Error& err) {
    if (params.eigensolver == "gpu") throw;
    *fallback = err.what();
    device = nullptr;
    return {};
  }
}

nlohmann::json device_solver_json(const DeviceEigensolver& device, const Eigenpairs& e, const DiffusionParams& params,
                                  int64_t nnz);

/// The result of a device solve: coordinates, solver record, timings
/// (t_eig: the eigensolve; t: when it ended).
DiffusionResult finish_on_device(const DiffusionMatrix& a, const Eigenpairs& e, const DiffusionParams& params,
                                 const DeviceEigensolver& device, bool warm_start, double t_eig, Clock::time_point t,
                                 Clock::time_point t_start) {
  DiffusionResult r = finish(a, e, params);
  r.solver = device_solver_json(device, e, params, a.nnz());
  r.solver["warm_start"] = warm_start;
  r.timings = a.timings;
  r.timings.emplace_back("eigensolve", t_eig);
  r.timings.emplace_back("coordinates", seconds_since(t));
  r.timings.emplace_back("total", seconds_since(t_start));
  return r;
}

nlohmann::json device_solver_json(const DeviceEigensolver& device, const Eigenpairs& e, const DiffusionParams& params,
                                  int64_t nnz) {
  nlohmann::json j = {{"method", device.method},    {"device", device.name},         {"block", e.ncv},
                      {"iterations", e.iterations}, {"matvecs", e.matvecs},          {"max_residual", e.max_residual},
                      {"converged", true},          {"tolerance", params.tolerance}, {"nnz", nnz}};
  if (e.details.is_object())
    for (auto& [k, v] : e.details.items()) j[k] = v;
  return j;
}

/// The previous result covers the points of `a`, with its m + 1 = p0 Markov
/// eigenvectors: its vectors can start a solve on `a`.
bool covers_same_points(const DiffusionResult& previous, const DiffusionMatrix& a, int p0) {
  return previous.point_index == a.point_index && previous.n == a.n &&
         previous.psi.size() == static_cast<size_t>(previous.n * p0);
}

/// rediffuse on a device: the whole solve is fast there, so the previous
/// eigenvectors start its block and no preconditioner is needed. Empty when
/// no device applies or, with eigensolver = auto, it failed (the reason in
/// `fallback`).
std::optional<DiffusionResult> rediffuse_on_device(const DiffusionMatrix& a, const DiffusionParams& params,
                                                   const DiffusionResult& previous, Progress& progress,
                                                   Clock::time_point t_start, std::string* fallback) {
  const int nev = params.components + 1;
  const int p0 = previous.m + 1;
  const DeviceEigensolver* device = device_for(params, a.n);
  if (!device || !covers_same_points(previous, a, p0)) return std::nullopt;
  auto t = Clock::now();
  EigenOptions eo;
  eo.tolerance = params.tolerance;
  eo.threads = params.threads;
  eo.ncv = params.ncv;
  eo.max_matvecs = params.max_matvecs;
  eo.time_limit_s = params.time_limit_s;
  eo.start_block = conjugate_vectors(a, previous, p0);
  eo.start_cols = p0;
  Eigenpairs e = solve_on_device(device, params, a, nev, eo, progress, fallback);
  if (!device) return std::nullopt;
  return finish_on_device(a, e, params, *device, true, seconds_since(t), Clock::now(), t_start);
}

/// The warm solver's options from params; with a preview, the first iterate
/// within its tolerance is shown while the solve goes on -- when the solve
/// has run long enough for it to matter. `a` and `params` must outlive the
/// solve (the preview callback reads them).
detail::WarmOptions warm_options(const DiffusionMatrix& a, const DiffusionParams& params, int max_iterations,
                                 const RediffusePreview* preview, Clock::time_point t_start) {
  detail::WarmOptions wo;
  wo.tolerance = params.tolerance;
  wo.threads = params.threads;
  wo.time_limit_s = params.time_limit_s;
  if (max_iterations > 0) wo.max_iterations = max_iterations;
  if (preview && preview->show && preview->tolerance > params.tolerance) {
    wo.preview_tolerance = preview->tolerance;
    wo.preview_not_before =
        t_start +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(preview->after_s, 0.0)));
    wo.on_preview = [&a, &params, preview, t_start](const Eigenpairs& pe) {
      DiffusionResult pr = finish(a, pe, params);
      pr.solver = {{"method", "LOBPCG preconditioned by smoothed-aggregation AMG, warm-started (an iterate)"},
                   {"preview", true},
                   {"converged", false},
                   {"max_residual", pe.max_residual},
                   {"tolerance", params.tolerance},
                   {"iterations", pe.iterations}};
      pr.timings = a.timings;
      pr.timings.emplace_back("total", seconds_since(t_start));
      preview->show(std::move(pr));
    };
  }
  return wo;
}

/// The warm solver's start: the old Markov eigenvectors in the new
/// conjugate's coordinates (v = sqrt(d) psi), at most `block` of them; the
/// solver fills the block up.
Eigen::MatrixXd warm_start_vectors(const DiffusionMatrix& a, const DiffusionResult& previous, int p0, int64_t block) {
  const std::vector<double> v = conjugate_vectors(a, previous, p0);
  Eigen::MatrixXd v0(a.n, std::min(p0, static_cast<int>(block)));
  for (int64_t i = 0; i < a.n; ++i)
    for (Eigen::Index c = 0; c < v0.cols(); ++c) v0(i, c) = v[static_cast<size_t>(i * p0 + c)];
  return v0;
}

/// embedding.json's solver record of a warm solve.
nlohmann::json warm_solver_json(int64_t block, const detail::WarmStats& ws, const Eigenpairs& e,
                                const DiffusionParams& params, int64_t nnz) {
  return {{"method", "LOBPCG preconditioned by smoothed-aggregation AMG, warm-started from the previous embedding"},
          {"block", block},
          {"iterations", ws.iterations},
          {"max_residual", e.max_residual},
          {"converged", ws.converged},
          {"matvecs", ws.matvecs},
          {"preconditioner_applies", ws.preconditioner_applies},
          {"preconditioner_setup_s", ws.setup_s},
          {"preconditioner_s", ws.preconditioner_s},
          {"preconditioner_shift", ws.shift},
          {"amg_level_rows", ws.level_rows},
          {"amg_operator_complexity", ws.operator_complexity},
          {"tolerance", params.tolerance},
          {"nnz", nnz}};
}

std::optional<DeviceEigensolver>& device_registry() {
  static std::optional<DeviceEigensolver> solver;
  return solver;
}

}  // namespace

void register_device_eigensolver(DeviceEigensolver solver) {
  if (solver.solve) device_registry() = std::move(solver);
  else
    device_registry().reset();
}

const DeviceEigensolver* device_eigensolver() {
  auto& r = device_registry();
  return r ? &*r : nullptr;
}

DiffusionResult diffusion_map(const KnnGraph& graph, const DiffusionParams& params, Progress& progress,
                              const DiffusionResult* start_from) {
  const auto t_start = Clock::now();
  DeviceStart device_start(params, graph.n);
  DiffusionMatrix a = diffusion_matrix(graph, params, progress);
  check_component_size(a, params.components);
  if (const double waited = device_start.wait(); waited > 0) a.timings.emplace_back("device start", waited);
  auto t = Clock::now();
  EigenOptions eo;
  eo.tolerance = params.tolerance;
  eo.ncv = params.ncv;
  eo.threads = params.threads;
  eo.lock_check = params.lock_check;
  eo.max_matvecs = params.max_matvecs;
  eo.time_limit_s = params.time_limit_s;
  bool warm_start = false;
  const DeviceEigensolver* device = device_for(params, a.n);
  if (start_from && start_from->point_index == a.point_index && start_from->n == a.n && start_from->m >= 0 &&
      start_from->psi.size() == static_cast<size_t>(start_from->n * (start_from->m + 1))) {
    const int p0 = start_from->m + 1;
    std::vector<double> v = conjugate_vectors(a, *start_from, p0);
    // Lanczos takes one vector: the sum of the previous eigenvectors; a
    // device's block takes them all.
    eo.start.assign(static_cast<size_t>(a.n), 0.0);
    for (int64_t i = 0; i < a.n; ++i)
      for (int c = 0; c < p0; ++c) eo.start[static_cast<size_t>(i)] += v[static_cast<size_t>(i * p0 + c)];
    if (device) {
      eo.start_block = std::move(v);
      eo.start_cols = p0;
    }
    warm_start = true;
  }
  std::string fallback;
  Eigenpairs e = solve_on_device(device, params, a, params.components + 1, eo, progress, &fallback);
  if (!device) e = top_eigenpairs(a, params.components + 1, eo, progress);
  const double t_eig = seconds_since(t);
  t = Clock::now();
  Timings timings = a.timings;
  const int64_t nnz = a.nnz();
  if (device) return finish_on_device(a, e, params, *device, warm_start, t_eig, t, t_start);
  DiffusionResult r = finish(a, e, params);
  r.solver = {{"method", "Spectra SymEigsSolver (implicitly restarted Lanczos)"},
              {"warm_start", warm_start},
              {"ncv", e.ncv},
              {"lock_check", params.lock_check},
              {"lock_check_matvecs", e.check_matvecs},
              {"lock_check_recovered", e.recovered},
              {"lock_check_settled", e.check_settled},
              {"max_residual", e.max_residual},
              {"converged", true},
              {"iterations", e.iterations},
              {"matvecs", e.matvecs},
              {"tolerance", params.tolerance},
              {"nnz", nnz}};
  if (!fallback.empty()) r.solver["device_fallback"] = fallback;
  r.timings = timings;
  r.timings.emplace_back("eigensolve", t_eig);
  r.timings.emplace_back("coordinates", seconds_since(t));
  r.timings.emplace_back("total", seconds_since(t_start));
  return r;
}

DiffusionResult rediffuse(const KnnGraph& graph, const DiffusionParams& params, const DiffusionResult& previous,
                          Progress& progress, int max_iterations, const RediffusePreview* preview) {
  const auto t_start = Clock::now();
  DiffusionMatrix a = diffusion_matrix(graph, params, progress);
  check_component_size(a, params.components);
  const int nev = params.components + 1;
  const int p0 = previous.m + 1;
  std::string device_fallback;  // why the device could not solve (auto), if it failed
  if (auto r = rediffuse_on_device(a, params, previous, progress, t_start, &device_fallback)) return std::move(*r);
  detail::WarmOptions wo = warm_options(a, params, max_iterations, preview, t_start);
  // Diagnostics: one line per LOBPCG iteration and the stage times on stderr.
  wo.trace = settings().warm_trace;
  const int64_t block = nev + std::max(wo.guard, 0);
  // The previous embedding must cover the same points, and the block method
  // needs a few times its block size in rows; otherwise solve from scratch.
  if (!covers_same_points(previous, a, p0) || 3 * block + 1 > a.n) return diffusion_map(graph, params, progress);
  auto t = Clock::now();
  const Eigen::MatrixXd v0 = warm_start_vectors(a, previous, p0, block);
  detail::WarmStats ws;
  Eigenpairs e;
  try {
    // The previous solve's row order serves this matrix too (same points;
    // warm_eigenpairs ignores one that is not a permutation of them).
    e = detail::warm_eigenpairs(a, nev, v0, wo, progress, &ws, &previous.row_order);
  } catch (const Cancelled&) {
    throw;
  } catch (const Error&) {
    // The AMG hierarchy could not be built (a level that is not positive
    // definite: a broken matrix): the full solve says what is wrong.
    return diffusion_map(graph, params, progress);
  }
  const double t_eig = seconds_since(t);
  t = Clock::now();
  Timings timings = a.timings;
  DiffusionResult r = finish(a, e, params);
  if (wo.trace)
    std::fprintf(stderr, "rediffuse: matrix %.3f s, eigensolve %.3f s, coordinates %.3f s\n", a.timings.back().second,
                 t_eig, seconds_since(t));
  r.solver = warm_solver_json(block, ws, e, params, a.nnz());
  if (!device_fallback.empty()) r.solver["device_fallback"] = device_fallback;
  r.timings = timings;
  r.timings.emplace_back("eigensolve", t_eig);
  r.timings.emplace_back("coordinates", seconds_since(t));
  r.timings.emplace_back("total", seconds_since(t_start));
  return r;
}

EmbeddingAgreement compare_embeddings(const DiffusionResult& ref, const DiffusionResult& other,
                                      const std::vector<double>& degree, double cluster_gap) {
  const int nev = ref.m + 1;
  if (other.m != ref.m || other.n != ref.n || static_cast<int64_t>(degree.size()) != ref.n ||
      ref.psi.size() != static_cast<size_t>(ref.n * nev) || other.psi.size() != ref.psi.size())
    throw UsageError("compare_embeddings: the two embeddings differ in shape");
  auto vectors = [&](const DiffusionResult& r) {
    Eigen::MatrixXd v(r.n, nev);
    for (int64_t i = 0; i < r.n; ++i)
      for (int c = 0; c < nev; ++c)
        v(i, c) = std::sqrt(degree[static_cast<size_t>(i)]) * r.psi[static_cast<size_t>(i * nev + c)];
    v.colwise().normalize();
    return v;
  };
  const Eigen::MatrixXd vr = vectors(ref), vo = vectors(other);
  EmbeddingAgreement a;
  for (int c = 0; c < nev; ++c) {
    const double lr = ref.eigenvalues[static_cast<size_t>(c)], lo = other.eigenvalues[static_cast<size_t>(c)];
    a.max_eigenvalue_difference = std::max(a.max_eigenvalue_difference, std::abs(lr - lo));
    if (c > 0)
      a.max_rel_error_1_minus_lambda = std::max(a.max_rel_error_1_minus_lambda,
                                                std::abs(lr - lo) / std::max(1 - lr, 1e-300));
  }
  for (int c0 = 1; c0 < nev;) {
    int c1 = c0 + 1;
    while (c1 < nev && ref.eigenvalues[static_cast<size_t>(c1 - 1)] - ref.eigenvalues[static_cast<size_t>(c1)] <=
                           cluster_gap * (1 - ref.eigenvalues[static_cast<size_t>(c1)]))
      ++c1;
    const Eigen::MatrixXd overlap = vr.middleCols(c0, c1 - c0).transpose() * vo.middleCols(c0, c1 - c0);
    a.worst_cos = std::min(a.worst_cos, Eigen::JacobiSVD<Eigen::MatrixXd>(overlap).singularValues().minCoeff());
    ++a.clusters;
    a.largest_cluster = std::max(a.largest_cluster, c1 - c0);
    c0 = c1;
  }
  return a;
}

std::vector<double> nystrom_extend(const DiffusionResult& r, const DiffusionParams& p, int64_t count, int kn,
                                   const int64_t* indices, const float* distances, std::vector<double>* psi_out) {
  if (count < 0 || kn < 1) throw UsageError("nystrom: need at least one neighbour per new point");
  if (r.n == 0 || r.eigenvalues.size() != static_cast<size_t>(r.m + 1))
    throw Error("nystrom: the diffusion result is empty");
  if (r.local_scaling > kn)
    throw UsageError("nystrom: local scaling uses the " + std::to_string(r.local_scaling) + "-th neighbour but only " +
                     std::to_string(kn) + " are given");
  std::vector<int64_t> embedded_of(static_cast<size_t>(r.graph_points), -1);
  for (int64_t e = 0; e < r.n; ++e) embedded_of[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])] = e;
  const int nev = r.m + 1;
  const double inv_eps = 1.0 / r.epsilon;
  std::vector<double> coords(static_cast<size_t>(count * r.m));
  if (psi_out) psi_out->assign(static_cast<size_t>(count * nev), 0.0);
  std::vector<double> lt(static_cast<size_t>(nev));
  for (int c = 0; c < nev; ++c) lt[static_cast<size_t>(c)] = lambda_power(r.eigenvalues[static_cast<size_t>(c)], p.t);
  parallel_for(0, count, p.threads, [&](int64_t x) {
    const int64_t* idx = indices + x * kn;
    const float* dist = distances + x * kn;
    double sigma_x = 1;
    if (r.local_scaling > 0) {
      // As diffusion_matrix() scales the graph's points: auto takes the
      // nearest distinct neighbour past a duplicate. Where every neighbour
      // given is a duplicate, all the point's weights are 1 whatever its
      // scale: any positive one does.
      sigma_x = std::sqrt(kernel_distance2(dist[r.local_scaling - 1], r.metric));
      if (!(sigma_x > 0) && p.local_scaling == kLocalScalingAuto) {
        for (int l = r.local_scaling; l < kn && !(sigma_x > 0); ++l)
          sigma_x = std::sqrt(kernel_distance2(dist[l], r.metric));
        if (!(sigma_x > 0)) sigma_x = 1;
      }
      if (!(sigma_x > 0))
        throw Error("nystrom: new point " + std::to_string(x) + " is at distance 0 from its " +
                    std::to_string(r.local_scaling) + "-th neighbour; local scaling is undefined");
    }
    std::vector<std::pair<int64_t, double>> w;
    double q = 0;
    for (int l = 0; l < kn; ++l) {
      if (idx[l] < 0) continue;
      if (idx[l] >= r.graph_points)
        throw Error("nystrom: neighbour index " + std::to_string(idx[l]) + " of new point " + std::to_string(x) +
                    " is out of range for " + std::to_string(r.graph_points) + " graph points");
      const int64_t e = embedded_of[static_cast<size_t>(idx[l])];
      if (e < 0) continue;
      double s = kernel_distance2(dist[l], r.metric);
      if (r.local_scaling > 0) s /= sigma_x * r.sigma[static_cast<size_t>(e)];
      const double k = std::exp(-s * inv_eps);
      w.emplace_back(e, k);
      q += k;
    }
    if (w.empty() || !(q > 0))
      throw Error("nystrom: new point " + std::to_string(x) + " has no neighbour in the embedded component");
    double d = 0;
    const double qx = std::pow(q, -p.alpha);
    for (auto& [e, k] : w) {
      k *= qx * std::pow(r.density[static_cast<size_t>(e)], -p.alpha);
      d += k;
    }
    std::vector<double> acc(static_cast<size_t>(nev), 0.0);
    for (auto& [e, k] : w)
      for (int c = 0; c < nev; ++c) acc[static_cast<size_t>(c)] += k * r.psi[static_cast<size_t>(e * nev + c)];
    for (int c = 0; c < nev; ++c) {
      // psi(x) = (P psi)(x) / lambda
      const double psi = acc[static_cast<size_t>(c)] / d / r.eigenvalues[static_cast<size_t>(c)];
      if (psi_out) (*psi_out)[static_cast<size_t>(x * nev + c)] = psi;
      if (c > 0) coords[static_cast<size_t>(x * r.m + c - 1)] = lt[static_cast<size_t>(c)] * psi;
    }
  });
  return coords;
}

double circular_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2)
    throw UsageError("circular correlation: need two samples of equal size >= 2");
  std::vector<double> sa(a.size()), ca(a.size()), sb(b.size()), cb(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    sa[i] = std::sin(a[i]), ca[i] = std::cos(a[i]), sb[i] = std::sin(b[i]), cb[i] = std::cos(b[i]);
  return circular_correlation(sa.data(), ca.data(), sb.data(), cb.data(), a.size());
}

double circular_correlation(const double* sin_a, const double* cos_a, const double* sin_b, const double* cos_b,
                            size_t n) {
  // Fisher-Lee: sum_ij sin(a_i - a_j) sin(b_i - b_j) over all pairs, expanded
  // into sums over single points (O(N) instead of O(N^2)).
  double sasb = 0, cacb = 0, sacb = 0, casb = 0, sa2 = 0, ca2 = 0, saca = 0, sb2 = 0, cb2 = 0, sbcb = 0;
  for (size_t i = 0; i < n; ++i) {
    const double sa = sin_a[i], ca = cos_a[i], sb = sin_b[i], cb = cos_b[i];
    sasb += sa * sb, cacb += ca * cb, sacb += sa * cb, casb += ca * sb;
    sa2 += sa * sa, ca2 += ca * ca, saca += sa * ca;
    sb2 += sb * sb, cb2 += cb * cb, sbcb += sb * cb;
  }
  const double num = sasb * cacb - sacb * casb;
  const double den = std::sqrt((sa2 * ca2 - saca * saca) * (sb2 * cb2 - sbcb * sbcb));
  if (!(den > 0)) return 0;
  return num / den;
}

}  // namespace manifold
