// The certification of both precisions (core's manifold/exact/certify.h,
// which the CPU backend and the GPU's streamed and fallback paths call, and
// whose rules the device kernel impl/certify.cu follows), without a GPU:
// candidate lists ranked by distances that carry any error within the bound
// (random or at the bound's very edge) must certify to exactly the float64
// ranking, and rows whose list is too short for the bound must be detected
// and fixed by the exact scan. It lived in tests/gpu, which builds only where
// nvcc is; here CI runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <random>

#include "manifold/exact/certify.h"
#include "manifold/exact/error_bound.h"
#include "manifold/knn.h"
#include "test_support.h"

using namespace manifold;
using testing_support::exact_reference;
using testing_support::first_difference;
using testing_support::near_duplicates;

namespace {

struct Simulated {
  std::vector<float> dist;
  std::vector<int> index, fill;
  std::vector<float> norms;
  double ymax = 0;
};

// Lists of capacity `cap` as the tile loop would leave them, from distances
// a = s + theta e with |theta| <= 0.95 (edge: theta = +-0.95, the sign chosen
// to make near neighbours look far and far ones near).
Simulated simulate(const PreparedRows& rows, int cap, bool keep_self, const exact::ErrorModel& m, bool edge,
                   uint64_t seed) {
  const int64_t n = rows.rows, d = rows.cols;
  Simulated s;
  s.norms.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double q = 0;
    for (int64_t c = 0; c < d; ++c) q += static_cast<double>(rows.data[i * d + c]) * rows.data[i * d + c];
    s.norms[static_cast<size_t>(i)] = static_cast<float>(q);
    s.ymax = std::max(s.ymax, static_cast<double>(s.norms[static_cast<size_t>(i)]));
  }
  s.dist.resize(static_cast<size_t>(n * cap));
  s.index.resize(static_cast<size_t>(n * cap));
  s.fill.assign(static_cast<size_t>(n), cap);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> theta(-0.95, 0.95);
  std::vector<std::pair<float, int>> all;
  for (int64_t i = 0; i < n; ++i) {
    all.clear();
    std::vector<double> truth(static_cast<size_t>(n));
    double median = 0;
    for (int64_t j = 0; j < n; ++j)
      truth[static_cast<size_t>(j)] = exact::exact_sum_sq_diff(rows.data + i * d, rows.data + j * d, d);
    std::vector<double> sorted = truth;
    std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
    median = sorted[static_cast<size_t>(n / 2)];
    for (int64_t j = 0; j < n; ++j) {
      if (j == i && !keep_self) continue;
      const double e = exact::entry_error(truth[static_cast<size_t>(j)], s.norms[static_cast<size_t>(i)],
                                          s.norms[static_cast<size_t>(j)], m);
      const double t = edge ? (truth[static_cast<size_t>(j)] < median ? 0.95 : -0.95) : theta(rng);
      all.emplace_back(static_cast<float>(truth[static_cast<size_t>(j)] + t * e), static_cast<int>(j));
    }
    std::sort(all.begin(), all.end());
    for (int t = 0; t < cap; ++t) {
      s.dist[static_cast<size_t>(i * cap + t)] = all[static_cast<size_t>(t)].first;
      s.index[static_cast<size_t>(i * cap + t)] = all[static_cast<size_t>(t)].second;
    }
  }
  return s;
}

struct Outcome {
  KnnGraph g;
  int64_t fallback = 0;
  double reevaluated = 0;
};

using exact::DotArithmetic;
constexpr DotArithmetic kEveryKind[] = {DotArithmetic::Float32, DotArithmetic::Tf32, DotArithmetic::SplitTf32};

const char* kind_name(DotArithmetic dots) {
  return dots == DotArithmetic::Float32 ? "float32" : dots == DotArithmetic::Tf32 ? "TF32" : "split TF32";
}

