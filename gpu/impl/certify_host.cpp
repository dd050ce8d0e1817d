#include "impl/certify_host.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <utility>

#include "impl/refine_host.h"
#include "manifold/parallel.h"

namespace manifold::gpu {

float to_float_up(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, INFINITY);
  return f;
}

float certify_on_host(const float* rows, int64_t d, const HostLists& l, int k, const float* norms, double ymax,
                      const ErrorModel& m, Metric metric, bool complete, int threads, int64_t* out_index,
                      float* out_dist, int* status) {
  const bool euclidean = metric == Metric::Euclidean;
  std::atomic<float> max_use{0.f};
  parallel_for(0, l.n, threads, [&](int64_t g) {
    const int cap = l.capacity;
    const int f = l.fill[g];
    const float* ld = l.dist + g * cap;
    const int* li = l.index + g * cap;
    const double ni = norms[g];
    std::vector<float> upper(static_cast<size_t>(f));
    for (int t = 0; t < f; ++t) {
      const double a = ld[t];
      upper[static_cast<size_t>(t)] = to_float_up(upper64(a, entry_error(a, ni, norms[li[t]], m), m));
    }
    std::nth_element(upper.begin(), upper.begin() + (k - 1), upper.end());
    const float ukey = key_of(upper[static_cast<size_t>(k - 1)], euclidean);
    if (!complete && f == cap) {
      const double amax = ld[cap - 1];
      const double lmin = lower64(amax, entry_error(amax, ni, ymax, m), m);
      if (!(key_of(lmin, euclidean) > ukey)) {
        status[g] = -1;
        return;
      }
    }
    std::vector<std::pair<float, int>> cand;
    float use = 0.f;
    const float* x = rows + g * d;
    for (int t = 0; t < f; ++t) {
      const double a = ld[t];
      const int j = li[t];
      const double e = entry_error(a, ni, norms[j], m);
      if (!(key_of(lower64(a, e, m), euclidean) <= ukey)) continue;
      const double s = sum_sq_diff_like_device(x, rows + static_cast<int64_t>(j) * d, d);
      use = std::max(use, static_cast<float>(std::fabs(a - s) / e));
      cand.emplace_back(key_of(s, euclidean), j);
    }
    std::sort(cand.begin(), cand.end());
    for (int j = 0; j < k; ++j) {
      out_index[g * k + j] = cand[static_cast<size_t>(j)].second;
      out_dist[g * k + j] = cand[static_cast<size_t>(j)].first;
    }
    status[g] = static_cast<int>(cand.size());
    float seen = max_use.load();
    while (use > seen && !max_use.compare_exchange_weak(seen, use)) {
    }
  });
  return max_use.load();
}

void select_k_from_keys(const float* keys, int64_t n, int k, int64_t* out_index, float* out_dist) {
  std::vector<std::pair<float, int64_t>> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = {keys[j], j};
  const auto kth = v.begin() + std::min<int64_t>(k, n);
  std::nth_element(v.begin(), kth - 1, v.end());
  std::sort(v.begin(), kth);
  for (int j = 0; j < k && j < n; ++j) {
    out_index[j] = v[static_cast<size_t>(j)].second;
    out_dist[j] = v[static_cast<size_t>(j)].first;
  }
}

void fallback_on_host(const float* rows, int64_t n, int64_t d, const std::vector<int64_t>& fb, int k, Metric metric,
                      bool keep_self, int threads, int64_t* out_index, float* out_dist) {
  const bool euclidean = metric == Metric::Euclidean;
  std::vector<float> keys(static_cast<size_t>(n));
  for (int64_t g : fb) {
    const float* x = rows + g * d;
    parallel_for(0, n, threads, [&](int64_t j) {
      keys[static_cast<size_t>(j)] = (j == g && !keep_self)
                                         ? INFINITY
                                         : key_of(sum_sq_diff_like_device(x, rows + j * d, d), euclidean);
    });
    select_k_from_keys(keys.data(), n, k, out_index + g * k, out_dist + g * k);
  }
}

}  // namespace manifold::gpu
