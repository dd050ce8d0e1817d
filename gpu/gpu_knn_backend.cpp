// GpuKnnBackend: the exact k-NN graph on one or several GPUs of this machine.
// Plans tiles from the memory budget, splits the strips of the upper
// triangle among devices (Kato & Hosino's mirrored assignment: strip i goes
// to device j when i mod 2G is j or 2G-1-j, which evens out the shrinking
// strips), runs one host thread per device, merges the per-device lists on
// device 0 and certifies the result: every row's list is checked against the
// rigorous error bound of its dot products (manifold/exact/error_bound.h), the
// candidates the bound cannot rule out are re-evaluated exactly, and rows the
// bound cannot certify are scanned exactly. Both precisions (float32 SGEMM,
// TF32 tensor cores) therefore return the same graph: the k smallest exact
// keys (float64 distance rounded to float, then index).
#include "manifold/gpu/gpu_knn_backend.h"
#include "select/auto_table.h"
#include "select/paper_strategies.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "device_context.h"
#include "device_engine.h"
#include "final_step.h"
#include "settings.h"
#include "impl/kernels.h"
#include "manifold/error.h"
#include "manifold/exact/error_bound.h"
#include "manifold/knn.h"
#include "manifold/parallel.h"
#include "tile_plan.h"
#include "utils/cuda_check.h"
#include "utils/resources.h"

namespace manifold::gpu {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::string device_name(int ordinal) {
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, ordinal), "reading the device properties");
  return prop.name;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<int> chosen_devices(const KnnParams& p) {
  const int count = device_count();
  if (count == 0) throw Error("--backend gpu: no CUDA GPU found");
  std::vector<int> devices = p.devices;
  if (devices.empty())
    for (int i = 0; i < count; ++i) devices.push_back(i);
  for (int dev : devices)
    if (dev >= count)
      throw UsageError("--devices: GPU " + std::to_string(dev) + " does not exist (this machine has " +
                       std::to_string(count) + ")");
  std::sort(devices.begin(), devices.end());
  if (std::adjacent_find(devices.begin(), devices.end()) != devices.end())
    throw UsageError("--devices: a GPU is listed twice");
  return devices;
}

uint64_t device_budget(int dev, uint64_t requested) {
  DeviceContext& ctx = DeviceContext::get(dev);
  DeviceScope scope(dev);
  // Free memory and what the device cache holds (utils/device_memory.h).
  const size_t free_b = device_free_bytes();
  // Leave room for the CUDA context's own growth and for other processes;
  // what our device context already holds is ours to use.
  const uint64_t usable = (free_b > (uint64_t{512} << 20) ? static_cast<uint64_t>(free_b * 0.92) - (uint64_t{256} << 20)
                                                         : free_b / 2) +
                          ctx.held_bytes();
  return requested ? std::min<uint64_t>(requested, usable) : usable;
}

/// The fused kernel wins where cuBLAS is far from its large-GEMM rate: a
/// short inner dimension (see impl/fused_tile.cu). Settings::gemm overrides.
bool use_fused(int64_t d) {
  switch (settings().gemm) {
    case GemmPath::Fused: return true;
    case GemmPath::Cublas: return false;
    case GemmPath::Auto: break;
  }
  return d <= kFusedMaxD;
}

/// Strips of the upper triangle for each device (Kato & Hosino).
std::vector<std::vector<int64_t>> assign_strips(int64_t blocks, int devices) {
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(devices));
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t m = i % (2 * devices);
    const int64_t dev = m < devices ? m : 2 * devices - 1 - m;
    out[static_cast<size_t>(dev)].push_back(i);
  }
  return out;
}

class GpuKnnBackend final : public KnnBackend {
 public:
  std::string name() const override { return "gpu"; }

