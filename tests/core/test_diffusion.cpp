// Diffusion maps: eigenpairs against a dense float64 eigensolver written
// independently here, known spectra (circle, interval, sphere), the
// symmetrisation and alpha variants, disconnected graphs, Nystrom, and bad
// input.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;

namespace {

std::vector<double> random_points(int64_t n, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1);
  std::vector<double> x(static_cast<size_t>(n * d));
  for (auto& v : x) v = g(rng);
  return x;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// The diffusion operator built densely from the definition, in float64.
struct DenseReference {
  Eigen::VectorXd values;  // descending
  Eigen::MatrixXd psi;     // columns: Markov eigenvectors, psi_0 = 1
  double epsilon = 0;
};

DenseReference dense_reference(const KnnGraph& g, const DiffusionParams& p) {
  const int64_t n = g.n;
  const int kp = p.k ? p.k : g.k;
  // The squared Euclidean distance each metric stands for: d^2, or 2 d for
  // cosine and Pearson (1 - cos = |x^ - y^|^2 / 2).
  auto r2 = [&](int64_t i, int e) {
    const double d = g.distances[i * g.k + e];
    return g.metric == Metric::Euclidean ? d * d : 2 * d;
  };
  // sigma_i: the distance to the j-th neighbour; with auto, where that is a
  // duplicate (0), to the nearest distinct one among the first kp, and where
  // there is none, the median of the others.
  const int j = p.local_scaling < 0 ? std::min(7, kp) : p.local_scaling;
  std::vector<double> sigma(static_cast<size_t>(n), 1.0);
  if (j > 0) {
    std::vector<double> found;
    for (int64_t i = 0; i < n; ++i) {
      sigma[i] = 0;
      for (int e = j - 1; e < (p.local_scaling < 0 ? kp : j) && sigma[i] == 0; ++e) sigma[i] = std::sqrt(r2(i, e));
      if (sigma[i] > 0) found.push_back(sigma[i]);
    }
    for (int64_t i = 0; i < n; ++i)
      if (sigma[i] == 0) sigma[i] = median(found);
  }
  auto scaled = [&](int64_t i, int e) { return r2(i, e) / (sigma[i] * sigma[g.indices[i * g.k + e]]); };
  double eps;
  if (p.epsilon == "median") {
    // Over the non-zero scaled k'-th distances (duplicates weigh 1 at any epsilon).
    std::vector<double> last;
    for (int64_t i = 0; i < n; ++i)
      if (scaled(i, kp - 1) > 0) last.push_back(scaled(i, kp - 1));
    eps = median(last);
  } else {
    eps = std::stod(p.epsilon);
  }
  Eigen::MatrixXd kd = Eigen::MatrixXd::Zero(n, n);
  Eigen::MatrixXi has = Eigen::MatrixXi::Zero(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int e = 0; e < kp; ++e) {
      const int64_t j = g.indices[i * g.k + e];
      if (j == i) continue;
      kd(i, j) = std::exp(-scaled(i, e) / eps);
      has(i, j) = 1;
    }
  Eigen::MatrixXd k(n, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (p.symmetrize == "or") k(i, j) = std::max(kd(i, j), kd(j, i));
      else if (p.symmetrize == "and")
        k(i, j) = (has(i, j) && has(j, i)) ? std::min(kd(i, j), kd(j, i)) : 0.0;
      else
        k(i, j) = 0.5 * (kd(i, j) + kd(j, i));
    }
  for (int64_t i = 0; i < n; ++i) k(i, i) = 1.0;
  Eigen::VectorXd q = k.rowwise().sum();
  Eigen::VectorXd qa = q.array().pow(-p.alpha);
  Eigen::MatrixXd ka = qa.asDiagonal() * k * qa.asDiagonal();
  Eigen::VectorXd d = ka.rowwise().sum();
  Eigen::VectorXd isd = d.array().rsqrt();
  Eigen::MatrixXd a = isd.asDiagonal() * ka * isd.asDiagonal();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(a);
  DenseReference r;
  r.epsilon = eps;
  r.values = es.eigenvalues().reverse();
  Eigen::MatrixXd v = es.eigenvectors().rowwise().reverse();
  r.psi = isd.asDiagonal() * v * std::sqrt(d.sum());
  for (int c = 0; c < r.psi.cols(); ++c)
    if (r.psi.col(c).sum() < 0 && c == 0) r.psi.col(c) *= -1;
  return r;
}

DiffusionResult embed(const KnnGraph& g, DiffusionParams p) {
  Progress progress;
  return diffusion_map(g, p, progress);
}

/// |cos| of the angle between column c of the result's psi and a reference vector.
double alignment(const DiffusionResult& r, int c, const Eigen::VectorXd& ref) {
  const int nev = r.m + 1;
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < r.n; ++i) {
    const double a = r.psi[i * nev + c];
    dot += a * ref[i], na += a * a, nb += ref[i] * ref[i];
  }
  return std::abs(dot) / std::sqrt(na * nb);
}

struct Variant {
  std::string sym;
  double alpha;
  int local_scaling;
  std::string epsilon;
  Metric metric = Metric::Euclidean;
};

class DenseAgreement : public ::testing::TestWithParam<Variant> {};

TEST_P(DenseAgreement, EigenpairsMatchDenseFloat64Solver) {
  const Variant v = GetParam();
  const int64_t n = 350;
  // Uniform in a cube: Gaussian tails would leave outliers without mutual neighbours.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> pts(n * 3);
  for (auto& x : pts) x = u(rng);
  KnnGraph g = knn_graph(pts, n, 3, 20);
  // The kernel of a cosine or Pearson graph reads its distances as 1 - cos.
  g.metric = v.metric;
  DiffusionParams p;
  p.symmetrize = v.sym;
  p.alpha = v.alpha;
  p.local_scaling = v.local_scaling;
  p.epsilon = v.epsilon;
  // A slice of the graph; mutual neighbours ("and") need more of it to stay connected.
  p.k = v.sym == "and" ? 16 : 12;
  p.components = 6;
  DiffusionResult r = embed(g, p);
  ASSERT_EQ(r.graph_components, 1);
  ASSERT_EQ(r.n, n);
  DenseReference ref = dense_reference(g, p);
  EXPECT_NEAR(r.epsilon, ref.epsilon, 1e-12 * ref.epsilon);
  ASSERT_EQ(r.eigenvalues.size(), 7u);
  for (int c = 0; c <= p.components; ++c)
    EXPECT_NEAR(r.eigenvalues[c], ref.values[c], 1e-8 * std::abs(ref.values[c])) << "eigenvalue " << c;
  // psi_0 is the constant 1; the others match the reference where the
  // eigenvalue is simple (random data: all are).
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(r.psi[i * 7], 1.0, 1e-7);
  for (int c = 1; c <= p.components; ++c) {
    const double gap = std::min(std::abs(ref.values[c] - ref.values[c - 1]),
                                std::abs(ref.values[c] - ref.values[c + 1]));
    if (gap < 1e-6) continue;
    EXPECT_GT(alignment(r, c, ref.psi.col(c)), 1 - 1e-8) << "eigenvector " << c;
  }
  // Coordinates are lambda^t psi.
  for (int64_t i = 0; i < n; i += 37)
    for (int c = 1; c <= p.components; ++c)
      EXPECT_NEAR(r.coordinates[i * p.components + c - 1], r.eigenvalues[c] * r.psi[i * 7 + c], 1e-14);
}

