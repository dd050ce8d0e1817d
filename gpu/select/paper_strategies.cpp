// The papers' selection strategies (quick, sort, heap, bitonic) behind one
// tile loop of their own, on one GPU:
//  - all rows resident on the device, copied block by block through pinned
//    staging buffers on a copy stream while earlier tiles compute, squared
//    norms per block;
//  - tiles of the upper triangle: first every diagonal tile (row block I
//    against itself), so every row has a bound before the rest, then each
//    strip (block I against the columns after it, W at a time);
//  - each tile's dot products by cuBLAS SGEMM (float32, never TF32) on one
//    stream, the selection on a second, two tile buffers so the next
//    tile's GEMM overlaps this tile's selection;
//  - each tile feeds the lists of its rows and, above the diagonal, of its
//    columns (the distance matrix is symmetric);
//  - every row keeps k + slack candidates (the engine's capacity,
//    final_step.h), ordered by (distance, index) at the end, and the
//    engine's final step certifies them: the exact graph, the same as every
//    other backend's.
// Only the selection differs between strategies (select/*.cu); every one
// keeps, for every row, the capacity smallest (float32 distance, index)
// keys, so all four hand the final step the same lists.
#include "select/paper_strategies.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>

#include "final_step.h"
#include "impl/kernels.h"
#include "manifold/error.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "select/select_kernels.h"
#include "settings.h"
#include "utils/cuda_check.h"
#include "utils/resources.h"

namespace manifold::gpu::select {

bool is_paper_strategy(const std::string& name) {
  return name == "quick" || name == "sort" || name == "heap" || name == "bitonic";
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int select_device(int device) {
  cuda_check(cudaSetDevice(device), "selecting the device");
  return device;
}

/// What a device keeps between builds: creating streams and a cuBLAS handle
/// costs tens of milliseconds, more than a small graph, so once per process.
struct Context {
  explicit Context(int dev) : device(select_device(dev)) {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, dev), "reading the device properties");
    name = prop.name;
    shared_optin = prop.sharedMemPerBlockOptin;
    sms = prop.multiProcessorCount;
    cublas_check(cublasSetStream(cublas, gemm), "binding cuBLAS to its stream");
  }
  int device;
  std::string name;
  size_t shared_optin = 0;
  int sms = 0;
  std::mutex busy;  ///< one build at a time on this device
  Stream gemm, select, copy;
  CublasHandle cublas;
  PinnedBuffer<int> host_items{1};
  // Row blocks reach the device through two pinned buffers in turn.
  static constexpr size_t kStagingFloats = size_t{2} << 20;  // 8 MB
  PinnedBuffer<float> staging[2];
  Event staging_free[2] = {Event(false), Event(false)};
  bool staging_used[2] = {false, false};
  struct TileEvents {
    Event gemm_start, gemm_end, sel_start, filter_end, sel_end;
  };
  static constexpr int kRing = 4;  ///< tiles in flight
  TileEvents ring[kRing];
};

Context& context(int device) {
  static std::mutex registry_mutex;
  // Never destroyed: CUDA objects must not be released from static
  // destructors, after the runtime may have shut down.
  static auto* contexts = new std::map<int, Context*>();
  std::lock_guard lock(registry_mutex);
  auto it = contexts->find(device);
  if (it != contexts->end()) return *it->second;
  auto* ctx = new Context(device);
  (*contexts)[device] = ctx;
  return *ctx;
}

struct TileSpec {
  int64_t r0, rows, c0, cols;
  bool diagonal;
};

/// Tile height T (rows of a block) and width W (columns per tile): the
/// engine's measured 2048 x 4096 (32 MB of float32, within the L2 cache),
/// smaller for small N. Settings::select_tile = "TxW" overrides (tests use it
/// to run many tiles on small data).
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
      throw UsageError("select tile: '" + o +
                       "' is not TxW with 1 <= T <= W <= 65536 and T*W <= 2^26");
    T = static_cast<int>(std::min<int64_t>(t, n));
    W = static_cast<int>(std::min<int64_t>(w, n));
  }
  return {T, W};
}

uint64_t free_budget(uint64_t requested) {
  const size_t free_b = device_free_bytes();  // with what the device cache holds
  // Room for the CUDA context's own growth and for other processes.
  const uint64_t usable = free_b > (uint64_t{512} << 20) ? static_cast<uint64_t>(free_b * 0.92) - (uint64_t{256} << 20)
                                                        : free_b / 2;
  return requested ? std::min<uint64_t>(requested, usable) : usable;
}

