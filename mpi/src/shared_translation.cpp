#include "shared_translation.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "manifold/parallel.h"

namespace manifold::mpi {

namespace {

// core/src/exact/translation.cpp's sample (kOffsetRows) and the blocks its
// sums run over (kSampleBlock): the partial sums of each block of 32 sample
// rows, added in block order.
constexpr int64_t kSampleRows = 1024;
constexpr int64_t kSampleBlock = 32;

/// Calls block(first, last) for blocks of kSampleBlock rows of the sample,
/// in parallel; their results in block order.
template <class T, class Block>
std::vector<T> over_blocks(int64_t samples, int threads, Block&& block) {
  const int64_t blocks = (samples + kSampleBlock - 1) / kSampleBlock;
  std::vector<T> out(static_cast<size_t>(blocks));
  parallel_for(0, blocks, threads, [&](int64_t b) {
    out[static_cast<size_t>(b)] = block(b * kSampleBlock, std::min(samples, (b + 1) * kSampleBlock));
  });
  return out;
}

/// Column means of the sample's finite values, rounded to float32 (core's
/// sample_means).
std::vector<float> column_means(const float* sample, int64_t samples, int64_t d, int threads) {
  struct Sums {
    std::vector<double> sum;
    std::vector<int64_t> count;
  };
  const std::vector<Sums> parts = over_blocks<Sums>(samples, threads, [&](int64_t s0, int64_t s1) {
    Sums p{std::vector<double>(static_cast<size_t>(d), 0.0), std::vector<int64_t>(static_cast<size_t>(d), 0)};
    for (int64_t s = s0; s < s1; ++s) {
      const float* x = sample + s * d;
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

/// Mean |x|^2 over mean |x - offset|^2 on the sample's finite values (core's
/// norm_ratio).
double norm_ratio(const float* sample, int64_t samples, int64_t d, const std::vector<float>& offset, int threads) {
  using Pair = std::pair<double, double>;
  const std::vector<Pair> parts = over_blocks<Pair>(samples, threads, [&](int64_t s0, int64_t s1) {
    double raw = 0, about = 0;
    for (int64_t s = s0; s < s1; ++s) {
      const float* x = sample + s * d;
      for (int64_t c = 0; c < d; ++c) {
        if (!std::isfinite(x[c])) continue;
        const double v = x[c], t = v - static_cast<double>(offset[static_cast<size_t>(c)]);
        raw += v * v, about += t * t;
      }
    }
    return Pair{raw, about};
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

std::vector<int64_t> sample_row_indices(int64_t n) {
  const int64_t samples = std::min(n, kSampleRows);
  std::vector<int64_t> rows(static_cast<size_t>(std::max<int64_t>(samples, 0)));
  for (int64_t s = 0; s < samples; ++s) rows[static_cast<size_t>(s)] = s * n / samples;
  return rows;
}

exact::Translation translation_of_sample(const float* sample, int64_t samples, int64_t d, int threads) {
  return exact::choose_translation(sample, samples, d, threads, /*rounded_allowed=*/true);
}

void mark_inexact_columns(const std::function<const float*(int64_t)>& row, int64_t n, int64_t d,
                          const std::vector<float>& offset, std::vector<unsigned char>& inexact, int threads) {
  // Chunks of rows, each marking its own flags (no sharing between workers).
  const int64_t chunk = std::clamp<int64_t>(n / 256, 16, 1024);
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<std::vector<unsigned char>> marks(static_cast<size_t>(std::max<int64_t>(chunks, 0)));
  const float* o = offset.data();
  parallel_for(
      0, chunks, threads,
      [&](int64_t q) {
    std::vector<unsigned char>& bad = marks[static_cast<size_t>(q)];
    bad.assign(static_cast<size_t>(d), 0);
    for (int64_t r = q * chunk; r < std::min(n, (q + 1) * chunk); ++r) {
      const float* x = row(r);
      for (int64_t c = 0; c < d; ++c) bad[static_cast<size_t>(c)] |= !exact::subtracts_exactly(x[c], o[c]);
    }
      },
      1);
  for (const auto& bad : marks)
    for (int64_t c = 0; c < d; ++c) inexact[static_cast<size_t>(c)] |= bad[static_cast<size_t>(c)];
}

exact::Translation settle_exact_translation(const exact::Translation& on_sample,
                                            const std::vector<unsigned char>& inexact, const float* sample,
                                            int64_t samples, int64_t d, int threads) {
  std::vector<float> offset = on_sample.offset;
  for (int64_t c = 0; c < d; ++c)
    if (inexact[static_cast<size_t>(c)]) offset[static_cast<size_t>(c)] = 0.f;
  const int64_t columns = nonzero(offset);
  if (columns == on_sample.columns) return on_sample;
  // choose_translation's rule after its pass over every value dropped
  // columns: the exact kind only while it keeps half of what moving every
  // column gains (and at least kMinNormRatio).
  std::vector<float> mean = column_means(sample, samples, d, threads);
  const double every_column = norm_ratio(sample, samples, d, mean, threads);
  const double enough = std::max(exact::kMinNormRatio, every_column / 2);
  const double ratio = norm_ratio(sample, samples, d, offset, threads);
  if (ratio >= enough) return exact::Translation{std::move(offset), ratio, columns, true};
  const int64_t moved = nonzero(mean);
  return exact::Translation{std::move(mean), every_column, moved, false};
}

void broadcast_translation(exact::Translation& t, int64_t d, int root, MPI_Comm comm) {
  // {any, exact, columns, norm_ratio}: columns <= d, exact in a double.
  double head[4] = {t.any() ? 1.0 : 0.0, t.exact ? 1.0 : 0.0, static_cast<double>(t.columns), t.norm_ratio};
  MPI_Bcast(head, 4, MPI_DOUBLE, root, comm);
  t.exact = head[1] != 0, t.columns = static_cast<int64_t>(head[2]), t.norm_ratio = head[3];
  t.offset.resize(head[0] != 0 ? static_cast<size_t>(d) : 0);
  if (!t.offset.empty()) MPI_Bcast(t.offset.data(), static_cast<int>(d), MPI_FLOAT, root, comm);
}

}  // namespace manifold::mpi