  KnnGraph build(const Dataset& data, const KnnParams& params, Progress& progress) override {
    validate(params, data.rows());
    if (select::is_paper_strategy(params.select)) return select::build_with_paper_strategy(data, params, progress);
    if (params.select == "auto" && params.precision == "exact") {
      // The measured table (select/auto_table.cpp): one GPU only; with several,
      // and for fast-exact, the engine (the papers' strategies run on one GPU,
      // in float32).
      const std::vector<int> devices = chosen_devices(params);
      const std::string pick = select::best_strategy(data.rows(), params.k, static_cast<int>(devices.size()));
      KnnParams p = params;
      p.select = pick;
      KnnGraph g;
      std::string declined;
      if (select::is_paper_strategy(pick)) {
        try {
          g = select::build_with_paper_strategy(data, p, progress);
        } catch (const select::StrategyRefusal& e) {
          // Beyond what the pick supports here (k, device memory): the engine.
          declined = pick + " (" + e.what() + ")";
          p.select = "warp";
        }
      }
      if (!select::is_paper_strategy(pick) || !declined.empty()) g = build(data, p, progress);
      g.extra["select"] = "auto";
      g.extra["auto_pick"] = pick;
      if (!declined.empty()) g.extra["auto_declined"] = declined;
      return g;
    }
    if (params.select != "auto" && params.select != "warp" && params.select != "merge")
      throw UsageError("--select " + params.select +
                       ": not a GPU selection strategy (auto, warp, merge, quick, sort, heap, bitonic)");
    if (params.precision != "exact" && params.precision != "fast-exact")
      throw UsageError("--precision " + params.precision + ": unknown (the GPU backend has exact, fast-exact)");
    if (params.k > kMaxNeighbours)
      throw UsageError("-k " + std::to_string(params.k) + ": the GPU backend supports k up to " +
                       std::to_string(kMaxNeighbours));
    if (data.rows() >= INT_MAX)
      throw Error("the GPU backend indexes rows with 32-bit integers: " + std::to_string(data.rows()) +
                  " rows is too many");
    if (data.cols() > exact::kMaxBoundDim)
      throw UsageError("the GPU backend's error bound covers up to " + std::to_string(exact::kMaxBoundDim) +
                       " values per item; these items have " + std::to_string(data.cols()));
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> devices = chosen_devices(params);
    const bool force_block = params.select == "merge";
    const bool tensor = params.precision == "fast-exact";

    KnnGraph g = empty_graph(data, params, "gpu");
    // The list capacity: k plus the room the certificate needs, at most every
    // other point (then every list is complete and trivially certified).
    const int cap = list_capacity(g.k, g.n, params.keep_self, tensor);
    g.strategy = force_block || cap > kWarpMergeMaxK ? "merge" : "warp";
    // Hashing every byte of the input takes longer than the GPU's whole job
    // on large inputs: do it on a spare core meanwhile -- after the rows are
    // staged for the upload where that is soon, since both read the input at
    // memory speed. With every row resident on one GPU, the uploads are done
    // once the first strip's rows are final, and the hash starts then;
    // otherwise at once. (On the H200 hosts measured so far the order made
    // no difference: bench/gpu/RESULTS.md.)
    std::future<std::string> fingerprint;
    auto start_fingerprint = [&fingerprint, &data] {
      if (!fingerprint.valid()) fingerprint = std::async(std::launch::async, [&data] { return data.fingerprint(); });
    };

    progress.stage("prepare", 1, "steps");
    PreparedRows rows = prepare_rows(data, params.metric);
    progress.finish();
    g.timings.emplace_back("prepare", seconds_since(t0));

    // Plan and allocate; when an allocation fails anyway (another process
    // took memory meanwhile), plan again with a smaller budget.
    const auto t1 = std::chrono::steady_clock::now();
    uint64_t budget = UINT64_MAX;
    size_t shared = SIZE_MAX;
    for (int dev : devices) {
      budget = std::min(budget, device_budget(dev, params.gpu_memory));
      shared = std::min(shared, DeviceContext::get(dev).shared_optin);
    }
    if (certify_shared_bytes(cap) > shared)
      throw UsageError("-k " + std::to_string(g.k) + ": the final step needs more shared memory than this GPU has");
    PlanRequest req;
    req.n = rows.rows, req.d = rows.cols, req.k = cap, req.k_out = g.k;
    req.devices = static_cast<int>(devices.size());
    // Tensor cores come through cuBLAS; the fused kernel is float32 FFMA.
    req.fused = !tensor && use_fused(rows.cols);
    req.shared_memory = shared;
    req.tile_override = settings().tile;
    TilePlan plan;
    std::vector<std::unique_ptr<DeviceEngine>> engines;
    for (int attempt = 0;; ++attempt) {
      req.budget = budget;
      plan = plan_tiles(req);
      try {
        engines.clear();
        for (int dev : devices)
          engines.push_back(
              std::make_unique<DeviceEngine>(dev, rows.data, plan, params.keep_self, force_block, tensor));
        break;
      } catch (const DeviceOutOfMemory& e) {
        engines.clear();
        if (attempt == 3 || params.gpu_memory)
          throw Error(std::string(e.what()) + " (planned " + format_bytes(static_cast<double>(plan.bytes)) +
                      " of device memory; try a smaller --gpu-memory)");
        budget = static_cast<uint64_t>(static_cast<double>(plan.bytes) * 0.7);
      }
    }
    g.timings.emplace_back("setup", seconds_since(t1));

    // The tile loops, one host thread per device. Progress counts the tiles
    // of all devices together, so rate and time left are the whole job's.
    const auto strips = assign_strips(plan.blocks(), static_cast<int>(devices.size()));
    uint64_t total_tiles = 0;
    for (auto& s : strips) total_tiles += DeviceEngine::tiles_for(plan, s);
    // The result's host memory is fresh pages to fault in: touch it meanwhile.
    std::shared_future<void> host_result = std::async(std::launch::async, [&g] { g.allocate_result(); }).share();
    DeviceEngine& main = *engines[0];
    FinishRequest fin;
    fin.data = &data, fin.params = &params, fin.rows = &rows, fin.lists = main.lists();
    fin.norms = main.norms(), fin.stream = main.stream(), fin.tensor = tensor, fin.device = main.device();
    fin.dot_products = [&main](const float* a, int m, const float* b, int ncols, float* c, int ldc,
                               cudaStream_t st) { main.dot_products(a, m, b, ncols, c, ldc, st); };
    fin.wait_host_result = [host_result] { host_result.get(); };
    // One GPU with every row resident: the final step certifies and copies
    // home each strip's rows while the later strips run (final_step.h).
    // Settings::final_beside_loop = false (tests) leaves it all for after the loop.
    std::unique_ptr<EarlyFinish> early;
    DeviceEngine::RowsFinal rows_final;
    if (engines.size() == 1 && plan.resident && plan.bytes + plan.final_bytes <= plan.budget &&
        settings().final_beside_loop) {
      fin.device_rows = main.resident_rows();
      early = std::make_unique<EarlyFinish>(fin, g, DeviceContext::get(main.device()).finish);
      rows_final = [&early, &start_fingerprint](int64_t r, cudaStream_t after) {
        start_fingerprint();
        early->rows_final(r, after);
      };
    }
    if (!early) start_fingerprint();
    const auto t2 = std::chrono::steady_clock::now();
    progress.stage("knn", total_tiles, "tiles");
    std::atomic<bool> stop{false};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&](size_t i) {
      try {
        engines[i]->run(strips[i], progress, stop, rows_final);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        // The first error wins; the Cancelled others throw when told to stop is not news.
        if (!failure) failure = std::current_exception();
        stop = true;
      }
    };
    if (engines.size() == 1) {
      work(0);
    } else {
      std::vector<std::thread> threads;
      for (size_t i = 0; i < engines.size(); ++i) threads.emplace_back(work, i);
      for (auto& th : threads) th.join();
    }
    if (failure) {
      early.reset();
      host_result.wait();
      std::rethrow_exception(failure);
    }
    progress.finish();
    g.timings.emplace_back("distances+select", seconds_since(t2));
    double gemm_ms = 0, select_ms = 0, loop_ms = 0, flop = 0;
    uint64_t candidates = 0, h2d = 0;
    nlohmann::json per_device = nlohmann::json::array();
    for (auto& e : engines) {
      const EngineStats& s = e->stats();
      gemm_ms = std::max(gemm_ms, s.gemm_ms);
      select_ms = std::max(select_ms, s.select_ms);
      loop_ms = std::max(loop_ms, s.loop_ms);
      flop += s.gemm_flop;
      candidates += s.candidates;
      h2d += s.h2d_bytes;
      per_device.push_back({{"device", e->device()}, {"tiles", s.tiles}, {"loop_s", s.loop_ms / 1e3},
                            {"seed_s", s.seed_ms / 1e3},
                            {"gemm_s", s.gemm_ms / 1e3}, {"h2d_bytes", s.h2d_bytes}});
      if (!s.tile_times.empty()) {
        // MANIFOLD_GPU_TIMELINE=1: rows of numbers, ms (fields named once).
        nlohmann::json tiles = nlohmann::json::array(), uploads = nlohmann::json::array();
        for (const auto& x : s.tile_times)
          tiles.push_back({x.t, x.I, x.c0, x.cols, x.dense ? 1 : 0, x.stream, x.issued, x.gemm_start, x.gemm_end,
                           x.sel_start, x.sel_end});
        for (const auto& u : s.upload_times) uploads.push_back({u.block, u.issued, u.copied, u.done});
        per_device.back()["timeline"] = {
            {"tile_fields", {"t", "I", "c0", "cols", "dense", "stream", "issued", "gemm_start", "gemm_end",
                             "sel_start", "sel_end"}},
            {"tiles", tiles},
            {"upload_fields", {"block", "issued", "copied", "done"}},
            {"uploads", uploads}};
      }
    }
    g.timings.emplace_back("gemm", gemm_ms / 1e3);
    g.timings.emplace_back("select", select_ms / 1e3);

