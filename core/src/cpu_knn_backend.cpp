// The CPU backend: squared distances ||x||^2 + ||y||^2 - 2 x.y from OpenBLAS
// SGEMM on square tiles, only tiles on and above the diagonal (the distance
// matrix is symmetric: each tile feeds the lists of its rows and of its
// columns), bounded per-row selection, all cores.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <memory>
#include <mutex>

#include "manifold/distance_tile.h"
#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/exact/translation.h"
#include "manifold/knn.h"
#include "manifold/parallel.h"
#include "manifold/topk.h"

namespace manifold {
namespace {

constexpr int64_t kTile = kCpuTile;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The rows prepared for the metric and the rows the loop multiplies: the
/// same, or moved about their mean where that narrows the certificate's
/// bound (manifold/exact/translation.h: the graph is the same bit for bit;
/// after a rounded move the exact keys still come from `rows`), with the
/// loop rows' squared norms.
struct PreparedInput {
  PreparedRows rows;
  exact::Translation translation;
  ResultVector<float> moved;         ///< the rounded kind's moved rows, else empty (written whole)
  const float* loop_rows = nullptr;  ///< rows.data, or moved
  std::vector<float> norms;          ///< of loop_rows
};

PreparedInput prepare_input(const Dataset& data, Metric metric, int threads, Progress& progress) {
  progress.stage("prepare", 1, "steps");
  PreparedInput in;
  in.rows = prepare_rows(data, metric);
  in.translation = exact::choose_translation(in.rows.data, in.rows.rows, in.rows.cols, threads, true);
  if (in.translation.any() && in.translation.exact) exact::translate_rows(in.rows, in.translation.offset, threads);
  in.loop_rows = in.rows.data;
  if (in.translation.any() && !in.translation.exact) {
    in.moved.resize(static_cast<size_t>(in.rows.rows * in.rows.cols));
    exact::moved_rows(in.rows.data, in.rows.rows, in.rows.cols, in.translation.offset, in.moved.data(), threads);
    in.loop_rows = in.moved.data();
  }
  in.norms.resize(static_cast<size_t>(in.rows.rows));
  try {
    squared_norms(in.loop_rows, in.rows.rows, in.rows.cols, in.norms.data(), threads);
  } catch (const Error& e) {
    throw Error(data.source + (data.source.empty() ? "" : ": ") + e.what());
  }
  progress.finish();
  return in;
}

/// Tiles (I, J) with J >= I of n rows.
std::vector<std::pair<int64_t, int64_t>> upper_tiles(int64_t n) {
  const int64_t nb = (n + kTile - 1) / kTile;
  std::vector<std::pair<int64_t, int64_t>> tiles;
  tiles.reserve(static_cast<size_t>(nb * (nb + 1) / 2));
  for (int64_t bi = 0; bi < nb; ++bi)
    for (int64_t bj = bi; bj < nb; ++bj) tiles.emplace_back(bi, bj);
  return tiles;
}

/// Every row's `capacity` nearest candidates by GEMM distance: each tile
/// offers its distances to the lists of its rows and (off the diagonal) of
/// its columns.
std::vector<TopK> candidate_lists(const PreparedInput& in, const std::vector<std::pair<int64_t, int64_t>>& tiles,
                                  int capacity, bool keep_self, int threads, Progress& progress) {
  const int64_t n = in.rows.rows, d = in.rows.cols;
  const float* rows = in.loop_rows;
  const float* norms = in.norms.data();
  std::vector<TopK> lists(static_cast<size_t>(n), TopK(capacity));
  std::vector<std::mutex> block_locks(static_cast<size_t>((n + kTile - 1) / kTile));
  progress.stage("knn", tiles.size(), "tiles");

  const SingleThreadedBlas one_blas_thread;  // our threads already cover the cores

  auto work = [&](int64_t t) {
    thread_local std::vector<float> tile;
    tile.resize(static_cast<size_t>(kTile * kTile));
    const auto [bi, bj] = tiles[static_cast<size_t>(t)];
    const int64_t r0 = bi * kTile, rn = std::min(kTile, n - r0);
    const int64_t c0 = bj * kTile, cn = std::min(kTile, n - c0);
    distance_tile(rows + r0 * d, norms + r0, rn, rows + c0 * d, norms + c0, cn, d, tile.data());
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
  return lists;
}

/// What certification reports in the graph's extra facts.
struct CertifyStats {
  int capacity = 0;
  double reevaluated_per_row = 0;
  size_t fallback_rows = 0;
  float error_bound_max_use = 0;
  double error_bound_largest_norm = 0;  ///< the largest stored squared norm (the bound's ymax)
  void add_to(nlohmann::json& extra) const {
    extra["capacity"] = capacity;
    extra["reevaluated_per_row"] = reevaluated_per_row;
    extra["fallback_rows"] = fallback_rows;
    extra["error_bound_max_use"] = error_bound_max_use;
    extra["error_bound_largest_norm"] = error_bound_largest_norm;
  }
};

/// The exact ranking of every row into g's lists, certified from the
/// candidates (manifold/exact/certify.h); rows the bound cannot certify are
/// ranked by an exact scan.
CertifyStats certify_lists(const PreparedInput& in, std::vector<TopK> lists, int capacity, const KnnParams& params,
                           int threads, KnnGraph& g, Progress& progress) {
  const int64_t n = in.rows.rows, d = in.rows.cols;
  const int64_t others = params.keep_self ? n : n - 1;
  progress.stage("certify", 1, "steps");
  std::vector<float> cand_dist(static_cast<size_t>(n) * capacity);
  std::vector<int> cand_index(static_cast<size_t>(n) * capacity);
  std::vector<int> fill(static_cast<size_t>(n));
  parallel_for(0, n, threads, [&](int64_t i) {
    auto sorted = lists[static_cast<size_t>(i)].take_sorted();
    fill[static_cast<size_t>(i)] = static_cast<int>(sorted.size());
    for (size_t j = 0; j < sorted.size(); ++j) {
      cand_dist[static_cast<size_t>(i) * capacity + j] = sorted[j].dist;
      cand_index[static_cast<size_t>(i) * capacity + j] = static_cast<int>(sorted[j].index);
    }
  });
  lists = {};
  g.allocate_result();
  std::vector<int> status(static_cast<size_t>(n));
  exact::CertifyRequest req;
  req.rows = in.rows.data, req.d = d, req.k = g.k, req.norms = in.norms.data();
  req.lists = {cand_dist.data(), cand_index.data(), fill.data(), n, capacity};
  req.ymax = n ? *std::max_element(in.norms.begin(), in.norms.end()) : 0.0;
  req.model = exact::make_error_model(d, exact::DotArithmetic::Float32, !in.translation.exact);
  req.metric = params.metric;
  req.complete = capacity == others, req.threads = threads;
  CertifyStats stats;
  stats.capacity = capacity, stats.error_bound_largest_norm = req.ymax;
  stats.error_bound_max_use = exact::certify_rows(req, {g.indices.data(), g.distances.data(), status.data()});
  std::vector<int64_t> uncertified;
  int64_t reevaluated = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (status[static_cast<size_t>(i)] < 0) uncertified.push_back(i);
    else
      reevaluated += status[static_cast<size_t>(i)];
  }
  progress.finish();
  if (!uncertified.empty()) {
    // Dense neighbourhoods inside the bound: rank those rows by an exact scan.
    progress.stage("exact scan", uncertified.size(), "rows");
    const exact::ExactScanRequest scan{in.rows.data, n, d, g.k, params.metric, params.keep_self, threads};
    exact::exact_scan_rows(scan, uncertified, g.indices.data(), g.distances.data());
    progress.finish();
  }
  stats.reevaluated_per_row = n ? static_cast<double>(reevaluated) / static_cast<double>(n) : 0.0;
  stats.fallback_rows = uncertified.size();
  return stats;
}

class CpuKnnBackend final : public KnnBackend {
 public:
  std::string name() const override { return "cpu"; }

