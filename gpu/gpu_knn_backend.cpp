// GpuKnnBackend: the exact k-NN graph on one or several GPUs of this machine.
// Plans tiles from the memory budget, splits the strips of the upper
// triangle among devices (Kato & Hosino's mirrored assignment: strip i goes
// to device j when i mod 2G is j or 2G-1-j, which evens out the shrinking
// strips), runs one host thread per device, merges the per-device lists on
// device 0 and certifies the result: every row's list is checked against the
// rigorous error bound of its dot products (impl/error_bound.h), the
// candidates the bound cannot rule out are re-evaluated exactly, and rows the
// bound cannot certify are scanned exactly. Both precisions (float32 SGEMM,
// TF32 tensor cores) therefore return the same graph: the k smallest exact
// keys (float64 distance rounded to float, then index).
#include "manifold/gpu/gpu_knn_backend.h"
#include "select/paper_strategies.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "device_context.h"
#include "device_engine.h"
#include "impl/certify_host.h"
#include "impl/error_bound.h"
#include "impl/kernels.h"
#include "manifold/error.h"
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
  size_t free_b = 0, total_b = 0;
  cuda_check(cudaMemGetInfo(&free_b, &total_b), "reading the free device memory");
  // Leave room for the CUDA context's own growth and for other processes;
  // what our device context already holds is ours to use.
  const uint64_t usable = (free_b > (uint64_t{512} << 20) ? static_cast<uint64_t>(free_b * 0.92) - (uint64_t{256} << 20)
                                                         : free_b / 2) +
                          ctx.held_bytes();
  return requested ? std::min<uint64_t>(requested, usable) : usable;
}

