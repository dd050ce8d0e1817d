#include "impl/refine_host.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "manifold/parallel.h"

namespace manifold::gpu {

// Lane l of a warp sums terms c = l, l+32, ...; then shfl_down by 16, 8, 4, 2, 1.
// The loop runs over 32 consecutive columns at a time, lane by lane, so each
// lane still adds its own terms in the device's order (the bits do not
// change) while the reads are contiguous and the 32 sums vectorise.
// Compiled with -ffp-contract=off (see CMakeLists.txt): no fused multiply-add.
double sum_sq_diff_like_device(const float* x, const float* y, int64_t d) {
  double lane[32] = {};
  int64_t c0 = 0;
  for (; c0 + 32 <= d; c0 += 32)
    for (int l = 0; l < 32; ++l) {
      const double t = static_cast<double>(x[c0 + l]) - static_cast<double>(y[c0 + l]);
      const double sq = t * t;
      lane[l] = lane[l] + sq;
    }
  for (int l = 0; c0 + l < d; ++l) {
    const double t = static_cast<double>(x[c0 + l]) - static_cast<double>(y[c0 + l]);
    const double sq = t * t;
    lane[l] = lane[l] + sq;
  }
  for (int off = 16; off > 0; off >>= 1)
    for (int l = 0; l < off; ++l) lane[l] = lane[l] + lane[l + off];
  return lane[0];
}

void refine_on_host(const float* rows, int64_t n, int64_t d, int k, const int* index, Metric metric, int threads,
                    int64_t* out_index, float* out_dist) {
  parallel_for(0, n, threads, [&](int64_t g) {
    std::vector<std::pair<float, int>> row(static_cast<size_t>(k));
    const float* x = rows + g * d;
    for (int j = 0; j < k; ++j) {
      const int nb = index[g * k + j];
      const double s = sum_sq_diff_like_device(x, rows + static_cast<int64_t>(nb) * d, d);
      row[static_cast<size_t>(j)] = {to_true_distance(static_cast<float>(s), metric), nb};
    }
    std::sort(row.begin(), row.end());
    for (int j = 0; j < k; ++j) {
      out_index[g * k + j] = row[static_cast<size_t>(j)].second;
      out_dist[g * k + j] = row[static_cast<size_t>(j)].first;
    }
  });
}

}  // namespace manifold::gpu
