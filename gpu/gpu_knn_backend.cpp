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
#include <atomic>
#include <chrono>
#include <climits>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device_context.h"
#include "device_engine.h"
#include "final_step.h"
#include "settings.h"
#include "impl/kernels.h"
#include "manifold/error.h"
#include "manifold/exact/error_bound.h"
#include "manifold/exact/translation.h"
#include "manifold/knn.h"
#include "manifold/parallel.h"
#include "tile_plan.h"
#include "utils/cuda_check.h"
#include "utils/deferred_fingerprint.h"
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
/// short inner dimension (see impl/fused_tile.cu), longer for exact's split
/// strips (`split`: they run if fused). Settings::gemm overrides.
bool use_fused(int64_t d, bool split) {
  switch (settings().gemm) {
    case GemmPath::Fused:
    case GemmPath::FusedFfma: return true;
    case GemmPath::Cublas: return false;
    case GemmPath::Auto: break;
  }
  return d <= (split ? kSplitFusedMaxD : kFusedMaxD);
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

/// The engine's facts for graph.json (the bench and the tests read these
/// keys): the plan, the devices and what their tile loops did.
struct EngineBuildStats {
  bool tensor = false;                                              ///< fast-exact
  exact::DotArithmetic arithmetic = exact::DotArithmetic::Float32;  ///< the tile loop's dot products
  exact::Translation translation;  ///< of the rows on the device (core's choose_translation), or none
  TilePlan plan;
  std::vector<int> devices;
  nlohmann::json device_names = nlohmann::json::array();
  nlohmann::json per_device = nlohmann::json::array();
  uint64_t tiles = 0, candidates = 0, h2d_bytes = 0;
  double gemm_ms = 0, select_ms = 0, loop_ms = 0, gemm_flop = 0;  ///< ms: the slowest device's
  int64_t n = 0, d = 0;
  double total_s = 0;

  /// One device's loop: summed (flop, candidates, bytes) or the slowest (times).
  void add_engine(const DeviceEngine& e) {
    const EngineStats& s = e.stats();
    gemm_ms = std::max(gemm_ms, s.gemm_ms);
    select_ms = std::max(select_ms, s.select_ms);
    loop_ms = std::max(loop_ms, s.loop_ms);
    gemm_flop += s.gemm_flop;
    candidates += s.candidates;
    h2d_bytes += s.h2d_bytes;
    device_names.push_back(e.device_name());
    per_device.push_back({{"device", e.device()},
                          {"tiles", s.tiles},
                          {"loop_s", s.loop_ms / 1e3},
                          {"seed_s", s.seed_ms / 1e3},
                          {"gemm_s", s.gemm_ms / 1e3},
                          {"h2d_bytes", s.h2d_bytes}});
    if (s.prior_sample > 0)
      per_device.back()["prior_bound"] = {{"sample", s.prior_sample}, {"rank", s.prior_rank}, {"s", s.prior_ms / 1e3}};
    if (!s.tile_times.empty()) per_device.back()["timeline"] = timeline(s);
  }

  /// MANIFOLD_GPU_TIMELINE=1: rows of numbers, ms (fields named once).
  static nlohmann::json timeline(const EngineStats& s) {
    nlohmann::json tiles = nlohmann::json::array(), uploads = nlohmann::json::array();
    for (const auto& x : s.tile_times)
      tiles.push_back({x.t, x.I, x.c0, x.cols, x.dense ? 1 : 0, x.stream, x.issued, x.gemm_start, x.gemm_end,
                       x.sel_start, x.sel_end});
    for (const auto& u : s.upload_times) uploads.push_back({u.block, u.issued, u.copied, u.done});
    return {{"tile_fields",
             {"t", "I", "c0", "cols", "dense", "stream", "issued", "gemm_start", "gemm_end", "sel_start", "sel_end"}},
            {"tiles", tiles},
            {"upload_fields", {"block", "issued", "copied", "done"}},
            {"uploads", uploads}};
  }

  nlohmann::json to_json() const {
    nlohmann::json j;
    if (arithmetic == exact::DotArithmetic::Tf32)
      j["dot_products"] = plan.fused ? "TF32 tensor cores (fused kernel's mma.sync; seed tiles float32 FFMA)"
                                     : "TF32 tensor cores (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32)";
    else if (arithmetic == exact::DotArithmetic::SplitTf32)
      j["dot_products"] =
          "float32 split into two TF32 parts, three tensor-core products (fused kernel's mma.sync; seed tiles "
          "float32 FFMA)";
    else
      j["dot_products"] = plan.fused ? "float32 FFMA (fused kernel)" : "float32 FFMA (cuBLAS SGEMM)";
    j["devices"] = devices;
    j["device_names"] = device_names;
    j["per_device"] = per_device;
    j["tile_rows"] = plan.T;
    j["tile_cols"] = plan.W;
    j["resident"] = plan.resident;
    j["translated_columns"] = translation.columns;
    if (translation.any()) {
      j["translation_norm_ratio"] = translation.norm_ratio;
      j["translation_exact"] = translation.exact;
    }
    if (plan.fused)
      j["tile_kernel"] = arithmetic == exact::DotArithmetic::Tf32        ? "fused TF32 GEMM + filter"
                         : arithmetic == exact::DotArithmetic::SplitTf32 ? "fused split-TF32 GEMM + filter"
                                                                         : "fused FFMA GEMM + filter";
    else
      j["tile_kernel"] = tensor ? "cuBLAS TF32 GEMM + filter" : "cuBLAS SGEMM + filter";
    if (!plan.resident) {
      j["slots"] = plan.slots;
      j["panel_blocks"] = std::max(1, plan.slots - 2);
    }
    j["rows_on_device_bytes"] = plan.row_bytes;
    j["list_bytes"] = plan.list_bytes;
    j["pending_room"] = plan.pending;
    j["loop_bytes"] = plan.loop_bytes;
    j["workspace_bytes"] = plan.workspace;
    j["budget_bytes"] = plan.budget;
    j["planned_bytes"] = std::max(plan.bytes, plan.final_bytes);
    j["tiles"] = tiles;
    j["candidates"] = candidates;
    j["candidates_per_row"] = static_cast<double>(candidates) / static_cast<double>(n);
    j["h2d_bytes"] = h2d_bytes;
    j["cublas_math"] = tensor ? "default (TF32 compute type)" : engine_math_mode_name();
    j["gemm_flop"] = gemm_flop;
    j["gemm_tflops"] = gemm_ms > 0 ? gemm_flop / (gemm_ms / 1e3) / 1e12 : 0.0;
    // The useful work: the upper triangle of N^2 d multiply-adds.
    const double useful = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d);
    j["loop_tflops"] = loop_ms > 0 ? useful / (loop_ms / 1e3) / 1e12 : 0.0;
    j["total_tflops"] = useful / total_s / 1e12;
    return j;
  }
};