/// Whether a list capacity fits the strategy's and the final step's shared memory.
bool capacity_fits(const std::string& strategy, int cap, int W, size_t shared_optin) {
  if (certify_shared_bytes(cap) > shared_optin) return false;
  if (strategy == "bitonic" && bitonic_shared_bytes(cap, W) > shared_optin) return false;
  if ((strategy == "heap" || strategy == "quick") && sort_lists_shared_bytes(cap) > shared_optin) return false;
  return true;
}

}  // namespace

int largest_k(const std::string& strategy, int64_t n, bool keep_self, int W, size_t shared_optin) {
  // The capacity grows with k: the largest k whose capacity fits, by bisection.
  auto fits = [&](int k) { return capacity_fits(strategy, list_capacity(k, n, keep_self, false), W, shared_optin); };
  int lo = 0, hi = kMaxNeighbours;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

KnnGraph build_with_paper_strategy(const Dataset& data, const KnnParams& params, Progress& progress) {
  const std::string& strategy = params.select;
  if (!is_paper_strategy(strategy))
    throw UsageError("--select " + strategy + ": not one of the papers' strategies (quick, sort, heap, bitonic)");
  validate(params, data.rows());
  if (params.precision != "exact")
    throw StrategyRefusal("--precision " + params.precision + ": --select " + strategy +
                          " supports exact only (fast-exact: --select warp or merge)");
  if (data.rows() >= INT_MAX)
    throw Error("the GPU backend indexes rows with 32-bit integers: " + std::to_string(data.rows()) +
                " rows is too many");
  const int count = device_count();
  if (count == 0) throw Error("--backend gpu: no CUDA GPU found");
  // These strategies run on one GPU (the engine's warp and merge split the
  // work over several): the first one listed.
  const int dev = params.devices.empty() ? 0 : params.devices.front();
  if (dev < 0 || dev >= count)
    throw UsageError("--devices: GPU " + std::to_string(dev) + " does not exist (this machine has " +
                     std::to_string(count) + ")");

  const auto t0 = std::chrono::steady_clock::now();
  DeviceScope scope(dev);
  Context& ctx = context(dev);
  std::unique_lock busy(ctx.busy);

  const int64_t n = data.rows();
  const int k = params.k;
  const auto [T, W] = tile_shape(n);
  // Candidates per row: the engine's k + slack (final_step.h).
  const int cap = list_capacity(k, n, params.keep_self, false);

  // What a strategy cannot do is refused before any work, naming the largest k it supports here.
  const int max_k = largest_k(strategy, n, params.keep_self, W, ctx.shared_optin);
  if (k > max_k)
    throw StrategyRefusal("-k " + std::to_string(k) + ": --select " + strategy + " keeps k + " +
                          std::to_string(list_slack(k, false)) + " candidates per row, more than " +
                          (strategy == "bitonic" && k <= kMaxNeighbours ? "one block's shared memory holds"
                                                                        : "its lists and final step hold") +
                          " on this GPU; it supports k up to " + std::to_string(max_k) + " here");

  KnnGraph g = empty_graph(data, params, "gpu");
  g.strategy = strategy;
  auto fingerprint = std::async(std::launch::async, [&data] { return data.fingerprint(); });

  progress.stage("prepare", 1, "steps");
  PreparedRows rows = prepare_rows(data, params.metric);
  const int64_t d = rows.cols;
  progress.finish();
  g.timings.emplace_back("prepare", seconds_since(t0));

  // Memory: the loop's peak, then the final step's (loop buffers freed).
  const auto t1 = std::chrono::steady_clock::now();
  const uint64_t TW = static_cast<uint64_t>(T) * W;
  const uint64_t nk = static_cast<uint64_t>(n) * k;      // the result
  const uint64_t ncap = static_cast<uint64_t>(n) * cap;  // the lists
  const uint64_t resident = static_cast<uint64_t>(n) * d * 4 + n * 4 + ncap * 8 + n * 8;
  const bool sort = strategy == "sort";
  // quick: scratch (two arrays of q_cap entries) for each concurrent worker
  // of the variant the rule (or Settings::quick) picks for these lists,
  // warps or blocks (select_kernels.h).
  const bool quick = strategy == "quick";
  const int q_workers = quick ? quick_workers(quick_variant(cap), ctx.sms, T + W) : 0;
  const int q_cap = cap + W;
  uint64_t loop = 2 * TW * 4;
  if (sort) {
    loop += 3 * TW * 8 + sort_temp_bytes(T, W) + 4 * static_cast<uint64_t>(T + W) * 4 + 64 +
            static_cast<uint64_t>(sort_merge_blocks(ctx.sms)) * cap * 8;
  } else {
    loop += 2 * TW * 8 + 2 * static_cast<uint64_t>(T + W) * 4 + 64;
    loop += static_cast<uint64_t>(q_workers) * 2 * q_cap * 8;
  }
  // The final step: the result, per-row status and key, and the rescan's
  // buffers (2048 rows of d floats, 8192 dot products and kRescanCap survivors).
  const uint64_t final_bytes =
      nk * 12 + static_cast<uint64_t>(n) * 8 + uint64_t{2048} * (static_cast<uint64_t>(d) + 8192 + kRescanCap + 8) * 4;
  const uint64_t need = resident + std::max(loop, final_bytes);
  const uint64_t budget = free_budget(params.gpu_memory);
  if (need > budget)
    throw StrategyRefusal("--select " + strategy + " keeps every row and list on the GPU and needs " +
                format_bytes(static_cast<double>(need)) + " of device memory here; " +
                format_bytes(static_cast<double>(budget)) +
                (params.gpu_memory ? " allowed by --gpu-memory" : " is free") +
                " (--select warp or merge stream rows through a smaller budget)");

  cudaStream_t ss = ctx.select, gs = ctx.gemm;
  DeviceBuffer<float> dev_rows(static_cast<size_t>(n) * d, "allocating device memory for the rows");
  DeviceBuffer<float> norms(static_cast<size_t>(n), "allocating device memory for the row norms");
  DeviceBuffer<float> list_dist(ncap, "allocating the neighbour lists");
  DeviceBuffer<int> list_index(ncap, "allocating the neighbour lists");
  DeviceBuffer<int> fill(static_cast<size_t>(n), "allocating the neighbour lists");
  DeviceBuffer<float> thr(static_cast<size_t>(n), "allocating the neighbour lists");
  DeviceBuffer<float> dots[2];
  for (auto& b : dots) b.reset(TW, "allocating a distance tile");
  DeviceBuffer<float> cand_dist, q_dist, merge_dist;
  DeviceBuffer<int> cand_index, cand_count, dirty, counters, q_index, merge_index, sort_counts;
  DeviceBuffer<unsigned long long> total;
  DeviceBuffer<uint64_t> keys[3];
  DeviceBuffer<unsigned char> temp;
  Slots slots;
  SortBuffers sb;
  total.reset(1, "allocating a counter");
  if (sort) {
    for (auto& kb : keys) kb.reset(TW, "allocating the sort keys");
    sb.temp_bytes = sort_temp_bytes(T, W);
    temp.reset(sb.temp_bytes, "allocating the radix sort's temporary storage");
    sort_counts.reset(2 * static_cast<size_t>(T + W) + 1, "allocating the sort counters");
    merge_dist.reset(static_cast<size_t>(sort_merge_blocks(ctx.sms)) * cap, "allocating the sort merge buffers");
    merge_index.reset(static_cast<size_t>(sort_merge_blocks(ctx.sms)) * cap, "allocating the sort merge buffers");
    for (int i = 0; i < 3; ++i) sb.keys[i] = keys[i].data();
    sb.row_count = sort_counts.data();
    sb.col_count = sb.row_count + T;
    sb.row_start = sb.col_count + W;
    sb.col_start = sb.row_start + T;
    sb.n_items = sb.col_start + W;
    sb.temp = temp.data();
    sb.merge_dist = merge_dist.data();
    sb.merge_index = merge_index.data();
    sb.T = T, sb.W = W;
  } else {
    cand_dist.reset(2 * TW, "allocating the candidate buffers");
    cand_index.reset(2 * TW, "allocating the candidate buffers");
    cand_count.reset(static_cast<size_t>(T) + W, "allocating the candidate buffers");
    dirty.reset(static_cast<size_t>(T) + W, "allocating the candidate buffers");
    counters.reset(1, "allocating the candidate buffers");
    slots.dist = cand_dist.data();
    slots.index = cand_index.data();
    slots.count = cand_count.data();
    slots.dirty = dirty.data();
    slots.n_dirty = counters.data();
    slots.T = T, slots.W = W;
    cuda_check(cudaMemsetAsync(cand_count.data(), 0, cand_count.bytes(), ss), "clearing the candidate counters");
    if (q_workers) {
      q_dist.reset(static_cast<size_t>(q_workers) * 2 * q_cap, "allocating the quick-select arrays");
      q_index.reset(static_cast<size_t>(q_workers) * 2 * q_cap, "allocating the quick-select arrays");
    }
  }
  slots.total = total.data();
  // Work still queued when an error or a cancellation unwinds must finish
  // before the buffers above are freed (destroyed after this guard).
  struct Drain {
    Context& c;
    ~Drain() {
      cudaStreamSynchronize(c.gemm);
      cudaStreamSynchronize(c.select);
      cudaStreamSynchronize(c.copy);
    }
  } drain{ctx};

  ListsView lists;
  lists.dist = list_dist.data();
  lists.index = list_index.data();
  lists.fill = fill.data();
  lists.thr = thr.data();
  lists.n = n;
  lists.k = cap;
  cuda_check(cudaMemsetAsync(total.data(), 0, sizeof(unsigned long long), ss), "clearing a counter");
  launch_init_lists(lists, ss);
  g.timings.emplace_back("setup", seconds_since(t1));

  // Row block b goes up when a tile first needs it; ready[b] marks it (and
  // its norms) on the copy stream. Pageable memory would make each copy
  // synchronous, so the host copies into pinned staging while the GPU works
  // on earlier tiles.
  const int64_t n_blocks = (n + T - 1) / T;
  std::vector<Event> ready;
  ready.reserve(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) ready.emplace_back(false);
  int64_t uploaded = 0;
  int next_staging = 0;
  auto upload_through = [&](int64_t last) {
    for (; uploaded <= last; ++uploaded) {
      const int64_t r0 = uploaded * T, count_b = std::min<int64_t>(T, n - r0);
      const size_t floats = static_cast<size_t>(count_b) * d;
      for (size_t off = 0; off < floats;) {
        const size_t len = std::min(Context::kStagingFloats, floats - off);
        const int sidx = next_staging;
        next_staging ^= 1;
        if (!ctx.staging[sidx].data()) ctx.staging[sidx] = PinnedBuffer<float>(Context::kStagingFloats);
        if (ctx.staging_used[sidx]) ctx.staging_free[sidx].synchronize("copying rows to the GPU");
        std::memcpy(ctx.staging[sidx].data(), rows.data + r0 * d + off, len * sizeof(float));
        cuda_check(cudaMemcpyAsync(dev_rows.data() + r0 * d + off, ctx.staging[sidx].data(), len * sizeof(float),
                                   cudaMemcpyHostToDevice, ctx.copy),
                   "copying rows to the GPU");
        ctx.staging_free[sidx].record(ctx.copy);
        ctx.staging_used[sidx] = true;
        off += len;
      }
      launch_row_norms(dev_rows.data() + r0 * d, count_b, d, norms.data() + r0, ctx.copy);
      ready[static_cast<size_t>(uploaded)].record(ctx.copy);
    }
  };

  // Diagonal tiles first, then the strips.
  std::vector<TileSpec> tiles;
  for (int64_t r0 = 0; r0 < n; r0 += T) tiles.push_back({r0, std::min<int64_t>(T, n - r0), r0, 0, true});
  for (auto& t : tiles) t.cols = t.rows;
  const size_t seeds = tiles.size();
  for (size_t b = 0; b < seeds; ++b) {
    const int64_t r0 = tiles[b].r0, rows_b = tiles[b].rows;
    for (int64_t c0 = r0 + rows_b; c0 < n; c0 += W) tiles.push_back({r0, rows_b, c0, std::min<int64_t>(W, n - c0), false});
  }

  // The result's host memory is fresh pages to fault in (seconds for large
  // n k): touch it meanwhile.
  auto host_result = std::async(std::launch::async, [&g] { g.allocate_result(); });
  const auto t2 = std::chrono::steady_clock::now();
  progress.stage("knn", tiles.size(), "tiles");
  constexpr size_t R = Context::kRing;
  double gemm_ms = 0, select_ms = 0;
  unsigned long long sort_items = 0;
  unsigned quick_ran = 0;  // bit 0: the warp variant ran, bit 1: the block variant
  size_t completed = 0;
  auto complete_one = [&] {
    Context::TileEvents& ev = ctx.ring[completed % R];
    ev.sel_end.synchronize("computing a distance tile");
    gemm_ms += ev.gemm_end.since(ev.gemm_start);
    select_ms += ev.sel_end.since(ev.sel_start);
    ++completed;
    progress.advance(1);
  };
  auto gemm = [&](size_t t) {
    while (completed + R <= t) complete_one();  // its ring slot must be read first
    const TileSpec& ts = tiles[t];
    Context::TileEvents& ev = ctx.ring[t % R];
    // Blocks are uploaded in order on one stream: the last one the tile
    // needs stands for all.
    const int64_t last_block = (ts.c0 + ts.cols - 1) / T;
    upload_through(last_block);
    ctx.gemm.wait(ready[static_cast<size_t>(last_block)]);
    // Tile t-2 used the same buffer: its filter (the one reader) must be done.
    if (t >= 2) ctx.gemm.wait(ctx.ring[(t - 2) % R].filter_end);
    ev.gemm_start.record(gs);
    const float one = 1.f, zero = 0.f;
    cublas_check(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(ts.rows), static_cast<int>(ts.cols),
                             static_cast<int>(d), &one, dev_rows.data() + ts.r0 * d, static_cast<int>(d),
                             dev_rows.data() + ts.c0 * d, static_cast<int>(d), &zero, dots[t % 2].data(), T),
                 "cublasSgemm on a distance tile");
    ev.gemm_end.record(gs);
  };
  auto select_tile = [&](size_t t) {
    const TileSpec& ts = tiles[t];
    Context::TileEvents& ev = ctx.ring[t % R];
    ctx.select.wait(ev.gemm_end);
    ev.sel_start.record(ss);
    Tile tile;
    tile.dots = dots[t % 2].data();
    tile.ld = T;
    tile.rows = static_cast<int>(ts.rows);
    tile.cols = static_cast<int>(ts.cols);
    tile.r0 = static_cast<int>(ts.r0);
    tile.c0 = static_cast<int>(ts.c0);
    tile.col_role = !ts.diagonal;
    tile.row_norms = norms.data() + ts.r0;
    tile.col_norms = norms.data() + ts.c0;
    tile.keep_self = params.keep_self;
    if (sort) {
      cuda_check(cudaMemsetAsync(sb.row_count, 0, sizeof(int) * (static_cast<size_t>(T) + W), ss),
                 "clearing the sort counters");
      cuda_check(cudaMemsetAsync(sb.n_items, 0, sizeof(int), ss), "clearing the sort counters");
      launch_sort_filter(tile, thr.data(), sb, ss);
      ev.filter_end.record(ss);
      // CUB takes the number of keys from the host.
      cuda_check(cudaMemcpyAsync(ctx.host_items.data(), sb.n_items, sizeof(int), cudaMemcpyDeviceToHost, ss),
                 "reading the tile's triple count");
      cuda_check(cudaStreamSynchronize(ss), "filtering a distance tile");
      sort_items += static_cast<unsigned long long>(*ctx.host_items.data());
      sort_select_tile(lists, tile, sb, *ctx.host_items.data(), ss);
    } else {
      cuda_check(cudaMemsetAsync(slots.n_dirty, 0, sizeof(int), ss), "clearing the candidate counters");
      slots.r0 = tile.r0, slots.c0 = tile.c0;
      launch_slot_filter(tile, thr.data(), slots, ss);
      ev.filter_end.record(ss);
      if (strategy == "heap") {
        launch_heap_push(lists, slots, ss);
      } else if (quick) {
        const QuickVariant v = launch_quick_select(lists, slots, q_dist.data(), q_index.data(), q_cap, q_workers, ss);
        quick_ran |= 1u << static_cast<int>(v);
      } else {
        launch_bitonic_select(lists, slots, W, ss);
      }
    }
    ev.sel_end.record(ss);
  };
  if (!tiles.empty()) gemm(0);
  for (size_t t = 0; t < tiles.size(); ++t) {
    if (t + 1 < tiles.size()) gemm(t + 1);
    select_tile(t);
  }
  while (completed < tiles.size()) complete_one();
  upload_through(n_blocks - 1);  // every block was needed by a tile; kept for clarity
  ctx.select.wait(ready[static_cast<size_t>(n_blocks - 1)]);
  progress.finish();
  g.timings.emplace_back("distances+select", seconds_since(t2));
  g.timings.emplace_back("gemm", gemm_ms / 1e3);
  g.timings.emplace_back("select", select_ms / 1e3);
  unsigned long long passed = 0;
  cuda_check(cudaMemcpy(&passed, total.data(), sizeof passed, cudaMemcpyDeviceToHost), "reading statistics");
  if (sort) passed = sort_items;  // triples sorted

  // Final: the lists in the engine's layout, then the engine's final step
  // (final_step.h): certify, rescan, exact fallback.
  const auto t3 = std::chrono::steady_clock::now();
  progress.stage("certify", 1, "steps");
  for (auto& b : dots) b.release();
  cand_dist.release(), cand_index.release(), q_dist.release(), q_index.release();
  for (auto& kb : keys) kb.release();
  temp.release(), merge_dist.release(), merge_index.release();
  if (strategy == "heap" || strategy == "quick") {
    Event o0, o1;
    o0.record(ss);
    launch_sort_lists(lists, ss);
    o1.record(ss);
    cuda_check(cudaStreamSynchronize(ss), "ordering the neighbour lists");
    g.timings.emplace_back("order_lists", o1.since(o0) / 1e3);
  }
  {
    // The rescan's dot products: the loop's cuBLAS SGEMM (same handle, same
    // math mode, so the same error bound), on the final step's stream.
    struct RestoreStream {
      Context& c;
      ~RestoreStream() { cublasSetStream(c.cublas, c.gemm); }
    } restore{ctx};
    FinalStepInput fin;
    fin.data = &data, fin.params = &params, fin.rows = &rows, fin.lists = lists;
    fin.device_rows = dev_rows.data(), fin.norms = norms.data(), fin.stream = ss, fin.tensor = false;
    const int dd = static_cast<int>(d);
    fin.dot_products = [&ctx, dd](const float* a, int m, const float* b, int ncols, float* c, int ldc,
                                  cudaStream_t st) {
      cublas_check(cublasSetStream(ctx.cublas, st), "binding cuBLAS to its stream");
      const float one = 1.f, zero = 0.f;
      cublas_check(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, ncols, dd, &one, a, dd, b, dd, &zero, c, ldc),
                   "cublasSgemm for the rescan");
    };
    fin.wait_host_result = [&host_result] { host_result.get(); };
    cuda_check(cudaStreamSynchronize(ctx.copy), "copying rows to the GPU");  // the staging buffers are free
    for (int i = 0; i < 2; ++i) {
      if (!ctx.staging[i].data()) ctx.staging[i] = PinnedBuffer<float>(Context::kStagingFloats);
      fin.staging[i] = reinterpret_cast<unsigned char*>(ctx.staging[i].data());
    }
    fin.staging_bytes = Context::kStagingFloats * sizeof(float);
    run_final_step(fin, g, progress);
  }
  progress.finish();
  g.timings.emplace_back("final", seconds_since(t3));
  const auto t4 = std::chrono::steady_clock::now();
  g.fingerprint = fingerprint.get();
  g.timings.emplace_back("fingerprint_wait", seconds_since(t4));
  const double total_s = seconds_since(t0);
  g.timings.emplace_back("total", total_s);

  g.extra["select"] = params.select;
  g.extra["dot_products"] = "float32 FFMA (cuBLAS SGEMM)";
  g.extra["devices"] = std::vector<int>{dev};
  g.extra["device_names"] = std::vector<std::string>{ctx.name};
  g.extra["tile_rows"] = T;
  g.extra["tile_cols"] = W;
  g.extra["resident"] = true;
  g.extra["tile_kernel"] = "cuBLAS SGEMM + " + strategy + " selection";
  if (quick) g.extra["quick_variant"] = quick_ran == 3 ? "warp+block" : quick_ran == 2 ? "block" : "warp";
  g.extra["tiles"] = tiles.size();
  g.extra["budget_bytes"] = budget;
  g.extra["planned_bytes"] = need;
  g.extra["candidates"] = passed;
  g.extra["candidates_per_row"] = static_cast<double>(passed) / static_cast<double>(n);
  g.extra["cublas_math"] = engine_math_mode_name();
  double flop = 0;
  for (auto& t : tiles) flop += 2.0 * static_cast<double>(t.rows) * static_cast<double>(t.cols) * static_cast<double>(d);
  g.extra["gemm_flop"] = flop;
  g.extra["gemm_tflops"] = gemm_ms > 0 ? flop / (gemm_ms / 1e3) / 1e12 : 0.0;
  g.extra["total_tflops"] = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d) / total_s / 1e12;
  return g;
}

}  // namespace manifold::gpu::select
