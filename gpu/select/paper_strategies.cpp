// The papers' selection strategies (quick, sort, heap, bitonic) on one GPU,
// through the engine's tile loop (device_engine.h): the engine uploads the
// rows (all resident), computes each tile's dot products with cuBLAS SGEMM
// (float32, never TF32) -- the diagonal tiles first, so every row has a
// bound before the strips -- and hands them to the strategy's selection
// (PaperSelection below) instead of its own filter and merge. Each tile
// feeds the lists of its rows and, above the diagonal, of its columns (the
// distance matrix is symmetric). Every row keeps k + slack candidates (the
// engine's capacity, final_step.h); heap and quick keep them unordered, so
// each range of rows is ordered by (distance, index) as soon as its lists
// are final, and the engine's final step certifies it -- beside the loop,
// as for the engine's own strategies. Only the selection differs between
// strategies (select/*.cu); every one keeps, for every row, the capacity
// smallest (float32 distance, index) keys, so all four hand the final step
// the same lists: the exact graph, the same as every other backend's.
#include "select/paper_strategies.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <exception>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "device_context.h"
#include "device_engine.h"
#include "final_step.h"
#include "impl/kernels.h"
#include "manifold/error.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "select/select_kernels.h"
#include "settings.h"
#include "tile_plan.h"
#include "utils/cuda_check.h"
#include "utils/deferred_fingerprint.h"
#include "utils/device_memory.h"
#include "utils/format.h"
#include "utils/resources.h"

namespace manifold::gpu::select {

bool is_paper_strategy(Select s) {
  return s == Select::Quick || s == Select::Sort || s == Select::Heap || s == Select::Bitonic;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// Tile height T (rows of a block) and width W (columns per tile): 2048 x
/// 4096 (32 MB of float32, within the L2 cache; the engine's own cuBLAS
/// tiles widen with N, tile_plan.cpp), smaller for small N.
/// Settings::select_tile = "TxW" overrides (tests use it to run many tiles
/// on small data).
std::pair<int, int> tile_shape(int64_t n) {
  int T = static_cast<int>(std::min<int64_t>(2048, n));
  int W = static_cast<int>(std::min<int64_t>(4096, n));
  if (const std::string& o = settings().select_tile; !o.empty()) {
    int t = 0, w = 0;
    char x = 0;
    // T <= W: a row slot (capacity W) must hold a diagonal tile's row.
    // 65536: the sort strategy packs tile rows and columns in 16 bits each.
    if (std::sscanf(o.c_str(), "%d%c%d", &t, &x, &w) != 3 || x != 'x' || t < 1 || w < t || w > 65536 ||
        static_cast<int64_t>(t) * w > (int64_t{1} << 26))
      throw UsageError("select tile: '" + o + "' is not TxW with 1 <= T <= W <= 65536 and T*W <= 2^26");
    T = static_cast<int>(std::min<int64_t>(t, n));
    W = static_cast<int>(std::min<int64_t>(w, n));
  }
  return {T, W};
}

/// Device bytes this build may use: what is free (with what the device's
/// context already holds), less room for the CUDA context's own growth and
/// for other processes; at most --gpu-memory.
uint64_t free_budget(const DeviceContext& ctx, uint64_t requested) {
  const size_t free_b = device_free_bytes();
  const uint64_t usable = (free_b > (uint64_t{512} << 20) ? static_cast<uint64_t>(free_b * 0.92) - (uint64_t{256} << 20)
                                                          : free_b / 2) +
                          ctx.held_bytes();
  return requested ? std::min<uint64_t>(requested, usable) : usable;
}

/// Whether a list capacity fits the strategy's and the final step's shared memory.
bool capacity_fits(Select strategy, int cap, int W, size_t shared_optin) {
  if (certify_shared_bytes(cap) > shared_optin) return false;
  if (strategy == Select::Bitonic && bitonic_shared_bytes(cap, W) > shared_optin) return false;
  if ((strategy == Select::Heap || strategy == Select::Quick) && sort_lists_shared_bytes(cap) > shared_optin)
    return false;
  return true;
}

}  // namespace

int largest_k(Select strategy, int64_t n, int64_t d, bool keep_self, int W, size_t shared_optin) {
  // The capacity grows with k: the largest k whose capacity fits, by bisection.
  auto fits = [&](int k) { return capacity_fits(strategy, list_capacity(k, n, keep_self, false, d), W, shared_optin); };
  int lo = 0, hi = kMaxNeighbours;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid;
    else
      hi = mid;
  }
  return lo;
}

