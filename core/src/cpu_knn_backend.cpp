// The CPU backend: squared distances ||x||^2 + ||y||^2 - 2 x.y from OpenBLAS
// SGEMM on square tiles, only tiles on and above the diagonal (the distance
// matrix is symmetric: each tile feeds the lists of its rows and of its
// columns), bounded per-row selection, all cores.
#include <cblas.h>  // openblas_{get,set}_num_threads

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>

#include "manifold/distance_tile.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "manifold/parallel.h"
#include "manifold/topk.h"

namespace manifold {
namespace {

constexpr int64_t kTile = kCpuTile;

class CpuKnnBackend final : public KnnBackend {
 public:
  std::string name() const override { return "cpu"; }

  KnnGraph build(const Dataset& data, const KnnParams& params, Progress& progress) override {
    validate(params, data.rows());
    const auto t0 = std::chrono::steady_clock::now();
    auto seconds_since = [](auto t) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    KnnGraph g;
    g.n = data.rows();
    g.d = data.cols();
    g.k = params.k;
    g.metric = params.metric;
    g.keep_self = params.keep_self;
    g.backend = "cpu";
    g.strategy = "heap";
    g.fingerprint = data.fingerprint();

    progress.stage("prepare", 1, "steps");
    PreparedRows rows = prepare_rows(data, params.metric);
    const int64_t n = rows.rows, d = rows.cols;
    std::vector<float> norms(static_cast<size_t>(n));
    const int threads = hardware_threads(params.threads);
    squared_norms(rows.data, n, d, norms.data(), threads);
    progress.finish();
    g.timings.emplace_back("prepare", seconds_since(t0));

    // Tiles (I, J) with J >= I.
    const int64_t nb = (n + kTile - 1) / kTile;
    std::vector<std::pair<int64_t, int64_t>> tiles;
    tiles.reserve(static_cast<size_t>(nb * (nb + 1) / 2));
    for (int64_t bi = 0; bi < nb; ++bi)
      for (int64_t bj = bi; bj < nb; ++bj) tiles.emplace_back(bi, bj);

    std::vector<TopK> lists(static_cast<size_t>(n), TopK(params.k));
    std::vector<std::mutex> block_locks(static_cast<size_t>(nb));
    const auto t1 = std::chrono::steady_clock::now();
    progress.stage("knn", tiles.size(), "tiles");

    // One BLAS thread per worker: our threads already cover the cores.
    const int saved_blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    struct RestoreBlas {
      int n;
      ~RestoreBlas() { openblas_set_num_threads(n); }
    } restore{saved_blas_threads};

    const bool keep_self = params.keep_self;
    auto work = [&](int64_t t) {
      thread_local std::vector<float> tile;
      tile.resize(static_cast<size_t>(kTile * kTile));
      const auto [bi, bj] = tiles[static_cast<size_t>(t)];
      const int64_t r0 = bi * kTile, rn = std::min(kTile, n - r0);
      const int64_t c0 = bj * kTile, cn = std::min(kTile, n - c0);
      distance_tile(rows.data + r0 * d, norms.data() + r0, rn, rows.data + c0 * d, norms.data() + c0, cn, d,
                    tile.data());
      {
        std::lock_guard lock(block_locks[static_cast<size_t>(bi)]);
        offer_to_rows(tile.data(), rn, cn, r0, c0, lists.data() + r0, keep_self);
      }
      if (bj != bi) {
        std::lock_guard lock(block_locks[static_cast<size_t>(bj)]);
        offer_to_columns(tile.data(), rn, cn, r0, c0, lists.data() + c0, keep_self);
      }
      progress.advance(1);
    };
    parallel_for(0, static_cast<int64_t>(tiles.size()), threads, work, 1);
    progress.finish();
    g.timings.emplace_back("distances+select", seconds_since(t1));

    const auto t2 = std::chrono::steady_clock::now();
    progress.stage("refine", 1, "steps");
    g.indices.resize(static_cast<size_t>(n * g.k));
    g.distances.resize(static_cast<size_t>(n * g.k));
    parallel_for(0, n, threads, [&](int64_t i) {
      auto sorted = lists[static_cast<size_t>(i)].take_sorted();
      for (int j = 0; j < g.k; ++j) {
        g.indices[i * g.k + j] = sorted[static_cast<size_t>(j)].index;
        g.distances[i * g.k + j] = sorted[static_cast<size_t>(j)].dist;
      }
    });
    refine_graph(rows, g, threads);
    progress.finish();
    g.timings.emplace_back("refine", seconds_since(t2));
    g.timings.emplace_back("total", seconds_since(t0));
    g.extra["threads"] = threads;
    g.extra["tile"] = kTile;
    g.extra["tiles"] = tiles.size();
    return g;
  }
};

}  // namespace

void register_cpu_backend() {
  register_backend("cpu", [] { return std::make_unique<CpuKnnBackend>(); });
}

}  // namespace manifold