INSTANTIATE_TEST_SUITE_P(Variants, DenseAgreement,
                         ::testing::Values(Variant{"or", 1.0, 0, "median"}, Variant{"and", 1.0, 0, "median"},
                                           Variant{"average", 1.0, 0, "median"}, Variant{"or", 0.0, 0, "median"},
                                           Variant{"or", 0.5, 0, "median"}, Variant{"average", 0.5, 5, "median"},
                                           Variant{"or", 1.0, 7, "1.5"}, Variant{"and", 0.0, 0, "0.8"},
                                           Variant{"or", 1.0, kLocalScalingAuto, "median"},
                                           Variant{"or", 1.0, kLocalScalingAuto, "median", Metric::Cosine},
                                           Variant{"average", 0.5, 0, "median", Metric::Pearson}));

// Duplicate images (blank detector frames, repeated particles) put zeros in
// the lists. Auto local scaling then takes each point's nearest distinct
// neighbour, or the median scale where all k' neighbours are duplicates, and
// says how many points it scaled so; the median epsilon skips the zeros. The
// eigenpairs match the dense reference of that rule. An explicit neighbour
// still refuses a duplicate, and identical images have no scale at all.
TEST(Diffusion, AutoLocalScalingSeesPastDuplicates) {
  const int64_t distinct = 300;
  std::vector<double> pts = random_points(distinct, 3, 31);
  // Point 0 nine more times (its 7-th neighbour a duplicate; distinct
  // neighbours follow among k' = 12), point 1 fourteen more (every neighbour
  // a duplicate: the median scale), point 2 twice more (untouched).
  for (auto [row, copies] : {std::pair{0, 9}, std::pair{1, 14}, std::pair{2, 2}})
    for (int c = 0; c < copies; ++c) pts.insert(pts.end(), pts.begin() + row * 3, pts.begin() + row * 3 + 3);
  const int64_t n = static_cast<int64_t>(pts.size() / 3);
  KnnGraph g = knn_graph(pts, n, 3, 20);
  DiffusionParams p;
  p.k = 12;
  p.components = 6;
  DiffusionResult r = embed(g, p);
  EXPECT_EQ(r.duplicate_scaled_points, 10 + 15);
  ASSERT_EQ(r.diagnostics.warnings.size(), 1u);
  EXPECT_NE(r.diagnostics.warnings[0].find("25 points of 325 are at distance 0 from their 7-th neighbour"),
            std::string::npos)
      << r.diagnostics.warnings[0];
  // Point 1's copies join the rest only through the points that list them.
  ASSERT_EQ(r.n, n);
  DenseReference ref = dense_reference(g, p);
  EXPECT_NEAR(r.epsilon, ref.epsilon, 1e-12 * ref.epsilon);
  for (int c = 0; c <= p.components; ++c)
    EXPECT_NEAR(r.eigenvalues[c], ref.values[c], 1e-8 * std::abs(ref.values[c])) << "eigenvalue " << c;
  for (int c = 1; c <= p.components; ++c) {
    const double gap = std::min(std::abs(ref.values[c] - ref.values[c - 1]),
                                std::abs(ref.values[c] - ref.values[c + 1]));
    if (gap < 1e-6) continue;
    EXPECT_GT(alignment(r, c, ref.psi.col(c)), 1 - 1e-8) << "eigenvector " << c;
  }
  // A new point on top of point 1's copies: every listed neighbour is a
  // duplicate (kernel weight 1 whatever its scale), so it is their average
  // by the alpha-normalised weights q_l^-alpha.
  std::vector<int64_t> ni;
  std::vector<float> nd;
  for (int e = 0; e < 12; ++e) ni.push_back(g.indices[1 * g.k + e]), nd.push_back(0.f);
  const std::vector<double> x = nystrom_extend(r, p, 1, 12, ni.data(), nd.data());
  for (int c = 1; c <= p.components; ++c) {
    double sum = 0, weights = 0;
    for (int64_t l : ni) {
      const double w = std::pow(r.density[l], -p.alpha);
      sum += w * r.psi[l * (p.components + 1) + c], weights += w;
    }
    EXPECT_NEAR(x[c - 1], sum / weights, 1e-9) << c;
  }

  auto message = [&](DiffusionParams q, const KnnGraph& graph) -> std::string {
    try {
      embed(graph, q);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  DiffusionParams explicit_neighbour = p;
  explicit_neighbour.local_scaling = 7;
  EXPECT_NE(message(explicit_neighbour, g).find("--local-scaling 7: point 0 is at distance 0 from its 7-th neighbour"),
            std::string::npos);
  const std::vector<double> same(30 * 3, 0.25);
  EXPECT_NE(message(p, knn_graph(same, 30, 3, 12)).find("identical images?"), std::string::npos);
}

TEST(Diffusion, SpectrumLowerBoundHoldsAndTightensForNarrowKernels) {
  // The Chebyshev filter damps [lower bound, cut]: an eigenvalue below the
  // bound would be amplified instead, so the bound must hold for every
  // kernel; a narrow kernel (large self-weights) must raise it above -1.
  const int64_t n = 300;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> pts(n * 3);
  for (auto& x : pts) x = u(rng);
  const KnnGraph g = knn_graph(pts, n, 3, 15);
  DiffusionParams wide;
  wide.k = 12;
  wide.local_scaling = 0;
  Progress progress;
  const double median_eps = diffusion_matrix(g, wide, progress).epsilon;
  for (double scale : {0.1, 0.2, 0.3, 1.0, 10.0}) {
    DiffusionParams p = wide;
    p.epsilon = std::to_string(scale * median_eps);
    const DiffusionMatrix a = diffusion_matrix(g, p, progress);
    ASSERT_EQ(a.n, n);
    const DenseReference ref = dense_reference(g, p);
    const double least = ref.values[n - 1];
    const double bound = spectrum_lower_bound(a);
    EXPECT_LE(bound, least) << "epsilon " << scale << " x median";
    EXPECT_GE(bound, -1.0);
    if (scale <= 0.1) {
      EXPECT_GT(bound, -0.5) << "a narrow kernel's self-weights";
    }
  }
}

TEST(Diffusion, SymmetrisationRulesDiffer) {
  // The three rules give different matrices on a graph with one-sided edges,
  // so their spectra must differ; "and" has the fewest edges.
  const int64_t n = 300;
  KnnGraph g = knn_graph(random_points(n, 4, 5), n, 4, 10);
  DiffusionParams p = fixed_bandwidth();
  p.components = 4;
  p.epsilon = "2.0";
  std::vector<std::vector<double>> vals;
  std::vector<int64_t> nnz;
  for (auto s : {"or", "and", "average"}) {
    p.symmetrize = s;
    Progress progress;
    DiffusionMatrix a = diffusion_matrix(g, p, progress);
    nnz.push_back(a.nnz());
    vals.push_back(embed(g, p).eigenvalues);
  }
  EXPECT_GT(nnz[0], nnz[1]);
  EXPECT_EQ(nnz[0], nnz[2]);
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j) EXPECT_GT(std::abs(vals[i][1] - vals[j][1]), 1e-6) << i << " vs " << j;
}

TEST(Diffusion, MatrixIsTheSameOnAnyNumberOfThreads) {
  // The transpose and the merges run over ranges of rows and columns, one
  // a thread: every thread count must give the one-thread matrix bit for
  // bit, and each row's columns must be the rule's (or: listed either way;
  // and: both ways). 6000 points in 5-D, k = 12: six blocks of rows, so up
  // to five column ranges.
  const int64_t n = 6000;
  const KnnGraph g = knn_graph(random_points(n, 5, 9), n, 5, 12);
  std::vector<std::set<int32_t>> out(n), in(n);
  for (int64_t i = 0; i < n; ++i)
    for (int e = 0; e < g.k; ++e) {
      const int64_t j = g.row_indices(i)[e];
      out[i].insert(static_cast<int32_t>(j));
      in[j].insert(static_cast<int32_t>(i));
    }
  for (const char* sym : {"or", "and"}) {
    SCOPED_TRACE(sym);
    DiffusionParams p = fixed_bandwidth();
    p.symmetrize = sym;
    p.epsilon = "4.0";  // wide: the kernel keeps every point of the graph's largest component
    p.threads = 1;
    const DiffusionMatrix one = diffusion_matrix_of(g, p);
    // Mutual neighbours leave a few points out: the matrix's rows are the
    // embedded points (point_index), its columns renumbered likewise.
    EXPECT_GT(one.n, n * 99 / 100);
    std::vector<int32_t> row_of(n, -1);
    for (int64_t r = 0; r < one.n; ++r) row_of[one.point_index[r]] = static_cast<int32_t>(r);
    for (int64_t r = 0; r < one.n; ++r) {
      const int64_t i = one.point_index[r];
      std::set<int32_t> want;
      for (int32_t j : out[i])
        if (std::string(sym) == "or" || in[i].count(j)) want.insert(row_of[j]);
      if (std::string(sym) == "or")
        for (int32_t j : in[i]) want.insert(row_of[j]);
      want.erase(-1);
      const std::vector<int32_t> have(one.col.begin() + one.row_ptr[r], one.col.begin() + one.row_ptr[r + 1]);
      ASSERT_TRUE(std::is_sorted(have.begin(), have.end())) << "row " << i;
      ASSERT_EQ(std::set<int32_t>(have.begin(), have.end()), want) << "row " << i;
    }
    for (int threads : {2, 3, 4, 7}) {
      p.threads = threads;
      const DiffusionMatrix a = diffusion_matrix_of(g, p);
      EXPECT_EQ(a.row_ptr, one.row_ptr) << threads << " threads";
      EXPECT_TRUE(std::equal(a.col.begin(), a.col.end(), one.col.begin(), one.col.end())) << threads << " threads";
      EXPECT_TRUE(std::equal(a.val.begin(), a.val.end(), one.val.begin(), one.val.end())) << threads << " threads";
      EXPECT_EQ(a.diag, one.diag) << threads << " threads";
      EXPECT_EQ(a.degree, one.degree) << threads << " threads";
    }
  }
}

TEST(Diffusion, AlphaRemovesSamplingDensity) {
  // Points on a circle with a strongly non-uniform angular density. With
  // alpha = 1 the operator converges to the Laplace-Beltrami operator of the
  // circle, whatever the density: psi_1, psi_2 are cos/sin of the arclength,
  // so atan2(psi_2, psi_1) follows the true angle. alpha = 0 distorts it.
  const int64_t n = 2000;
  std::vector<double> pts, theta;
  for (int64_t i = 0; i < n; ++i) {
    const double u = (i + 0.5) / n;
    const double t = 2 * M_PI * u + 0.6 * std::sin(2 * M_PI * u);  // density varies 4x
    theta.push_back(t);
    pts.push_back(std::cos(t));
    pts.push_back(std::sin(t));
  }
  // k reaches beyond 3 kernel widths even where the points are densest, so
  // the k-NN truncation does not cut the kernel.
  KnnGraph g = knn_graph(pts, n, 2, 100);
  auto corr = [&](double alpha) {
    DiffusionParams p = fixed_bandwidth();
    p.alpha = alpha;
    p.components = 2;
    p.epsilon = "0.0005";
    DiffusionResult r = embed(g, p);
    std::vector<double> phi;
    for (int64_t i = 0; i < n; ++i) phi.push_back(std::atan2(r.psi[i * 3 + 2], r.psi[i * 3 + 1]));
    return std::abs(circular_correlation(phi, theta));
  };
  const double c1 = corr(1.0), c0 = corr(0.0);
  EXPECT_GT(c1, 0.999);
  EXPECT_LT(c0, c1 - 0.001);
}

/// A circulant graph of n points evenly spaced on the unit circle, k nearest
/// (k even: k/2 each side), built directly so it is exactly symmetric.
TEST(KnownSpectra, CircleGivesPairsWithRatiosOfSquares) {
  const int64_t n = 400;
  const int k = 20;
  KnnGraph g = circle_graph(n, k);
  DiffusionParams p = fixed_bandwidth();
  p.components = 6;
  DiffusionResult r = embed(g, p);
  // The exact spectrum of the circulant kernel: lambda_m = sum_j w_j cos(2 pi m j / n) / sum_j w_j.
  double eps;
  {
    const double d = g.distances[k - 1];
    eps = double(d) * d;
  }
  EXPECT_NEAR(r.epsilon, eps, 1e-15);
  auto lambda = [&](int m) {
    double num = 1, den = 1;
    for (int j = 1; j <= k / 2; ++j) {
      const double d = g.distances[2 * (j - 1)];
      const double w = std::exp(-double(d) * d / eps);
      num += 2 * w * std::cos(2 * M_PI * m * j / n);
      den += 2 * w;
    }
    return num / den;
  };
  EXPECT_NEAR(r.eigenvalues[0], 1.0, 1e-12);
  for (int m = 1; m <= 3; ++m) {
    EXPECT_NEAR(r.eigenvalues[2 * m - 1], lambda(m), 1e-10) << "m = " << m;
    EXPECT_NEAR(r.eigenvalues[2 * m], lambda(m), 1e-10) << "m = " << m;
  }
  // Laplace-Beltrami on the circle: mu_m = m^2, and -log lambda_m ~ eps mu_m.
  const double l1 = -std::log(r.eigenvalues[1]);
  EXPECT_NEAR(-std::log(r.eigenvalues[3]) / l1, 4.0, 0.04);
  EXPECT_NEAR(-std::log(r.eigenvalues[5]) / l1, 9.0, 0.2);
}

TEST(KnownSpectra, RepeatedEigenvaluesNeedTheLockCheck) {
  // The exact circulant has exactly repeated pairs; a single Lanczos start
  // vector sees one direction of each. Without the lock check a copy is
  // missed (the returned values are not the pairs); with it all are found.
  KnnGraph g = circle_graph(400, 20);
  DiffusionParams p = fixed_bandwidth();
  p.components = 6;
  p.lock_check = false;
  DiffusionResult r = embed(g, p);
  int pairs = 0;
  for (int m = 1; m <= 5; m += 2) pairs += std::abs(r.eigenvalues[m] - r.eigenvalues[m + 1]) < 1e-10;
  EXPECT_LT(pairs, 3) << "every pair found without the lock check: the test no longer shows why it exists";
  p.lock_check = true;
  r = embed(g, p);
  for (int m = 1; m <= 5; m += 2) EXPECT_NEAR(r.eigenvalues[m], r.eigenvalues[m + 1], 1e-10);
}

TEST(KnownSpectra, LockCheckRecoversEveryCopyOfFourfoldEigenvalues) {
  // A 24 x 24 periodic lattice (a flat torus), each point joined to its 8
  // nearest lattice neighbours: the operator is a 2-D circulant whose modes
  // (+-1, 0), (0, +-1) share one eigenvalue and (+-1, +-1) another, both
  // fourfold. One Lanczos start vector sees one direction of each
  // eigenspace; the lock check has to find the other three of both.
  const int side = 24;
  KnnGraph g;
  g.n = side * side;
  g.d = 2;
  g.k = 8;
  const double h = 1.0 / side;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (!dx && !dy) continue;
          g.indices.push_back(((y + dy + side) % side) * side + (x + dx + side) % side);
          g.distances.push_back(static_cast<float>(h * std::sqrt(double(dx * dx + dy * dy))));
        }
  DiffusionParams p = fixed_bandwidth();
  p.epsilon = std::to_string(2 * h * h);
  Progress progress;
  DiffusionMatrix a = diffusion_matrix(g, p, progress);
  const int count = 9;
  const std::vector<double> want = dense_top_eigenvalues(a, count);
  ASSERT_NEAR(want[1], want[4], 1e-12);  // the fourfold eigenvalues, as the dense solver sees them
  ASSERT_NEAR(want[5], want[8], 1e-12);
  ASSERT_GT(want[4] - want[5], 1e-3);

  EigenOptions o;
  o.lock_check = false;
  Eigenpairs bare = top_eigenpairs(a, count, o, progress);
  double worst_bare = 0;
  for (int c = 0; c < count; ++c) worst_bare = std::max(worst_bare, std::abs(bare.values[c] - want[c]));
  EXPECT_GT(worst_bare, 1e-3) << "Lanczos alone found every copy: the test no longer exercises the check";
  EXPECT_EQ(bare.check_matvecs, 0);
  EXPECT_EQ(bare.recovered, 0);

  o.lock_check = true;
  Eigenpairs e = top_eigenpairs(a, count, o, progress);
  for (int c = 0; c < count; ++c) EXPECT_NEAR(e.values[c], want[c], 1e-10) << c;
  // Copies of the two fourfold eigenvalues that the first solve missed
  // (rounding hands Lanczos some of them): each one the check must add.
  int missing = 0;
  for (double value : {want[1], want[5]}) {
    missing += 4;
    for (double b : bare.values) missing -= std::abs(b - value) < 1e-8;
  }
  EXPECT_GE(missing, 1);
  EXPECT_EQ(e.recovered, missing);
  EXPECT_TRUE(e.check_settled);
  EXPECT_GT(e.check_matvecs, 0);
  EXPECT_LE(e.max_residual, 1e-9);
  // The vectors are orthonormal eigenvectors: A V = V diag(values).
  Eigen::MatrixXd v(a.n, count), av(a.n, count);
  for (int64_t i = 0; i < a.n; ++i)
    for (int c = 0; c < count; ++c) v(i, c) = e.vectors[i * count + c];
  for (int c = 0; c < count; ++c) a.multiply(v.col(c).data(), av.col(c).data(), 1);
  EXPECT_LT((v.transpose() * v - Eigen::MatrixXd::Identity(count, count)).cwiseAbs().maxCoeff(), 1e-9);
  for (int c = 0; c < count; ++c) EXPECT_LT((av.col(c) - e.values[c] * v.col(c)).norm(), 1e-9) << c;
}