/// The requests only the engine (warp, merge) refuses, each in one line.
void check_engine_request(const Dataset& data, const KnnParams& params) {
  if (params.k > kMaxNeighbours)
    throw UsageError("-k " + std::to_string(params.k) + ": the GPU backend supports k up to " +
                     std::to_string(kMaxNeighbours));
  if (data.rows() >= INT_MAX)
    throw Error("the GPU backend indexes rows with 32-bit integers: " + std::to_string(data.rows()) +
                " rows is too many");
  if (data.cols() > exact::kMaxBoundDim)
    throw UsageError("the GPU backend's error bound covers up to " + std::to_string(exact::kMaxBoundDim) +
                     " values per item; these items have " + std::to_string(data.cols()));
}

/// One graph on the engine (--select warp or merge), in phases: prepare the
/// rows, plan and allocate, run the tile loops (one host thread per device;
/// with one GPU and every row resident the final step runs beside them),
/// merge the devices' lists on device 0, certify and finish.
class EngineBuild {
 public:
  EngineBuild(const Dataset& data, const KnnParams& params, Progress& progress)
      : data_(data),
        params_(params),
        progress_(progress),
        t0_(std::chrono::steady_clock::now()),
        g_(empty_graph(data, params, "gpu")) {
    stats_.devices = chosen_devices(params);
    stats_.tensor = params.precision == Precision::FastExact;
    stats_.n = g_.n, stats_.d = g_.d;
    force_block_ = params.select == Select::Merge;
    // The list capacity: k plus the room the certificate needs, at most every
    // other point (then every list is complete and trivially certified).
    cap_ = list_capacity(g_.k, g_.n, params.keep_self, stats_.tensor, g_.d);
    g_.strategy = force_block_ || cap_ > kWarpMergeMaxK ? "merge" : "warp";
  }

