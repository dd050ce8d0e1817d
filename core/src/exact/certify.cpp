#include "manifold/exact/certify.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <utility>

#include "manifold/parallel.h"

namespace manifold::exact {

// Lane l of a warp sums terms c = l, l+32, ...; then shfl_down by 16, 8, 4, 2, 1.
// The loop runs over 32 consecutive columns at a time, lane by lane, so each
// lane still adds its own terms in the device's order (the bits do not
// change) while the reads are contiguous and the 32 sums vectorise.
// Compiled with -ffp-contract=off (see core/CMakeLists.txt): no fused multiply-add.
double exact_sum_sq_diff(const float* x, const float* y, int64_t d) {
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

float to_float_up(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, INFINITY);
  return f;
}

float certify_rows(const CertifyRequest& r, const CertifiedRows& out) {
  const bool euclidean = r.metric == Metric::Euclidean;
  const CandidateLists& l = r.lists;
  const ErrorModel& m = r.model;
  const int k = r.k;
  std::atomic<float> max_use{0.f};
  parallel_for(0, l.n, r.threads, [&](int64_t g) {
    const int cap = l.capacity;
    const int f = l.fill[g];
    const float* ld = l.dist + g * cap;
    const int* li = l.index + g * cap;
    const double ni = r.norms[g];
    std::vector<float> upper(static_cast<size_t>(f));
    for (int t = 0; t < f; ++t) {
      const double a = ld[t];
      upper[static_cast<size_t>(t)] = to_float_up(upper64(a, entry_error(a, ni, r.norms[li[t]], m), m));
    }
    std::nth_element(upper.begin(), upper.begin() + (k - 1), upper.end());
    const float ukey = key_of(upper[static_cast<size_t>(k - 1)], euclidean);
    if (!r.complete && f == cap) {
      const double amax = ld[cap - 1];
      const double lmin = lower64(amax, entry_error(amax, ni, r.ymax, m), m);
      if (!(key_of(lmin, euclidean) > ukey)) {
        out.status[g] = -1;
        return;
      }
    }
    std::vector<std::pair<float, int>> cand;
    float use = 0.f;
    const float* x = r.rows + g * r.d;
    for (int t = 0; t < f; ++t) {
      const double a = ld[t];
      const int j = li[t];
      const double e = entry_error(a, ni, r.norms[j], m);
      if (!(key_of(lower64(a, e, m), euclidean) <= ukey)) continue;
      const double s = exact_sum_sq_diff(x, r.rows + static_cast<int64_t>(j) * r.d, r.d);
      use = std::max(use, static_cast<float>(std::fabs(a - s) / e));
      cand.emplace_back(key_of(s, euclidean), j);
    }
    // A valid bound keeps at least the k candidates with the smallest upper
    // bounds; fewer means the bound could not be evaluated (non-finite
    // values): the exact scan decides the row instead.
    if (static_cast<int>(cand.size()) < k) {
      out.status[g] = -1;
      return;
    }
    std::sort(cand.begin(), cand.end());
    for (int j = 0; j < k; ++j) {
      out.index[g * k + j] = cand[static_cast<size_t>(j)].second;
      out.dist[g * k + j] = cand[static_cast<size_t>(j)].first;
    }
    out.status[g] = static_cast<int>(cand.size());
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

void exact_scan_row(const ExactScanRequest& r, int64_t g, std::vector<float>& keys, int64_t* out_index,
                    float* out_dist) {
  const bool euclidean = r.metric == Metric::Euclidean;
  keys.resize(static_cast<size_t>(r.n));
  const float* x = r.rows + g * r.d;
  parallel_for(0, r.n, r.threads, [&](int64_t j) {
    keys[static_cast<size_t>(j)] = (j == g && !r.keep_self)
                                       ? INFINITY
                                       : key_of(exact_sum_sq_diff(x, r.rows + j * r.d, r.d), euclidean);
  });
  select_k_from_keys(keys.data(), r.n, r.k, out_index, out_dist);
}

void exact_scan_rows(const ExactScanRequest& r, const std::vector<int64_t>& rows_to_scan, int64_t* out_index,
                     float* out_dist) {
  std::vector<float> keys;
  for (int64_t g : rows_to_scan) exact_scan_row(r, g, keys, out_index + g * r.k, out_dist + g * r.k);
}

}  // namespace manifold::exact
