// The final step of every GPU selection strategy (final_step.h), moved here
// unchanged from the engine's build() so the engine and the papers'
// strategies (select/paper_strategies.cpp) share one copy.
#include "final_step.h"

#include <algorithm>
#include <barrier>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include "impl/certify_host.h"
#include "impl/error_bound.h"
#include "manifold/error.h"
#include "manifold/parallel.h"
#include "settings.h"
#include "utils/cuda_check.h"
#include "utils/resources.h"

namespace manifold::gpu {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// Rows the fallback scans at a time on the device: keys of 64 MB.
int64_t fallback_chunk(int64_t n) { return std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(n, 1)); }

}  // namespace

void download_to_host(void* dst, const void* src, size_t bytes, cudaStream_t s, unsigned char* const staging[2],
                      size_t staging_bytes, int threads) {
  const char* what = "copying the result from the GPU";
  if (!staging || !staging[0] || !staging[1] || staging_bytes == 0 || bytes < 4 * staging_bytes) {
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), what);
    cuda_check(cudaStreamSynchronize(s), what);
    return;
  }
  const size_t chunks = (bytes + staging_bytes - 1) / staging_bytes;
  auto length = [&](size_t c) { return std::min(staging_bytes, bytes - c * staging_bytes); };
  auto enqueue = [&](size_t c, const Event& done) {
    cuda_check(cudaMemcpyAsync(staging[c % 2], static_cast<const char*>(src) + c * staging_bytes, length(c),
                               cudaMemcpyDeviceToHost, s),
               what);
    done.record(s);
  };
  const Event done[2] = {Event(false), Event(false)};
  enqueue(0, done[0]);
  // Thread 0 drives the GPU side; every thread copies its share of each
  // chunk. Barrier A: chunk c has arrived (or an error stopped the copy);
  // barrier B: chunk c has been copied out, so its buffer may take c + 2.
  const int t = std::max(1, std::min(threads, 16));
  std::barrier sync(t);
  std::exception_ptr error;
  bool failed = false;
  auto worker = [&](int id) {
    for (size_t c = 0; c < chunks; ++c) {
      if (id == 0) {
        try {
          done[c % 2].synchronize(what);
          if (c + 1 < chunks) enqueue(c + 1, done[(c + 1) % 2]);
        } catch (...) {
          error = std::current_exception();
          failed = true;
        }
      }
      sync.arrive_and_wait();
      if (failed) return;  // every thread reads it after the same barrier
      const size_t len = length(c), share = (len + t - 1) / t;
      const size_t from = std::min(len, share * id), to = std::min(len, from + share);
      if (to > from)
        std::memcpy(static_cast<char*>(dst) + c * staging_bytes + from, staging[c % 2] + from, to - from);
      sync.arrive_and_wait();
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < t; ++i) pool.emplace_back(worker, i);
  worker(0);
  for (auto& th : pool) th.join();
  if (error) {
    cudaStreamSynchronize(s);  // nothing may still write into the staging buffers
    std::rethrow_exception(error);
  }
}

/// The largest of the n stored squared norms on the device (copied home on s).
static double largest_norm(const float* norms, int64_t n, cudaStream_t s, std::vector<float>* keep = nullptr) {
  std::vector<float> local;
  std::vector<float>& v = keep ? *keep : local;
  v.resize(static_cast<size_t>(n));
  cuda_check(cudaMemcpyAsync(v.data(), norms, v.size() * sizeof(float), cudaMemcpyDeviceToHost, s),
             "copying the row norms from the GPU");
  cuda_check(cudaStreamSynchronize(s), "copying the row norms from the GPU");
  double ymax = 0;
  for (float x : v) ymax = std::max(ymax, static_cast<double>(x));
  return ymax;
}

int list_slack(int k, bool tensor) {
  if (const int s = settings().slack; s >= 0) return std::min(s, kMaxK);
  return tensor ? std::max(96, k / 4) : std::max(16, k / 8);
}

int list_capacity(int k, int64_t n, bool keep_self, bool tensor) {
  const int64_t available = n - (keep_self ? 0 : 1);
  return static_cast<int>(
      std::min<int64_t>({static_cast<int64_t>(k) + list_slack(k, tensor), available, int64_t{kMaxK}}));
}

