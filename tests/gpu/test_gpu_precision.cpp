// --precision exact and --precision fast-exact (issue 9). Both rank by the
// exact key (float64 distance rounded to float, then index) after certifying
// each row's candidates with a rigorous error bound, so fast-exact (TF32
// tensor cores) must equal exact entry for entry, and exact must equal the
// CPU-computed exact ranking, on fresh random data, on near-duplicates (the
// hard case: neighbours closer than the GEMM's error) and on Fashion-MNIST,
// for every metric.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "manifold/knn.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace gpu_tests;

namespace {

KnnParams with(int k, Metric m, const char* precision, bool keep_self = false) {
  KnnParams p = params(k, m, keep_self);
  p.precision = parse_precision(precision);
  return p;
}

// Runs both precisions, checks them against each other and (when asked)
// against the CPU reference, and reports the re-evaluation counts.
void expect_fast_equals_exact(const Dataset& ds, int k, Metric m, const std::string& what, bool reference,
                              bool keep_self = false) {
  KnnGraph exact = build("gpu", ds, with(k, m, "exact", keep_self));
  KnnGraph fast = build("gpu", ds, with(k, m, "fast-exact", keep_self));
  EXPECT_EQ(exact.extra["precision"], "exact");
  EXPECT_EQ(fast.extra["precision"], "fast-exact");
  EXPECT_NE(fast.extra["tile_kernel"].get<std::string>().find("TF32"), std::string::npos);
  EXPECT_EQ(first_difference(exact, fast), "") << what << ", " << to_string(m) << ", k=" << k;
  if (reference) {
    EXPECT_EQ(first_difference(exact, exact_reference(ds, k, m, keep_self)), "")
        << what << ", " << to_string(m) << ", k=" << k << ": exact vs the CPU's exact ranking";
  }
  // The model's bound was never exceeded by a real error that was measured.
  EXPECT_LT(exact.extra["error_bound_max_use"].get<double>(), 1.0) << what;
  EXPECT_LT(fast.extra["error_bound_max_use"].get<double>(), 1.0) << what;
  std::cout << "[ info ] " << what << ", " << to_string(m) << ", k=" << k << ": re-evaluated per row exact "
            << exact.extra["reevaluated_per_row"] << " (max " << exact.extra["reevaluated_max"] << ", fallback rows "
            << exact.extra["fallback_rows"] << "), fast-exact " << fast.extra["reevaluated_per_row"] << " (max "
            << fast.extra["reevaluated_max"] << ", fallback rows " << fast.extra["fallback_rows"] << "); bound use "
            << exact.extra["error_bound_max_use"] << " / " << fast.extra["error_bound_max_use"] << "\n";
}

class Precision : public ::testing::TestWithParam<Metric> {};

TEST_P(Precision, FreshRandomData) {
  REQUIRE_GPU();
  const Metric m = GetParam();
  // Fresh data on every run; the seed is printed so a failure can be replayed.
  const uint64_t seed = std::random_device{}();
  std::cout << "[ info ] random seed " << seed << "\n";
  expect_fast_equals_exact(random_dataset(3000, 64, seed), 20, m, "random 3000x64", true);
  // Several row blocks and tiles; no reference (its cost), fast vs exact only.
  expect_fast_equals_exact(random_dataset(20000, 200, seed + 1), 32, m, "random 20000x200", false);
}

TEST_P(Precision, NearDuplicates) {
  REQUIRE_GPU();
  const Metric m = GetParam();
  // Clusters of 3 to 150 rows, perturbed by a few ulps (1e-6) or a few
  // hundred (1e-5), and exact copies: the bound cannot separate a cluster,
  // so small ones are re-evaluated whole and large ones fall back.
  for (float eps : {1e-6f, 1e-5f}) {
    Dataset ds = near_duplicates(3000, 48, 77 + static_cast<int>(m), 40, 60, eps);
    expect_fast_equals_exact(ds, 12, m, "near-duplicates eps " + std::to_string(eps), true);
  }
  Dataset big = near_duplicates(2500, 32, 5, 4, 300, 1e-6f);
  expect_fast_equals_exact(big, 40, m, "clusters of 300", true, true);
}

TEST_P(Precision, FashionMnist) {
  REQUIRE_GPU();
  const Metric m = GetParam();
  Dataset ds = fashion(2500);
  if (ds.empty()) GTEST_SKIP() << "Fashion-MNIST not found (set MANIFOLD_FASHION_MNIST_DIR)";
  expect_fast_equals_exact(ds, 32, m, "Fashion-MNIST 2500", true);
  Dataset more = fashion(10000);
  expect_fast_equals_exact(more, 10, m, "Fashion-MNIST 10000", false);
}

INSTANTIATE_TEST_SUITE_P(AllMetrics, Precision, ::testing::Values(Metric::Euclidean, Metric::Cosine, Metric::Pearson),
                         [](const ::testing::TestParamInfo<Metric>& i) { return to_string(i.param); });

TEST(PrecisionEdges, LargeKAndCompleteLists) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(3000, 24, 4);
  // Lists of k + k/4 = 1250 (block merge path); k = N-1 (complete lists).
  KnnGraph e = build("gpu", ds, with(1000, Metric::Cosine, "exact"));
  KnnGraph f = build("gpu", ds, with(1000, Metric::Cosine, "fast-exact"));
  EXPECT_EQ(f.strategy, "merge");
  EXPECT_EQ(first_difference(e, f), "");
  Dataset small = random_dataset(600, 10, 8);
  KnnGraph a = build("gpu", small, with(599, Metric::Pearson, "fast-exact"));
  EXPECT_EQ(a.extra["fallback_rows"].get<int64_t>(), 0);
  EXPECT_EQ(first_difference(a, exact_reference(small, 599, Metric::Pearson, false)), "");
}