TEST(KnownSpectra, LockCheckLeavesASimpleSpectrumAlone) {
  // Random points in a box: no repeated eigenvalues. The check reaches its
  // verdict, swaps nothing, and the result equals the dense solver's.
  KnnGraph g = knn_graph(random_points(600, 3, 5), 600, 3, 12);
  DiffusionParams p = fixed_bandwidth();
  Progress progress;
  DiffusionMatrix a = diffusion_matrix(g, p, progress);
  const int count = 8;
  const std::vector<double> want = dense_top_eigenvalues(a, count);
  EigenOptions o;
  Eigenpairs e = top_eigenpairs(a, count, o, progress);
  EXPECT_EQ(e.recovered, 0);
  EXPECT_TRUE(e.check_settled);
  for (int c = 0; c < count; ++c) EXPECT_NEAR(e.values[c], want[c], 1e-10) << c;
}

TEST(Diffusion, SolverOrderAndStartVectorChangeNothing) {
  // The solve runs on the matrix in reverse Cuthill-McKee order and may start
  // from a guess; neither may change the eigenpairs beyond the tolerance.
  KnnGraph g = knn_graph(random_points(800, 3, 9), 800, 3, 15);
  DiffusionParams p = fixed_bandwidth();
  Progress progress;
  DiffusionMatrix a = diffusion_matrix(g, p, progress);
  const int count = 7;
  const std::vector<double> want = dense_top_eigenvalues(a, count);
  EigenOptions plain;
  plain.reorder = false;
  const Eigenpairs base = top_eigenpairs(a, count, plain, progress);
  EigenOptions reordered;
  const Eigenpairs r = top_eigenpairs(a, count, reordered, progress);
  EigenOptions guessed;
  guessed.start.assign(static_cast<size_t>(a.n), 0.0);
  for (int64_t i = 0; i < a.n; ++i)
    for (int c = 0; c < count; ++c) guessed.start[i] += base.vectors[i * count + c];
  const Eigenpairs s = top_eigenpairs(a, count, guessed, progress);
  for (const Eigenpairs* e : {&base, &r, &s}) {
    EXPECT_LE(e->max_residual, 1e-10);
    for (int c = 0; c < count; ++c) {
      EXPECT_NEAR(e->values[c], want[c], 1e-10) << c;
      double dot = 0;
      for (int64_t i = 0; i < a.n; ++i) dot += e->vectors[i * count + c] * base.vectors[i * count + c];
      EXPECT_GT(std::abs(dot), 1 - 1e-8) << c;
    }
  }
  EigenOptions bad;
  bad.start.assign(10, 1.0);
  EXPECT_THROW(top_eigenpairs(a, count, bad, progress), Error);
}