namespace {

/// One strategy's selection buffers and kernels behind the engine's tile
/// loop: quick, heap and bitonic share the slot filter and its candidate
/// slots (select_kernels.h Slots), quick adds its scratch arrays; sort keeps
/// the tile's triples and CUB's storage. One set of buffers serves every
/// tile: the filter and the selection of consecutive tiles queue on one
/// stream.
class PaperSelection final : public TileSelection {
 public:
  /// Device bytes the buffers take for lists of `cap` entries and tiles of T x W.
  static uint64_t bytes(Select strategy, int cap, int T, int W, int sms) {
    const uint64_t TW = static_cast<uint64_t>(T) * W, TpW = static_cast<uint64_t>(T) + W;
    if (strategy == Select::Sort)
      return 3 * TW * 8 + sort_temp_bytes(T, W) + (2 * TpW + 1) * 4 +
             static_cast<uint64_t>(sort_merge_blocks(sms)) * cap * 8;
    uint64_t b = 2 * TW * 8 + TpW * 8 + 8 + 8;
    if (strategy == Select::Quick)
      b += static_cast<uint64_t>(quick_workers(quick_variant(cap), sms, T + W)) * 2 * (cap + static_cast<uint64_t>(W)) *
           8;
    return b;
  }

  PaperSelection(Select strategy, int cap, int T, int W, int sms, cudaStream_t s)
      : strategy_(strategy), W_(W), total_(1, "allocating a counter") {
    cuda_check(cudaMemsetAsync(total_.data(), 0, sizeof(unsigned long long), s), "clearing a counter");
    const size_t TW = static_cast<size_t>(T) * W, TpW = static_cast<size_t>(T) + W;
    if (strategy == Select::Sort) {
      for (int i = 0; i < 3; ++i) {
        keys_[i].reset(TW, "allocating the sort keys");
        sb_.keys[i] = keys_[i].data();
      }
      sb_.temp_bytes = sort_temp_bytes(T, W);
      temp_.reset(sb_.temp_bytes, "allocating the radix sort's temporary storage");
      counts_.reset(2 * TpW + 1, "allocating the sort counters");
      const size_t merged = static_cast<size_t>(sort_merge_blocks(sms)) * cap;
      merge_dist_.reset(merged, "allocating the sort merge buffers");
      merge_index_.reset(merged, "allocating the sort merge buffers");
      sb_.row_count = counts_.data();
      sb_.col_count = sb_.row_count + T;
      sb_.row_start = sb_.col_count + W;
      sb_.col_start = sb_.row_start + T;
      sb_.n_items = sb_.col_start + W;
      sb_.temp = temp_.data();
      sb_.merge_dist = merge_dist_.data();
      sb_.merge_index = merge_index_.data();
      sb_.T = T, sb_.W = W;
      return;
    }
    cand_dist_.reset(2 * TW, "allocating the candidate buffers");
    cand_index_.reset(2 * TW, "allocating the candidate buffers");
    counts_.reset(2 * TpW, "allocating the candidate buffers");
    n_dirty_.reset(1, "allocating the candidate buffers");
    slots_.dist = cand_dist_.data();
    slots_.index = cand_index_.data();
    slots_.count = counts_.data();
    slots_.dirty = slots_.count + TpW;
    slots_.n_dirty = n_dirty_.data();
    slots_.total = total_.data();
    slots_.T = T, slots_.W = W;
    cuda_check(cudaMemsetAsync(slots_.count, 0, TpW * sizeof(int), s), "clearing the candidate counters");
    if (strategy == Select::Quick) {
      q_cap_ = cap + W;
      q_workers_ = quick_workers(quick_variant(cap), sms, T + W);
      q_dist_.reset(static_cast<size_t>(q_workers_) * 2 * q_cap_, "allocating the quick-select arrays");
      q_index_.reset(static_cast<size_t>(q_workers_) * 2 * q_cap_, "allocating the quick-select arrays");
    }
  }