  KnnGraph run() {
    prepare_rows_for_upload();
    plan_and_allocate();
    host_event("planned");
    start_final_step();
    host_event("final_step_started");
    run_tile_loops();
    host_event("loop_end");
    // Final steps on device 0.
    const auto t3 = std::chrono::steady_clock::now();
    progress_.stage("certify", 1, "steps");
    for (auto& e : engines_) e->release_loop_buffers();
    g_.timings.emplace_back("release", seconds_since(t3));
    DeviceScope scope(engines_[0]->device());
    merge_device_lists();
    finish(t3);
    host_event("final_end");
    if (!g_.extra.contains("select")) g_.extra["select"] = to_string(params_.select);
    g_.extra.update(stats_.to_json());
    if (timeline_) {
      host_events_["result_allocated"] = result_allocated_ms_;
      host_events_["tiles_origin"] = std::chrono::duration<double, std::milli>(engines_[0]->timeline_origin() - t0_)
                                         .count();
      g_.extra["timeline_host_events"] = host_events_;
    }
    return std::move(g_);
  }

 private:
  /// The rows on the devices are moved with rounding (the exact keys need
  /// the rows as they were).
  bool rounded_move() const { return stats_.translation.any() && !stats_.translation.exact; }

  /// MANIFOLD_GPU_TIMELINE=1: when the build reached `what`, ms since its
  /// start (graph.json's timeline_host_events; the tiles' own times count
  /// from tiles_origin).
  void host_event(const char* what) {
    if (timeline_) host_events_[what] = seconds_since(t0_) * 1e3;
  }

  /// The rows as the metric ranks them, and the translation that makes
  /// their stored norms those about their mean where that narrows the
  /// certificate's bound (manifold/exact/translation.h: rows that share a
  /// large common part, such as diffraction patterns, certify from their
  /// lists only so; the graph is unchanged bit for bit). After a rounded
  /// move device 0 keeps the rows as they were for the exact keys, or the
  /// host does where the rows stream.
  void prepare_rows_for_upload() {
    progress_.stage("prepare", 1, "steps");
    rows_ = prepare_rows(data_, params_.metric);
    if (settings().translate)
      stats_.translation = exact::choose_translation(rows_.data, rows_.rows, rows_.cols, params_.threads, true);
    progress_.finish();
    g_.timings.emplace_back("prepare", seconds_since(t0_));
  }

