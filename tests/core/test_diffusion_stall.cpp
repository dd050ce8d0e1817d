// Diffusion maps that never stall: the kernel of bounded metrics, points the
// kernel barely joins, the eigensolve budget and its one-line reason, and
// the diagnostics that flag degenerate embeddings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "manifold/block_eigensolver.h"
#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;

namespace {

DiffusionResult embed(const KnnGraph& g, const DiffusionParams& p) {
  Progress progress;
  return diffusion_map(g, p, progress);
}

bool any_warning_has(const DiffusionResult& r, const std::string& text) {
  for (const std::string& w : r.diagnostics.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

/// `n` points uniform in the unit square, then `outliers` points at
/// distance `far` to the right of it, spaced 2 * far apart (none is another's
/// near neighbour).
std::vector<double> square_with_outliers(int64_t n, int outliers, double far, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> pts;
  for (int64_t i = 0; i < n; ++i) pts.insert(pts.end(), {u(rng), u(rng)});
  for (int o = 0; o < outliers; ++o) pts.insert(pts.end(), {1 + far, 0.5 + 2 * far * o});
  return pts;
}

/// The row (embedded index) carrying the largest |psi_c|.
int64_t peak_of(const DiffusionResult& r, int c) {
  int64_t best = 0;
  for (int64_t i = 0; i < r.n; ++i)
    if (std::abs(r.psi[i * (r.m + 1) + c]) > std::abs(r.psi[best * (r.m + 1) + c])) best = i;
  return best;
}

TEST(Kernel, CosineAndPearsonDistancesAreAlreadySquared) {
  // 1 - cos = |x^ - y^|^2 / 2 on unit rows: the kernel takes 2 d, the
  // squared distance, not d^2 (a kernel in the fourth power of the angle).
  EXPECT_DOUBLE_EQ(kernel_distance2(0.3, Metric::Euclidean), 0.09);
  EXPECT_DOUBLE_EQ(kernel_distance2(0.3, Metric::Cosine), 0.6);
  EXPECT_DOUBLE_EQ(kernel_distance2(0.3, Metric::Pearson), 0.6);
  // The same points as unit vectors: the cosine graph's kernel is the
  // Euclidean graph's kernel of the normalised rows, bit for bit in epsilon.
  const int64_t n = 400;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> unit(n * 3);
  for (int64_t i = 0; i < n; ++i) {
    double norm = 0;
    for (int j = 0; j < 3; ++j) norm += std::pow(unit[i * 3 + j] = g(rng) + (j == 0 ? 3 : 0), 2);
    for (int j = 0; j < 3; ++j) unit[i * 3 + j] /= std::sqrt(norm);
  }
  KnnGraph euclid = knn_graph(unit, n, 3, 12);
  KnnGraph cosine = euclid;
  cosine.metric = Metric::Cosine;
  for (auto& d : cosine.distances) d = static_cast<float>(0.5 * static_cast<double>(d) * d);
  DiffusionParams p;
  p.components = 4;
  const DiffusionResult a = embed(euclid, p), b = embed(cosine, p);
  EXPECT_NEAR(b.epsilon, a.epsilon, 1e-6 * a.epsilon);
  for (int c = 0; c <= 4; ++c) EXPECT_NEAR(b.eigenvalues[c], a.eigenvalues[c], 1e-6) << c;
}

TEST(Stall, PointsTheKernelBarelyJoinsAreLeftOutAndSaidSo) {
  // Five outliers far from a square: at the median epsilon their kernel
  // weights are ~1e-200, each would be an eigenvalue of 1 to working
  // precision. They are left out like separate components and the solve
  // finishes well inside its budget.
  const int64_t n = 600;
  KnnGraph g = knn_graph(square_with_outliers(n, 5, 3.0, 1), n + 5, 2, 10);
  DiffusionParams p = fixed_bandwidth();
  p.components = 5;
  const DiffusionResult r = embed(g, p);
  EXPECT_EQ(r.graph_components, 1);  // the k-NN graph joins them
  EXPECT_EQ(r.kernel_components, 6);
  EXPECT_EQ(r.weakly_joined_points, 5);
  ASSERT_EQ(r.n, n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(r.point_index[i], i);
  EXPECT_TRUE(r.solver["converged"].get<bool>());
  EXPECT_LT(r.solver["matvecs"].get<int64_t>(), 2000);
  EXPECT_TRUE(any_warning_has(r, "5 points are joined to the rest only by kernel weights below"));
  EXPECT_TRUE(r.diagnostics.near_one.empty());
  // A kernel wide enough for the nearest one (s >= 9) joins it again; the
  // others lie 6.7 and more from the square.
  p.epsilon = "2";
  const DiffusionResult wide = embed(g, p);
  EXPECT_EQ(wide.weakly_joined_points, 4);
  EXPECT_EQ(wide.n, n + 1);
}

TEST(Stall, AnEpsilonThatIsolatesEveryPointSaysSo) {
  // epsilon = 1e-300: every kernel weight is 0 and each point is its own
  // piece; once an identity kernel's arbitrary basis came back with exit 0.
  KnnGraph g = knn_graph(square_with_outliers(300, 0, 0, 5), 300, 2, 8);
  DiffusionParams p;
  p.epsilon = "1e-300";
  try {
    embed(g, p);
    FAIL() << "an embedding came back";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--epsilon 1e-300: the kernel joins at most 1 of 300 points"),
              std::string::npos)
        << e.what();
  }
}

TEST(Stall, DisconnectedGraphIsSaidSo) {
  std::vector<double> pts = square_with_outliers(300, 0, 0, 2);
  for (int64_t i = 0; i < 200; ++i) pts.insert(pts.end(), {pts[i * 2] + 50, pts[i * 2 + 1]});
  KnnGraph g = knn_graph(pts, 500, 2, 8);
  DiffusionParams p;
  p.components = 3;
  const DiffusionResult r = embed(g, p);
  EXPECT_EQ(r.graph_components, 2);
  EXPECT_EQ(r.n, 300);
  EXPECT_TRUE(any_warning_has(r, "2 connected components"));
}

TEST(Diagnostics, AnOutlierCarryingACoordinateIsFlagged) {
  // One outlier joined weakly (s / epsilon ~ 7 to its nearest neighbours,
  // kernel weights ~1e-3, above the 1e-4 cut):
  // with a fixed-width kernel an eigenvector sits on it alone. Local
  // scaling, the default, widens its kernel and the flag goes away.
  const int64_t n = 800;
  KnnGraph g = knn_graph(square_with_outliers(n, 1, 0.17, 4), n + 1, 2, 10);
  DiffusionParams p = fixed_bandwidth();
  p.components = 6;
  const DiffusionResult fixed = embed(g, p);
  ASSERT_EQ(fixed.n, n + 1);
  ASSERT_FALSE(fixed.diagnostics.localised.empty());
  const int c = fixed.diagnostics.localised.front();
  EXPECT_EQ(fixed.point_index[peak_of(fixed, c)], n);  // the outlier
  EXPECT_LT(fixed.diagnostics.participation[c - 1], 3);
  EXPECT_TRUE(any_warning_has(fixed, "localised"));
  for (int other = 1; other <= 6; ++other) {
    if (std::find(fixed.diagnostics.localised.begin(), fixed.diagnostics.localised.end(), other) ==
        fixed.diagnostics.localised.end()) {
      EXPECT_GE(fixed.diagnostics.participation[other - 1], fixed.diagnostics.localised_below);
    }
  }

  DiffusionParams d;
  d.components = 6;
  const DiffusionResult scaled = embed(g, d);
  EXPECT_TRUE(scaled.diagnostics.localised.empty());
  EXPECT_TRUE(scaled.diagnostics.warnings.empty());
}

TEST(Budget, SpentBudgetStopsWithItsReason) {
  // The clustered top of a noisy strip's spectrum needs hundreds of
  // mat-vecs; a budget of 60 stops the solve with the one line.
  const KnnGraph g = noisy_strip_graph(7);
  DiffusionParams p;
  p.components = 8;
  p.max_matvecs = 60;
  try {
    embed(g, p);
    FAIL() << "the solve converged within 60 mat-vecs";
  } catch (const EigensolveBudgetExceeded& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no convergence within the budget (--max-matvecs 60"), std::string::npos) << what;
    EXPECT_NE(what.find("try --epsilon"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_LE(e.matvecs, 61);
  }
  // The time limit: the clock is read every 64 mat-vecs.
  p.max_matvecs = 0;
  p.time_limit_s = 1e-9;
  try {
    embed(g, p);
    FAIL() << "the solve converged within a nanosecond";
  } catch (const EigensolveBudgetExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("--time-limit 1e-09"), std::string::npos) << e.what();
    EXPECT_EQ(e.matvecs, 64);
  }
  // With the default budget it converges, and says how much it spent.
  p.time_limit_s = 0;
  p.max_matvecs = kDefaultMaxMatvecs;
  const DiffusionResult r = embed(g, p);
  EXPECT_TRUE(r.solver["converged"].get<bool>());
  EXPECT_LT(r.solver["matvecs"].get<int64_t>(), kDefaultMaxMatvecs / 10);
}

TEST(Budget, WarmReembeddingStopsAtTheTimeLimitAsAPreview) {
  // rediffuse's LOBPCG takes the time limit like its iteration cap: it
  // returns its iterate, marked unconverged, for the full solve to finish.
  const KnnGraph g = noisy_strip_graph(9);
  DiffusionParams p;
  p.components = 8;
  const DiffusionResult base = embed(g, p);
  DiffusionParams q = p;
  q.k = 14;
  q.time_limit_s = 1e-9;
  Progress progress;
  const DiffusionResult warm = rediffuse(g, q, base, progress);
  EXPECT_NE(warm.solver["method"].get<std::string>().find("LOBPCG"), std::string::npos);
  EXPECT_FALSE(warm.solver["converged"].get<bool>());
  EXPECT_EQ(warm.solver["iterations"].get<int>(), 0);
  q.time_limit_s = 0;
  EXPECT_TRUE(rediffuse(g, q, base, progress).solver["converged"].get<bool>());
}

TEST(Budget, BlockSolverStopsAtItsBudgetToo) {
  const DiffusionMatrix a = diffusion_matrix_of(noisy_strip_graph(7));
  CsrBlockOperator op(a, chebyshev_block(9, a.n));
  ChebyshevOptions o;
  o.max_products = 3;
  Progress progress;
  EXPECT_THROW(chebyshev_eigenpairs(op, 9, o, progress), EigensolveBudgetExceeded);
}

TEST(Budget, TheReasonNamesBarelyJoinedPoints) {
  // A matrix whose points keep nearly all their weight at home (escape
  // probabilities below 1e-3): the line says so and what to change.
  const KnnGraph g = noisy_strip_graph(7);
  DiffusionParams p = fixed_bandwidth();
  DiffusionMatrix a = diffusion_matrix_of(g, p);
  for (int64_t i = 0; i < 40; ++i) a.diag[static_cast<size_t>(i)] = 1 - 1e-5;
  EigenOptions o;
  o.max_matvecs = 100;
  const std::string line = budget_message(a, 101, 0.5, o);
  EXPECT_NE(line.find("the kernel barely joins 40 points"), std::string::npos) << line;
  EXPECT_NE(line.find("(10x)"), std::string::npos) << line;
}

TEST(RealData, FashionMnistCosineEmbedsWithinItsBudget) {
  // The case that stalled for minutes (Fashion-MNIST, cosine, k = 30):
  // now a few hundred mat-vecs, no coordinate on single images.
  Dataset ds = fashion_mnist(3000);
  if (ds.rows() == 0) GTEST_SKIP() << "Fashion-MNIST not installed (dataset-fashion-mnist)";
  register_cpu_backend();
  KnnParams kp;
  kp.k = 30;
  kp.metric = Metric::Cosine;
  Progress progress;
  const KnnGraph g = make_backend("cpu")->build(ds, kp, progress);
  DiffusionParams p;
  p.max_matvecs = 3000;
  const DiffusionResult r = embed(g, p);
  EXPECT_TRUE(r.solver["converged"].get<bool>());
  EXPECT_EQ(r.n, 3000);
  EXPECT_TRUE(r.diagnostics.localised.empty());
  EXPECT_TRUE(r.diagnostics.near_one.empty());
  // The old kernel, d^2 of the cosine distance at fixed width (the graph
  // read as Euclidean), isolates outliers: never a silent result.
  KnnGraph old = g;
  old.metric = Metric::Euclidean;
  DiffusionParams q = fixed_bandwidth();
  q.max_matvecs = 3000;
  try {
    const DiffusionResult s = embed(old, q);
    EXPECT_FALSE(s.diagnostics.warnings.empty());
  } catch (const EigensolveBudgetExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("try --epsilon"), std::string::npos);
  }
}

}  // namespace