Outcome certify(const Dataset& ds, Metric metric, int k, int cap, bool keep_self, DotArithmetic dots, bool edge) {
  const PreparedRows rows = prepare_rows(ds, metric);
  const exact::ErrorModel m = exact::make_error_model(rows.cols, dots);
  const Simulated s = simulate(rows, cap, keep_self, m, edge, 7);
  Outcome o;
  o.g.n = rows.rows, o.g.d = rows.cols, o.g.k = k, o.g.metric = metric, o.g.keep_self = keep_self;
  o.g.indices.resize(static_cast<size_t>(rows.rows * k));
  o.g.distances.resize(static_cast<size_t>(rows.rows * k));
  std::vector<int> status(static_cast<size_t>(rows.rows));
  exact::CertifyRequest req;
  req.rows = rows.data, req.d = rows.cols, req.k = k, req.norms = s.norms.data(), req.ymax = s.ymax;
  req.lists = {s.dist.data(), s.index.data(), s.fill.data(), rows.rows, cap};
  req.model = m, req.metric = metric, req.complete = cap >= rows.rows - (keep_self ? 0 : 1);
  const float use = exact::certify_rows(req, {o.g.indices.data(), o.g.distances.data(), status.data()});
  EXPECT_LT(use, 1.f) << "the simulated errors stay within the bound";
  std::vector<int64_t> fb;
  for (int64_t i = 0; i < rows.rows; ++i) {
    if (status[static_cast<size_t>(i)] < 0) fb.push_back(i);
    else
      o.reevaluated += status[static_cast<size_t>(i)];
  }
  o.fallback = static_cast<int64_t>(fb.size());
  if (rows.rows > o.fallback) o.reevaluated /= static_cast<double>(rows.rows - o.fallback);
  exact::exact_scan_rows({rows.data, rows.rows, rows.cols, k, metric, keep_self, 0}, fb, o.g.indices.data(),
                         o.g.distances.data());
  return o;
}

TEST(Certify, RandomErrorsWithinTheBoundRankExactly) {
  const Dataset ds = testing_support::random_dataset(700, 24, 5);
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
    for (DotArithmetic dots : kEveryKind) {
      const int k = 10;
      Outcome o = certify(ds, m, k, dots == DotArithmetic::Tf32 ? k + 96 : k + 16, false, dots, false);
      EXPECT_EQ(first_difference(o.g, exact_reference(ds, k, m, false)), "") << to_string(m) << " " << kind_name(dots);
      EXPECT_GE(o.reevaluated, k);
      std::cout << "[ info ] " << to_string(m) << " " << kind_name(dots) << ": " << o.reevaluated
                << " re-evaluated per row, " << o.fallback << " fallback rows\n";
    }
  }
}

TEST(Certify, ErrorsAtTheEdgeOfTheBoundRankExactly) {
  // Every distance off by 95% of its bound, near ones pushed out and far
  // ones pulled in: the certificate must still hold or send the row to the
  // fallback, never return a wrong row.
  const Dataset ds = near_duplicates(600, 16, 11, 12, 30, 1e-5f);
  for (DotArithmetic dots : kEveryKind)
    for (int cap : {11, 20, 60}) {
      Outcome o = certify(ds, Metric::Euclidean, 10, cap, false, dots, true);
      EXPECT_EQ(first_difference(o.g, exact_reference(ds, 10, Metric::Euclidean, false)), "")
          << "cap " << cap << " " << kind_name(dots);
      std::cout << "[ info ] edge errors, cap " << cap << " " << kind_name(dots) << ": " << o.fallback
                << " fallback rows, " << o.reevaluated << " re-evaluated per certified row\n";
    }
}

TEST(Certify, ShortListsFallBackAndStayExact) {
  // Clusters of 30 near-duplicates and a capacity of 12: the bound cannot
  // tell the cluster apart, so those rows must fall back.
  const Dataset ds = near_duplicates(500, 12, 3, 10, 30, 1e-6f);
  Outcome o = certify(ds, Metric::Euclidean, 8, 12, false, DotArithmetic::Tf32, false);
  EXPECT_GT(o.fallback, 100);
  EXPECT_EQ(first_difference(o.g, exact_reference(ds, 8, Metric::Euclidean, false)), "");
  // Complete lists (every other point) need no certificate.
  const Dataset small = testing_support::random_dataset(40, 5, 2);
  Outcome c = certify(small, Metric::Cosine, 39, 39, false, DotArithmetic::Tf32, true);
  EXPECT_EQ(c.fallback, 0);
  EXPECT_EQ(first_difference(c.g, exact_reference(small, 39, Metric::Cosine, false)), "");
  Outcome s = certify(small, Metric::Pearson, 5, 40, true, DotArithmetic::Float32, false);
  EXPECT_EQ(first_difference(s.g, exact_reference(small, 5, Metric::Pearson, true)), "");
}