  /// Plans tiles for the smallest budget among the devices and allocates an
  /// engine on each; when an allocation fails anyway (another process took
  /// memory meanwhile), plans again with a smaller budget.
  void plan_and_allocate() {
    const auto t1 = std::chrono::steady_clock::now();
    uint64_t budget = UINT64_MAX;
    size_t shared = SIZE_MAX;
    bool tf32_mma = true;  // every device runs TF32 mma.sync (compute capability 8.0)
    for (int dev : stats_.devices) {
      budget = std::min(budget, device_budget(dev, params_.gpu_memory));
      shared = std::min(shared, DeviceContext::get(dev).shared_optin);
      tf32_mma = tf32_mma && DeviceContext::get(dev).compute_major >= 8;
    }
    if (certify_shared_bytes(cap_) > shared)
      throw UsageError("-k " + std::to_string(g_.k) + ": the final step needs more shared memory than this GPU has");
    PlanRequest req;
    req.n = rows_.rows, req.d = rows_.cols, req.k = cap_, req.k_out = g_.k;
    req.devices = static_cast<int>(stats_.devices.size());
    // The fused strips are TF32 mma.sync from compute capability 8.0:
    // fast-exact's need it; exact's split their float32 operands where they
    // can (bench/gpu/RESULTS.md: faster than FFMA and cuBLAS SGEMM, within
    // their own bound), else run FFMA.
    const bool split = !stats_.tensor && tf32_mma && settings().gemm != GemmPath::FusedFfma;
    req.fused = use_fused(rows_.cols, split) && (!stats_.tensor || tf32_mma);
    stats_.arithmetic = stats_.tensor        ? exact::DotArithmetic::Tf32
                        : req.fused && split ? exact::DotArithmetic::SplitTf32
                                             : exact::DotArithmetic::Float32;
    req.shared_memory = shared;
    req.tile_override = settings().tile;
    // Pending room only where every merge takes the block path (the warp
    // path's merges are small, and they ignore it).
    if (force_block_ || cap_ > kWarpMergeMaxK)
      req.pending = settings().pending_room >= 0 ? settings().pending_room : kPendingRoom;
    TilePlan& plan = stats_.plan;
    for (int attempt = 0;; ++attempt) {
      req.budget = budget;
      plan = plan_tiles(req);
      if (rounded_move() && plan.resident) plan_beside_unmoved_rows(req);
      try {
        engines_.clear();
        for (int dev : stats_.devices)
          engines_.push_back(std::make_unique<DeviceEngine>(dev, rows_.data, plan, params_.keep_self, force_block_,
                                                            stats_.arithmetic));
        if (stats_.translation.any())
          for (size_t i = 0; i < engines_.size(); ++i)
            engines_[i]->translate_rows_by(stats_.translation.offset, rounded_move() && i == 0);
        break;
      } catch (const DeviceOutOfMemory& e) {
        engines_.clear();
        if (attempt == 3 || params_.gpu_memory)
          throw Error(std::string(e.what()) + " (planned " + format_bytes(static_cast<double>(plan.bytes)) +
                      " of device memory; try a smaller --gpu-memory)");
        budget = static_cast<uint64_t>(static_cast<double>(plan.bytes) * 0.7);
      }
    }
    g_.timings.emplace_back("setup", seconds_since(t1));
  }

  /// A rounded move with resident rows keeps the rows as they were on
  /// device 0 too: planned within what they leave of the budget (the rows
  /// may then stream, which needs no such copy: the host keys them); where
  /// nothing fits beside them, the rows are moved exactly or not at all.
  void plan_beside_unmoved_rows(PlanRequest req) {
    const uint64_t unmoved = static_cast<uint64_t>(req.n * req.d) * sizeof(float);
    req.budget = req.budget > unmoved ? req.budget - unmoved : 0;
    try {
      stats_.plan = plan_tiles(req);
    } catch (const Error&) {
      stats_.translation = exact::choose_translation(rows_.data, rows_.rows, rows_.cols, params_.threads, false);
    }
  }

  /// The final step's request, and with one GPU the worker that certifies
  /// and copies home each strip's rows (each panel's, when rows stream) while
  /// the later strips run (final_step.h EarlyFinish). Settings::final_beside_loop
  /// = false (tests) leaves it all for after the loop.
  void start_final_step() {
    if (timeline_) fin_.timeline_origin = t0_;
    DeviceEngine& main = *engines_[0];
    fin_.data = &data_, fin_.params = &params_, fin_.rows = &rows_, fin_.lists = main.lists();
    fin_.norms = main.norms(), fin_.stream = main.stream(), fin_.loop_arithmetic = stats_.arithmetic,
    fin_.device = main.device();
    fin_.moved_rows_rounded = rounded_move();
    fin_.dot_products = [&main](const float* a, int m, const float* b, int ncols, float* c, int ldc, cudaStream_t st) {
      main.dot_products(a, m, b, ncols, c, ldc, st);
    };
    fin_.host_result = &host_result_;
    const TilePlan& plan = stats_.plan;
    // Streamed rows are certified on the host, which needs no device memory.
    if (engines_.size() == 1 && (!plan.resident || plan.bytes + plan.final_bytes <= plan.budget) &&
        settings().final_beside_loop) {
      fin_.device_rows = main.resident_rows(), fin_.key_rows = main.unmoved_rows();
      early_ = std::make_unique<EarlyFinish>(fin_, g_, DeviceContext::get(main.device()));
      rows_final_ = [this](int64_t r, cudaStream_t after) {
        fingerprint_.start();
        early_->rows_final(r, after);
      };
    }
    if (!early_) fingerprint_.start();
    // The result's host memory is fresh pages to fault in: touch it meanwhile.
    host_result_.start(g_, [this] {
      if (timeline_) result_allocated_ms_ = seconds_since(t0_) * 1e3;
    });
  }

