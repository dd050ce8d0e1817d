// The GPU diffusion-map eigensolver (gpu/eigen/): against the dense float64
// solver and known spectra (a circle's exact pairs, a sphere's triplet),
// against the CPU solvers (Spectra, and the same Chebyshev iteration on the
// CPU back end) on fresh random manifolds and on Fashion-MNIST, residuals
// recomputed on the host, the warm start of rediffuse, the dispatch and the
// error paths. Small sizes: compute-sanitizer runs this too.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>

#include "gpu_test_util.h"
#include "manifold/block_eigensolver.h"
#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/gpu/gpu_eigensolver.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace gpu_tests;

namespace {

Eigenpairs on_gpu(const DiffusionMatrix& a, int count, const EigenOptions& o = {}) {
  Progress progress;
  return gpu::gpu_top_eigenpairs(a, count, o, progress);
}

Eigenpairs spectra(const DiffusionMatrix& a, int count) {
  Progress progress;
  return top_eigenpairs(a, count, {}, progress);
}

/// Smallest |cos| between matching eigenvectors of two solves, over the
/// pairs whose eigenvalue is at least 1e-5 from its neighbours. Both solves
/// have |A v - lambda v| <= 1e-10 |lambda|, so each vector is within an
/// angle of 1e-10 / gap of the true one: for those pairs |cos| > 1 - 1e-9.
/// (Closer pairs are defined only as a subspace; the last pair's distance
/// to the next, unsolved eigenvalue is unknown.)
double worst_cos_separated(const Eigenpairs& a, const Eigenpairs& b, int64_t n) {
  double worst = 1;
  for (int c = 0; c + 1 < a.count; ++c) {
    const double gap_prev = c > 0 ? a.values[c - 1] - a.values[c] : 1;
    const double gap_next = a.values[c] - a.values[c + 1];
    if (std::min(gap_prev, gap_next) < 1e-5) continue;
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += a.vectors[i * a.count + c] * b.vectors[i * b.count + c];
    worst = std::min(worst, std::abs(dot));
  }
  return worst;
}

}  // namespace

TEST(GpuEigen, CircleExactPairsMatchTheDenseSolver) {
  REQUIRE_GPU();
  const DiffusionMatrix a = diffusion_matrix_of(circle_graph(400, 20));
  const Eigenpairs e = on_gpu(a, 7);
  const std::vector<double> ref = dense_top_eigenvalues(a, 7);
  for (int c = 0; c < 7; ++c) EXPECT_NEAR(e.values[c], ref[c], 1e-8 * std::abs(ref[c])) << c;
  for (int m = 1; m <= 5; m += 2) EXPECT_NEAR(e.values[m], e.values[m + 1], 1e-10);
  const auto [res, orth] = eigenpair_errors(a, e);
  EXPECT_LE(res, 1.01e-10);
  EXPECT_LT(orth, 1e-12);
  EXPECT_EQ(e.details["block_products"].get<int64_t>() * e.ncv, e.matvecs);
}

TEST(GpuEigen, SphereTripletMatchesSpectra) {
  REQUIRE_GPU();
  const int64_t n = 3000;
  const DiffusionMatrix a = diffusion_matrix_of(knn_graph(sphere_points(n), n, 3, 30));
  const Eigenpairs e = on_gpu(a, 10), ref = spectra(a, 10);
  for (int c = 0; c < 10; ++c) EXPECT_NEAR(e.values[c], ref.values[c], 1e-9) << c;
  EXPECT_NEAR((1 - e.values[3]) / (1 - e.values[1]), 1.0, 0.01);
  EXPECT_LE(eigenpair_errors(a, e).first, 1.01e-10);
}

TEST(GpuEigen, FreshRandomManifoldsMatchBothCpuSolvers) {
  // Fresh seeds each run: a noisy strip, and a 3-D blob (a bulk spectrum).
  REQUIRE_GPU();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> blob(4000 * 3);
  for (auto& v : blob) v = normal(rng);
  for (const KnnGraph& g : {noisy_strip_graph(seed), knn_graph(blob, 4000, 3, 15)}) {
    const DiffusionMatrix a = diffusion_matrix_of(g);
    const Eigenpairs e = on_gpu(a, 11), ref = spectra(a, 11);
    CsrBlockOperator op(a, e.ncv);
    Progress progress;
    const Eigenpairs cpu = chebyshev_eigenpairs(op, 11, {}, progress);
    for (int c = 0; c < 11; ++c) {
      EXPECT_NEAR(e.values[c], ref.values[c], 1e-9) << c;
      EXPECT_NEAR(e.values[c], cpu.values[c], 1e-9) << c;
    }
    const auto [res, orth] = eigenpair_errors(a, e);
    EXPECT_LE(res, 1.01e-10);
    EXPECT_LT(orth, 1e-12);
    EXPECT_GT(worst_cos_separated(e, ref, a.n), 1 - 1e-8);
  }
}

TEST(GpuEigen, NarrowKernelWithARaisedLowerBoundMatchesSpectra) {
  // A tenth of the median epsilon: large self-weights lift the Gershgorin
  // bound the filter damps from well above -1; the pairs must not change.
  REQUIRE_GPU();
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> cube(3000 * 3);
  for (auto& v : cube) v = u(rng);
  const KnnGraph g = knn_graph(cube, 3000, 3, 20);
  Progress progress;
  DiffusionParams p;
  p.k = 15;
  p.local_scaling = 0;
  p.epsilon = std::to_string(0.1 * diffusion_matrix(g, p, progress).epsilon);
  const DiffusionMatrix a = diffusion_matrix(g, p, progress);
  ASSERT_GT(spectrum_lower_bound(a), -0.9);
  const Eigenpairs e = on_gpu(a, 11), ref = spectra(a, 11);
  for (int c = 0; c < 11; ++c) EXPECT_NEAR(e.values[c], ref.values[c], 1e-9) << c;
  EXPECT_LE(eigenpair_errors(a, e).first, 1.01e-10);
  EXPECT_GT(worst_cos_separated(e, ref, a.n), 1 - 1e-8);
}

