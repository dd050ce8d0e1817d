// Exactness of the CPU backend against a float64 brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <utility>
#include <random>

#include "manifold/error.h"
#include "manifold/exact/error_bound.h"
#include "manifold/knn.h"
#include "manifold/topk.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;

namespace {

KnnGraph build_cpu(const Dataset& ds, int k, Metric m, bool keep_self = false, int threads = 0) {
  register_cpu_backend();
  auto b = make_backend("cpu");
  KnnParams p;
  p.k = k;
  p.metric = m;
  p.keep_self = keep_self;
  p.threads = threads;
  Progress progress;
  return b->build(ds, p, progress);
}

struct Case {
  Metric metric;
  int k;
};

class CpuExactness : public ::testing::TestWithParam<Case> {};

TEST_P(CpuExactness, RandomDataMatchesFloat64BruteForce) {
  const auto [metric, k] = GetParam();
  // 1100 rows spans several 512-row tiles, including a partial one.
  const int64_t n = 1100;
  Dataset ds = random_dataset(n, 37, 1234 + k);
  const int kk = k < 0 ? static_cast<int>(n - 1) : k;
  KnnGraph g = build_cpu(ds, kk, metric);
  Reference ref = brute_force(ds, kk, metric, false);
  int64_t exact = 0;
  EXPECT_EQ(check_graph(g, ds, ref, &exact), "");
  // Gaussian data have no near-ties among the closest neighbours beyond a
  // handful of rows; with k = N-1 every row holds all points and near-ties
  // far out may swap order, so only the check above applies there.
  if (k > 0) {
    EXPECT_GE(exact, n - 3) << "rows equal to the float64 reference";
  }
}

INSTANTIATE_TEST_SUITE_P(AllMetrics, CpuExactness,
                         ::testing::Values(Case{Metric::Euclidean, 1}, Case{Metric::Euclidean, 10},
                                           Case{Metric::Euclidean, 100}, Case{Metric::Euclidean, -1},
                                           Case{Metric::Cosine, 1}, Case{Metric::Cosine, 10}, Case{Metric::Cosine, 100},
                                           Case{Metric::Cosine, -1}, Case{Metric::Pearson, 1},
                                           Case{Metric::Pearson, 10}, Case{Metric::Pearson, 100},
                                           Case{Metric::Pearson, -1}));

TEST(CpuKnn, FashionMnistMatchesFloat64BruteForce) {
  // Under the sanitizers 700 images: still two 512-row tiles, one partial.
  Dataset ds = fashion_mnist(scaled(2000, 700));
  if (ds.empty()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
    const Reference full = brute_force(ds, 100, m, false);
    for (int k : {1, 10, 100}) {
      KnnGraph g = build_cpu(ds, k, m);
      Reference ref = slice(full, k);
      int64_t exact = 0;
      EXPECT_EQ(check_graph(g, ds, ref, &exact), "") << to_string(m) << " k=" << k;
      // Real images have exact ties (identical distances); the tie rule keeps
      // those equal, float32 rounding may swap a few near-ties.
      EXPECT_GE(exact, ds.rows() * 99 / 100) << to_string(m) << " k=" << k;
    }
  }
}

TEST(CpuKnn, DuplicatesGiveDeterministicTieBreaking) {
  // Exact duplicates: many neighbours at distance 0; the smaller index must come first.
  Dataset ds = random_dataset(600, 8, 7, 200);
  KnnGraph a = build_cpu(ds, 15, Metric::Euclidean, false, 1);
  KnnGraph b = build_cpu(ds, 15, Metric::Euclidean, false, 2);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.distances, b.distances);
  Reference ref = brute_force(ds, 15, Metric::Euclidean, false);
  EXPECT_EQ(check_graph(a, ds, ref), "");
  for (int64_t i = 0; i < a.n; ++i)
    for (int j = 1; j < a.k; ++j)
      if (a.distances[i * a.k + j] == a.distances[i * a.k + j - 1]) {
        EXPECT_LT(a.indices[i * a.k + j - 1], a.indices[i * a.k + j]) << "row " << i;
      }
}