TEST(PrecisionEdges, FallbackRowsAreExact) {
  REQUIRE_GPU();
  // No room beyond k: every row falls back to the exact scan.
  Dataset ds = random_dataset(2000, 33, 12);
  KnnGraph f = [&] {
    WithSettings no_slack([](gpu::Settings& s) { s.slack = 0; });
    return build("gpu", ds, with(7, Metric::Euclidean, "fast-exact"));
  }();
  EXPECT_EQ(f.extra["uncertified_rows"].get<int64_t>(), ds.rows());
  EXPECT_EQ(f.extra["rescanned_rows"].get<int64_t>(), ds.rows());
  EXPECT_EQ(first_difference(f, exact_reference(ds, 7, Metric::Euclidean, false)), "");
  KnnGraph e = build("gpu", ds, with(7, Metric::Euclidean, "exact"));
  EXPECT_EQ(first_difference(e, f), "");
}

// The certificate bounds the points a list lacks with the largest stored
// norm: the worker beside the loop must read it once the rows' norms are
// on the device, not as it starts (the buffer then held whatever the last
// build, or nothing, left there). Two builds in one process, the first of
// rows a thousand times larger, each against its own rows' largest norm.
TEST(PrecisionEdges, LargestNormIsTheRowsOwnBuildAfterBuild) {
  REQUIRE_GPU();
  const int64_t n = 20000, d = 64;
  for (float scale : {1000.f, 1.f}) {
    Dataset ds = random_dataset(n, d, 57);
    std::vector<float> v(ds.data(), ds.data() + n * d);
    for (float& x : v) x *= scale;
    const Dataset scaled(n, d, std::move(v));
    double largest = 0;
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t c = 0; c < d; ++c) s += static_cast<double>(scaled.data()[i * d + c]) * scaled.data()[i * d + c];
      largest = std::max(largest, static_cast<double>(static_cast<float>(s)));
    }
    KnnParams p = with(10, Metric::Euclidean, "exact");
    p.devices = {0};  // the worker beside the loop runs on one device's builds
    const KnnGraph g = build("gpu", scaled, p);
    ASSERT_EQ(g.extra["translated_columns"].get<int64_t>(), 0) << scale;
    EXPECT_TRUE(g.extra.contains("early_ranges")) << scale;
    EXPECT_NEAR(g.extra["error_bound_largest_norm"].get<double>(), largest, 1e-6 * largest) << scale;
  }
}