TEST(KnownSpectra, IntervalGivesRatiosOneFourNine) {
  // Evenly spaced points on [0, 1]: with alpha = 1 the limit is the Neumann
  // Laplacian, eigenfunctions cos(m pi x), eigenvalues (m pi)^2.
  const int64_t n = 1000;
  std::vector<double> x;
  for (int64_t i = 0; i < n; ++i) x.push_back(static_cast<double>(i) / (n - 1));
  KnnGraph g = knn_graph(x, n, 1, 10);
  DiffusionParams p = fixed_bandwidth();
  p.components = 4;
  DiffusionResult r = embed(g, p);
  const double l1 = -std::log(r.eigenvalues[1]);
  EXPECT_NEAR(-std::log(r.eigenvalues[2]) / l1, 4.0, 0.04);
  EXPECT_NEAR(-std::log(r.eigenvalues[3]) / l1, 9.0, 0.09);
  EXPECT_NEAR(-std::log(r.eigenvalues[4]) / l1, 16.0, 0.16);
  // psi_1 is cos(pi x) up to sign and the normalisation sqrt(2).
  Eigen::VectorXd c(n);
  for (int64_t i = 0; i < n; ++i) c[i] = std::cos(M_PI * x[i]);
  EXPECT_GT(alignment(r, 1, c), 0.9999);
}

TEST(KnownSpectra, SphereFirstEigenvalueIsThreefold) {
  // Fibonacci points on the unit sphere: mu_l = l (l + 1) with multiplicity
  // 2l + 1, so lambda_1..3 coincide, lambda_4..8 coincide at three times the rate.
  const int64_t n = 3000;
  const std::vector<double> pts = sphere_points(n);
  KnnGraph g = knn_graph(pts, n, 3, 30);
  DiffusionParams p = fixed_bandwidth();
  p.components = 9;
  DiffusionResult r = embed(g, p);
  std::vector<double> mu;
  for (int c = 1; c <= 9; ++c) mu.push_back(-std::log(r.eigenvalues[c]));
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(mu[c] / mu[0], 1.0, 0.01) << c;
  for (int c = 3; c < 8; ++c) EXPECT_NEAR(mu[c] / mu[0], 3.0, 0.06) << c;
  EXPECT_GT(mu[3] / mu[2], 2.5);  // a clear gap after the triplet
  EXPECT_GT(mu[8] / mu[7], 1.5);  // and after the quintuplet (next: l = 3, ratio 6)
  // The first three psi span the coordinate functions x, y, z.
  Eigen::MatrixXd psi(n, 3), xyz(n, 3);
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) psi(i, c) = r.psi[i * 10 + 1 + c], xyz(i, c) = pts[i * 3 + c];
  // Residual of projecting x, y, z onto span(psi): small.
  Eigen::MatrixXd q = psi.householderQr().householderQ() * Eigen::MatrixXd::Identity(n, 3);
  const double resid = (xyz - q * (q.transpose() * xyz)).norm() / xyz.norm();
  EXPECT_LT(resid, 0.01);
}