    // Final steps on device 0.
    const auto t3 = std::chrono::steady_clock::now();
    progress.stage("certify", 1, "steps");
    for (auto& e : engines) e->release_loop_buffers();
    g.timings.emplace_back("release", seconds_since(t3));
    DeviceScope scope(main.device());
    const ListsView lists = main.lists();
    cudaStream_t s = main.stream();
    const size_t ncap = static_cast<size_t>(g.n) * cap;
    Event ev_merge0, ev_merge1;
    ev_merge0.record(s);
    for (size_t i = 1; i < engines.size(); ++i) {
      const ListsView other = engines[i]->lists();
      DeviceBuffer<float> od(ncap, "allocating room to merge the devices' lists");
      DeviceBuffer<int> oi(ncap, "allocating room to merge the devices' lists");
      DeviceBuffer<int> of(static_cast<size_t>(g.n), "allocating room to merge the devices' lists");
      cuda_check(cudaMemcpyPeerAsync(od.data(), main.device(), other.dist, engines[i]->device(), ncap * sizeof(float),
                                     s),
                 "copying lists between GPUs");
      cuda_check(cudaMemcpyPeerAsync(oi.data(), main.device(), other.index, engines[i]->device(), ncap * sizeof(int),
                                     s),
                 "copying lists between GPUs");
      cuda_check(cudaMemcpyPeerAsync(of.data(), main.device(), other.fill, engines[i]->device(),
                                     static_cast<size_t>(g.n) * sizeof(int), s),
                 "copying lists between GPUs");
      constexpr int kChunk = 4096;
      for (int from = 0; from < cap; from += kChunk)
        launch_merge_lists(lists, od.data(), oi.data(), of.data(), from, std::min(kChunk, cap - from), s);
      cuda_check(cudaStreamSynchronize(s), "merging the devices' lists");
    }
    ev_merge1.record(s);