TEST(CpuKnn, KeepSelfPutsThePointFirst) {
  Dataset ds = random_dataset(300, 5, 3);
  KnnGraph g = build_cpu(ds, 4, Metric::Euclidean, true);
  for (int64_t i = 0; i < g.n; ++i) {
    EXPECT_EQ(g.indices[i * 4], i);
    EXPECT_EQ(g.distances[i * 4], 0.f);
  }
  Reference ref = brute_force(ds, 4, Metric::Euclidean, true);
  EXPECT_EQ(check_graph(g, ds, ref), "");
}

TEST(CpuKnn, RejectsBadParameters) {
  Dataset ds = random_dataset(10, 3, 1);
  EXPECT_THROW(build_cpu(ds, 0, Metric::Euclidean), UsageError);
  EXPECT_THROW(build_cpu(ds, 10, Metric::Euclidean), UsageError);  // N-1 is the most without self
  EXPECT_NO_THROW(build_cpu(ds, 10, Metric::Euclidean, true));
  std::vector<float> zeros(30, 0.f);
  zeros[0] = 1;  // row 0 non-zero, rows 1.. zero
  Dataset z(10, 3, zeros);
  EXPECT_THROW(build_cpu(z, 2, Metric::Cosine), Error);
  // Blank frames: the first one and how many more, whichever thread finds them.
  auto message = [](const Dataset& ds, Metric m) -> std::string {
    try {
      build_cpu(ds, 2, m);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(z, Metric::Cosine).find("row 1 and 8 more are all zero"), std::string::npos)
      << message(z, Metric::Cosine);
  const Dataset rnd = random_dataset(10, 3, 2);
  std::vector<float> one_flat(rnd.data(), rnd.data() + 30);
  for (int j = 0; j < 3; ++j) one_flat[7 * 3 + j] = 0.5f;
  EXPECT_NE(message(Dataset(10, 3, one_flat), Metric::Pearson).find("row 7 is constant"), std::string::npos)
      << message(Dataset(10, 3, one_flat), Metric::Pearson);
}

// --select and --precision: every name round-trips; any other word is one
// line naming the option and the allowed values.
// The list keeps the k smallest by (distance, index) whatever the order
// and however many ties: across its compactions (every k / 4, at least 16,
// extra entries), with the bound filtering as offer_to_rows() does.
TEST(TopK, KeepsTheKBestByDistanceThenIndex) {
  std::mt19937_64 rng(5);
  for (int k : {1, 3, 16, 17, 100, 1000}) {
    for (int levels : {4, 1000000}) {  // heavy ties, then almost none
      std::uniform_int_distribution<int> level(0, levels - 1);
      std::vector<Neighbour> stream;
      for (int64_t i = 0; i < 5000; ++i) stream.push_back({static_cast<float>(level(rng)), i});
      std::shuffle(stream.begin(), stream.end(), rng);
      TopK list(k);
      for (const Neighbour& n : stream) {
        if (n.dist > list.bound()) continue;
        list.push(n.dist, n.index);
      }
      std::vector<Neighbour> want = stream;
      std::sort(want.begin(), want.end());
      want.resize(static_cast<size_t>(k));
      EXPECT_EQ(list.take_sorted(), want) << "k " << k << ", " << levels << " levels";
    }
  }
  // Fewer candidates than k: all of them, sorted.
  TopK few(10);
  for (int64_t i : {7, 3, 5}) few.push(1.f, i);
  EXPECT_EQ(few.take_sorted(), (std::vector<Neighbour>{{1.f, 3}, {1.f, 5}, {1.f, 7}}));
}

TEST(KnnParams, SelectAndPrecisionNames) {
  for (Select s : kSelects) EXPECT_EQ(parse_select(to_string(s)), s);
  EXPECT_EQ(to_string(Select::Merge), "merge");
  for (Precision p : {Precision::Exact, Precision::FastExact}) EXPECT_EQ(parse_precision(to_string(p)), p);
  EXPECT_EQ(to_string(Precision::FastExact), "fast-exact");
  try {
    parse_select("Warp");
    ADD_FAILURE() << "accepted 'Warp'";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--select: unknown strategy 'Warp' (auto, warp, quick, sort, heap, merge, bitonic)");
  }
  try {
    parse_precision("fastest");
    ADD_FAILURE() << "accepted 'fastest'";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--precision: unknown value 'fastest' (exact, fast-exact)");
  }
}

TEST(CpuKnn, CancelStopsTheBuild) {
  Dataset ds = random_dataset(3000, 16, 5);
  std::atomic<bool> cancel{true};
  Progress progress(nullptr, &cancel);
  register_cpu_backend();
  KnnParams p;
  p.k = 5;
  EXPECT_THROW(make_backend("cpu")->build(ds, p, progress), Cancelled);
}

// The result's memory (KnnGraph::allocate_result): sized n k; its rows
// reported in, in order, ending with every row (large results -- 96 MiB and
// more, 12 bytes an entry -- are faulted in ahead a piece at a time, on
// several threads, so how many reports there are varies); a smaller result
// reports every row at once. Every entry is written and read back.
TEST(KnnGraphResult, RowsComeInInOrder) {
  for (auto [n, k] :
       {std::pair<int64_t, int>{1000, 7}, std::pair<int64_t, int>{100000, 100}, std::pair<int64_t, int>{80000, 100}}) {
    KnnGraph g;
    g.n = n, g.k = k;
    std::vector<int64_t> reports;
    std::mutex m;
    g.allocate_result([&](int64_t rows) {
      std::lock_guard lock(m);
      reports.push_back(rows);
    });
    ASSERT_EQ(g.indices.size(), static_cast<size_t>(n * k));
    ASSERT_EQ(g.distances.size(), static_cast<size_t>(n * k));
    ASSERT_FALSE(reports.empty());
    EXPECT_EQ(reports.back(), n) << n << " x " << k;
    EXPECT_TRUE(std::is_sorted(reports.begin(), reports.end())) << n << " x " << k;
    if (static_cast<size_t>(n) * k * 12 < (size_t{96} << 20)) {
      EXPECT_EQ(reports.size(), 1u) << n << " x " << k;
    }
    for (size_t i = 0; i < g.indices.size(); ++i) {
      g.indices[i] = static_cast<int64_t>(i) * 3;
      g.distances[i] = static_cast<float>(i % 1000);
    }
    for (size_t i = 0; i < g.indices.size(); i += 4099) {
      EXPECT_EQ(g.indices[i], static_cast<int64_t>(i) * 3);
      EXPECT_EQ(g.distances[i], static_cast<float>(i % 1000));
    }
  }
}

TEST(CpuKnn, SlicedGraphEqualsSmallerK) {
  Dataset ds = random_dataset(500, 6, 11);
  KnnGraph big = build_cpu(ds, 20, Metric::Euclidean);
  KnnGraph small = build_cpu(ds, 7, Metric::Euclidean);
  KnnGraph s = big.sliced(7);
  EXPECT_EQ(s.indices, small.indices);
  EXPECT_EQ(s.distances, small.distances);
  EXPECT_THROW(big.sliced(21), UsageError);
}

}  // namespace