/// The resident path's device side: the result and the certificate's
/// outputs on the device, and the certificate's arguments.
struct ResidentOutput {
  ResidentOutput(const FinalStepInput& in, const KnnGraph& g)
      : in(in),
        nk(static_cast<size_t>(g.n) * g.k),
        out_i(nk, "allocating the result"),
        out_d(nk, "allocating the result"),
        st(static_cast<size_t>(g.n), "allocating the result"),
        ukey(static_cast<size_t>(g.n), "allocating the result"),
        use(1, "allocating the result"),
        status(static_cast<size_t>(g.n)) {
    cuda_check(cudaMemsetAsync(use.data(), 0, sizeof(float), in.stream), "clearing a counter");
    const int64_t available = g.n - (in.params->keep_self ? 0 : 1);
    ca.rows = in.device_rows, ca.d = in.rows->cols, ca.norms = in.norms, ca.lists = in.lists, ca.k = g.k;
    ca.euclidean = in.params->metric == Metric::Euclidean, ca.complete = in.lists.k >= available;
    ca.model = make_error_model(g.d, in.tensor);
    ca.out_index = out_i.data(), ca.out_dist = out_d.data(), ca.status = st.data(), ca.max_use = use.data();
    ca.ukey = ukey.data();
  }

  /// The largest stored norm, for the bound of the points a list does not
  /// hold (the rows' norms must be on the device).
  void prepare(cudaStream_t s) {
    if (prepared) return;
    ca.ymax = largest_norm(in.norms, static_cast<int64_t>(status.size()), s);
    prepared = true;
  }

  /// Certifies rows [r0, r1) on s (prepare() first).
  void certify(int64_t r0, int64_t r1, cudaStream_t s) {
    CertifyArgs a = ca;
    a.row_begin = r0, a.row_end = r1;
    launch_certify(a, s);
  }

  /// Rows [r0, r1)'s result into g, with their status into `status` when
  /// `with_status` (pageable copies on s, then waits for s).
  void copy_rows_home(int64_t r0, int64_t r1, KnnGraph& g, cudaStream_t s, bool with_status = true) {
    const char* what = "copying the result from the GPU";
    const size_t k = static_cast<size_t>(g.k), a = static_cast<size_t>(r0), rows = static_cast<size_t>(r1 - r0);
    if (with_status)
      cuda_check(cudaMemcpyAsync(status.data() + a, st.data() + a, rows * sizeof(int), cudaMemcpyDeviceToHost, s),
                 what);
    cuda_check(cudaMemcpyAsync(g.indices.data() + a * k, out_i.data() + a * k, rows * k * sizeof(int64_t),
                               cudaMemcpyDeviceToHost, s),
               what);
    cuda_check(cudaMemcpyAsync(g.distances.data() + a * k, out_d.data() + a * k, rows * k * sizeof(float),
                               cudaMemcpyDeviceToHost, s),
               what);
    cuda_check(cudaStreamSynchronize(s), what);
  }

  /// Rows [r0, r1)'s result and status into g / `status` through the two
  /// pinned staging buffers (download_to_host), which are free for it.
  void copy_rows_home_staged(int64_t r0, int64_t r1, KnnGraph& g, cudaStream_t s, unsigned char* const staging[2],
                             size_t staging_bytes, int threads) {
    const size_t k = static_cast<size_t>(g.k), a = static_cast<size_t>(r0), rows = static_cast<size_t>(r1 - r0);
    cuda_check(cudaMemcpyAsync(status.data() + a, st.data() + a, rows * sizeof(int), cudaMemcpyDeviceToHost, s),
               "copying the result from the GPU");
    download_to_host(g.indices.data() + a * k, out_i.data() + a * k, rows * k * sizeof(int64_t), s, staging,
                     staging_bytes, threads);
    download_to_host(g.distances.data() + a * k, out_d.data() + a * k, rows * k * sizeof(float), s, staging,
                     staging_bytes, threads);
    cuda_check(cudaStreamSynchronize(s), "copying the result from the GPU");
  }

  float max_use(cudaStream_t s) const {
    float u = 0.f;
    cuda_check(cudaMemcpyAsync(&u, use.data(), sizeof(float), cudaMemcpyDeviceToHost, s),
               "copying the result from the GPU");
    cuda_check(cudaStreamSynchronize(s), "copying the result from the GPU");
    return u;
  }

  const FinalStepInput& in;
  const size_t nk;
  DeviceBuffer<int64_t> out_i;
  DeviceBuffer<float> out_d;
  DeviceBuffer<int> st;
  DeviceBuffer<float> ukey, use;
  CertifyArgs ca;
  bool prepared = false;
  std::vector<int> status;  ///< host: per row, candidates re-evaluated or -1
};

EarlyFinal::EarlyFinal(const FinalStepInput& in, KnnGraph& g, cudaStream_t stream)
    : in_(in), g_(g), stream_(stream) {
  DeviceScope scope(in_.device);
  out_ = std::make_unique<ResidentOutput>(in_, g_);
  cuda_check(cudaEventCreateWithFlags(&reported_event_, cudaEventDisableTiming), "creating an event");
  // The result's buffers are cleared on in.stream: the worker's stream waits for that.
  cuda_check(cudaEventRecord(reported_event_, in_.stream), "recording an event");
  cuda_check(cudaStreamWaitEvent(stream_, reported_event_, 0), "ordering streams");
  worker_ = std::thread([this] { work(); });
}