TEST(PrecisionEdges, RescannedRowsAmongCertifiedOnesComeHome) {
  REQUIRE_GPU();
  // Clusters of near-copies scattered over the rows: with two entries of
  // slack their rows cannot be certified and are rescanned on the device
  // after the rest came home beside the loop; the rescanned rows come home
  // in spans (with certified rows between them, and alone where far apart).
  Dataset ds = near_duplicates(20000, 16, 31, 6, 8, 1e-6f);
  KnnGraph g = [&] {
    WithSettings short_slack([](gpu::Settings& s) { s.slack = 2; });
    KnnParams p = with(5, Metric::Euclidean, "exact");
    p.devices = {0};  // beside the loop: one device's builds
    return build("gpu", ds, p);
  }();
  EXPECT_TRUE(g.extra.contains("early_ranges"));
  const int64_t rescanned = g.extra["rescanned_rows"].get<int64_t>();
  EXPECT_GE(rescanned, 6 * 8);
  EXPECT_LT(rescanned, ds.rows() / 10);
  EXPECT_EQ(first_difference(g, exact_reference(ds, 5, Metric::Euclidean, false)), "");
}

TEST(PrecisionEdges, RotationSeriesCertifiesAtLargeK) {
  REQUIRE_GPU();
  // Photon-counted patterns about one axis, k = 100, d = 4096: the nearest
  // distances crowd above the noise floor. The exact precision's slack
  // grows with d (exact_slack), so every row is certified from its list,
  // as on the CPU, and the graph is the CPU's byte for byte.
  const Dataset ds = ubiquitin_rotation_series(4000, 64);
  if (ds.rows() == 0) GTEST_SKIP() << "freesasa (1ubq.pdb) is not installed";
  for (Metric m : {Metric::Euclidean, Metric::Cosine}) {
    SCOPED_TRACE(to_string(m));
    const KnnGraph g = build("gpu", ds, with(100, m, "exact"));
    // Under --gemm=fused the strips are split TF32 even at d = 4096, where
    // the default never runs them: its window is 6x float32's, which the
    // slack's rule does not cover, so a few rows are rescanned.
    if (g.extra.value("tile_kernel", std::string()).find("split") != std::string::npos)
      EXPECT_LT(g.extra["uncertified_rows"].get<int64_t>(), ds.rows() / 50);
    else
      EXPECT_EQ(g.extra["uncertified_rows"].get<int64_t>(), 0);
    EXPECT_EQ(g.extra["list_capacity"].get<int>(), 100 + 100 / 8 * 8);
    EXPECT_EQ(first_difference(g, build("cpu", ds, with(100, m, "exact"))), "");
  }
}

TEST(PrecisionEdges, HugeClusterGoesToTheExactScan) {
  REQUIRE_GPU();
  // 9000 near-copies of one row: more survivors than the rescan holds
  // (8192), so those rows are ranked by the exact scan of all points.
  Dataset ds = near_duplicates(10000, 8, 17, 1, 9000, 1e-6f);
  KnnGraph e = build("gpu", ds, with(5, Metric::Euclidean, "exact"));
  EXPECT_GT(e.extra["fallback_rows"].get<int64_t>(), 8000);
  EXPECT_EQ(first_difference(e, exact_reference(ds, 5, Metric::Euclidean, false)), "");
  KnnGraph f = build("gpu", ds, with(5, Metric::Euclidean, "fast-exact"));
  EXPECT_EQ(first_difference(e, f), "");
}

// Tiles narrower than the plan's width: every strip of 128 x 1024 tiles on
// 5000 rows ends in a tile of fewer columns than W (the last one 8), as the
// wide cuBLAS tiles of the plan do at full size (2048 x 8192 to 32768). Every
// pair once, the same graph as the CPU's for both precisions, and as many
// tiles as the plan counted.
TEST(PrecisionEdges, NarrowLastTilesOfEachStripEqualTheReference) {
  REQUIRE_GPU();
  Dataset ds = near_duplicates(5000, 40, 31, 25, 40, 1e-6f);
  for (const char* precision : {"exact", "fast-exact"}) {
    WithSettings tiles([](gpu::Settings& s) {
      s.tile = "128x1024";
      s.gemm = gpu::GemmPath::Cublas;
    });
    KnnParams p = with(10, Metric::Euclidean, precision);
    p.devices = {0};
    KnnGraph g = build("gpu", ds, p);
    EXPECT_EQ(g.extra["tile_rows"].get<int>(), 128) << precision;
    EXPECT_EQ(g.extra["tile_cols"].get<int>(), 1024) << precision;
    EXPECT_TRUE(g.extra["resident"].get<bool>()) << precision;
    EXPECT_EQ(g.extra["per_device"][0]["tiles"].get<int64_t>(), g.extra["tiles"].get<int64_t>()) << precision;
    EXPECT_EQ(first_difference(g, exact_reference(ds, 10, Metric::Euclidean, false)), "") << precision;
  }
}