namespace {

// The float64 brute force the contract promises, written independently of
// the library: squared distances summed in double (naive order) over the
// rows the metric ranks (prepared rows), rounded to float, converted to the
// metric's distance, ranked by (distance, index).
void float64_ranking(const PreparedRows& rows, int k, Metric m, bool keep_self, std::vector<int64_t>& idx,
                     std::vector<float>& dist) {
  const int64_t n = rows.rows, d = rows.cols;
  idx.assign(static_cast<size_t>(n * k), -1);
  dist.assign(static_cast<size_t>(n * k), 0.f);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<float, int64_t>> all;
    for (int64_t j = 0; j < n; ++j) {
      if (j == i && !keep_self) continue;
      double s = 0;
      for (int64_t c = 0; c < d; ++c) {
        double t = static_cast<double>(rows.data[i * d + c]) - rows.data[j * d + c];
        s += t * t;
      }
      float f = static_cast<float>(s);
      all.emplace_back(m == Metric::Euclidean ? std::sqrt(f) : 0.5f * f, j);
    }
    std::partial_sort(all.begin(), all.begin() + k, all.end());
    for (int j = 0; j < k; ++j) {
      idx[i * k + j] = all[j].second;
      dist[i * k + j] = all[j].first;
    }
  }
}

TEST(CpuKnn, EqualsTheFloat64RankingOnEveryRow) {
  // Certified selection (manifold/exact/certify.h): not "up to near-ties", but
  // the float64 brute force itself, row for row, duplicates included.
  std::vector<std::pair<std::string, Dataset>> inputs;
  inputs.emplace_back("random with duplicates", random_dataset(900, 24, 77, 150));
  Dataset fm = fashion_mnist(scaled(1500, 600));  // two tiles either way
  if (!fm.empty()) inputs.emplace_back("Fashion-MNIST", std::move(fm));
  for (auto& [name, ds] : inputs) {
    for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
      PreparedRows rows = prepare_rows(ds, m);
      std::vector<int64_t> ridx;
      std::vector<float> rdist;
      float64_ranking(rows, 30, m, false, ridx, rdist);
      KnnGraph g = build_cpu(ds, 30, m);
      int64_t differing = 0;
      for (int64_t i = 0; i < g.n; ++i)
        for (int j = 0; j < 30; ++j)
          differing += g.indices[i * 30 + j] != ridx[i * 30 + j] || g.distances[i * 30 + j] != rdist[i * 30 + j];
      EXPECT_EQ(differing, 0) << name << " " << to_string(m);
      EXPECT_LT(g.extra.value("error_bound_max_use", 2.0), 1.0) << name;
      // Slicing the k = 30 graph now equals building with the smaller k.
      KnnGraph small = build_cpu(ds, 7, m);
      EXPECT_EQ(g.sliced(7).indices, small.indices) << name << " " << to_string(m);
    }
  }
}

}  // namespace