  KnnGraph build(const Dataset& data, const KnnParams& params, Progress& progress) override {
    validate(params, data.rows());
    const auto t0 = std::chrono::steady_clock::now();
    KnnGraph g = empty_graph(data, params, "cpu");
    g.strategy = "nth_element";
    g.fingerprint = data.fingerprint();

    const int threads = hardware_threads(params.threads);
    const PreparedInput in = prepare_input(data, params.metric, threads, progress);
    const int64_t n = in.rows.rows, d = in.rows.cols;
    g.timings.emplace_back("prepare", seconds_since(t0));

    const std::vector<std::pair<int64_t, int64_t>> tiles = upper_tiles(n);
    // Lists keep k + slack candidates so the certificate can prove the exact
    // ranking from them (manifold/exact/certify.h).
    if (n >= INT_MAX)
      throw Error("the CPU backend indexes rows with 32-bit integers: " + std::to_string(n) + " rows is too many");
    const int64_t others = params.keep_self ? n : n - 1;
    const int capacity = static_cast<int>(std::min<int64_t>(others,
                                                            int64_t{params.k} + exact::exact_slack(params.k, d)));
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<TopK> lists = candidate_lists(in, tiles, capacity, params.keep_self, threads, progress);
    g.timings.emplace_back("distances+select", seconds_since(t1));

    const auto t2 = std::chrono::steady_clock::now();
    const CertifyStats certified = certify_lists(in, std::move(lists), capacity, params, threads, g, progress);
    certified.add_to(g.extra);
    g.timings.emplace_back("certify", seconds_since(t2));
    g.timings.emplace_back("total", seconds_since(t0));
    g.extra["translated_columns"] = in.translation.columns;
    if (in.translation.any()) {
      g.extra["translation_norm_ratio"] = in.translation.norm_ratio;
      g.extra["translation_exact"] = in.translation.exact;
    }
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