  /// The tile loops, one host thread per device, over the strips of the
  /// upper triangle assigned to it. Progress counts the tiles of all devices
  /// together, so rate and time left are the whole job's.
  void run_tile_loops() {
    const auto strips = assign_strips(stats_.plan.blocks(), static_cast<int>(stats_.devices.size()));
    for (auto& s : strips) stats_.tiles += DeviceEngine::tiles_for(stats_.plan, s);
    const auto t2 = std::chrono::steady_clock::now();
    progress_.stage("knn", stats_.tiles, "tiles");
    std::atomic<bool> stop{false};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&](size_t i) {
      try {
        engines_[i]->run(strips[i], progress_, stop, rows_final_);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        // The first error wins; the Cancelled others throw when told to stop is not news.
        if (!failure) failure = std::current_exception();
        stop = true;
      }
    };
    if (engines_.size() == 1) {
      work(0);
    } else {
      std::vector<std::thread> threads;
      for (size_t i = 0; i < engines_.size(); ++i) threads.emplace_back(work, i);
      for (auto& th : threads) th.join();
    }
    if (failure) {
      early_.reset();
      host_result_.wait();
      std::rethrow_exception(failure);
    }
    progress_.finish();
    g_.timings.emplace_back("distances+select", seconds_since(t2));
    for (auto& e : engines_) stats_.add_engine(*e);
    g_.timings.emplace_back("gemm", stats_.gemm_ms / 1e3);
    g_.timings.emplace_back("select", stats_.select_ms / 1e3);
  }

  /// Every other device's lists merged into device 0's; the time it took
  /// goes to the final step, which reports it among its timings.
  void merge_device_lists() {
    DeviceEngine& main = *engines_[0];
    const ListsView lists = main.lists();
    cudaStream_t s = main.stream();
    const size_t ncap = static_cast<size_t>(g_.n) * cap_;
    const char* what = "copying lists between GPUs";
    Event ev_merge0, ev_merge1;
    ev_merge0.record(s);
    for (size_t i = 1; i < engines_.size(); ++i) {
      const ListsView other = engines_[i]->lists();
      const int dev = engines_[i]->device();
      DeviceBuffer<float> od(ncap, "allocating room to merge the devices' lists");
      DeviceBuffer<int> oi(ncap, "allocating room to merge the devices' lists");
      DeviceBuffer<int> of(static_cast<size_t>(g_.n), "allocating room to merge the devices' lists");
      cuda_check(cudaMemcpyPeerAsync(od.data(), main.device(), other.dist, dev, ncap * sizeof(float), s), what);
      cuda_check(cudaMemcpyPeerAsync(oi.data(), main.device(), other.index, dev, ncap * sizeof(int), s), what);
      cuda_check(cudaMemcpyPeerAsync(of.data(), main.device(), other.fill, dev, static_cast<size_t>(g_.n) * sizeof(int),
                                     s),
                 what);
      constexpr int kChunk = 4096;
      for (int from = 0; from < cap_; from += kChunk)
        launch_merge_lists(lists, od.data(), oi.data(), of.data(), from, std::min(kChunk, cap_ - from), s);
      cuda_check(cudaStreamSynchronize(s), "merging the devices' lists");
    }
    ev_merge1.record(s);
    // The merge's events completed before the final step reads its time.
    cuda_check(cudaStreamSynchronize(s), "merging the devices' lists");
    fin_.merge_devices_ms = ev_merge1.since(ev_merge0);
  }

  /// Certify and finish on device 0, then the input's hash (which can
  /// outlast the whole GPU job).
  void finish(std::chrono::steady_clock::time_point t3) {
    DeviceEngine& main = *engines_[0];
    fin_.device_rows = main.all_rows();  // resident: all rows on device 0; else nullptr
    fin_.key_rows = main.unmoved_rows();
    // Device 0's staging buffers carry the result home; its uploads are done.
    DeviceContext& ctx0 = DeviceContext::get(main.device());
    for (int i = 0; i < 2; ++i) {
      if (ctx0.staging_used[i]) ctx0.staging_free[i].synchronize("copying rows to the GPU");
      fin_.staging[i] = ctx0.staging(i);
    }
    fin_.staging_bytes = DeviceContext::kStagingBytes;
    certify_and_finish(fin_, g_, progress_, early_.get());
    host_result_.wait();  // (certify_and_finish waited for it already)
    g_.timings.emplace_back("final", seconds_since(t3));
    const auto t5 = std::chrono::steady_clock::now();
    g_.fingerprint = fingerprint_.get();  // (a loop of a single strip never started it)
    g_.timings.emplace_back("fingerprint_wait", seconds_since(t5));
    stats_.total_s = seconds_since(t0_);
    g_.timings.emplace_back("total", stats_.total_s);
  }

  const Dataset& data_;
  const KnnParams& params_;
  Progress& progress_;
  const std::chrono::steady_clock::time_point t0_;
  bool force_block_ = false;
  int cap_ = 0;
  EngineBuildStats stats_;
  const bool timeline_ = settings().timeline;
  nlohmann::json host_events_ = nlohmann::json::object();
  double result_allocated_ms_ = 0;  ///< written by the page-faulting task, read after it
  // Destroyed in reverse: the final step's worker first, then the result's
  // page-faulting task, the engines, the rows, the hash, and the graph the
  // tasks write to last.
  KnnGraph g_;
  /// Hashing every byte of the input takes longer than the GPU's whole job
  /// on large inputs: it runs on a spare core meanwhile -- after the rows are
  /// staged for the upload where that is soon, since both read the input at
  /// memory speed. With every row resident on one GPU, the uploads are done
  /// once the first strip's rows are final, and the hash starts then;
  /// otherwise at once. (On the H200 hosts measured so far the order made
  /// no difference: bench/gpu/RESULTS.md.)
  DeferredFingerprint fingerprint_{data_};
  PreparedRows rows_;
  std::vector<std::unique_ptr<DeviceEngine>> engines_;
  HostResult host_result_;
  FinishRequest fin_;
  std::unique_ptr<EarlyFinish> early_;
  DeviceEngine::RowsFinal rows_final_;
};