  void select(const TileView& view, const ListsView& lists, const float* thr, cudaStream_t s,
              const Event& dots_read) override {
    Tile tile;
    tile.dots = view.dots;
    tile.ld = view.ld;
    tile.rows = view.rows, tile.cols = view.cols;
    tile.r0 = view.r0, tile.c0 = view.c0;
    tile.col_role = view.col_role_from < view.cols;  // above the diagonal
    tile.row_norms = view.row_norms, tile.col_norms = view.col_norms;
    tile.keep_self = view.keep_self;
    if (strategy_ == Select::Sort) {
      cuda_check(cudaMemsetAsync(sb_.row_count, 0, sizeof(int) * (static_cast<size_t>(sb_.T) + sb_.W), s),
                 "clearing the sort counters");
      cuda_check(cudaMemsetAsync(sb_.n_items, 0, sizeof(int), s), "clearing the sort counters");
      launch_sort_filter(tile, thr, sb_, s);
      dots_read.record(s);
      // CUB takes the number of keys from the host.
      cuda_check(cudaMemcpyAsync(items_.data(), sb_.n_items, sizeof(int), cudaMemcpyDeviceToHost, s),
                 "reading the tile's triple count");
      cuda_check(cudaStreamSynchronize(s), "filtering a distance tile");
      sorted_ += static_cast<unsigned long long>(*items_.data());
      sort_select_tile(lists, tile, sb_, *items_.data(), s);
      return;
    }
    cuda_check(cudaMemsetAsync(slots_.n_dirty, 0, sizeof(int), s), "clearing the candidate counters");
    slots_.r0 = tile.r0, slots_.c0 = tile.c0;
    launch_slot_filter(tile, thr, slots_, s);
    dots_read.record(s);
    if (strategy_ == Select::Heap) {
      launch_heap_push(lists, slots_, s);
    } else if (strategy_ == Select::Quick) {
      const QuickVariant v = launch_quick_select(lists, slots_, q_dist_.data(), q_index_.data(), q_cap_, q_workers_, s);
      quick_ran_ |= 1u << static_cast<int>(v);
    } else {
      launch_bitonic_select(lists, slots_, W_, s);
    }
  }

  /// heap and quick keep their lists unordered: sorts rows [from, to) by
  /// (distance, index), the final step's layout, on stream s (their lists
  /// must take no more candidates).
  void order(const ListsView& lists, int64_t from, int64_t to, cudaStream_t s) {
    if ((strategy_ != Select::Heap && strategy_ != Select::Quick) || to <= from) return;
    ListsView part = lists;
    const size_t at = static_cast<size_t>(from) * static_cast<size_t>(lists.k);
    part.dist += at, part.index += at, part.fill += from, part.thr += from;
    part.n = to - from;
    order_events_.emplace_back();
    order_events_.back().first.record(s);
    launch_sort_lists(part, s);
    order_events_.back().second.record(s);
  }
  /// Seconds the orderings took (CUDA events; the work must be done).
  double order_s() const {
    double ms = 0;
    for (const auto& [a, b] : order_events_) ms += b.since(a);
    return ms / 1e3;
  }

  /// Frees the buffers (the loop is done) before the final step.
  void release() {
    cand_dist_.release(), cand_index_.release(), q_dist_.release(), q_index_.release();
    for (auto& k : keys_) k.release();
    temp_.release(), merge_dist_.release(), merge_index_.release();
  }

  /// Entries that passed a bound (sort: triples sorted); the loop must be done.
  unsigned long long passed() const {
    if (strategy_ == Select::Sort) return sorted_;
    unsigned long long total = 0;
    cuda_check(cudaMemcpy(&total, total_.data(), sizeof total, cudaMemcpyDeviceToHost), "reading statistics");
    return total;
  }
  const char* quick_ran() const { return quick_ran_ == 3 ? "warp+block" : quick_ran_ == 2 ? "block" : "warp"; }