    // The merge's events completed before the final step reads its time.
    cuda_check(cudaStreamSynchronize(s), "merging the devices' lists");
    fin.device_rows = main.all_rows();  // resident: all rows on device 0; else nullptr
    fin.merge_devices_ms = ev_merge1.since(ev_merge0);
    // Device 0's staging buffers carry the result home; its uploads are done.
    DeviceContext& ctx0 = DeviceContext::get(main.device());
    for (int i = 0; i < 2; ++i) {
      if (ctx0.staging_used[i]) ctx0.staging_free[i].synchronize("copying rows to the GPU");
      fin.staging[i] = ctx0.staging(i);
    }
    fin.staging_bytes = DeviceContext::kStagingBytes;
    certify_and_finish(fin, g, progress, early.get());
    g.timings.emplace_back("final", seconds_since(t3));
    // Core's input hash can outlast the whole GPU job.
    const auto t5 = std::chrono::steady_clock::now();
    start_fingerprint();  // (a loop of a single strip never called rows_final)
    g.fingerprint = fingerprint.get();
    g.timings.emplace_back("fingerprint_wait", seconds_since(t5));
    const double total = seconds_since(t0);
    g.timings.emplace_back("total", total);

    nlohmann::json names = nlohmann::json::array();
    for (auto& e : engines) names.push_back(e->device_name());
    if (!g.extra.contains("select")) g.extra["select"] = params.select;
    g.extra["dot_products"] = tensor ? "TF32 tensor cores (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32)"
                                     : (plan.fused ? "float32 FFMA (fused kernel)" : "float32 FFMA (cuBLAS SGEMM)");
    g.extra["devices"] = devices;
    g.extra["device_names"] = names;
    g.extra["per_device"] = per_device;
    g.extra["tile_rows"] = plan.T;
    g.extra["tile_cols"] = plan.W;
    g.extra["resident"] = plan.resident;
    g.extra["tile_kernel"] = plan.fused ? "fused FFMA GEMM + filter"
                                        : (tensor ? "cuBLAS TF32 GEMM + filter" : "cuBLAS SGEMM + filter");
    if (!plan.resident) {
      g.extra["slots"] = plan.slots;
      g.extra["panel_blocks"] = std::max(1, plan.slots - 2);
    }
    g.extra["rows_on_device_bytes"] = plan.row_bytes;
    g.extra["list_bytes"] = plan.list_bytes;
    g.extra["loop_bytes"] = plan.loop_bytes;
    g.extra["workspace_bytes"] = plan.workspace;
    g.extra["budget_bytes"] = plan.budget;
    g.extra["planned_bytes"] = std::max(plan.bytes, plan.final_bytes);
    g.extra["tiles"] = total_tiles;
    g.extra["candidates"] = candidates;
    g.extra["candidates_per_row"] = static_cast<double>(candidates) / static_cast<double>(g.n);
    g.extra["h2d_bytes"] = h2d;
    g.extra["cublas_math"] = tensor ? "default (TF32 compute type)" : engine_math_mode_name();
    g.extra["gemm_flop"] = flop;
    g.extra["gemm_tflops"] = gemm_ms > 0 ? flop / (gemm_ms / 1e3) / 1e12 : 0.0;
    // The useful work: the upper triangle of N^2 d multiply-adds.
    const double useful = static_cast<double>(g.n) * static_cast<double>(g.n) * static_cast<double>(g.d);
    g.extra["loop_tflops"] = loop_ms > 0 ? useful / (loop_ms / 1e3) / 1e12 : 0.0;
    g.extra["total_tflops"] = useful / total / 1e12;
    return g;
  }
};

}  // namespace

void register_gpu_backend() {
  register_backend("gpu", [] { return std::make_unique<GpuKnnBackend>(); }, [] { return device_count() > 0; });
}

}  // namespace manifold::gpu
