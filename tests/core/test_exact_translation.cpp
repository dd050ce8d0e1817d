// The exact translation (core's manifold/exact/translation.h): an offset per
// column that changes no difference between rows. Checked against the
// definition (every translated value is x - offset exactly, every exact key
// the same bit for bit), on rows that share a large common part (where it
// must translate, and the norms must shrink) and on noise (where it must
// not), with values that cannot be translated exactly in their column.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "manifold/exact/certify.h"
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
  const exact::Translation t = exact::exact_translation(x.data(), n, d, 2);
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
  EXPECT_FALSE(exact::exact_translation(x.data(), n, d, 2).any());
  // The same noise about a common offset far larger than itself: translated.
  for (float& v : x) v += 64.f;
  const exact::Translation t = exact::exact_translation(x.data(), n, d, 2);
  ASSERT_TRUE(t.any());
  EXPECT_EQ(t.columns, d);
  EXPECT_GT(t.norm_ratio, 1000.0);
  // A single row, or no columns: nothing to translate.
  EXPECT_FALSE(exact::exact_translation(x.data(), 1, d, 2).any());
}
