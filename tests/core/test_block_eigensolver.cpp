// Chebyshev-filtered subspace iteration (block_eigensolver.h) on the CPU back
// end: eigenpairs against a dense float64 solver and known spectra (a
// circle's exact pairs, a sphere's triplet), warm starts, error paths, and
// the device-eigensolver dispatch of diffusion_map / rediffuse.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <atomic>
#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <random>

#include "manifold/block_eigensolver.h"
#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;

namespace {

Eigenpairs solve(const DiffusionMatrix& a, int count, ChebyshevStats* st = nullptr, const double* start = nullptr,
                 int start_cols = 0, int block = 0) {
  CsrBlockOperator op(a, chebyshev_block(count, a.n, block));
  ChebyshevOptions o;
  o.tolerance = 1e-10;
  o.start = start;
  o.start_cols = start_cols;
  o.trace = std::getenv("MANIFOLD_CHEB_TRACE") != nullptr;
  Progress progress;
  return chebyshev_eigenpairs(op, count, o, progress, st);
}

}  // namespace

TEST(Chebyshev, CircleExactPairsMatchTheDenseSolver) {
  // The circulant's eigenvalues come in exact pairs; a block holds both
  // copies without any lock check.
  const DiffusionMatrix a = diffusion_matrix_of(circle_graph(400, 20));
  const Eigenpairs e = solve(a, 7);
  const std::vector<double> ref = dense_top_eigenvalues(a, 7);
  for (int c = 0; c < 7; ++c) EXPECT_NEAR(e.values[c], ref[c], 1e-8 * std::abs(ref[c])) << c;
  for (int m = 1; m <= 5; m += 2) EXPECT_NEAR(e.values[m], e.values[m + 1], 1e-10);
  const auto [res, orth] = eigenpair_errors(a, e);
  EXPECT_LE(res, 1e-10);
  EXPECT_LE(e.max_residual, 1e-10);
  EXPECT_LT(orth, 1e-12);
}

TEST(Chebyshev, SphereTripletAndNoisyStripMatchSpectra) {
  // The sphere: the first non-trivial eigenvalue threefold. Against the
  // CPU Lanczos solver with its lock check, to the tolerance.
  const int64_t n = 3000;
  const DiffusionMatrix sphere = diffusion_matrix_of(knn_graph(sphere_points(n), n, 3, 30));
  const DiffusionMatrix strip = diffusion_matrix_of(noisy_strip_graph(3));
  for (const DiffusionMatrix* a : {&sphere, &strip}) {
    ChebyshevStats st;
    const Eigenpairs e = solve(*a, 10, &st);
    EigenOptions eo;
    Progress progress;
    const Eigenpairs ref = top_eigenpairs(*a, 10, eo, progress);
    for (int c = 0; c < 10; ++c) EXPECT_NEAR(e.values[c], ref.values[c], 1e-9) << c;
    const auto [res, orth] = eigenpair_errors(*a, e);
    EXPECT_LE(res, 1.01e-10);
    EXPECT_LT(orth, 1e-12);
    EXPECT_GT(st.outer_iterations, 1);
    EXPECT_EQ(st.products, e.matvecs / e.ncv);
  }
  const Eigenpairs e = solve(sphere, 4);
  EXPECT_NEAR((1 - e.values[3]) / (1 - e.values[1]), 1.0, 0.01);
}

TEST(Chebyshev, WarmStartFromNearbyVectorsNeedsFewerProducts) {
  // The eigenvectors of one epsilon start the solve for another: the same
  // pairs, reached in fewer block products.
  const KnnGraph g = noisy_strip_graph(5);
  DiffusionParams p = fixed_bandwidth();
  const DiffusionMatrix a = diffusion_matrix_of(g, p);
  p.epsilon = std::to_string(a.epsilon * 1.3);
  const DiffusionMatrix b = diffusion_matrix_of(g, p);
  ChebyshevStats cold, warm;
  const Eigenpairs ea = solve(a, 10);
  const Eigenpairs eb = solve(b, 10, &cold);
  const Eigenpairs ew = solve(b, 10, &warm, ea.vectors.data(), 10);
  for (int c = 0; c < 10; ++c) EXPECT_NEAR(ew.values[c], eb.values[c], 1e-9) << c;
  EXPECT_LE(eigenpair_errors(b, ew).first, 1.01e-10);
  // Only the wanted columns start warm (the guards are random), so the
  // first filter's cut is low: fewer products, not a fraction.
  EXPECT_LT(warm.products, cold.products) << "warm " << warm.products << ", cold " << cold.products;
}