 private:
  Select strategy_;
  int W_;
  DeviceBuffer<unsigned long long> total_;
  DeviceBuffer<int> counts_, n_dirty_;
  // quick, heap, bitonic
  Slots slots_;
  DeviceBuffer<float> cand_dist_, q_dist_;
  DeviceBuffer<int> cand_index_, q_index_;
  int q_cap_ = 0, q_workers_ = 0;
  unsigned quick_ran_ = 0;  // bit 0: the warp variant ran, bit 1: the block variant
  // sort
  SortBuffers sb_;
  DeviceBuffer<uint64_t> keys_[3];
  DeviceBuffer<unsigned char> temp_;
  DeviceBuffer<float> merge_dist_;
  DeviceBuffer<int> merge_index_;
  PinnedBuffer<int> items_{1};
  unsigned long long sorted_ = 0;
  std::vector<std::pair<Event, Event>> order_events_;
};

/// What a strategy cannot do, refused in one line before any work; returns
/// the device to run on (the first listed: these strategies run on one GPU).
int check_request(const Dataset& data, const KnnParams& params) {
  const std::string strategy = to_string(params.select);
  if (!is_paper_strategy(params.select))
    throw UsageError("--select " + strategy + ": not one of the papers' strategies (quick, sort, heap, bitonic)");
  validate(params, data.rows());
  if (params.precision != Precision::Exact)
    throw StrategyRefusal("--precision " + to_string(params.precision) + ": --select " + strategy +
                          " supports exact only (fast-exact: --select warp or merge)");
  if (data.rows() >= INT_MAX)
    throw Error("the GPU backend indexes rows with 32-bit integers: " + std::to_string(data.rows()) +
                " rows is too many");
  const int count = device_count();
  if (count == 0) throw Error("--backend gpu: no CUDA GPU found");
  const int dev = params.devices.empty() ? 0 : params.devices.front();
  if (dev < 0 || dev >= count)
    throw UsageError("--devices: GPU " + std::to_string(dev) + " does not exist (this machine has " +
                     std::to_string(count) + ")");
  return dev;
}

/// The plan: every row and list resident, the strategy's buffers beside
/// them; refused (StrategyRefusal) when k or the memory does not fit.
TilePlan plan_strategy(Select strategy, const KnnParams& params, int64_t n, int64_t d, const DeviceContext& ctx) {
  const int k = params.k;
  const auto [T, W] = tile_shape(n);
  const int max_k = largest_k(strategy, n, d, params.keep_self, W, ctx.shared_optin);
  if (k > max_k)
    throw StrategyRefusal("-k " + std::to_string(k) + ": --select " + to_string(strategy) + " keeps k + " +
                          std::to_string(list_slack(k, false, d)) + " candidates per row, more than " +
                          (strategy == Select::Bitonic && k <= kMaxNeighbours ? "one block's shared memory holds"
                                                                              : "its lists and final step hold") +
                          " on this GPU; it supports k up to " + std::to_string(max_k) + " here");
  PlanRequest req;
  req.n = n, req.d = d, req.k = list_capacity(k, n, params.keep_self, false, d), req.k_out = k;
  req.budget = free_budget(ctx, params.gpu_memory);
  const TilePlan plan = plan_selection_tiles(req, T, W, PaperSelection::bytes(strategy, req.k, T, W, ctx.sms));
  const uint64_t need = std::max(plan.bytes, plan.final_bytes);
  if (need > plan.budget)
    throw StrategyRefusal("--select " + to_string(strategy) + " keeps every row and list on the GPU and needs " +
                          format_bytes(static_cast<double>(need)) + " of device memory here; " +
                          format_bytes(static_cast<double>(plan.budget)) +
                          (params.gpu_memory ? " allowed by --gpu-memory" : " is free") +
                          " (--select warp or merge stream rows through a smaller budget)");
  return plan;
}

/// The final step's request for the engine's lists and rows (FinishRequest);
/// the result's memory is being faulted in by `host_result`.
FinishRequest finish_request(const Dataset& data, const KnnParams& params, const PreparedRows& rows,
                             DeviceEngine& engine, int dev, const HostResult& host_result) {
  FinishRequest fin;
  fin.data = &data, fin.params = &params, fin.rows = &rows, fin.lists = engine.lists();
  fin.norms = engine.norms(), fin.stream = engine.stream(), fin.device = dev;
  fin.loop_arithmetic = exact::DotArithmetic::Float32;  // the papers' strategies run cuBLAS SGEMM
  fin.dot_products = [&engine](const float* a, int m, const float* b, int ncols, float* c, int ldc, cudaStream_t st) {
    engine.dot_products(a, m, b, ncols, c, ldc, st);
  };
  fin.host_result = &host_result;
  return fin;
}

/// The device context's pinned staging buffers, once the uploads that used
/// them are done, for the final step's copy home.
void hand_staging_to(FinishRequest& fin, DeviceContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    if (ctx.staging_used[i]) ctx.staging_free[i].synchronize("copying rows to the GPU");
    fin.staging[i] = ctx.staging(i);
  }
  fin.staging_bytes = DeviceContext::kStagingBytes;
}