namespace {

TEST(CpuKnnHostile, RowsLongerThanOneGemmStayExact) {
  // 4096^2-pixel images and longer (issue 24): d = 12,000,000 > 2^23, where
  // the one-GEMM bound's gamma = d u / (1 - d u) turned negative and the
  // certificate read past an empty candidate list. The dot products now
  // run in chunks of sqrt(d) columns and the bound covers their sum.
  const int64_t d = 12'000'000;
  EXPECT_EQ(exact::dot_product_chunk(d), 3465);
  EXPECT_EQ(exact::dot_product_terms(d), 3465 + 3464);
  EXPECT_GT(exact::make_error_model(d, exact::DotArithmetic::Float32).c_dot, 0);
  EXPECT_LT(exact::make_error_model(d, exact::DotArithmetic::Float32).c_dot, 1e-3);
  EXPECT_EQ(exact::dot_product_chunk(4096), 4096);  // one GEMM up to 2^20
  Dataset ds = random_dataset(4, d, 77);
  for (Metric m : {Metric::Euclidean, Metric::Cosine}) {
    KnnGraph g = build_cpu(ds, 2, m);
    Reference ref = brute_force(ds, 2, m, false);
    EXPECT_EQ(check_graph(g, ds, ref), "") << to_string(m);
  }
}

TEST(CpuKnnHostile, SquaredDistancesBeyondFloat32AreRefusedNotWrong) {
  // Finite values around 1e31: float32 squared distances overflow; the
  // graph used to come back with inf distances and a repeated neighbour.
  std::vector<float> v(10 * 16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1e30f * static_cast<float>(1 + (i * 37) % 61);
  Dataset ds(10, 16, std::move(v));
  ds.source = "huge.npy";
  try {
    build_cpu(ds, 3, Metric::Euclidean);
    FAIL() << "a graph came back";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("huge.npy: row "), std::string::npos) << what;
    EXPECT_NE(what.find("rescale the data"), std::string::npos) << what;
  }
  // Cosine works on unit rows: the same data have a graph.
  EXPECT_EQ(build_cpu(ds, 3, Metric::Cosine).n, 10);
}

}  // namespace