TEST(GpuEigen, EveryBlockWidthAndBothSpmmPathsAgree) {
  // Our SpMM kernel has 1-4 columns per lane (blocks up to 32, 64, 96, 128
  // columns); cuSPARSE's (Settings::spmm_cusparse) is the reference path.
  REQUIRE_GPU();
  const DiffusionMatrix a = diffusion_matrix_of(noisy_strip_graph(21));
  const Eigenpairs ref = spectra(a, 10);
  for (bool cusparse : {false, true}) {
    WithSettings spmm([cusparse](gpu::Settings& s) { s.spmm_cusparse = cusparse; });
    const char* alg = cusparse ? "cuSPARSE" : "own";
    for (int block : {12, 33, 70, 128}) {
      EigenOptions o;
      o.ncv = block;
      const Eigenpairs e = on_gpu(a, 10, o);
      EXPECT_EQ(e.ncv, block);
      EXPECT_EQ(e.details["spmm"].get<std::string>().find("cuSPARSE") == 0, cusparse) << alg;
      for (int c = 0; c < 10; ++c)
        EXPECT_NEAR(e.values[c], ref.values[c], 1e-9) << alg << " block " << block << " " << c;
      EXPECT_LE(eigenpair_errors(a, e).first, 1.01e-10) << alg << " block " << block;
    }
  }
}

TEST(GpuEigen, FashionMnistGraphMatchesSpectra) {
  REQUIRE_GPU();
  const Dataset ds = fashion(10000);
  if (ds.rows() == 0) GTEST_SKIP() << "Fashion-MNIST not found (set MANIFOLD_FASHION_MNIST_DIR)";
  const KnnGraph g = build("cpu", ds, params(15));
  const DiffusionMatrix a = diffusion_matrix_of(g);
  ASSERT_GT(a.n, 9000);
  const Eigenpairs e = on_gpu(a, 11), ref = spectra(a, 11);
  for (int c = 0; c < 11; ++c) EXPECT_NEAR(e.values[c], ref.values[c], 1e-9 * std::abs(ref.values[c])) << c;
  EXPECT_LE(eigenpair_errors(a, e).first, 1.01e-10);
  EXPECT_GT(worst_cos_separated(e, ref, a.n), 1 - 1e-8);
}

TEST(GpuEigen, DiffusionMapAndRediffuseOnTheGpu) {
  REQUIRE_GPU();
  gpu::register_gpu_eigensolver();
  const KnnGraph g = noisy_strip_graph(11);
  Progress progress;
  DiffusionParams p = fixed_bandwidth();
  p.components = 8;
  p.eigensolver = "gpu";
  const DiffusionResult r = diffusion_map(g, p, progress);
  EXPECT_EQ(r.solver["device"], "gpu");
  DiffusionParams q = p;
  q.epsilon = std::to_string(r.epsilon * 0.8);
  const DiffusionResult again = rediffuse(g, q, r, progress);
  EXPECT_EQ(again.solver["device"], "gpu");
  EXPECT_EQ(again.solver["started_from_columns"], 9);
  q.eigensolver = "cpu";
  const DiffusionResult ref = diffusion_map(g, q, progress);
  for (int c = 0; c <= 8; ++c) EXPECT_NEAR(again.eigenvalues[c], ref.eigenvalues[c], 1e-9) << c;
  const EmbeddingAgreement agree = compare_embeddings(ref, again, diffusion_matrix_of(g, q).degree);
  EXPECT_GT(agree.worst_cos, 1 - 1e-8);

  // The budget holds on the device too: one line, not retried on the CPU.
  p.local_scaling = kLocalScalingAuto;
  p.max_matvecs = 50;
  try {
    diffusion_map(g, p, progress);
    ADD_FAILURE() << "the device solve converged within 50 mat-vecs";
  } catch (const EigensolveBudgetExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("no convergence within the budget (--max-matvecs 50"), std::string::npos)
        << e.what();
  }
  p.eigensolver = "auto";
  EXPECT_THROW(diffusion_map(g, p, progress), EigensolveBudgetExceeded);
  register_device_eigensolver({});
}

TEST(GpuEigen, BadInputGivesOneClearLine) {
  REQUIRE_GPU();
  const DiffusionMatrix a = diffusion_matrix_of(circle_graph(100, 10));
  EXPECT_THROW(on_gpu(a, 100), UsageError);
  EigenOptions o;
  o.start_block.assign(7, 1.0);
  o.start_cols = 1;
  EXPECT_THROW(on_gpu(a, 3, o), Error);
  DiffusionMatrix broken = a;
  broken.val[5] = std::nan("");
  EXPECT_THROW(on_gpu(broken, 3), Error);
  std::atomic<bool> cancel{true};
  Progress cancelled(nullptr, &cancel);
  EXPECT_THROW(gpu::gpu_top_eigenpairs(diffusion_matrix_of(noisy_strip_graph(2)), 10, {}, cancelled), Cancelled);
}
