#include "impl/refine_host.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "manifold/exact/certify.h"
#include "manifold/parallel.h"

namespace manifold::gpu {

double sum_sq_diff_like_device(const float* x, const float* y, int64_t d) { return exact::exact_sum_sq_diff(x, y, d); }

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
