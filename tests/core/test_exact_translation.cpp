// The translations of core's manifold/exact/translation.h. The exact kind, an
// offset per column that changes no difference between rows: checked
// against the definition (every translated value is x - offset exactly,
// every exact key the same bit for bit), on rows that share a large common
// part (where it must translate, and the norms must shrink) and on noise
// (where it must not), with values that cannot be translated exactly in
// their column. The rounded kind, for rows on no common grid (cosine's unit
// rows): chosen only there, and the loop's distances of the moved rows stay
// inside error_bound.h's widened bound around the exact keys of the rows
// as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "manifold/exact/certify.h"
#include "manifold/exact/error_bound.h"
#include "manifold/exact/translation.h"
#include "test_support.h"

using namespace manifold;

namespace {

double squared_norm(const float* x, int64_t d) {
  double s = 0;
  for (int64_t c = 0; c < d; ++c) s += static_cast<double>(x[c]) * x[c];
  return s;
}

}  // namespace

TEST(ExactTranslation, SubtractsExactlyOnlyWhatIsExact) {
  EXPECT_TRUE(exact::subtracts_exactly(3.f, 1.f));
  EXPECT_TRUE(exact::subtracts_exactly(0.f, 1234.5f));    // -offset itself
  EXPECT_TRUE(exact::subtracts_exactly(1.5f, 1.f));       // Sterbenz
  EXPECT_TRUE(exact::subtracts_exactly(1e-30f, 0.f));     // no offset
  EXPECT_FALSE(exact::subtracts_exactly(1e30f, 1.f));     // 1e30 - 1 rounds
  EXPECT_FALSE(exact::subtracts_exactly(1e-3f, 1000.f));  // 1000 - 0.001 rounds
  EXPECT_FALSE(exact::subtracts_exactly(std::nanf(""), 1.f));
  EXPECT_FALSE(exact::subtracts_exactly(std::numeric_limits<float>::infinity(), 2.f));
  EXPECT_TRUE(exact::subtracts_exactly(std::nanf(""), 0.f));  // no offset: nothing to lose
  EXPECT_FALSE(exact::subtracts_exactly(-3e38f, 3e38f));      // overflows
  // Against the definition on random pairs: exact exactly when the float64
  // difference (exact for these magnitudes) is a float32 value.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(1.f, 8.f);  // magnitudes within 2^15 of each other
  auto draw = [&] { return std::ldexp(rng() % 2 ? u(rng) : -u(rng), static_cast<int>(rng() % 12)); };
  int exact = 0;
  for (int i = 0; i < 100000; ++i) {
    const float x = draw(), o = draw();
    const double diff = static_cast<double>(x) - static_cast<double>(o);
    const bool is = static_cast<double>(static_cast<float>(diff)) == diff;
    ASSERT_EQ(exact::subtracts_exactly(x, o), is) << x << " - " << o;
    exact += is;
  }
  EXPECT_GT(exact, 1000);  // both outcomes were met
  EXPECT_LT(exact, 99000);
}

TEST(ExactTranslation, ShrinksCommonPatternsAndKeepsEveryKey) {
  const int64_t n = 600, d = 96;
  const Dataset ds = testing_support::common_pattern_rows(n, d, 11);
  std::vector<float> x(ds.data(), ds.data() + n * d);
  // A column whose values cannot all be translated exactly: one tiny value
  // beside large ones. And a NaN in another: those columns keep offset 0
  // (dim ones here: a bright column left in place would keep most of the
  // norm, as it should).
  x[static_cast<size_t>(7 * d + 95)] = 1e-7f;
  x[static_cast<size_t>(9 * d + 94)] = std::nanf("");
  const exact::Translation t = exact::choose_translation(x.data(), n, d, 2, false);
  ASSERT_TRUE(t.any());
  EXPECT_GT(t.norm_ratio, 100.0);
  EXPECT_EQ(t.offset[95], 0.f);
  EXPECT_EQ(t.offset[94], 0.f);
  EXPECT_NE(t.offset[3], 0.f);
  EXPECT_EQ(t.offset[5], 0.f);  // all zeros: the mean is 0
  EXPECT_GT(t.columns, d / 2);
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < d; ++c) {
      const float v = x[static_cast<size_t>(r * d + c)], o = t.offset[static_cast<size_t>(c)];
      y[static_cast<size_t>(r * d + c)] = v - o;
      if (!std::isnan(v)) {
        ASSERT_EQ(static_cast<double>(v - o), static_cast<double>(v) - static_cast<double>(o)) << r << ", " << c;
      }
    }
  // Every exact key of rows without NaN is the same bit for bit; the norms
  // are far smaller about the offsets.
  double raw = 0, about = 0;
  for (int64_t i = 10; i < n; i += 7)
    for (int64_t j = 11; j < n; j += 13) {
      const double a = exact::exact_sum_sq_diff(x.data() + i * d, x.data() + j * d, d);
      const double b = exact::exact_sum_sq_diff(y.data() + i * d, y.data() + j * d, d);
      ASSERT_EQ(a, b) << i << ", " << j;
    }
  for (int64_t i = 10; i < n; ++i) raw += squared_norm(x.data() + i * d, d), about += squared_norm(y.data() + i * d, d);
  EXPECT_GT(raw / about, 100.0);
}