// Rows that share a large common part (common_pattern_rows): in place, the
// float32 bound is far wider than the gaps between neighbours (the norms
// are over 100 times those about the mean); moved about their mean nearly
// every row certifies from its list. Moved exactly where every value of a
// column allows it (exact::choose_translation's exact kind); with one row
// of tiny values, which no offset subtracts exactly from, moved with
// rounding, the keys still taken from the rows as they were. The graph is
// the exact ranking either way, byte for byte.
TEST(CpuKnn, CommonPatternRowsCertifyOnceTranslated) {
  const int64_t n = 1200, d = 64;
  const int k = 10;
  const Dataset exact_move = common_pattern_rows(n, d, 23);
  std::vector<float> v(exact_move.data(), exact_move.data() + n * d);
  for (int64_t c = 0; c < d; ++c) v[static_cast<size_t>(c)] = 1e-7f * static_cast<float>(c + 1);
  const Dataset rounded_move(n, d, std::move(v));
  const KnnGraph a = build_cpu(exact_move, k, Metric::Euclidean);
  const KnnGraph b = build_cpu(rounded_move, k, Metric::Euclidean);
  EXPECT_TRUE(a.extra["translation_exact"].get<bool>());
  EXPECT_GT(a.extra["translated_columns"].get<int64_t>(), d / 2);
  EXPECT_GT(a.extra["translation_norm_ratio"].get<double>(), 100.0);
  EXPECT_FALSE(b.extra["translation_exact"].get<bool>());
  EXPECT_EQ(b.extra["translated_columns"].get<int64_t>(), d);
  EXPECT_GT(b.extra["translation_norm_ratio"].get<double>(), 100.0);
  EXPECT_EQ(first_difference(a, exact_reference(exact_move, k, Metric::Euclidean, false)), "");
  EXPECT_EQ(first_difference(b, exact_reference(rounded_move, k, Metric::Euclidean, false)), "");
  EXPECT_LT(a.extra["fallback_rows"].get<int64_t>(), n / 100);
  EXPECT_LT(b.extra["fallback_rows"].get<int64_t>(), n / 100);
  EXPECT_LT(b.extra["error_bound_max_use"].get<double>(), 1.0);
}

// A bright spot common to all rows over dim noise (bright_spot_rows): the
// dim columns' values span more than a factor 2, so the exact kind keeps
// too little, and cosine's rows (divided by their own norms) share no grid
// either: both are moved with rounding. Pearson's rows (centred first) sit
// within a factor 2 of their column means and move exactly. Every metric
// certifies from its lists; the graph is the exact ranking, byte for byte.
TEST(CpuKnn, BrightSpotRowsCertifyInEveryMetric) {
  const int64_t n = 1500, d = 48;
  const int k = 10;
  const Dataset ds = bright_spot_rows(n, d, 31);
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
    SCOPED_TRACE(to_string(m));
    const KnnGraph g = build_cpu(ds, k, m);
    EXPECT_EQ(g.extra["translation_exact"].get<bool>(), m == Metric::Pearson);
    EXPECT_GT(g.extra["translation_norm_ratio"].get<double>(), 10.0);
    EXPECT_EQ(first_difference(g, exact_reference(ds, k, m, false)), "");
    EXPECT_LT(g.extra["fallback_rows"].get<int64_t>(), n / 100);
    EXPECT_LT(g.extra["error_bound_max_use"].get<double>(), 1.0);
  }
}

