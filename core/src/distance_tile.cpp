#include "manifold/distance_tile.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

#include "manifold/error.h"
#include "manifold/exact/error_bound.h"
#include "manifold/parallel.h"

namespace manifold {

void squared_norms(const float* rows, int64_t n, int64_t d, float* norms, int threads) {
  std::atomic<int64_t> too_large{-1};
  std::atomic<double> largest{0};
  parallel_for(0, n, threads, [&](int64_t i) {
    const float* x = rows + i * d;
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += static_cast<double>(x[c]) * x[c];
    norms[i] = static_cast<float>(s);
    if (std::isfinite(s) && s > kMaxSquaredNorm) {
      int64_t none = -1;
      if (too_large.compare_exchange_strong(none, i)) largest = s;
    }
  });
  if (too_large >= 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "row %lld has squared norm %.3g: float32 distances overflow above %.2g; rescale the data "
                  "(divide by %.0e or more)",
                  static_cast<long long>(too_large.load()), largest.load(), kMaxSquaredNorm,
                  std::pow(10.0, std::ceil(std::log10(std::sqrt(largest.load() / kMaxSquaredNorm)))));
    throw Error(buf);
  }
}

void distance_tile(const float* r, const float* norms_r, int64_t rn, const float* c, const float* norms_c, int64_t cn,
                   int64_t d, float* tile) {
  // The dot products in chunks of dot_product_chunk(d) columns, each added
  // to the tile (beta = 1): the rounding error stays that of
  // dot_product_terms(d) summands (exact/error_bound.h) however large d is.
  const int64_t chunk = exact::dot_product_chunk(d);
  for (int64_t c0 = 0; c0 < d; c0 += chunk) {
    const int64_t w = std::min<int64_t>(chunk, d - c0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rn), static_cast<int>(cn),
                static_cast<int>(w), 1.0f, r + c0, static_cast<int>(d), c + c0, static_cast<int>(d),
                c0 == 0 ? 0.0f : 1.0f, tile, static_cast<int>(cn));
  }
  for (int64_t i = 0; i < rn; ++i) {
    float* row = tile + i * cn;
    const float ni = norms_r[i];
    for (int64_t j = 0; j < cn; ++j) row[j] = ni + norms_c[j] - 2.0f * row[j];
  }
}

void offer_to_rows(const float* tile, int64_t rn, int64_t cn, int64_t r0, int64_t c0, TopK* lists, bool keep_self) {
  for (int64_t i = 0; i < rn; ++i) {
    TopK& list = lists[i];
    const float* row = tile + i * cn;
    float bound = list.bound();
    for (int64_t j = 0; j < cn; ++j) {
      if (row[j] > bound) continue;
      const int64_t col = c0 + j;
      if (!keep_self && col == r0 + i) continue;
      list.push(row[j], col);
      bound = list.bound();
    }
  }
}

void offer_to_columns(const float* tile, int64_t rn, int64_t cn, int64_t r0, int64_t c0, TopK* lists, bool keep_self) {
  for (int64_t j = 0; j < cn; ++j) {
    TopK& list = lists[j];
    float bound = list.bound();
    for (int64_t i = 0; i < rn; ++i) {
      const float v = tile[i * cn + j];
      if (v > bound) continue;
      if (!keep_self && r0 + i == c0 + j) continue;
      list.push(v, r0 + i);
      bound = list.bound();
    }
  }
}

SingleThreadedBlas::SingleThreadedBlas() : saved_threads_(openblas_get_num_threads()) { openblas_set_num_threads(1); }

SingleThreadedBlas::~SingleThreadedBlas() { openblas_set_num_threads(saved_threads_); }

}  // namespace manifold