/// What the loop counted, for the graph's facts.
struct LoopFacts {
  int device = 0;
  uint64_t tiles = 0;
  unsigned long long candidates = 0;  ///< entries that passed a bound (sort: triples sorted)
  double total_s = 0;
};

/// The run's facts in g.extra (graph.json): plan, kernels, counts and rates.
void record_facts(KnnGraph& g, Select strategy, const TilePlan& plan, const DeviceEngine& engine,
                  const PaperSelection& selection, const LoopFacts& f) {
  const EngineStats& stats = engine.stats();
  g.extra["select"] = to_string(strategy);
  g.extra["dot_products"] = "float32 FFMA (cuBLAS SGEMM)";
  g.extra["devices"] = std::vector<int>{f.device};
  g.extra["device_names"] = std::vector<std::string>{engine.device_name()};
  g.extra["tile_rows"] = plan.T;
  g.extra["tile_cols"] = plan.W;
  g.extra["resident"] = true;
  g.extra["tile_kernel"] = "cuBLAS SGEMM + " + to_string(strategy) + " selection";
  if (strategy == Select::Quick) g.extra["quick_variant"] = selection.quick_ran();
  g.extra["tiles"] = f.tiles;
  g.extra["budget_bytes"] = plan.budget;
  g.extra["planned_bytes"] = std::max(plan.bytes, plan.final_bytes);
  g.extra["candidates"] = f.candidates;
  g.extra["candidates_per_row"] = static_cast<double>(f.candidates) / static_cast<double>(plan.n);
  g.extra["cublas_math"] = engine_math_mode_name();
  g.extra["gemm_flop"] = stats.gemm_flop;
  g.extra["gemm_tflops"] = stats.gemm_ms > 0 ? stats.gemm_flop / (stats.gemm_ms / 1e3) / 1e12 : 0.0;
  g.extra["loop_s"] = stats.loop_ms / 1e3;
  g.extra["total_tflops"] = static_cast<double>(plan.n) * static_cast<double>(plan.n) * static_cast<double>(plan.d) /
                            f.total_s / 1e12;
}

}  // namespace