// Photon-counted diffraction patterns about one axis: each pattern's
// nearest distances crowd above the common noise floor, so at k = 100 the
// certificate's window past the k-th holds far more than k/8 points at
// d = 4096. The slack grows with d (exact_slack): every row certified from
// its list (151 of these 4000 went to the exact scan with k/8), each row
// the exact ranking.
TEST(CpuKnn, RotationSeriesCertifiesAtLargeK) {
  const Dataset ds = ubiquitin_rotation_series(4000, 64);
  if (ds.rows() == 0) GTEST_SKIP() << "freesasa (1ubq.pdb) is not installed";
  const int k = 100;
  for (Metric m : {Metric::Euclidean, Metric::Cosine}) {
    SCOPED_TRACE(to_string(m));
    const KnnGraph g = build_cpu(ds, k, m);
    EXPECT_EQ(g.extra["fallback_rows"].get<int64_t>(), 0);
    EXPECT_EQ(g.extra["capacity"].get<int>(), k + k / 8 * 8);
    const int64_t step = 97;
    const KnnGraph ref = exact_reference(ds, k, m, false, step);
    for (int64_t i = 0; i < ds.rows(); i += step) ASSERT_EQ(row_difference(g, ref, i), "");
  }
}

// One row far from all others (a hot frame) must not widen every other
// row's bound: the certificate bounds the points outside a list with the
// largest norm that can still rank (exact::missing_norm_cap), not the
// largest of all. Noise about the origin, so nothing is moved.
TEST(CpuKnn, OneFarRowLeavesTheOthersCertified) {
  const int64_t n = 1000, d = 32;
  const int k = 10;
  const Dataset ds = one_far_row(n, d, 41, 500);
  const KnnGraph graph = build_cpu(ds, k, Metric::Euclidean);
  EXPECT_EQ(graph.extra["translated_columns"].get<int64_t>(), 0);
  // The bound's largest norm is the far row's, 32 x 1e10.
  EXPECT_NEAR(graph.extra["error_bound_largest_norm"].get<double>(), 3.2e11, 3.2e11 * 1e-6);
  EXPECT_EQ(first_difference(graph, exact_reference(ds, k, Metric::Euclidean, false)), "");
  // The far row itself has every other point at nearly one distance: only
  // its own list may need the exact scan.
  EXPECT_LE(graph.extra["fallback_rows"].get<int64_t>(), 1);
}

TEST(CertificateNote, NamesWhatTheListsDidNotSettle) {
  KnnGraph g;
  g.n = 100;
  EXPECT_EQ(certificate_note(g), "") << "no counts: every row settled";
  g.extra["rescanned_rows"] = 0;
  g.extra["fallback_rows"] = 0;
  EXPECT_EQ(certificate_note(g), "");
  g.extra["rescanned_rows"] = 7;
  g.extra["fallback_rows"] = 2;
  g.extra["precision"] = "exact";
  EXPECT_EQ(certificate_note(g),
            "note: 7 rows rescanned and 2 rows ranked by a full exact scan (dense neighbourhoods)");
  // fast-exact with a tenth of the rows unsettled: exact's narrower bound may pay.
  g.extra["precision"] = "fast-exact";
  g.extra["rescanned_rows"] = 8;
  EXPECT_NE(certificate_note(g).find("--precision exact"), std::string::npos) << certificate_note(g);
  g.extra["rescanned_rows"] = 7;
  EXPECT_EQ(certificate_note(g).find("--precision exact"), std::string::npos) << "9 of 100: no suggestion";
}