TEST(ExactTranslation, LeavesNoiseAsItIs) {
  const int64_t n = 3000, d = 64;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n * d));
  for (float& v : x) v = g(rng);
  EXPECT_FALSE(exact::choose_translation(x.data(), n, d, 2, false).any());
  // The same noise about a common offset far larger than itself: translated.
  for (float& v : x) v += 64.f;
  const exact::Translation t = exact::choose_translation(x.data(), n, d, 2, false);
  ASSERT_TRUE(t.any());
  EXPECT_EQ(t.columns, d);
  EXPECT_GT(t.norm_ratio, 1000.0);
  // A single row, or no columns: nothing to translate.
  EXPECT_FALSE(exact::choose_translation(x.data(), 1, d, 2, false).any());
}

namespace {

/// bright_spot_rows prepared for cosine: each row divided by its norm in
/// float32, so no column's values share a grid, and the dim columns' spread
/// keeps any offset from subtracting exactly from all of them.
std::vector<float> unit_bright_spot_rows(int64_t n, int64_t d, uint64_t seed) {
  const Dataset ds = testing_support::bright_spot_rows(n, d, seed);
  std::vector<float> x(ds.data(), ds.data() + n * d);
  for (int64_t r = 0; r < n; ++r) {
    const float inv = static_cast<float>(1.0 / std::sqrt(squared_norm(x.data() + r * d, d)));
    for (int64_t c = 0; c < d; ++c) x[static_cast<size_t>(r * d + c)] *= inv;
  }
  return x;
}

}  // namespace

TEST(RoundedTranslation, ChosenOnlyWhereTheExactKindGainsTooLittle) {
  const int64_t n = 2000, d = 96;
  const std::vector<float> x = unit_bright_spot_rows(n, d, 17);
  // The exact kind alone keeps few columns here: without the rounded kind,
  // little or nothing to gain.
  const exact::Translation only_exact = exact::choose_translation(x.data(), n, d, 2, false);
  const exact::Translation t = exact::choose_translation(x.data(), n, d, 2, true);
  ASSERT_TRUE(t.any());
  EXPECT_FALSE(t.exact);
  EXPECT_GT(t.columns, d / 2);
  EXPECT_GT(t.norm_ratio, 100.0);
  if (only_exact.any()) {
    EXPECT_LT(only_exact.norm_ratio, t.norm_ratio / 2);
  }
  // Photon-count-like rows (integers) move exactly: the rounded kind is
  // not taken where the exact one keeps the gain.
  const Dataset ds = testing_support::common_pattern_rows(n, d, 17);
  std::vector<float> counts(ds.data(), ds.data() + n * d);
  for (float& v : counts) v = std::round(v);
  const exact::Translation c = exact::choose_translation(counts.data(), n, d, 2, true);
  ASSERT_TRUE(c.any());
  EXPECT_TRUE(c.exact);
}

// The lemma behind the widened bound, on every pair of a sample: the rows
// moved with rounding differ from the rows as they were by at most
// eta = u/(1-u) (|x~| + |y~|) in the distance (float64 throughout), and the
// loop's float32 distance of the moved rows lies within entry_error of the
// exact key of the rows as they were.
TEST(RoundedTranslation, MovedDistancesStayInsideTheWidenedBound) {
  const int64_t n = 400, d = 96;
  const std::vector<float> x = unit_bright_spot_rows(n, d, 29);
  const exact::Translation t = exact::choose_translation(x.data(), n, d, 2, true);
  ASSERT_TRUE(t.any());
  ASSERT_FALSE(t.exact);
  std::vector<float> m(x.size());
  exact::moved_rows(x.data(), n, d, t.offset, m.data(), 2);
  int rounded = 0;
  for (size_t i = 0; i < x.size(); ++i)
    rounded += static_cast<double>(m[i]) != static_cast<double>(x[i]) - static_cast<double>(t.offset[i % d]);
  EXPECT_GT(rounded, static_cast<int>(x.size() / 50)) << "the moves must round for this test to mean anything";
  std::vector<float> norms(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) norms[static_cast<size_t>(r)] = static_cast<float>(squared_norm(&m[r * d], d));
  const exact::ErrorModel model = exact::make_error_model(d, exact::DotArithmetic::Float32, true);
  ASSERT_GT(model.moved_rounding, 0.0);
  EXPECT_EQ(exact::make_error_model(d, exact::DotArithmetic::Float32).moved_rounding, 0.0);
  double lemma_use = 0, bound_use = 0;
  for (int64_t i = 0; i < n; i += 3)
    for (int64_t j = i + 1; j < n; j += 5) {
      const float *xi = &m[i * d], *xj = &m[j * d];
      const double s = exact::exact_sum_sq_diff(&x[i * d], &x[j * d], d);
      const double moved = exact::exact_sum_sq_diff(xi, xj, d);
      const double eta = model.moved_rounding * (std::sqrt(squared_norm(xi, d)) + std::sqrt(squared_norm(xj, d)));
      lemma_use = std::max(lemma_use, std::fabs(std::sqrt(moved) - std::sqrt(s)) / eta);
      float dot = 0.f;
      for (int64_t c = 0; c < d; ++c) dot = std::fmaf(xi[c], xj[c], dot);
      const float ni = norms[static_cast<size_t>(i)], nj = norms[static_cast<size_t>(j)];
      const float a = std::fmaf(-2.f, dot, ni + nj);
      bound_use = std::max(bound_use, std::fabs(a - s) / exact::entry_error(a, ni, nj, model));
    }
  std::cout << "[ info ] largest |sqrt(s~) - sqrt(s)| / eta " << lemma_use << ", |a - s| / bound " << bound_use << "\n";
  EXPECT_LE(lemma_use, 1.0);
  EXPECT_GT(lemma_use, 1e-3);  // eta is a bound of the right size, not a formality
  EXPECT_LT(bound_use, 1.0);
}