EarlyFinal::~EarlyFinal() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  cudaSetDevice(in_.device);
  cudaStreamSynchronize(stream_);  // nothing may still use the buffers freed next
  if (reported_event_) cudaEventDestroy(reported_event_);
}

void EarlyFinal::rows_final(int64_t rows, cudaStream_t after) {
  {
    std::lock_guard lock(m_);
    if (rows <= reported_) return;
    cuda_check(cudaEventRecord(reported_event_, after), "recording an event");
    reported_ = rows;
  }
  cv_.notify_all();
}

void EarlyFinal::work() {
  try {
    cuda_check(cudaSetDevice(in_.device), "selecting the device");
    bool host_ready = false;
    for (int64_t done = 0; done < g_.n;) {
      int64_t rows = 0;
      {
        // The latest report (events complete in stream order, so it covers
        // every earlier one); its event waited for under the lock, before
        // the loop's thread records it again.
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return stop_ || reported_ > done; });
        if (stop_) return;
        rows = reported_;
        cuda_check(cudaStreamWaitEvent(stream_, reported_event_, 0), "ordering streams");
      }
      out_->prepare(stream_);
      const Event e0, e1, e2;
      e0.record(stream_);
      out_->certify(done, rows, stream_);
      e1.record(stream_);
      if (!host_ready) {
        // Pageable copies run at a fraction of the link's rate: the result
        // comes home through pinned buffers of the worker's own (the
        // device's staging buffers may still carry the loop's uploads).
        for (auto& b : staging_) b = PinnedBuffer<unsigned char>(kStagingBytes);
        if (in_.wait_host_result) in_.wait_host_result();
        host_ready = true;
      }
      unsigned char* const staging[2] = {staging_[0].data(), staging_[1].data()};
      out_->copy_rows_home_staged(done, rows, g_, stream_, staging, kStagingBytes,
                                  std::min(8, hardware_threads(in_.params->threads)));
      e2.record(stream_);
      e2.synchronize("copying the result from the GPU");
      certify_ms_ += e1.since(e0);
      download_ms_ += e2.since(e1);
      ++ranges_;
      done = rows;
    }
  } catch (...) {
    std::lock_guard lock(m_);
    error_ = std::current_exception();
  }
}

void EarlyFinal::finish(cudaStream_t after) {
  rows_final(g_.n, after);
  worker_.join();
  if (error_) std::rethrow_exception(error_);
}