TEST(Diffusion, BghEstimatesIntrinsicDimension) {
  // A 2-D square patch embedded in 3-D, and a 1-D curve: 2 x the maximal
  // slope of log sum K against log epsilon estimates the dimension.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  // Under the sanitizers 2000 points: the estimates move by 0.02.
  const int64_t n = scaled(4000, 2000);
  std::vector<double> plane, curve;
  for (int64_t i = 0; i < n; ++i) {
    const double a = u(rng), b = u(rng);
    plane.insert(plane.end(), {a, b, 0.3 * a});
    const double t = u(rng) * 6;
    curve.insert(curve.end(), {std::cos(t), std::sin(t), 0.2 * t});
  }
  DiffusionParams p = fixed_bandwidth();
  p.epsilon = "auto";
  p.components = 3;
  // k large enough that the kernel is resolved before the k-NN truncation
  // caps sum K (the cap flattens the slope).
  DiffusionResult r2 = embed(knn_graph(plane, n, 3, 150), p);
  DiffusionResult r1 = embed(knn_graph(curve, n, 3, 40), p);
  ASSERT_TRUE(r2.bgh.is_object());
  EXPECT_NEAR(r2.bgh["dimension"].get<double>(), 2.0, 0.3);
  EXPECT_NEAR(r1.bgh["dimension"].get<double>(), 1.0, 0.2);
  EXPECT_DOUBLE_EQ(r2.bgh["epsilon_chosen"].get<double>(), r2.epsilon);
  // The curve has one point per grid epsilon and the chosen one is the arg max.
  auto eps = r2.bgh["epsilon"].get<std::vector<double>>();
  auto slope = r2.bgh["slope"].get<std::vector<double>>();
  ASSERT_EQ(eps.size(), slope.size());
  const size_t best = std::max_element(slope.begin(), slope.end()) - slope.begin();
  EXPECT_DOUBLE_EQ(eps[best], r2.epsilon);
}

TEST(Diffusion, SlicingEqualsAGraphBuiltWithSmallerK) {
  const int64_t n = 400;
  auto pts = random_points(n, 3, 8);
  KnnGraph big = knn_graph(pts, n, 3, 20), small = knn_graph(pts, n, 3, 8);
  DiffusionParams p = fixed_bandwidth();
  p.components = 5;
  DiffusionParams p8 = p;
  p8.k = 8;
  DiffusionResult a = embed(big, p8), b = embed(small, p);
  EXPECT_EQ(a.k, 8);
  EXPECT_EQ(a.epsilon, b.epsilon);
  for (int c = 0; c <= 5; ++c) EXPECT_NEAR(a.eigenvalues[c], b.eigenvalues[c], 1e-12);
  for (size_t i = 0; i < a.coordinates.size(); ++i) ASSERT_NEAR(a.coordinates[i], b.coordinates[i], 1e-9);
}

TEST(Diffusion, DisconnectedGraphEmbedsTheLargestComponentAndSaysSo) {
  // Three far-apart blobs of 120, 200 and 80 points.
  std::vector<double> pts;
  auto blob = [&](int64_t m, double cx, uint64_t seed) {
    auto b = random_points(m, 2, seed);
    for (int64_t i = 0; i < m; ++i) pts.insert(pts.end(), {b[i * 2] + cx, b[i * 2 + 1]});
  };
  blob(120, 0, 1);
  blob(200, 100, 2);
  blob(80, 200, 3);
  KnnGraph g = knn_graph(pts, 400, 2, 10);
  DiffusionParams p = fixed_bandwidth();
  p.components = 4;
  p.epsilon = "0.5";  // the median would differ between the whole graph and one blob
  DiffusionResult r = embed(g, p);
  EXPECT_EQ(r.graph_components, 3);
  EXPECT_EQ(r.largest_graph_components, (std::vector<int64_t>{200, 120, 80}));
  ASSERT_FALSE(r.diagnostics.warnings.empty());
  EXPECT_NE(r.diagnostics.warnings[0].find("3 connected components (200, 120 and 80 points); embedded the largest "
                                           "piece (200 of 400 points; point_index.npy lists them); a larger k "
                                           "joins them"),
            std::string::npos)
      << r.diagnostics.warnings[0];
  // The explorer's banner (QA 15): the view draws only the embedded piece,
  // and no point_index.npy exists before an export.
  const auto shown = diagnostic_warnings(r, r.diagnostics, EmbeddedPointsShown::DrawnInView);
  ASSERT_EQ(shown.size(), r.diagnostics.warnings.size());
  EXPECT_NE(shown[0].find("3 connected components (200, 120 and 80 points); embedded the largest piece (200 of 400 "
                          "points; the other 200 are not drawn); a larger k joins them"),
            std::string::npos)
      << shown[0];
  EXPECT_EQ(shown[0].find("point_index"), std::string::npos) << shown[0];
  for (size_t i = 1; i < shown.size(); ++i) EXPECT_EQ(shown[i], r.diagnostics.warnings[i]);
  EXPECT_EQ(r.identical_components, 0);
  ASSERT_EQ(r.n, 200);
  ASSERT_EQ(r.point_index.size(), 200u);
  for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(r.point_index[i], 120 + i);
  EXPECT_NEAR(r.eigenvalues[0], 1.0, 1e-10);
  EXPECT_LT(r.eigenvalues[1], 1.0 - 1e-6);  // one component left: lambda = 1 is simple
  // Same as embedding the middle blob alone.
  std::vector<double> mid(pts.begin() + 240, pts.begin() + 640);
  DiffusionResult alone = embed(knn_graph(mid, 200, 2, 10), p);
  for (int c = 0; c <= 4; ++c) EXPECT_NEAR(r.eigenvalues[c], alone.eigenvalues[c], 1e-9);

  // Blank frames: a smaller component of 60 identical points (weight 1 at
  // any epsilon) beside the blob of 200. A kernel too narrow for the blob
  // shreds it; the embedded piece stays inside the graph's largest
  // component, so that is a one-line --epsilon error, not an embedding of
  // the blanks; a kernel that holds the blob embeds it and counts the rest.
  std::vector<double> with_blanks(mid);
  for (int i = 0; i < 60; ++i) with_blanks.insert(with_blanks.end(), {500.0, 500.0});
  const KnnGraph gb = knn_graph(with_blanks, 260, 2, 10);
  DiffusionParams narrow = fixed_bandwidth();
  narrow.components = 4;
  narrow.epsilon = "1e-4";
  try {
    embed(gb, narrow);
    ADD_FAILURE() << "a kernel that shreds the blob embedded something";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--epsilon 0.0001: the kernel joins at most"), std::string::npos) << e.what();
  }
  DiffusionParams held = narrow;
  held.epsilon = "0.05";
  const DiffusionResult rb = embed(gb, held);
  ASSERT_GT(rb.n, 100);
  for (int64_t i : rb.point_index) EXPECT_LT(i, 200);
  EXPECT_EQ(rb.weakly_joined_points, 200 - rb.n);
  // No k joins the blanks to the blob, and the warning says so; with
  // another blob beside them, a larger k joins that one.
  auto expect_identical = [](const DiffusionResult& r, int components, const std::string& hint) {
    EXPECT_EQ(r.graph_components, components);
    EXPECT_EQ(r.identical_components, 1);
    EXPECT_EQ(r.identical_component_points, 60);
    ASSERT_FALSE(r.diagnostics.warnings.empty());
    EXPECT_NE(r.diagnostics.warnings[0].find(hint), std::string::npos) << r.diagnostics.warnings[0];
  };
  expect_identical(rb, 2, "; the other is 60 identical images (duplicates, such as blank frames), which no k joins");
  std::vector<double> mixed(with_blanks);
  mixed.insert(mixed.end(), pts.begin() + 640, pts.end());  // the blob of 80 at x = 200
  expect_identical(embed(knn_graph(mixed, 340, 2, 10), held), 3,
                   "; of the others, 60 identical images (duplicates, such as blank frames), which no k joins; "
                   "a larger k joins the rest");
}