TEST(PrecisionEdges, StreamedFastExactEqualsInMemoryExact) {
  REQUIRE_GPU();
  // Streamed rows are certified on the host: same rules, same graph.
  const int64_t n = 7000, d = 100;
  Dataset ds = near_duplicates(n, d, 21, 30, 150, 1e-6f);  // clusters larger than the lists: fallback rows
  KnnGraph e = build("gpu", ds, with(16, Metric::Cosine, "exact"));
  KnnParams p = with(16, Metric::Cosine, "fast-exact");
  p.devices = {0};  // one device's budget (several add room to merge lists)
  p.gpu_memory = static_cast<uint64_t>(n) * (16 + 96) * 8 + n * 16 + n * (d + 1) * 4 / 4 + (2 << 20);
  KnnGraph f = build("gpu", ds, p);
  EXPECT_FALSE(f.extra["resident"].get<bool>());
  EXPECT_GT(f.extra["fallback_rows"].get<int64_t>(), 0);
  EXPECT_EQ(first_difference(e, f), "");
}

// Rows that share a large common part (diffraction-like: a bright pattern
// times a fluence near 1, masked zeros, small differences between rows): about
// the origin their norms dwarf the gaps between neighbours, so no row
// certified from its list and every one was rescanned. The engine now moves
// them by core's exact translation: with float32 dot products most rows
// certify from their lists, and the graph is the CPU's exact ranking byte
// for byte, in both precisions, with float32 or split-TF32 dot products,
// and whether the rows are translated or not.
TEST(PrecisionEdges, CommonPatternRowsCertifyOnceTranslated) {
  REQUIRE_GPU();
  const int64_t n = 3000, d = 256;
  const Dataset ds = common_pattern_rows(n, d, 17);
  const KnnGraph reference = exact_reference(ds, 10, Metric::Euclidean, false);
  const bool cublas = gpu::settings().gemm == gpu::GemmPath::Cublas;
  for (const std::string precision : {"exact float32", "exact", "fast-exact"}) {
    // "exact float32": exact with FFMA strips (cuBLAS SGEMM under --gemm=cublas).
    WithSettings dots([&](gpu::Settings& s) {
      if (precision == "exact float32" && !cublas) s.gemm = gpu::GemmPath::FusedFfma;
    });
    const char* p = precision == "fast-exact" ? "fast-exact" : "exact";
    const KnnGraph moved = build("gpu", ds, with(10, Metric::Euclidean, p));
    EXPECT_GT(moved.extra["translated_columns"].get<int64_t>(), d / 2) << precision;
    EXPECT_GT(moved.extra["translation_norm_ratio"].get<double>(), 100.0) << precision;
    EXPECT_EQ(first_difference(moved, reference), "") << precision << ", translated";
    WithSettings in_place([](gpu::Settings& s) { s.translate = false; });
    const KnnGraph kept = build("gpu", ds, with(10, Metric::Euclidean, p));
    EXPECT_EQ(kept.extra["translated_columns"].get<int64_t>(), 0) << precision;
    EXPECT_EQ(first_difference(kept, reference), "") << precision << ", in place";
    // In place nearly every row is uncertified; translated, float32's bound
    // certifies nearly all (split TF32's, 6 times wider at this d, about
    // half, and TF32's, 60 times wider, fewer: their graphs are exact all
    // the same, the rest rescanned).
    const int64_t before = kept.extra["uncertified_rows"].get<int64_t>();
    const int64_t after = moved.extra["uncertified_rows"].get<int64_t>();
    std::cout << "[ info ] " << precision << ": uncertified rows " << before << " in place, " << after
              << " translated\n";
    EXPECT_GT(before, n * 9 / 10) << precision << ": the case no longer needs the translation";
    if (precision == "exact float32") {
      EXPECT_NE(moved.extra["tile_kernel"].get<std::string>().find(cublas ? "SGEMM" : "FFMA"), std::string::npos);
      EXPECT_LT(after, n / 100) << precision;
    }
    EXPECT_LE(after, before) << precision;
  }
}