void run_final_step(const FinalStepInput& in, KnnGraph& g, Progress& progress, EarlyFinal* early) {
  const auto t_prep = std::chrono::steady_clock::now();
  const KnnParams& params = *in.params;
  const Dataset& data = *in.data;
  const PreparedRows& rows = *in.rows;
  const ListsView lists = in.lists;
  cudaStream_t s = in.stream;
  const bool tensor = in.tensor;
  const int cap = lists.k;
  const int64_t available = g.n - (params.keep_self ? 0 : 1);
  const bool complete = cap >= available;
  const size_t nk = static_cast<size_t>(g.n) * g.k;
  const size_t ncap = static_cast<size_t>(g.n) * cap;
  if (early && !in.device_rows) throw Error("internal: the early final step needs resident rows");

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

    const float* device_rows = in.device_rows;  // resident: all rows on this device; else nullptr
    const ErrorModel model = make_error_model(g.d, tensor);

    // The result's host pages are faulted in on another thread meanwhile
    // (seconds for large N k); waited for only where they are written, so the
    // certificate and the rescan overlap it.
    auto wait_host_result = [&] {
      const auto tw = std::chrono::steady_clock::now();
      if (in.wait_host_result) in.wait_host_result();
      g.timings.emplace_back("result_wait", seconds_since(tw));
    };
    std::vector<int> status;
    float max_use = 0.f;
    int64_t uncertified = 0, rescanned = 0;
    Event ev_cert0, ev_cert1, ev_down1;  // ev_down1: streamed path
    if (device_rows) {
      std::unique_ptr<ResidentOutput> own;
      if (!early) own = std::make_unique<ResidentOutput>(in, g);
      ResidentOutput& out = early ? *early->out_ : *own;
      g.timings.emplace_back("final_prep", seconds_since(t_prep));
      if (early) {
        const auto tw = std::chrono::steady_clock::now();
        early->finish(s);
        g.timings.emplace_back("final_wait", seconds_since(tw));
        g.timings.emplace_back("certify", early->certify_ms_ / 1e3);
        g.extra["early_ranges"] = early->ranges_;
      } else {
        out.prepare(s);
        ev_cert0.record(s);
        out.certify(0, g.n, s);
        ev_cert1.record(s);
        cuda_check(cudaMemcpyAsync(out.status.data(), out.st.data(), out.status.size() * sizeof(int),
                                   cudaMemcpyDeviceToHost, s),
                   "copying the result from the GPU");
        cuda_check(cudaStreamSynchronize(s), "certifying the neighbour lists");
        g.timings.emplace_back("certify", ev_cert1.since(ev_cert0) / 1e3);
      }
      max_use = out.max_use(s);
      status = std::move(out.status);
      DeviceBuffer<int64_t>& out_i = out.out_i;
      DeviceBuffer<float>& out_d = out.out_d;
      DeviceBuffer<float>& ukey = out.ukey;

      // The rescan: each uncertified row against every point, with the same
      // kind of GEMM and bound, keeping what its own k-th upper bound cannot
      // rule out (up to kRescanCap), ranked exactly.
      std::vector<int> failed;
      for (int64_t i = 0; i < g.n; ++i)
        if (status[static_cast<size_t>(i)] < 0) failed.push_back(static_cast<int>(i));
      uncertified = static_cast<int64_t>(failed.size());
      const auto tr = std::chrono::steady_clock::now();
      std::vector<int> rescanned_rows;
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
            launch_gather_rows(device_rows, rows.cols, in.norms, ukey.data(), fb_dev.data(), count, a_rows.data(),
                               a_norms.data(), a_ukey.data(), s);
            cuda_check(cudaMemsetAsync(found.data(), 0, count * sizeof(int), s), "clearing the rescan counters");
            for (int64_t c0 = 0; c0 < g.n; c0 += Wc) {
              const int cols = static_cast<int>(std::min<int64_t>(Wc, g.n - c0));
              in.dot_products(a_rows.data(), count, device_rows + c0 * rows.cols, cols, dots.data(), count, s);
              RescanTile t;
              t.dots = dots.data(), t.ld = count, t.count = count, t.cols = cols, t.c0 = c0;
              t.fb = fb_dev.data(), t.row_norms = a_norms.data(), t.ukey = a_ukey.data(), t.norms = in.norms;
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
                rescanned_rows.push_back(failed[r0 + r]);
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
      if (!early) {
        wait_host_result();
        const int copy_threads = std::min(8, hardware_threads(params.threads));
        download_to_host(g.indices.data(), out_i.data(), nk * sizeof(int64_t), s, in.staging, in.staging_bytes,
                         copy_threads);
        download_to_host(g.distances.data(), out_d.data(), nk * sizeof(float), s, in.staging, in.staging_bytes,
                         copy_threads);
      } else {
        // Home already, but for the rows the rescan ranked since.
        for (int row : rescanned_rows) out.copy_rows_home(row, row + 1, g, s, false);
      }
      if (in.merge_devices_ms) g.timings.emplace_back("merge_devices", *in.merge_devices_ms / 1e3);
      g.timings.emplace_back(early ? "download_after" : "download", seconds_since(t_down));
      if (early) g.timings.emplace_back("download", early->download_ms_ / 1e3);
    } else {
      // Streamed rows: the same step on the host, in the device's exact
      // float64 order, reading candidates' rows from host memory.
      std::vector<float> norms;  // every candidate's stored norm, for the bound
      const double ymax = largest_norm(in.norms, g.n, s, &norms);
      status.resize(static_cast<size_t>(g.n));
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
      wait_host_result();
      const auto th = std::chrono::steady_clock::now();
      HostLists hl{ld.data(), li.data(), lf.data(), g.n, cap};
      max_use = certify_on_host(rows.data, rows.cols, hl, g.k, norms.data(), ymax, model, params.metric, complete,
                                params.threads, g.indices.data(), g.distances.data(), status.data());
      for (int st : status) uncertified += st < 0;
      if (in.merge_devices_ms) g.timings.emplace_back("merge_devices", *in.merge_devices_ms / 1e3);
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

    const int64_t certified = g.n - static_cast<int64_t>(fb.size());
    g.extra["precision"] = params.precision;
    g.extra["list_capacity"] = cap;
    g.extra["reevaluated_per_row"] = certified > 0 ? static_cast<double>(reevaluated) / certified : 0.0;
    g.extra["reevaluated_max"] = max_reevaluated;
    g.extra["uncertified_rows"] = uncertified;
    g.extra["rescanned_rows"] = rescanned;
    g.extra["fallback_rows"] = fb.size();
    g.extra["error_bound_c_dot"] = model.c_dot;
    g.extra["error_bound_max_use"] = max_use;
}

}  // namespace manifold::gpu