TEST(Diffusion, NystromReproducesTrainingPoints) {
  const int64_t n = 300;
  auto pts = random_points(n, 3, 21);
  for (bool scaling : {false, true}) {
    // The complete graph with self: every row is exactly its kernel row.
    KnnGraph g = knn_graph(pts, n, 3, static_cast<int>(n), true);
    DiffusionParams p = fixed_bandwidth();
    p.components = 5;
    p.epsilon = "3.0";
    p.local_scaling = scaling ? 8 : 0;
    DiffusionResult r = embed(g, p);
    std::vector<double> psi;
    std::vector<double> x = nystrom_extend(r, p, n, g.k, g.indices.data(), g.distances.data(), &psi);
    ASSERT_EQ(x.size(), r.coordinates.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], r.coordinates[i], 1e-8) << i;
    for (size_t i = 0; i < psi.size(); ++i) ASSERT_NEAR(psi[i], r.psi[i], 1e-7) << i;
  }
  // A sparse graph: the symmetrised kernel row (own neighbours, points that
  // list it, itself at distance 0) reproduces the training point.
  KnnGraph g = knn_graph(pts, n, 3, 12);
  DiffusionParams p = fixed_bandwidth();
  p.components = 4;
  DiffusionResult r = embed(g, p);
  const int kn = 64;
  std::vector<int64_t> idx(n * kn, -1);
  std::vector<float> dist(n * kn, 0.f);
  std::vector<int> fill(n, 0);
  auto add = [&](int64_t i, int64_t j, float d) {
    for (int l = 0; l < fill[i]; ++l)
      if (idx[i * kn + l] == j) return;
    ASSERT_LT(fill[i], kn);
    idx[i * kn + fill[i]] = j;
    dist[i * kn + fill[i]++] = d;
  };
  for (int64_t i = 0; i < n; ++i) add(i, i, 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int e = 0; e < g.k; ++e) {
      add(i, g.indices[i * g.k + e], g.distances[i * g.k + e]);
      add(g.indices[i * g.k + e], i, g.distances[i * g.k + e]);
    }
  std::vector<double> x = nystrom_extend(r, p, n, kn, idx.data(), dist.data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], r.coordinates[i], 1e-8) << i;
  // A new point between neighbours lands near them.
  const int64_t a = 0;
  std::vector<int64_t> ni(g.indices.begin(), g.indices.begin() + g.k);
  std::vector<float> nd(g.distances.begin(), g.distances.begin() + g.k);
  ni.insert(ni.begin(), a);
  nd.insert(nd.begin(), 0.05f);
  ni.pop_back();
  nd.pop_back();
  std::vector<double> y = nystrom_extend(r, p, 1, g.k, ni.data(), nd.data());
  double dist_to_a = 0, scale = 0;
  for (int c = 0; c < r.m; ++c) {
    dist_to_a += std::pow(y[c] - r.coordinates[a * r.m + c], 2);
    scale += std::pow(r.coordinates[a * r.m + c], 2);
  }
  EXPECT_LT(std::sqrt(dist_to_a), 0.5 * std::sqrt(scale) + 1e-12);
}

/// The result's eigenvectors of the symmetric conjugate A (v = sqrt(d) psi,
/// unit columns), given A's degrees.
Eigen::MatrixXd conjugate_vectors(const DiffusionResult& r, const DiffusionMatrix& a) {
  const int nev = r.m + 1;
  Eigen::MatrixXd v(r.n, nev);
  for (int64_t i = 0; i < r.n; ++i)
    for (int c = 0; c < nev; ++c) v(i, c) = std::sqrt(a.degree[i]) * r.psi[i * nev + c];
  v.colwise().normalize();
  return v;
}

/// max_c |A v_c - lambda_c v_c| / |lambda_c|, recomputed here from the matrix.
double recomputed_residual(const DiffusionResult& r, const DiffusionMatrix& a) {
  const Eigen::MatrixXd v = conjugate_vectors(r, a);
  double worst = 0;
  Eigen::VectorXd av(a.n);
  for (int c = 0; c <= r.m; ++c) {
    a.multiply(v.col(c).data(), av.data(), 1);
    worst = std::max(worst, (av - r.eigenvalues[c] * v.col(c)).norm() / std::abs(r.eigenvalues[c]));
  }
  return worst;
}

/// Agreement of `other` with the reference `ref` (both over the same points).
/// Eigenvectors are compared cluster by cluster: consecutive eigenvalues of
/// ref whose distance is below `rel_gap` (1 - lambda) form one cluster, whose
/// eigenvectors are only defined as a subspace; per cluster the cosine of
/// the largest principal angle between the two spans (the smallest singular
/// value of V_ref^T V_other), which is |cos| for a single vector.
struct Agreement {
  double worst_cos = 1;
  double max_value_diff = 0;
  int clusters = 0;
  int largest_cluster = 0;
};

Agreement agreement(const DiffusionResult& ref, const DiffusionResult& other, const DiffusionMatrix& a,
                    double rel_gap = 1e-3) {
  Agreement g;
  const int nev = ref.m + 1;
  const Eigen::MatrixXd f = conjugate_vectors(ref, a), w = conjugate_vectors(other, a);
  for (int c = 0; c < nev; ++c)
    g.max_value_diff = std::max(g.max_value_diff, std::abs(ref.eigenvalues[c] - other.eigenvalues[c]));
  for (int c0 = 0; c0 < nev;) {
    int c1 = c0 + 1;
    while (c1 < nev && ref.eigenvalues[c1 - 1] - ref.eigenvalues[c1] <= rel_gap * (1 - ref.eigenvalues[c1])) ++c1;
    const Eigen::MatrixXd overlap = f.middleCols(c0, c1 - c0).transpose() * w.middleCols(c0, c1 - c0);
    g.worst_cos = std::min(g.worst_cos, Eigen::JacobiSVD<Eigen::MatrixXd>(overlap).singularValues().minCoeff());
    ++g.clusters;
    g.largest_cluster = std::max(g.largest_cluster, c1 - c0);
    c0 = c1;
  }
  return g;
}

/// rediffuse() after the change from p to q on g, checked against the full
/// solve: converged, the residual it claims holds, and the eigenpairs agree
/// to the tolerance (eigenvectors as subspaces of clusters).
void expect_rediffuse_exact(const KnnGraph& g, const DiffusionParams& p, const DiffusionParams& q,
                            const std::string& what, int* largest_cluster = nullptr) {
  SCOPED_TRACE(what);
  Progress progress;
  const DiffusionResult base = embed(g, p);
  const DiffusionResult full = embed(g, q);
  const DiffusionResult warm = rediffuse(g, q, base, progress);
  EXPECT_NE(warm.solver["method"].get<std::string>().find("LOBPCG"), std::string::npos);
  EXPECT_TRUE(warm.solver["converged"].get<bool>());
  const double claimed = warm.solver["max_residual"].get<double>();
  EXPECT_LE(claimed, q.tolerance);
  EXPECT_EQ(warm.k, full.k);
  EXPECT_EQ(warm.epsilon, full.epsilon);
  EXPECT_EQ(warm.point_index, full.point_index);
  ASSERT_EQ(warm.n, full.n);
  const DiffusionMatrix a = diffusion_matrix(g, q, progress);
  EXPECT_LE(recomputed_residual(warm, a), claimed * 1.01 + 1e-13);
  // Both solves are accurate to 1e-10 in the residual: eigenvalues to far
  // better (residual^2 / gap), eigenvectors to residual / gap.
  const Agreement agree = agreement(full, warm, a);
  EXPECT_LT(agree.max_value_diff, 1e-10);
  EXPECT_GT(agree.worst_cos, 1 - 1e-8);
  EXPECT_NEAR(warm.eigenvalues[0], 1.0, 1e-12);
  EXPECT_LT(warm.solver["iterations"].get<int>(), 40);
  std::printf("[ info     ] %s: %d LOBPCG iterations, residual %.1e, worst cos 1 - %.1e, eigenvalues to %.1e\n",
              what.c_str(), warm.solver["iterations"].get<int>(), claimed, 1 - agree.worst_cos, agree.max_value_diff);
  if (largest_cluster) *largest_cluster = agree.largest_cluster;
}