KnnGraph build_with_paper_strategy(const Dataset& data, const KnnParams& params, Progress& progress) {
  const Select strategy = params.select;
  const int dev = check_request(data, params);
  const auto t0 = std::chrono::steady_clock::now();
  DeviceScope scope(dev);
  DeviceContext& ctx = DeviceContext::get(dev);
  const TilePlan plan = plan_strategy(strategy, params, data.rows(), data.cols(), ctx);

  KnnGraph g = empty_graph(data, params, "gpu");
  g.strategy = to_string(strategy);
  DeferredFingerprint fingerprint(data);  // started before the result's pages are faulted in

  progress.stage("prepare", 1, "steps");
  PreparedRows rows = prepare_rows(data, params.metric);
  progress.finish();
  g.timings.emplace_back("prepare", seconds_since(t0));

  // Set-up: the strategy's buffers, then the engine (which waits for
  // another build on this device to finish).
  const auto t1 = std::chrono::steady_clock::now();
  PaperSelection selection(strategy, plan.k, plan.T, plan.W, ctx.sms, ctx.select);
  DeviceEngine engine(dev, rows.data, plan, params.keep_self, false, exact::DotArithmetic::Float32, &selection);
  g.timings.emplace_back("setup", seconds_since(t1));

  // The final step beside the loop where both fit at once (as the engine's
  // strategies): each strip's rows are ordered (heap, quick) and handed on
  // as soon as their lists are final. Settings::final_beside_loop = false
  // (tests) leaves it all for after the loop.
  HostResult host_result;  // started once the worker exists (final_step.h)
  FinishRequest fin = finish_request(data, params, rows, engine, dev, host_result);
  std::unique_ptr<EarlyFinish> early;
  if (plan.bytes + plan.final_bytes <= plan.budget && settings().final_beside_loop) {
    fin.device_rows = engine.resident_rows();
    early = std::make_unique<EarlyFinish>(fin, g, ctx);
  }
  int64_t ordered = 0;  // rows [0, ordered) are in the final step's order
  auto rows_final = [&](int64_t r, cudaStream_t after) {
    selection.order(engine.lists(), ordered, r, after);
    ordered = r;
    fingerprint.start();  // the uploads are done: the hash no longer competes with them
    if (early) early->rows_final(r, after);
  };
  if (!early) fingerprint.start();
  host_result.start(g);

  const auto t2 = std::chrono::steady_clock::now();
  std::vector<int64_t> strips(static_cast<size_t>(plan.blocks()));
  for (size_t i = 0; i < strips.size(); ++i) strips[i] = static_cast<int64_t>(i);
  const uint64_t tiles = DeviceEngine::tiles_for(plan, strips);
  progress.stage("knn", tiles, "tiles");
  const std::atomic<bool> stop{false};
  try {
    engine.run(strips, progress, stop, rows_final);
  } catch (...) {
    early.reset();
    host_result.wait();
    throw;
  }
  progress.finish();
  g.timings.emplace_back("distances+select", seconds_since(t2));
  const EngineStats& stats = engine.stats();
  g.timings.emplace_back("gemm", stats.gemm_ms / 1e3);
  g.timings.emplace_back("select", stats.select_ms / 1e3);
  const unsigned long long passed = selection.passed();

  // The engine's final step (final_step.h): certify, rescan, exact fallback.
  const auto t3 = std::chrono::steady_clock::now();
  progress.stage("certify", 1, "steps");
  engine.release_loop_buffers();
  selection.release();
  if (ordered < plan.n) {  // a loop of a single strip orders nothing beside it
    selection.order(engine.lists(), ordered, plan.n, engine.stream());
    ordered = plan.n;
  }
  fin.device_rows = engine.all_rows();
  if (strategy == Select::Heap || strategy == Select::Quick) {
    cuda_check(cudaStreamSynchronize(engine.stream()), "ordering the neighbour lists");
    g.timings.emplace_back("order_lists", selection.order_s());
  }
  hand_staging_to(fin, ctx);
  certify_and_finish(fin, g, progress, early.get());
  progress.finish();
  g.timings.emplace_back("final", seconds_since(t3));
  const auto t4 = std::chrono::steady_clock::now();
  g.fingerprint = fingerprint.get();
  g.timings.emplace_back("fingerprint_wait", seconds_since(t4));
  const double total_s = seconds_since(t0);
  g.timings.emplace_back("total", total_s);
  LoopFacts facts;
  facts.device = dev, facts.tiles = tiles, facts.candidates = passed, facts.total_s = total_s;
  record_facts(g, strategy, plan, engine, selection, facts);
  return g;
}

}  // namespace manifold::gpu::select