// The MPI backend certifies its own rows with `rows` pointing at the first
// of them: candidates before it have negative indices. The certificate
// reads them (in index order, rows in blocks) and ranks them as from row 0.
TEST(Certify, CandidatesBeforeTheFirstListRowHaveNegativeIndices) {
  const Dataset ds = testing_support::random_dataset(300, 40, 9);
  const PreparedRows rows = prepare_rows(ds, Metric::Euclidean);
  const exact::ErrorModel m = exact::make_error_model(rows.cols, DotArithmetic::Float32);
  const int k = 20, cap = 40;
  const Simulated s = simulate(rows, cap, false, m, false, 3);
  auto run = [&](int64_t first, std::vector<int64_t>& index, std::vector<float>& dist, std::vector<int>& status) {
    const int64_t lists = rows.rows - first;
    std::vector<int> shifted(s.index.begin() + first * cap, s.index.end());
    for (int& j : shifted) j -= static_cast<int>(first);
    index.assign(static_cast<size_t>(lists * k), -1);
    dist.assign(static_cast<size_t>(lists * k), 0.f);
    status.assign(static_cast<size_t>(lists), 0);
    exact::CertifyRequest req;
    req.rows = rows.data + first * rows.cols, req.d = rows.cols, req.k = k, req.norms = s.norms.data() + first;
    req.ymax = s.ymax, req.model = m, req.metric = Metric::Euclidean;
    req.lists = {s.dist.data() + first * cap, shifted.data(), s.fill.data() + first, lists, cap};
    exact::certify_rows(req, {index.data(), dist.data(), status.data()});
  };
  std::vector<int64_t> all_index, own_index;
  std::vector<float> all_dist, own_dist;
  std::vector<int> all_status, own_status;
  run(0, all_index, all_dist, all_status);
  const int64_t first = 170;
  run(first, own_index, own_dist, own_status);
  int64_t certified = 0, before_first = 0;
  for (int64_t g = 0; g < rows.rows - first; ++g) {
    ASSERT_EQ(own_status[g], all_status[first + g]) << g;
    if (own_status[g] < 0) continue;
    ++certified;
    for (int j = 0; j < k; ++j) {
      ASSERT_EQ(own_index[g * k + j] + first, all_index[(first + g) * k + j]) << g << " " << j;
      ASSERT_EQ(own_dist[g * k + j], all_dist[(first + g) * k + j]) << g << " " << j;
      before_first += own_index[g * k + j] < 0;
    }
  }
  EXPECT_GT(certified, 100);
  EXPECT_GT(before_first, 1000) << "the case has candidates before the first row";
}

namespace {

/// v with its 13 low fraction bits cleared (TF32, cut toward zero) or
/// rounded to nearest, ties away (cvt.rna.tf32.f32), for finite v.
float tf32_cut(float v, bool round) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (round) u += 0x1000u;
  u &= 0xffffe000u;
  std::memcpy(&v, &u, 4);
  return v;
}

/// The fused kernel's dot product of x and y as the bound describes it:
/// per 8 columns, three mma (tail x head, head x tail, head x head; or head x
/// head alone when !split), every product exact and every addition cut
/// toward zero (the tensor cores' truncation), in float32.
float emulated_tensor_dot(const std::vector<float>& x, const std::vector<float>& y, bool split, bool round) {
  const size_t d = x.size();
  std::vector<float> xh(d), xl(d), yh(d), yl(d);
  for (size_t i = 0; i < d; ++i) {
    xh[i] = tf32_cut(x[i], round), yh[i] = tf32_cut(y[i], round);
    xl[i] = tf32_cut(x[i] - xh[i], round), yl[i] = tf32_cut(y[i] - yh[i], round);
  }
  const int saved = std::fegetround();
  std::fesetround(FE_TOWARDZERO);
  volatile float acc = 0.f;
  for (size_t k0 = 0; k0 < d; k0 += 8) {
    const size_t k1 = std::min(d, k0 + 8);
    if (split) {
      for (size_t i = k0; i < k1; ++i) acc = acc + xl[i] * yh[i];
      for (size_t i = k0; i < k1; ++i) acc = acc + xh[i] * yl[i];
    }
    for (size_t i = k0; i < k1; ++i) acc = acc + xh[i] * yh[i];
  }
  std::fesetround(saved);
  return acc;
}

}  // namespace

