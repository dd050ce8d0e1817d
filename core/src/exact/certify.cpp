#include "manifold/exact/certify.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <string>
#include <utility>

#include "manifold/error.h"
#include "manifold/parallel.h"

namespace manifold::exact {

// Lane l of a warp sums terms c = l, l+32, ...; then shfl_down by 16, 8, 4, 2, 1.
// The loop runs over 32 consecutive columns at a time, lane by lane, so each
// lane still adds its own terms in the device's order (the bits do not
// change) while the reads are contiguous and the 32 sums vectorise.
// Compiled with -ffp-contract=off (see core/CMakeLists.txt): no fused multiply-add.
// On x86-64 the loader picks an AVX-512 or AVX2 clone where the CPU has one:
// the same IEEE operations lane by lane (no FMA in any clone), so the same
// bits, in fewer instructions than the baseline x86-64 build's SSE2.
#if defined(__x86_64__) && defined(__ELF__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
double
exact_sum_sq_diff(const float* x, const float* y, int64_t d) {
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

namespace {

/// Rows certified together read each candidate row once for all of them
/// that need it, in index order: at large k the lists cover much of the data
/// and those reads, not the arithmetic, set the time. The block's own rows
/// stay in cache (about this many bytes of them), and so do its exact sums
/// (at most kMaxBlockRows x the list length doubles).
constexpr int64_t kBlockRowBytes = int64_t{256} << 10;
constexpr int64_t kMaxBlockRows = 16;
/// Evaluations of a block sorted by (candidate, row, survivor), packed; the
/// candidate biased by 2^31 (an index may be negative: the MPI backend's
/// rows start at its own, candidates before them).
constexpr int kSurvivorBits = 21, kRowBits = 5;
constexpr int64_t kIndexBias = int64_t{1} << 31;
static_assert(kMaxBlockRows <= (1 << kRowBits));

/// A row's candidates the bound could not rule out (their list slots) and
/// their exact sums once evaluated.
struct Survivors {
  std::vector<int> slot;
  std::vector<double> sum;
};

/// Row g's certificate: the key of its k-th smallest upper bound, and the
/// list slots of the candidates whose lower bound does not exceed it. False
/// where the list cannot certify the row (a full list whose last entry's
/// lower bound does not clear the k-th upper bound: a point outside it might
/// belong).
bool certify_candidates(const CertifyRequest& r, int64_t g, Survivors& survivors) {
  const bool euclidean = r.metric == Metric::Euclidean;
  const CandidateLists& l = r.lists;
  const ErrorModel& m = r.model;
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
  std::nth_element(upper.begin(), upper.begin() + (r.k - 1), upper.end());
  const float uk = upper[static_cast<size_t>(r.k - 1)];
  const float ukey = key_of(uk, euclidean);
  if (!r.complete && f == cap) {
    const double amax = ld[cap - 1];
    const double lmin = lower64(amax, entry_error(amax, ni, missing_norm_cap(ni, uk, r.ymax, m), m), m);
    if (!(key_of(lmin, euclidean) > ukey)) return false;
  }
  survivors.slot.clear();
  for (int t = 0; t < f; ++t) {
    const double a = ld[t];
    if (key_of(lower64(a, entry_error(a, ni, r.norms[li[t]], m), m), euclidean) <= ukey) survivors.slot.push_back(t);
  }
  survivors.sum.resize(survivors.slot.size());
  return true;
}

/// Row g's k nearest by (exact key, index) from its evaluated survivors;
/// the largest |a - s| / e among them, or -1 where fewer than k survived (a
/// valid bound keeps at least the k with the smallest upper bounds; fewer
/// means non-finite values: the exact scan decides the row).
float rank_survivors(const CertifyRequest& r, int64_t g, const Survivors& survivors, const CertifiedRows& out) {
  const bool euclidean = r.metric == Metric::Euclidean;
  const int k = r.k;
  const size_t count = survivors.slot.size();
  if (static_cast<int>(count) < k) {
    out.status[g] = -1;
    return -1.f;
  }
  const float* ld = r.lists.dist + g * r.lists.capacity;
  const int* li = r.lists.index + g * r.lists.capacity;
  std::vector<std::pair<float, int>> cand(count);
  float use = 0.f;
  for (size_t i = 0; i < count; ++i) {
    const int t = survivors.slot[i];
    const double a = ld[t], s = survivors.sum[i];
    use = std::max(use, static_cast<float>(std::fabs(a - s) / entry_error(a, r.norms[g], r.norms[li[t]], r.model)));
    cand[i] = {key_of(s, euclidean), li[t]};
  }
  std::sort(cand.begin(), cand.end());
  for (int j = 0; j < k; ++j) {
    out.index[g * k + j] = cand[static_cast<size_t>(j)].second;
    out.dist[g * k + j] = cand[static_cast<size_t>(j)].first;
  }
  out.status[g] = static_cast<int>(count);
  return use;
}

}  // namespace

float certify_rows(const CertifyRequest& r, const CertifiedRows& out) {
  const CandidateLists& l = r.lists;
  if (l.capacity > (1 << kSurvivorBits))
    throw Error("certify: lists of " + std::to_string(l.capacity) + " candidates are beyond the certificate's " +
                std::to_string(1 << kSurvivorBits));
  const int64_t block = std::clamp<int64_t>(kBlockRowBytes / std::max<int64_t>(1, r.d * 4), 1, kMaxBlockRows);
  constexpr uint64_t kSurvivorMask = (uint64_t{1} << kSurvivorBits) - 1, kRowMask = (1 << kRowBits) - 1;
  std::atomic<float> max_use{0.f};
  parallel_for(0, (l.n + block - 1) / block, r.threads, [&](int64_t b) {
    const int64_t g0 = b * block, rows = std::min(l.n, g0 + block) - g0;
    std::vector<Survivors> survivors(static_cast<size_t>(rows));
    std::vector<char> certifiable(static_cast<size_t>(rows));
    std::vector<uint64_t> order;
    for (int64_t q = 0; q < rows; ++q) {
      Survivors& v = survivors[static_cast<size_t>(q)];
      certifiable[static_cast<size_t>(q)] = certify_candidates(r, g0 + q, v);
      if (!certifiable[static_cast<size_t>(q)]) {
        out.status[g0 + q] = -1;
        continue;
      }
      const int* li = l.index + (g0 + q) * l.capacity;
      for (size_t i = 0; i < v.slot.size(); ++i)
        order.push_back(static_cast<uint64_t>(li[v.slot[i]] + kIndexBias) << (kRowBits + kSurvivorBits) |
                        static_cast<uint64_t>(q) << kSurvivorBits | i);
    }
    std::sort(order.begin(), order.end());
    for (uint64_t key : order) {
      const int64_t j = static_cast<int64_t>(key >> (kRowBits + kSurvivorBits)) - kIndexBias;
      const int64_t q = static_cast<int64_t>((key >> kSurvivorBits) & kRowMask);
      survivors[static_cast<size_t>(q)].sum[key & kSurvivorMask] = exact_sum_sq_diff(r.rows + (g0 + q) * r.d,
                                                                                     r.rows + j * r.d, r.d);
    }
    float use = 0.f;
    for (int64_t q = 0; q < rows; ++q)
      if (certifiable[static_cast<size_t>(q)])
        use = std::max(use, rank_survivors(r, g0 + q, survivors[static_cast<size_t>(q)], out));
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