TEST(Chebyshev, BlockSizeAndBadInput) {
  EXPECT_EQ(chebyshev_block(11, 100000), 22);
  EXPECT_EQ(chebyshev_block(30, 100000), 60);
  EXPECT_EQ(chebyshev_block(11, 15), 15);
  EXPECT_EQ(chebyshev_block(11, 100000, 40), 40);
  EXPECT_EQ(chebyshev_block(11, 100000, 5), 11);
  const DiffusionMatrix a = diffusion_matrix_of(circle_graph(100, 10));
  {
    CsrBlockOperator op(a, 5);
    Progress progress;
    EXPECT_THROW(chebyshev_eigenpairs(op, 6, {}, progress), UsageError);
  }
  {
    // A block as large as the matrix: Rayleigh-Ritz alone is exact.
    ChebyshevStats st;
    const Eigenpairs e = solve(a, 3, &st, nullptr, 0, 100);
    EXPECT_EQ(st.outer_iterations, 0);
    const std::vector<double> ref = dense_top_eigenvalues(a, 3);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(e.values[c], ref[c], 1e-12);
  }
  DiffusionMatrix broken = a;
  broken.val[7] = std::nan("");
  EXPECT_THROW(solve(broken, 3), Error);
  std::atomic<bool> cancel{true};
  Progress cancelled(nullptr, &cancel);
  // The operator keeps a reference to its matrix: the matrix must outlive it.
  const DiffusionMatrix strip = diffusion_matrix_of(noisy_strip_graph(1));
  CsrBlockOperator op(strip, 20);
  EXPECT_THROW(chebyshev_eigenpairs(op, 10, {}, cancelled), Cancelled);
}

namespace {

/// A stand-in for the GPU: the Chebyshev solver on the CPU back end, or a
/// device that fails.
struct FakeDevice {
  explicit FakeDevice(bool fail, bool warm = false) {
    DeviceEigensolver d;
    d.name = "fake";
    d.method = "fake device (Chebyshev on the CPU)";
    d.available = [] { return true; };
    d.warm = [warm] { return warm; };
    d.solve = [fail](const DiffusionMatrix& a, int count, const EigenOptions& o, Progress& progress) {
      if (fail) throw Error("fake device: out of memory");
      CsrBlockOperator op(a, chebyshev_block(count, a.n, o.ncv));
      ChebyshevOptions co;
      co.tolerance = o.tolerance;
      co.start = o.start_block.empty() ? nullptr : o.start_block.data();
      co.start_cols = o.start_cols;
      Eigenpairs e = chebyshev_eigenpairs(op, count, co, progress);
      e.details = {{"started_from_columns", o.start_cols}};
      return e;
    };
    register_device_eigensolver(std::move(d));
  }
  ~FakeDevice() { register_device_eigensolver({}); }
};

/// n random points in a 4 x 1 x 0.05 slab (n x 3): one component, for
/// graphs as large as the device thresholds.
std::vector<double> slab_points(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> pts;
  for (int64_t i = 0; i < n; ++i) pts.insert(pts.end(), {4 * u(rng), u(rng), 0.05 * u(rng)});
  return pts;
}

}  // namespace