/// The exact 20-NN graph of 3000 points of a noisy 4 x 1 strip in 3-D.
TEST(Diffusion, RediffuseAfterNewKOrEpsilonIsTheFullSolve) {
  // A noisy 2-D strip: re-embedding after a change of k' or epsilon starts
  // LOBPCG from the previous eigenvectors and converges to the tolerance.
  KnnGraph g = noisy_strip_graph(12);
  DiffusionParams p = fixed_bandwidth();
  p.components = 8;
  const DiffusionResult base = embed(g, p);
  DiffusionParams qk = p;
  qk.k = 14;
  expect_rediffuse_exact(g, p, qk, "k' 20 -> 14");
  DiffusionParams qe = p;
  qe.epsilon = std::to_string(2 * base.epsilon);
  expect_rediffuse_exact(g, p, qe, "epsilon x 2");
  DiffusionParams qa = p;
  qa.alpha = 0.5;
  expect_rediffuse_exact(g, p, qa, "alpha 1 -> 0.5");

  Progress progress;
  // Same parameters: the previous eigenvectors are already converged.
  DiffusionResult same = rediffuse(g, p, base, progress);
  EXPECT_TRUE(same.solver["converged"].get<bool>());
  EXPECT_LE(same.solver["iterations"].get<int>(), 2);
  for (int c = 0; c <= p.components; ++c) EXPECT_NEAR(same.eigenvalues[c], base.eigenvalues[c], 1e-12);
  for (size_t i = 0; i < base.coordinates.size(); ++i)
    ASSERT_NEAR(std::abs(same.coordinates[i]), std::abs(base.coordinates[i]), 1e-6);

  // An iteration cap that stops it early: a preview that says so, and the
  // exact solve from it is the full solve's result.
  DiffusionResult preview = rediffuse(g, qk, base, progress, 1);
  const double resid = preview.solver["max_residual"].get<double>();
  EXPECT_GT(resid, qk.tolerance);
  EXPECT_FALSE(preview.solver["converged"].get<bool>());
  EXPECT_EQ(preview.solver["iterations"].get<int>(), 1);
  DiffusionResult exact = diffusion_map(g, qk, progress, &preview);
  DiffusionResult full = embed(g, qk);
  EXPECT_TRUE(exact.solver["warm_start"].get<bool>());
  EXPECT_LE(exact.solver["max_residual"].get<double>(), qk.tolerance);
  for (int c = 0; c <= p.components; ++c) EXPECT_NEAR(exact.eigenvalues[c], full.eigenvalues[c], 1e-10) << c;

  // A previous result over other points is not reused: the full solve runs.
  KnnGraph other = knn_graph(random_points(500, 3, 1), 500, 3, 10);
  DiffusionResult cold = rediffuse(other, p, base, progress);
  EXPECT_NE(cold.solver["method"].get<std::string>().find("Spectra"), std::string::npos);
  EXPECT_TRUE(cold.solver["converged"].get<bool>());
  // Too few points for the block method: the full solve runs.
  KnnGraph tiny = knn_graph(random_points(30, 2, 3), 30, 2, 8);
  DiffusionParams pt = fixed_bandwidth();
  pt.components = 4;
  DiffusionResult tiny_base = embed(tiny, pt);
  pt.k = 6;
  DiffusionResult tiny_warm = rediffuse(tiny, pt, tiny_base, progress);
  EXPECT_NE(tiny_warm.solver["method"].get<std::string>().find("Spectra"), std::string::npos);
}

TEST(Diffusion, RediffuseShowsAnIterateOnTheWayAndReusesTheRowOrder) {
  KnnGraph g = noisy_strip_graph(31);
  DiffusionParams p = fixed_bandwidth();
  p.components = 8;
  const DiffusionResult base = embed(g, p);
  // The full solve records the order it ran in: a permutation of the points.
  ASSERT_EQ(base.row_order.size(), static_cast<size_t>(base.n));
  std::vector<int32_t> sorted = base.row_order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < base.n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  DiffusionParams q = p;
  q.k = 14;
  Progress progress;

  // The first iterate within 1e-4 comes to `show` once, as a preview, while
  // the solve goes on to the tolerance.
  std::vector<DiffusionResult> shown;
  RediffusePreview preview;
  preview.tolerance = 1e-4;
  preview.after_s = 0;
  preview.show = [&](DiffusionResult&& r) { shown.push_back(std::move(r)); };
  const DiffusionResult warm = rediffuse(g, q, base, progress, 0, &preview);
  ASSERT_TRUE(warm.solver["converged"].get<bool>());
  ASSERT_EQ(shown.size(), 1u);
  const DiffusionResult& it = shown[0];
  EXPECT_TRUE(it.solver["preview"].get<bool>());
  EXPECT_FALSE(it.solver["converged"].get<bool>());
  const double claimed = it.solver["max_residual"].get<double>();
  EXPECT_LE(claimed, 1e-4);
  EXPECT_GT(claimed, q.tolerance);
  EXPECT_LT(it.solver["iterations"].get<int>(), warm.solver["iterations"].get<int>());
  const DiffusionMatrix a = diffusion_matrix(g, q, progress);
  // Its claim is the residual of what it holds (the LOBPCG estimate, from
  // the permuted Laplacian: equal to A's up to rounding).
  EXPECT_NEAR(recomputed_residual(it, a), claimed, 1e-3 * claimed + 1e-12);
  ASSERT_EQ(it.n, warm.n);
  EXPECT_EQ(it.point_index, warm.point_index);
  const Agreement close = agreement(warm, it, a);
  EXPECT_GT(close.worst_cos, 0.999);
  EXPECT_NEAR(it.psi[0], 1.0, 1e-9);  // psi_0 = 1, as in every result

  // Not before after_s; and never when the tolerance is not looser than the solve's.
  shown.clear();
  preview.after_s = 1e6;
  rediffuse(g, q, base, progress, 0, &preview);
  EXPECT_TRUE(shown.empty());
  preview.after_s = 0;
  preview.tolerance = q.tolerance;
  rediffuse(g, q, base, progress, 0, &preview);
  EXPECT_TRUE(shown.empty());

  // The previous row order only changes speed: without it, or with one that
  // is not a permutation, the result is the same to the tolerance.
  DiffusionResult no_order = base, bad_order = base;
  no_order.row_order.clear();
  bad_order.row_order.assign(static_cast<size_t>(base.n), 0);
  for (const DiffusionResult* from : {&no_order, &bad_order}) {
    const DiffusionResult r = rediffuse(g, q, *from, progress);
    EXPECT_TRUE(r.solver["converged"].get<bool>());
    const Agreement same = agreement(warm, r, a);
    EXPECT_LT(same.max_value_diff, 1e-10);
    EXPECT_GT(same.worst_cos, 1 - 1e-8);
    EXPECT_EQ(r.row_order.size(), static_cast<size_t>(r.n));
  }
}

