#include "manifold/exact/translation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "manifold/parallel.h"

namespace manifold::exact {

namespace {

/// Rows of the samples, evenly spaced: the decision whether to translate
/// (every build pays it: 1024 rows took 1.7 ms of a 72 ms graph at
/// (100k, 256, 20) on an H200 host), and the offsets where it does (a
/// rougher mean left 882 of the 3000 rows of CommonPatternRowsCertifyOnce-
/// Translated uncertified against none: bench/gpu/RESULTS.md).
constexpr int64_t kDecisionRows = 256;
constexpr int64_t kOffsetRows = 1024;

int64_t sample_row(int64_t s, int64_t samples, int64_t n) { return s * n / samples; }

/// Rows per block of the passes over a sample: the blocks' partial sums are
/// added in block order, so the results do not depend on the threads.
constexpr int64_t kSampleBlock = 32;

/// Calls block(first, last) for blocks of kSampleBlock sample rows, in
/// parallel; returns their results in block order.
template <class T, class Block>
std::vector<T> over_sample_blocks(int64_t samples, int threads, Block&& block) {
  const int64_t blocks = (samples + kSampleBlock - 1) / kSampleBlock;
  std::vector<T> out(static_cast<size_t>(blocks));
  parallel_for(0, blocks, threads, [&](int64_t b) {
    out[static_cast<size_t>(b)] = block(b * kSampleBlock, std::min(samples, (b + 1) * kSampleBlock));
  });
  return out;
}

/// Column means of the sample, rounded to float32.
std::vector<float> sample_means(const float* rows, int64_t n, int64_t d, int64_t samples, int threads) {
  struct Sums {
    std::vector<double> sum;
    std::vector<int64_t> count;
  };
  const std::vector<Sums> parts = over_sample_blocks<Sums>(samples, threads, [&](int64_t s0, int64_t s1) {
    Sums p{std::vector<double>(static_cast<size_t>(d), 0.0), std::vector<int64_t>(static_cast<size_t>(d), 0)};
    for (int64_t s = s0; s < s1; ++s) {
      const float* x = rows + sample_row(s, samples, n) * d;
      for (int64_t c = 0; c < d; ++c)
        if (std::isfinite(x[c])) p.sum[static_cast<size_t>(c)] += x[c], ++p.count[static_cast<size_t>(c)];
    }
    return p;
  });
  std::vector<float> mean(static_cast<size_t>(d), 0.f);
  for (int64_t c = 0; c < d; ++c) {
    double sum = 0;
    int64_t count = 0;
    for (const Sums& p : parts) sum += p.sum[static_cast<size_t>(c)], count += p.count[static_cast<size_t>(c)];
    if (count > 0) mean[static_cast<size_t>(c)] = static_cast<float>(sum / static_cast<double>(count));
  }
  return mean;
}

/// Mean |x|^2 over mean |x - offset|^2 on the sample (finite values only).
double norm_ratio(const float* rows, int64_t n, int64_t d, int64_t samples, const std::vector<float>& offset,
                  int threads) {
  const std::vector<std::pair<double, double>> parts = over_sample_blocks<std::pair<double, double>>(samples, threads,
                                                                                                     [&](int64_t s0,
                                                                                                         int64_t s1) {
    double raw = 0, about = 0;
    for (int64_t s = s0; s < s1; ++s) {
      const float* x = rows + sample_row(s, samples, n) * d;
      for (int64_t c = 0; c < d; ++c) {
        if (!std::isfinite(x[c])) continue;
        const double v = x[c], t = v - static_cast<double>(offset[static_cast<size_t>(c)]);
        raw += v * v, about += t * t;
      }
    }
    return std::pair{raw, about};
  });
  double raw = 0, about = 0;
  for (const auto& [r, a] : parts) raw += r, about += a;
  if (about <= 0) return raw > 0 ? INFINITY : 1.0;
  return raw / about;
}

int64_t nonzero(const std::vector<float>& offset) {
  return std::count_if(offset.begin(), offset.end(), [](float o) { return o != 0.f; });
}

}  // namespace

void moved_rows(const float* rows, int64_t n, int64_t d, const std::vector<float>& offset, float* to, int threads) {
  parallel_for(0, n, threads, [&](int64_t r) {
    for (int64_t c = 0; c < d; ++c) to[r * d + c] = rows[r * d + c] - offset[static_cast<size_t>(c)];
  });
}

void translate_rows(PreparedRows& rows, const std::vector<float>& offset, int threads) {
  if (rows.storage.empty()) rows.storage.resize(static_cast<size_t>(rows.rows * rows.cols));
  moved_rows(rows.data, rows.rows, rows.cols, offset, rows.storage.data(), threads);
  rows.data = rows.storage.data();
}

std::vector<int64_t> translation_sample_rows(int64_t n) {
  const int64_t samples = std::max<int64_t>(0, std::min(n, kOffsetRows));
  std::vector<int64_t> rows(static_cast<size_t>(samples));
  for (int64_t s = 0; s < samples; ++s) rows[static_cast<size_t>(s)] = sample_row(s, samples, n);
  return rows;
}

void mark_rounding_columns(const std::function<const float*(int64_t)>& row_at, int64_t count, int64_t d,
                           const std::vector<float>& offset, std::vector<unsigned char>& rounding, int threads) {
  // About 256 chunks (a sample of 1024 rows still spreads over the cores),
  // each marking its own d flags.
  const int64_t chunk = std::clamp<int64_t>(count / 256, 16, 1024);
  const int64_t chunks = (count + chunk - 1) / chunk;
  std::vector<std::vector<unsigned char>> marks(static_cast<size_t>(std::max<int64_t>(chunks, 0)));
  const float* o = offset.data();
  parallel_for(
      0, chunks, threads,
      [&](int64_t q) {
    std::vector<unsigned char>& bad = marks[static_cast<size_t>(q)];
    bad.assign(static_cast<size_t>(d), 0);
    for (int64_t r = q * chunk; r < std::min(count, (q + 1) * chunk); ++r) {
      const float* x = row_at(r);
      for (int64_t c = 0; c < d; ++c) bad[static_cast<size_t>(c)] |= !subtracts_exactly(x[c], o[c]);
    }
      },
      1);
  rounding.resize(static_cast<size_t>(d), 0);
  for (const auto& bad : marks)
    for (int64_t c = 0; c < d; ++c) rounding[static_cast<size_t>(c)] |= bad[static_cast<size_t>(c)];
}

namespace {

/// The offset with the columns `rounding` marks set to zero.
std::vector<float> without(std::vector<float> offset, const std::vector<unsigned char>& rounding) {
  for (size_t c = 0; c < offset.size(); ++c)
    if (rounding[c]) offset[c] = 0.f;
  return offset;
}

}  // namespace

Translation settle_translation(const Translation& exact_kind, const std::vector<unsigned char>& rounding,
                               const float* rows, int64_t n, int64_t d, int threads, bool rounded_allowed) {
  std::vector<float> offset = without(exact_kind.offset, rounding);
  const int64_t columns = nonzero(offset);
  if (columns == exact_kind.columns) return exact_kind;
  const int64_t samples = std::min(n, kOffsetRows);
  const double ratio = norm_ratio(rows, n, d, samples, offset, threads);
  if (!rounded_allowed)
    return ratio >= kMinNormRatio ? Translation{std::move(offset), ratio, columns, true} : Translation{};
  std::vector<float> mean = sample_means(rows, n, d, samples, threads);
  const double every_column = norm_ratio(rows, n, d, samples, mean, threads);
  if (ratio >= std::max(kMinNormRatio, every_column / 2)) return Translation{std::move(offset), ratio, columns, true};
  const int64_t moved = nonzero(mean);
  return Translation{std::move(mean), every_column, moved, false};
}

Translation choose_translation(const float* rows, int64_t n, int64_t d, int threads, bool rounded_allowed) {
  if (n < 2 || d < 1) return {};
  // Decided on a small sample first: most data sets (noise-like rows, or
  // rows already about their mean) skip the rest.
  const int64_t few = std::min(n, kDecisionRows);
  if (norm_ratio(rows, n, d, few, sample_means(rows, n, d, few, threads), threads) < kMinNormRatio) return {};
  const int64_t samples = std::min(n, kOffsetRows);
  std::vector<float> mean = sample_means(rows, n, d, samples, threads);
  const double every_column = norm_ratio(rows, n, d, samples, mean, threads);
  if (every_column < kMinNormRatio) return {};
  // The exact kind is worth a pass over every value only where it keeps at
  // least half the gain; the sample's own values say first (rows whose
  // values are on no common grid round in nearly every column).
  const double enough = std::max(kMinNormRatio, rounded_allowed ? every_column / 2 : 0.0);
  std::vector<unsigned char> rounding;
  mark_rounding_columns([&](int64_t s) { return rows + sample_row(s, samples, n) * d; }, samples, d, mean, rounding,
                        threads);
  std::vector<float> offset = without(mean, rounding);
  const double ratio = norm_ratio(rows, n, d, samples, offset, threads);
  if (ratio >= enough) {
    const Translation on_sample{offset, ratio, nonzero(offset), true};
    mark_rounding_columns([&](int64_t r) { return rows + r * d; }, n, d, offset, rounding, threads);
    return settle_translation(on_sample, rounding, rows, n, d, threads, rounded_allowed);
  }
  if (!rounded_allowed) return {};
  const int64_t columns = nonzero(mean);
  return Translation{std::move(mean), every_column, columns, false};
}

}  // namespace manifold::exact