class GpuKnnBackend final : public KnnBackend {
 public:
  std::string name() const override { return "gpu"; }

  KnnGraph build(const Dataset& data, const KnnParams& params, Progress& progress) override {
    validate(params, data.rows());
    if (select::is_paper_strategy(params.select)) return select::build_with_paper_strategy(data, params, progress);
    if (params.select == Select::Auto && params.precision == Precision::Exact)
      return build_auto(data, params, progress);
    check_engine_request(data, params);
    return EngineBuild(data, params, progress).run();
  }

 private:
  /// --select auto at exact precision: the measured table
  /// (select/auto_table.cpp) picks for one GPU; with several, and for
  /// fast-exact, the engine (the papers' strategies run on one GPU, in
  /// float32).
  KnnGraph build_auto(const Dataset& data, const KnnParams& params, Progress& progress) {
    const std::vector<int> devices = chosen_devices(params);
    const Select pick = select::best_strategy(data.rows(), params.k, static_cast<int>(devices.size()));
    KnnParams p = params;
    p.select = pick;
    KnnGraph g;
    std::string declined;
    if (select::is_paper_strategy(pick)) {
      try {
        g = select::build_with_paper_strategy(data, p, progress);
      } catch (const select::StrategyRefusal& e) {
        // Beyond what the pick supports here (k, device memory): the engine.
        declined = to_string(pick) + " (" + e.what() + ")";
        p.select = Select::Warp;
      }
    }
    if (!select::is_paper_strategy(pick) || !declined.empty()) g = build(data, p, progress);
    g.extra["select"] = "auto";
    g.extra["auto_pick"] = to_string(pick);
    if (!declined.empty()) g.extra["auto_declined"] = declined;
    return g;
  }
};

}  // namespace

void register_gpu_backend() {
  register_backend(
      "gpu", [] { return std::make_unique<GpuKnnBackend>(); }, [] { return device_count() > 0; });
}

}  // namespace manifold::gpu