// A bright spot common to all rows over dim noise (bright_spot_rows): the
// dim columns keep any offset from moving exactly, so the engine moves the
// rows with rounding (euclidean and cosine; Pearson's centred rows move
// exactly) and takes the exact keys from the rows as they were, kept on
// the device beside the moved ones. In every metric and precision the graph
// is the CPU's exact ranking byte for byte, and the move certifies rows the
// bound could not certify in place.
TEST(PrecisionEdges, BrightSpotRowsCertifyInEveryMetric) {
  REQUIRE_GPU();
  const int64_t n = 3000, d = 128;
  const int k = 10;
  const Dataset ds = bright_spot_rows(n, d, 19);
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
    const KnnGraph reference = exact_reference(ds, k, m, false);
    for (const char* precision : {"exact", "fast-exact"}) {
      const std::string what = to_string(m) + ", " + precision;
      const KnnGraph moved = build("gpu", ds, with(k, m, precision));
      EXPECT_EQ(moved.extra["translation_exact"].get<bool>(), m == Metric::Pearson) << what;
      EXPECT_EQ(first_difference(moved, reference), "") << what << ", moved";
      EXPECT_LT(moved.extra["error_bound_max_use"].get<double>(), 1.0) << what;
      WithSettings in_place([](gpu::Settings& s) { s.translate = false; });
      const KnnGraph kept = build("gpu", ds, with(k, m, precision));
      EXPECT_EQ(first_difference(kept, reference), "") << what << ", in place";
      const int64_t before = kept.extra["uncertified_rows"].get<int64_t>();
      const int64_t after = moved.extra["uncertified_rows"].get<int64_t>();
      std::cout << "[ info ] " << what << ": uncertified rows " << before << " in place, " << after << " moved\n";
      EXPECT_LE(after, before) << what;
      if (std::string(precision) == "exact") {
        EXPECT_LT(after, n / 100) << what;
      }
    }
  }
}

// Streamed rows moved with rounding: the device keeps no unmoved copy (the
// host keys every streamed row from its own); the graph is still the CPU's
// exact ranking. The budget is GpuEngine.StreamsRowsWhenTheyDoNotFit's.
TEST(PrecisionEdges, StreamedRowsMovedWithRoundingAreExact) {
  REQUIRE_GPU();
  const int64_t n = 6000, d = 96;
  const int k = 32;
  const Dataset ds = bright_spot_rows(n, d, 23);
  KnnParams p = with(k, Metric::Cosine, "exact");
  p.gpu_memory = static_cast<uint64_t>(n) * (k + 16) * 8 + n * 16 + n * d * 4 * 2 / 5 + (4 << 20);
  const KnnGraph streamed = build("gpu", ds, p);
  EXPECT_FALSE(streamed.extra["resident"].get<bool>());
  EXPECT_FALSE(streamed.extra["translation_exact"].get<bool>());
  EXPECT_EQ(first_difference(streamed, exact_reference(ds, k, Metric::Cosine, false)), "");
  EXPECT_LT(streamed.extra["uncertified_rows"].get<int64_t>(), n / 100);
}

// One row far from all others must not widen every other row's bound (the
// certificate's missing_norm_cap, on the device as on the host).
TEST(PrecisionEdges, OneFarRowLeavesTheOthersCertified) {
  REQUIRE_GPU();
  const int64_t n = 2000, d = 64;
  const int k = 10;
  const Dataset ds = one_far_row(n, d, 43, 700);
  const KnnGraph reference = exact_reference(ds, k, Metric::Euclidean, false);
  for (const char* precision : {"exact", "fast-exact"}) {
    const KnnGraph graph = build("gpu", ds, with(k, Metric::Euclidean, precision));
    EXPECT_EQ(first_difference(graph, reference), "") << precision;
    EXPECT_LE(graph.extra["uncertified_rows"].get<int64_t>(), 1) << precision;
  }
}

}  // namespace