/// The fused kernel wins where cuBLAS is far from its large-GEMM rate: a
/// short inner dimension (see impl/fused_tile.cu). MANIFOLD_GPU_GEMM=fused
/// or cublas overrides.
bool use_fused(int64_t d) {
  if (const char* v = std::getenv("MANIFOLD_GPU_GEMM")) {
    if (!std::strcmp(v, "fused")) return true;
    if (!std::strcmp(v, "cublas")) return false;
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

/// Candidates kept per row beyond k: the room the certificate needs between
/// the k-th upper bound and the last list entry (impl/error_bound.h). The
/// TF32 bound is ~10x wider than float32's, so fast-exact keeps more.
/// MANIFOLD_GPU_SLACK overrides (tests force the fallback with it).
int list_slack(int k, bool tensor) {
  if (const char* v = std::getenv("MANIFOLD_GPU_SLACK")) {
    char* end = nullptr;
    const long s = std::strtol(v, &end, 10);
    if (*v && !*end && s >= 0 && s <= kMaxK) return static_cast<int>(s);
  }
  return tensor ? std::max(96, k / 4) : std::max(16, k / 8);
}

/// Rows the fallback scans at a time on the device: keys of 64 MB.
int64_t fallback_chunk(int64_t n) { return std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(n, 1)); }

class GpuKnnBackend final : public KnnBackend {
 public:
  std::string name() const override { return "gpu"; }

  KnnGraph build(const Dataset& data, const KnnParams& params, Progress& progress) override {
    validate(params, data.rows());
    if (select::is_paper_strategy(params.select)) return select::build_with_paper_strategy(data, params, progress);
    if (params.select != "auto" && params.select != "warp" && params.select != "merge")
      throw UsageError("--select " + params.select +
                       ": not available in the GPU backend yet (it has auto, warp, merge)");
    if (params.precision != "exact" && params.precision != "fast-exact")
      throw UsageError("--precision " + params.precision + ": unknown (the GPU backend has exact, fast-exact)");
    if (params.k > kMaxNeighbours)
      throw UsageError("-k " + std::to_string(params.k) + ": the GPU backend supports k up to " +
                       std::to_string(kMaxNeighbours));
    if (data.rows() >= INT_MAX)
      throw Error("the GPU backend indexes rows with 32-bit integers: " + std::to_string(data.rows()) +
                  " rows is too many");
    if (data.cols() > kMaxBoundDim)
      throw UsageError("the GPU backend's error bound covers up to " + std::to_string(kMaxBoundDim) +
                       " values per item; these items have " + std::to_string(data.cols()));
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> devices = chosen_devices(params);
    const bool force_block = params.select == "merge";
    const bool tensor = params.precision == "fast-exact";

    KnnGraph g;
    g.n = data.rows();
    g.d = data.cols();
    g.k = params.k;
    g.metric = params.metric;
    g.keep_self = params.keep_self;
    g.backend = "gpu";
    // The list capacity: k plus the room the certificate needs, at most every
    // other point (then every list is complete and trivially certified).
    const int64_t available = g.n - (params.keep_self ? 0 : 1);
    const int cap = static_cast<int>(
        std::min<int64_t>({static_cast<int64_t>(g.k) + list_slack(g.k, tensor), available, int64_t{kMaxK}}));
    const bool complete = cap >= available;
    g.strategy = force_block || cap > kWarpMergeMaxK ? "merge" : "warp";
    // Hashing every byte of the input takes longer than the GPU's whole job
    // on large inputs: do it on a spare core meanwhile.
    auto fingerprint = std::async(std::launch::async, [&data] { return data.fingerprint(); });

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
    if (const char* o = std::getenv("MANIFOLD_GPU_TILE")) req.tile_override = o;
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
    const size_t nk = static_cast<size_t>(g.n) * g.k;
    auto host_result = std::async(std::launch::async, [&g, nk] {
      g.indices.resize(nk);
      g.distances.resize(nk);
    });
    const auto t2 = std::chrono::steady_clock::now();
    progress.stage("knn", total_tiles, "tiles");
    std::atomic<bool> stop{false};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&](size_t i) {
      try {
        engines[i]->run(strips[i], progress, stop);
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
    }
    g.timings.emplace_back("gemm", gemm_ms / 1e3);
    g.timings.emplace_back("select", select_ms / 1e3);

    // Final steps on device 0.
    const auto t3 = std::chrono::steady_clock::now();
    progress.stage("certify", 1, "steps");
    for (auto& e : engines) e->release_loop_buffers();
    DeviceEngine& main = *engines[0];
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

    {
      DeviceBuffer<int> bad(2, "allocating a counter");
      const int init[2] = {0, INT_MAX};
      cuda_check(cudaMemcpyAsync(bad.data(), init, sizeof init, cudaMemcpyHostToDevice, s), "checking the lists");
      launch_count_short_rows(lists, g.k, bad.data(), bad.data() + 1, s);
      int out[2] = {0, 0};
      cuda_check(cudaMemcpyAsync(out, bad.data(), sizeof out, cudaMemcpyDeviceToHost, s), "checking the lists");
      cuda_check(cudaStreamSynchronize(s), "checking the lists");
      if (out[0] > 0)
        throw Error(data.source + (data.source.empty() ? "" : ": ") + "row " + std::to_string(out[1]) +
                    " has fewer than k=" + std::to_string(g.k) + " neighbours at a finite distance (" +
                    std::to_string(out[0]) + " such rows; the data hold NaN or infinite values?)");
    }

    // Every row's stored norm: the error bound needs each candidate's and
    // the largest (for the points a list does not hold).
    const float* device_rows = main.all_rows();  // resident: all rows on device 0; else nullptr
    std::vector<float> norms(static_cast<size_t>(g.n));
    cuda_check(cudaMemcpyAsync(norms.data(), main.norms(), norms.size() * sizeof(float), cudaMemcpyDeviceToHost, s),
               "copying the row norms from the GPU");
    cuda_check(cudaStreamSynchronize(s), "copying the row norms from the GPU");
    double ymax = 0;
    for (float v : norms) ymax = std::max(ymax, static_cast<double>(v));
    const ErrorModel model = make_error_model(g.d, tensor);

    host_result.get();
    std::vector<int> status(static_cast<size_t>(g.n));
    float max_use = 0.f;
    int64_t uncertified = 0, rescanned = 0;
    Event ev_cert0, ev_cert1, ev_down1;  // ev_down1: streamed path
    if (device_rows) {
      DeviceBuffer<int64_t> out_i(nk, "allocating the result");
      DeviceBuffer<float> out_d(nk, "allocating the result");
      DeviceBuffer<int> st(static_cast<size_t>(g.n), "allocating the result");
      DeviceBuffer<float> ukey(static_cast<size_t>(g.n), "allocating the result");
      DeviceBuffer<float> use(1, "allocating the result");
      cuda_check(cudaMemsetAsync(use.data(), 0, sizeof(float), s), "clearing a counter");
      CertifyArgs ca;
      ca.rows = device_rows, ca.d = rows.cols, ca.norms = main.norms(), ca.lists = lists, ca.k = g.k;
      ca.euclidean = params.metric == Metric::Euclidean, ca.complete = complete, ca.ymax = ymax, ca.model = model;
      ca.out_index = out_i.data(), ca.out_dist = out_d.data(), ca.status = st.data(), ca.max_use = use.data();
      ca.ukey = ukey.data();
      ev_cert0.record(s);
      launch_certify(ca, s);
      ev_cert1.record(s);
      cuda_check(cudaMemcpyAsync(status.data(), st.data(), status.size() * sizeof(int), cudaMemcpyDeviceToHost, s),
                 "copying the result from the GPU");
      cuda_check(cudaMemcpyAsync(&max_use, use.data(), sizeof(float), cudaMemcpyDeviceToHost, s),
                 "copying the result from the GPU");
      cuda_check(cudaStreamSynchronize(s), "certifying the neighbour lists");
      g.timings.emplace_back("certify", ev_cert1.since(ev_cert0) / 1e3);

      // The rescan: each uncertified row against every point, with the same
      // kind of GEMM and bound, keeping what its own k-th upper bound cannot
      // rule out (up to kRescanCap), ranked exactly.
      std::vector<int> failed;
      for (int64_t i = 0; i < g.n; ++i)
        if (status[static_cast<size_t>(i)] < 0) failed.push_back(static_cast<int>(i));
      uncertified = static_cast<int64_t>(failed.size());
      const auto tr = std::chrono::steady_clock::now();
      if (!failed.empty()) {
        progress.stage("rescan: " + std::to_string(failed.size()) + " rows whose " + std::to_string(cap) +
                           " candidates the error bound could not certify, screened against every point",
                       failed.size(), "rows");
        try {
          const int R = static_cast<int>(std::min<size_t>(2048, failed.size()));
          const int Wc = static_cast<int>(std::min<int64_t>(8192, g.n));
          DeviceBuffer<int> fb_dev(static_cast<size_t>(R), "allocating the rescan");
          DeviceBuffer<float> a_rows(static_cast<size_t>(R) * rows.cols, "allocating the rescan");
          DeviceBuffer<float> a_norms(static_cast<size_t>(R), "allocating the rescan");
          DeviceBuffer<float> a_ukey(static_cast<size_t>(R), "allocating the rescan");
          DeviceBuffer<float> dots(static_cast<size_t>(R) * Wc, "allocating the rescan");
          DeviceBuffer<int> found(static_cast<size_t>(R), "allocating the rescan");
          DeviceBuffer<int> cand(static_cast<size_t>(R) * kRescanCap, "allocating the rescan");
          DeviceBuffer<int> st2(static_cast<size_t>(R), "allocating the rescan");
          std::vector<int> st2_host(static_cast<size_t>(R));
          for (size_t r0 = 0; r0 < failed.size(); r0 += static_cast<size_t>(R)) {
            const int count = static_cast<int>(std::min<size_t>(static_cast<size_t>(R), failed.size() - r0));
            cuda_check(cudaMemcpyAsync(fb_dev.data(), failed.data() + r0, count * sizeof(int), cudaMemcpyHostToDevice,
                                       s),
                       "copying the rows to rescan to the GPU");
            launch_gather_rows(device_rows, rows.cols, main.norms(), ukey.data(), fb_dev.data(), count, a_rows.data(),
                               a_norms.data(), a_ukey.data(), s);
            cuda_check(cudaMemsetAsync(found.data(), 0, count * sizeof(int), s), "clearing the rescan counters");
            for (int64_t c0 = 0; c0 < g.n; c0 += Wc) {
              const int cols = static_cast<int>(std::min<int64_t>(Wc, g.n - c0));
              main.dot_products(a_rows.data(), count, device_rows + c0 * rows.cols, cols, dots.data(), count, s);
              RescanTile t;
              t.dots = dots.data(), t.ld = count, t.count = count, t.cols = cols, t.c0 = c0;
              t.fb = fb_dev.data(), t.row_norms = a_norms.data(), t.ukey = a_ukey.data(), t.norms = main.norms();
              t.model = model, t.euclidean = params.metric == Metric::Euclidean, t.keep_self = params.keep_self;
              t.found = found.data(), t.cand = cand.data();
              launch_rescan_filter(t, s);
            }
            launch_rescan_select(device_rows, rows.cols, fb_dev.data(), count, found.data(), cand.data(), g.k,
                                 params.metric == Metric::Euclidean, out_i.data(), out_d.data(), st2.data(), s);
            cuda_check(cudaMemcpyAsync(st2_host.data(), st2.data(), count * sizeof(int), cudaMemcpyDeviceToHost, s),
                       "copying the rescan's result from the GPU");
            cuda_check(cudaStreamSynchronize(s), "rescanning rows");
            for (int r = 0; r < count; ++r)
              if (st2_host[static_cast<size_t>(r)] >= 0) {
                status[static_cast<size_t>(failed[r0 + r])] = st2_host[static_cast<size_t>(r)];
                ++rescanned;
              }
            progress.advance(static_cast<uint64_t>(count));
          }
        } catch (const DeviceOutOfMemory&) {
          // No room for the rescan's buffers: the exact scan below takes every
          // uncertified row (slower, same result).
        }
        progress.finish();
      }
      g.timings.emplace_back("rescan", seconds_since(tr));
      const auto t_down = std::chrono::steady_clock::now();
      cuda_check(cudaMemcpyAsync(g.indices.data(), out_i.data(), nk * sizeof(int64_t), cudaMemcpyDeviceToHost, s),
                 "copying the result from the GPU");
      cuda_check(cudaMemcpyAsync(g.distances.data(), out_d.data(), nk * sizeof(float), cudaMemcpyDeviceToHost, s),
                 "copying the result from the GPU");
      cuda_check(cudaStreamSynchronize(s), "copying the result from the GPU");
      g.timings.emplace_back("merge_devices", ev_merge1.since(ev_merge0) / 1e3);
      g.timings.emplace_back("download", seconds_since(t_down));
    } else {
      // Streamed rows: the same step on the host, in the device's exact
      // float64 order, reading candidates' rows from host memory.
      std::vector<float> ld(ncap);
      std::vector<int> li(ncap), lf(static_cast<size_t>(g.n));
      ev_cert0.record(s);
      cuda_check(cudaMemcpyAsync(ld.data(), lists.dist, ncap * sizeof(float), cudaMemcpyDeviceToHost, s),
                 "copying the lists from the GPU");
      cuda_check(cudaMemcpyAsync(li.data(), lists.index, ncap * sizeof(int), cudaMemcpyDeviceToHost, s),
                 "copying the lists from the GPU");
      cuda_check(cudaMemcpyAsync(lf.data(), lists.fill, lf.size() * sizeof(int), cudaMemcpyDeviceToHost, s),
                 "copying the lists from the GPU");
      ev_down1.record(s);
      cuda_check(cudaStreamSynchronize(s), "copying the lists from the GPU");
      const auto th = std::chrono::steady_clock::now();
      HostLists hl{ld.data(), li.data(), lf.data(), g.n, cap};
      max_use = certify_on_host(rows.data, rows.cols, hl, g.k, norms.data(), ymax, model, params.metric, complete,
                                params.threads, g.indices.data(), g.distances.data(), status.data());
      for (int st : status) uncertified += st < 0;
      g.timings.emplace_back("merge_devices", ev_merge1.since(ev_merge0) / 1e3);
      g.timings.emplace_back("certify", seconds_since(th));
      g.timings.emplace_back("download", ev_down1.since(ev_cert0) / 1e3);
    }
    progress.finish();

    // Rows the bound could not certify: their list might miss a neighbour,
    // so every point is evaluated exactly (float64) and ranked by key.
    std::vector<int64_t> fb;
    uint64_t reevaluated = 0;
    int max_reevaluated = 0;
    for (int64_t i = 0; i < g.n; ++i) {
      const int st = status[static_cast<size_t>(i)];
      if (st < 0) {
        fb.push_back(i);
      } else {
        reevaluated += static_cast<uint64_t>(st);
        max_reevaluated = std::max(max_reevaluated, st);
      }
    }
    const auto t4 = std::chrono::steady_clock::now();
    if (!fb.empty()) {
      // The stage's name says what happens, so the terminal shows it.
      progress.stage("fallback: " + std::to_string(fb.size()) + " rows whose error bound keeps more than " +
                         std::to_string(device_rows ? kRescanCap : cap) +
                         " candidates, each ranked by an exact scan of all points",
                     fb.size(), "rows");
      if (device_rows) {
        const int64_t chunk = std::min<int64_t>(fallback_chunk(g.n), static_cast<int64_t>(fb.size()));
        DeviceBuffer<int> fb_dev(static_cast<size_t>(chunk), "allocating the fallback scan");
        DeviceBuffer<float> keys_dev(static_cast<size_t>(chunk * g.n), "allocating the fallback scan");
        std::vector<float> keys(static_cast<size_t>(chunk * g.n));
        std::vector<int> idx(static_cast<size_t>(chunk));
        for (size_t r0 = 0; r0 < fb.size(); r0 += static_cast<size_t>(chunk)) {
          const int count = static_cast<int>(std::min<size_t>(static_cast<size_t>(chunk), fb.size() - r0));
          for (int r = 0; r < count; ++r) idx[static_cast<size_t>(r)] = static_cast<int>(fb[r0 + r]);
          cuda_check(cudaMemcpyAsync(fb_dev.data(), idx.data(), count * sizeof(int), cudaMemcpyHostToDevice, s),
                     "copying the fallback rows to the GPU");
          launch_fallback_keys(device_rows, g.n, rows.cols, fb_dev.data(), count,
                               params.metric == Metric::Euclidean, params.keep_self, keys_dev.data(), s);
          cuda_check(cudaMemcpyAsync(keys.data(), keys_dev.data(), static_cast<size_t>(count) * g.n * sizeof(float),
                                     cudaMemcpyDeviceToHost, s),
                     "copying the fallback keys from the GPU");
          cuda_check(cudaStreamSynchronize(s), "scanning the fallback rows");
          parallel_for(0, count, params.threads, [&](int64_t r) {
            const int64_t row = fb[r0 + static_cast<size_t>(r)];
            select_k_from_keys(keys.data() + r * g.n, g.n, g.k, g.indices.data() + row * g.k,
                               g.distances.data() + row * g.k);
          }, 1);
          progress.advance(static_cast<uint64_t>(count));
        }
      } else {
        for (size_t r0 = 0; r0 < fb.size(); r0 += 64) {
          const std::vector<int64_t> part(fb.begin() + r0, fb.begin() + std::min(fb.size(), r0 + 64));
          fallback_on_host(rows.data, g.n, rows.cols, part, g.k, params.metric, params.keep_self, params.threads,
                           g.indices.data(), g.distances.data());
          progress.advance(part.size());
        }
      }
      progress.finish();
    }
    g.timings.emplace_back("fallback", seconds_since(t4));
    g.timings.emplace_back("final", seconds_since(t3));
    // Core's input hash can outlast the whole GPU job.
    const auto t5 = std::chrono::steady_clock::now();
    g.fingerprint = fingerprint.get();
    g.timings.emplace_back("fingerprint_wait", seconds_since(t5));
    const double total = seconds_since(t0);
    g.timings.emplace_back("total", total);

    nlohmann::json names = nlohmann::json::array();
    for (auto& e : engines) names.push_back(e->device_name());
    const int64_t certified = g.n - static_cast<int64_t>(fb.size());
    g.extra["precision"] = params.precision;
    g.extra["dot_products"] = tensor ? "TF32 tensor cores (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32)"
                                     : (plan.fused ? "float32 FFMA (fused kernel)" : "float32 FFMA (cuBLAS SGEMM)");
    g.extra["list_capacity"] = cap;
    g.extra["reevaluated_per_row"] = certified > 0 ? static_cast<double>(reevaluated) / certified : 0.0;
    g.extra["reevaluated_max"] = max_reevaluated;
    g.extra["uncertified_rows"] = uncertified;
    g.extra["rescanned_rows"] = rescanned;
    g.extra["fallback_rows"] = fb.size();
    g.extra["error_bound_c_dot"] = model.c_dot;
    g.extra["error_bound_max_use"] = max_use;
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