TEST(Chebyshev, DiffusionMapDispatchesToTheDeviceEigensolver) {
  const KnnGraph g = noisy_strip_graph(7);
  Progress progress;
  DiffusionParams p = fixed_bandwidth();
  p.components = 6;
  p.eigensolver = "gpu";
  EXPECT_THROW(validate(p, g), UsageError);  // nothing registered
  p.eigensolver = "cpu";
  const DiffusionResult cpu = diffusion_map(g, p, progress);
  {
    FakeDevice device(false);
    p.eigensolver = "gpu";
    validate(p, g);
    const DiffusionResult r = diffusion_map(g, p, progress);
    EXPECT_EQ(r.solver["device"], "fake");
    EXPECT_EQ(r.solver["started_from_columns"], 0);
    for (int c = 0; c <= 6; ++c) EXPECT_NEAR(r.eigenvalues[c], cpu.eigenvalues[c], 1e-9);
    // The same vectors as the CPU's, with its signs (largest entry positive).
    const DiffusionMatrix a = diffusion_matrix_of(g, p);
    const EmbeddingAgreement same = compare_embeddings(cpu, r, a.degree);
    EXPECT_GT(same.worst_cos, 1 - 1e-8);
    for (int c = 1; c <= 6; ++c) {
      double dot = 0;
      for (int64_t i = 0; i < r.n; ++i) dot += cpu.psi[i * 7 + c] * r.psi[i * 7 + c];
      EXPECT_GT(dot, 0) << "sign of coordinate " << c;
    }
    // auto keeps small components on the CPU.
    p.eigensolver = "auto";
    EXPECT_EQ(diffusion_map(g, p, progress).solver.value("device", ""), "");
    // rediffuse on the device starts from the previous vectors.
    p.eigensolver = "gpu";
    DiffusionParams q = p;
    q.k = 12;
    const DiffusionResult again = rediffuse(g, q, r, progress);
    EXPECT_EQ(again.solver["device"], "fake");
    EXPECT_EQ(again.solver["started_from_columns"], 7);
    EXPECT_EQ(again.solver["warm_start"], true);
    q.eigensolver = "cpu";
    const DiffusionResult ref = diffusion_map(g, q, progress);
    for (int c = 0; c <= 6; ++c) EXPECT_NEAR(again.eigenvalues[c], ref.eigenvalues[c], 1e-9);
  }
  {
    // A failing device: "gpu" says why, "auto" falls back to the CPU and records it.
    FakeDevice device(true);
    p.eigensolver = "gpu";
    EXPECT_THROW(diffusion_map(g, p, progress), Error);
    // auto on a component large enough for the device: the CPU takes over
    // and the result says why.
    const int64_t n = kDeviceEigensolveMinRows;
    const KnnGraph big = knn_graph(slab_points(n, 3), n, 3, 10);
    p.eigensolver = "auto";
    p.components = 3;
    const DiffusionResult r = diffusion_map(big, p, progress);
    EXPECT_EQ(r.n, n);
    EXPECT_NE(r.solver["method"].get<std::string>().find("Spectra"), std::string::npos);
    EXPECT_NE(r.solver.value("device_fallback", "").find("out of memory"), std::string::npos) << r.solver.dump();
  }
  p.eigensolver = "bogus";
  EXPECT_THROW(validate(p, g), UsageError);
}

TEST(Chebyshev, AutoTakesADeviceInUseFromFewerPoints) {
  // kDeviceEigensolveWarmMinRows points: the CPU while the device is idle
  // (its context would have to be made), the device once it is in use.
  static_assert(kDeviceEigensolveWarmMinRows < kDeviceEigensolveMinRows);
  const int64_t n = kDeviceEigensolveWarmMinRows;
  std::vector<double> pts = slab_points(n, 5);
  const KnnGraph g = knn_graph(pts, n, 3, 10);
  DiffusionParams p = fixed_bandwidth();
  p.components = 3;
  Progress progress;
  {
    FakeDevice idle(false, false);
    EXPECT_EQ(diffusion_map(g, p, progress).solver.value("device", ""), "");
  }
  FakeDevice in_use(false, true);
  const DiffusionResult r = diffusion_map(g, p, progress);
  EXPECT_EQ(r.solver.value("device", ""), "fake");
  // One point fewer stays on the CPU either way.
  pts.resize(static_cast<size_t>((n - 1) * 3));
  const KnnGraph smaller = knn_graph(pts, n - 1, 3, 10);
  EXPECT_EQ(diffusion_map(smaller, p, progress).solver.value("device", ""), "");
}