TEST(Diffusion, RediffuseFindsBothCopiesOfRepeatedEigenvalues) {
  // The exact circulant: eigenvalues in exactly repeated pairs, which a
  // single-vector Lanczos run needs the lock check for. Its eigenvectors do
  // not depend on k' or epsilon, so the previous embedding asks for fewer
  // coordinates: the block method must find the rest, both copies of each
  // pair; the eigenvectors agree as 2-D subspaces.
  KnnGraph g = circle_graph(1200, 20);
  DiffusionParams p = fixed_bandwidth();
  p.components = 2;
  DiffusionParams q = p;
  q.components = 6;
  q.k = 12;
  int largest = 0;
  expect_rediffuse_exact(g, p, q, "circle, 2 -> 6 coordinates, k' 20 -> 12", &largest);
  EXPECT_EQ(largest, 2);
  q.k = 0;
  q.epsilon = "0.0005";
  expect_rediffuse_exact(g, p, q, "circle, 2 -> 6 coordinates, new epsilon", &largest);
  EXPECT_EQ(largest, 2);
}

TEST(Diffusion, RediffuseOnABottleneckAndOnADisconnectedGraph) {
  // Two squares joined by a narrow corridor: lambda_1 is within ~1e-4 of
  // the trivial 1 (a second near-null vector that the AMG's aggregates do
  // not carry), the hard case for the preconditioner.
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> pts;
  int64_t n = 0;
  for (; n < 1800; ++n) {
    const double x = u(rng), y = u(rng);
    if (n % 2) pts.insert(pts.end(), {x, y});
    else
      pts.insert(pts.end(), {x + 2, y});
  }
  for (int64_t i = 0; i < 200; ++i, ++n) pts.insert(pts.end(), {1 + u(rng), 0.45 + 0.1 * u(rng)});
  KnnGraph g = knn_graph(pts, n, 2, 12);
  DiffusionParams p = fixed_bandwidth();
  p.components = 6;
  const DiffusionResult base = embed(g, p);
  ASSERT_EQ(base.graph_components, 1);
  EXPECT_GT(base.eigenvalues[1], 1 - 1e-3);
  DiffusionParams q = p;
  q.k = 9;
  expect_rediffuse_exact(g, p, q, "dumbbell, k' 12 -> 9");
  q = p;
  q.epsilon = std::to_string(0.5 * base.epsilon);
  expect_rediffuse_exact(g, p, q, "dumbbell, epsilon / 2");

  // Three far-apart blobs: the largest is embedded, before and after.
  std::vector<double> blobs;
  auto blob = [&](int64_t m, double cx, uint64_t seed) {
    auto b = random_points(m, 2, seed);
    for (int64_t i = 0; i < m; ++i) blobs.insert(blobs.end(), {b[i * 2] + cx, b[i * 2 + 1]});
  };
  blob(300, 0, 1);
  blob(900, 100, 2);
  blob(200, 200, 3);
  KnnGraph gb = knn_graph(blobs, 1400, 2, 10);
  DiffusionParams pb = fixed_bandwidth();
  pb.components = 5;
  pb.epsilon = "0.5";
  DiffusionParams qb = pb;
  qb.epsilon = "1";
  expect_rediffuse_exact(gb, pb, qb, "blobs, epsilon x 2");
}

TEST(Diffusion, CircularCorrelation) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-M_PI, M_PI);
  std::vector<double> a, b, c, noise;
  for (int i = 0; i < 2000; ++i) {
    a.push_back(u(rng));
    b.push_back(std::remainder(a.back() + 1.3, 2 * M_PI));
    c.push_back(-a.back() + 0.4);
    noise.push_back(u(rng));
  }
  EXPECT_NEAR(circular_correlation(a, b), 1.0, 1e-12);
  EXPECT_NEAR(circular_correlation(a, c), -1.0, 1e-12);
  EXPECT_LT(std::abs(circular_correlation(a, noise)), 0.1);
}

TEST(Diffusion, CancelStopsTheEigensolve) {
  const int64_t n = 500;
  KnnGraph g = knn_graph(random_points(n, 3, 2), n, 3, 10);
  std::atomic<bool> cancel{true};
  Progress progress(nullptr, &cancel);
  DiffusionParams p = fixed_bandwidth();
  EXPECT_THROW(diffusion_map(g, p, progress), Cancelled);
}

TEST(Diffusion, ProgressReportsEveryStage) {
  struct Sink : ProgressSink {
    std::vector<std::string> stages;
    void report(const ProgressEvent& e) override {
      if (stages.empty() || stages.back() != e.stage) stages.push_back(e.stage);
    }
  } sink;
  const int64_t n = 500;
  KnnGraph g = knn_graph(random_points(n, 3, 2), n, 3, 10);
  Progress progress(&sink);
  DiffusionParams p = fixed_bandwidth();
  p.epsilon = "auto";
  diffusion_map(g, p, progress);
  for (auto s : {"kernel graph", "epsilon sweep", "normalise", "eigensolve"})
    EXPECT_NE(std::find(sink.stages.begin(), sink.stages.end(), s), sink.stages.end()) << s;
}

TEST(Diffusion, BadInputGivesOneClearLine) {
  const int64_t n = 100;
  KnnGraph g = knn_graph(random_points(n, 3, 4), n, 3, 8);
  auto message = [&](DiffusionParams p, const KnnGraph& graph) -> std::string {
    try {
      Progress progress;
      diffusion_map(graph, p, progress);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  auto usage = [&](DiffusionParams p) {
    try {
      validate(p, g);
    } catch (const UsageError&) {
      return true;
    } catch (...) {
    }
    return false;
  };
  DiffusionParams p = fixed_bandwidth();
  p.epsilon = "0";
  EXPECT_NE(message(p, g).find("--epsilon"), std::string::npos);
  EXPECT_TRUE(usage(p));
  p.epsilon = "-2";
  EXPECT_NE(message(p, g).find("must be positive"), std::string::npos);
  p.epsilon = "wide";
  EXPECT_NE(message(p, g).find("not a number"), std::string::npos);
  p = {};
  p.k = 9;
  EXPECT_NE(message(p, g).find("graph's k = 8"), std::string::npos);
  EXPECT_TRUE(usage(p));
  p = {};
  p.components = static_cast<int>(n);
  EXPECT_NE(message(p, g).find("--components"), std::string::npos);
  EXPECT_TRUE(usage(p));
  p.components = static_cast<int>(n - 1);
  EXPECT_TRUE(usage(p));
  p = {};
  p.symmetrize = "xor";
  EXPECT_NE(message(p, g).find("--symmetrize"), std::string::npos);
  p = {};
  p.alpha = 1.5;  // echoed as the user wrote it, not 1.500000
  EXPECT_NE(message(p, g).find("--alpha 1.5: must be in [0, 1]"), std::string::npos) << message(p, g);
  p = {};
  p.t = -1;
  EXPECT_NE(message(p, g).find("--t -1: must be >= 0"), std::string::npos) << message(p, g);
  p = {};
  p.local_scaling = 9;
  EXPECT_NE(message(p, g).find("--local-scaling"), std::string::npos);
  // A corrupt graph.
  KnnGraph bad = g;
  bad.indices[57] = n + 3;
  EXPECT_NE(message({}, bad).find("out of range"), std::string::npos);
  bad = g;
  bad.distances.pop_back();
  EXPECT_NE(message({}, bad).find("distances"), std::string::npos);
  bad = g;
  bad.indices[1] = bad.indices[0];
  EXPECT_NE(message({}, bad).find("twice"), std::string::npos);
  bad = g;
  bad.distances[5] = -1.f;
  EXPECT_NE(message({}, bad).find("negative"), std::string::npos);
}

}  // namespace