TEST(Certify, SplitTf32BoundCoversItsArithmetic) {
  // Rows of wide dynamic range, and pairs that nearly cancel (y = -x plus a
  // little): the emulated split dot product stays within c_dot |x||y|, and
  // the plain TF32 product of the same pairs does not (so the split bound is
  // not TF32's in disguise: it is 10 times tighter and the test can fail).
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<double> scale(-12, 12);
  double split_use = 0, tf32_over_split = 0;
  for (int64_t d : {1, 7, 64, 256, 1000}) {
    const exact::ErrorModel m = exact::make_error_model(d, DotArithmetic::SplitTf32);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> x(static_cast<size_t>(d)), y(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i) {
        x[static_cast<size_t>(i)] = normal(rng) * static_cast<float>(std::exp2(scale(rng)));
        y[static_cast<size_t>(i)] = trial % 2 ? -x[static_cast<size_t>(i)] * (1 + 1e-3f * normal(rng))
                                              : normal(rng) * static_cast<float>(std::exp2(scale(rng)));
      }
      double exact_dot = 0, nx = 0, ny = 0;  // float products are exact in double
      for (int64_t i = 0; i < d; ++i) {
        exact_dot += static_cast<double>(x[static_cast<size_t>(i)]) * y[static_cast<size_t>(i)];
        nx += static_cast<double>(x[static_cast<size_t>(i)]) * x[static_cast<size_t>(i)];
        ny += static_cast<double>(y[static_cast<size_t>(i)]) * y[static_cast<size_t>(i)];
      }
      const double bound = m.c_dot * std::sqrt(nx * ny) + m.abs_term / 2;
      for (bool round : {false, true}) {
        split_use = std::max(split_use, std::fabs(emulated_tensor_dot(x, y, true, round) - exact_dot) / bound);
        tf32_over_split = std::max(tf32_over_split,
                                   std::fabs(emulated_tensor_dot(x, y, false, round) - exact_dot) / bound);
      }
    }
  }
  EXPECT_LT(split_use, 1.0);
  EXPECT_GT(tf32_over_split, 1.0);
  std::cout << "[ info ] split TF32: largest error " << split_use << " of the bound; plain TF32 reaches "
            << tf32_over_split << " of it\n";
  // The kinds' windows in order where the split runs (the fused kernel, d <=
  // 256; its 3 d summands make it wider than TF32's from d ~ 4096).
  for (int64_t d : {1, 16, 64, 256}) {
    const double f = exact::make_error_model(d, DotArithmetic::Float32).c_dot;
    const double sp = exact::make_error_model(d, DotArithmetic::SplitTf32).c_dot;
    EXPECT_LT(f, sp) << d;
    EXPECT_LT(sp, exact::make_error_model(d, DotArithmetic::Tf32).c_dot) << d;
  }
}

TEST(Certify, BoundCoversTheFormatsUnitRoundoff) {
  // The TF32 bound must exceed the plain rounding of inputs to 10 fraction
  // bits (2 * 2^-11 relative); float32's must not be zero.
  const exact::ErrorModel t = exact::make_error_model(1024, DotArithmetic::Tf32);
  const exact::ErrorModel f = exact::make_error_model(1024, DotArithmetic::Float32);
  EXPECT_GT(t.c_dot, 2 * std::ldexp(1.0, -11));
  EXPECT_GT(f.c_dot, 1024 * std::ldexp(1.0, -24));
  EXPECT_GT(t.c_dot, 5 * f.c_dot);
  EXPECT_GE(exact::entry_error(10.0, 4.0, 4.0, t), 2 * t.c_dot * 4.0);
  EXPECT_EQ(exact::key_of(std::nan(""), true), INFINITY);
  EXPECT_EQ(exact::to_float_up(1.0 + 1e-12), std::nextafter(1.f, 2.f));
}

// The float32 slack: max(16, k/8) up to d = 512, in proportion to d beyond
// (the bound's window is d 2^-23 wide), at most max(64, k).
TEST(ExactSlack, GrowsWithDUpToTwiceTheResult) {
  EXPECT_EQ(exact::exact_slack(10, 256), 16);
  EXPECT_EQ(exact::exact_slack(100, 256), 16);
  EXPECT_EQ(exact::exact_slack(1000, 64), 125);
  EXPECT_EQ(exact::exact_slack(100, 784), 18);
  EXPECT_EQ(exact::exact_slack(100, 4096), 96);
  EXPECT_EQ(exact::exact_slack(10, 4096), 16);
  EXPECT_EQ(exact::exact_slack(20, 16384), 64);
  EXPECT_EQ(exact::exact_slack(16384, 784), 3136);
  EXPECT_EQ(exact::exact_slack(16384, 16384), 16384);
  for (int k : {1, 20, 100, 1000, 16384}) {
    int last = 0;
    for (int64_t d = 1; d <= (int64_t{1} << 22); d *= 2) {
      const int s = exact::exact_slack(k, d);
      EXPECT_GE(s, last) << k << " " << d;
      EXPECT_LE(s, std::max(64, k)) << k << " " << d;
      EXPECT_GE(s, 16);
      last = s;
    }
  }
}

}  // namespace
