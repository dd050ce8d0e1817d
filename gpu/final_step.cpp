// Certify and finish, the final step of every GPU selection strategy
// (final_step.h), so the engine and the papers' strategies
// (select/paper_strategies.cpp) share one copy.
#include "final_step.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device_context.h"
#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/exact/error_bound.h"
#include "manifold/parallel.h"
#include "settings.h"
#include "utils/cuda_check.h"
#include "utils/resources.h"

namespace manifold::gpu {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// Rows the exact scan takes at a time on the device: keys of 64 MB.
int64_t exact_scan_chunk(int64_t n) { return std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(n, 1)); }

}  // namespace

namespace {

/// Chunks of the staging buffers' size, or a quarter of a smaller copy (so
/// the DMA and the host threads still overlap), at least 1 MiB; a copy of
/// less than two such chunks goes in one pageable call (the driver stages
/// it on one thread, at a fraction of the link's rate). 0: that call.
size_t staged_chunk(size_t bytes, unsigned char* const staging[2], size_t staging_bytes) {
  constexpr size_t kMinChunk = size_t{1} << 20;
  if (!staging || !staging[0] || !staging[1] || staging_bytes < kMinChunk || bytes < 2 * kMinChunk) return 0;
  return std::min(staging_bytes, std::max(kMinChunk, (bytes / 4 + 4095) / 4096 * 4096));
}

void pageable_download(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  const char* what = "copying the result from the GPU";
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), what);
  cuda_check(cudaStreamSynchronize(s), what);
}

}  // namespace

void download_to_host(void* dst, const void* src, size_t bytes, cudaStream_t s, unsigned char* const staging[2],
                      size_t staging_bytes, CopyCrew& crew) {
  const size_t chunk = staged_chunk(bytes, staging, staging_bytes);
  if (chunk == 0) return pageable_download(dst, src, bytes, s);
  const char* what = "copying the result from the GPU";
  const size_t chunks = (bytes + chunk - 1) / chunk;
  auto length = [&](size_t c) { return std::min(chunk, bytes - c * chunk); };
  const Event done[2] = {Event(false), Event(false)};
  auto enqueue = [&](size_t c) {
    cuda_check(cudaMemcpyAsync(staging[c % 2], static_cast<const char*>(src) + c * chunk, length(c),
                               cudaMemcpyDeviceToHost, s),
               what);
    done[c % 2].record(s);
  };
  // Chunk c + 1 is DMA'd into the other buffer while the crew copies chunk
  // c out of its buffer, each thread its share.
  try {
    enqueue(0);
    for (size_t c = 0; c < chunks; ++c) {
      done[c % 2].synchronize(what);
      if (c + 1 < chunks) enqueue(c + 1);
      const size_t len = length(c), share = (len + crew.size() - 1) / crew.size();
      crew.run([&](int id) {
        const size_t from = std::min(len, share * id), to = std::min(len, from + share);
        if (to > from) std::memcpy(static_cast<char*>(dst) + c * chunk + from, staging[c % 2] + from, to - from);
      });
    }
  } catch (...) {
    cudaStreamSynchronize(s);  // nothing may still write into the staging buffers
    throw;
  }
}

void download_to_host(void* dst, const void* src, size_t bytes, cudaStream_t s, unsigned char* const staging[2],
                      size_t staging_bytes, int threads) {
  if (staged_chunk(bytes, staging, staging_bytes) == 0) return pageable_download(dst, src, bytes, s);
  CopyCrew crew(std::clamp(threads, 1, 16));
  download_to_host(dst, src, bytes, s, staging, staging_bytes, crew);
}

void HostResult::start(KnnGraph& g, std::function<void()> then) {
  task_ = std::async(std::launch::async, [this, &g, then = std::move(then)] {
    try {
      g.allocate_result([this](int64_t rows) { rows_ready_.store(rows, std::memory_order_release); });
      if (then) then();
      promise_.set_value();
    } catch (...) {
      promise_.set_exception(std::current_exception());
    }
  });
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

int list_slack(int k, bool tensor, int64_t d) {
  if (const int s = settings().slack; s >= 0) return std::min(s, kMaxK);
  if (!tensor) return exact::exact_slack(k, d);  // float32: the CPU and MPI backends' slack
  // The certificate needs the list to reach past the k-th distance by the
  // bound's window, about 2 c_dot sqrt(|x|^2 ymax) on each side; TF32's
  // c_dot(d) is about 2^-9 + d 2^-22 (input rounding, then the d-term sum),
  // flat up to d ~ 1024 and linear beyond. The slack that certifies d <= 1024
  // (max(96, k/4)) grows with the square of c_dot(d) / c_dot(1024): the
  // points within the window grow faster than its width where distances
  // concentrate (docs/PRECISION.md, "How much slack").
  const double grow = exact::make_error_model(d, exact::DotArithmetic::Tf32).c_dot /
                      exact::make_error_model(1024, exact::DotArithmetic::Tf32).c_dot;
  const double base = std::max(96, k / 4);
  return static_cast<int>(std::min<double>(std::ceil(base * std::max(1.0, grow * grow)), kMaxK));
}

int list_capacity(int k, int64_t n, bool keep_self, bool tensor, int64_t d) {
  const int64_t available = n - (keep_self ? 0 : 1);
  return static_cast<int>(std::min<int64_t>({static_cast<int64_t>(k) + list_slack(k, tensor, d), available,
                                             int64_t{kMaxK}}));
}

/// The resident path's device side: the result and the certificate's
/// outputs on the device, and the certificate's arguments.
struct ResidentOutput {
  ResidentOutput(const FinishRequest& in, const KnnGraph& g)
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
    ca.rows = in.rows_for_keys(), ca.d = in.rows->cols, ca.norms = in.norms, ca.lists = in.lists, ca.k = g.k;
    ca.euclidean = in.params->metric == Metric::Euclidean, ca.complete = in.lists.k >= available;
    ca.model = exact::make_error_model(g.d, in.loop_arithmetic, in.moved_rows_rounded);
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

  /// The result of `rows` (ascending) home, a copy a span: rows closer than
  /// about 64 KB of result apart go in one copy with the rows between them
  /// (home already, or ranked by the exact scan after this), since each copy
  /// waits ~20 us -- a copy a row took 0.6 s for 33,000 rescanned rows.
  void copy_listed_rows_home(const std::vector<int>& rows, KnnGraph& g, cudaStream_t s) {
    const int gap = std::max(1, static_cast<int>((64 << 10) / (static_cast<size_t>(g.k) * 12)));
    for (size_t a = 0; a < rows.size();) {
      size_t b = a + 1;
      while (b < rows.size() && rows[b] - rows[b - 1] <= gap) ++b;
      copy_rows_home(rows[a], rows[b - 1] + 1, g, s, false);
      a = b;
    }
  }

  /// Rows [r0, r1)'s result and status into g / `status` through the two
  /// pinned staging buffers (download_to_host), which are free for it.
  void copy_rows_home_staged(int64_t r0, int64_t r1, KnnGraph& g, cudaStream_t s, unsigned char* const staging[2],
                             size_t staging_bytes, CopyCrew& crew) {
    const size_t k = static_cast<size_t>(g.k), a = static_cast<size_t>(r0), rows = static_cast<size_t>(r1 - r0);
    cuda_check(cudaMemcpyAsync(status.data() + a, st.data() + a, rows * sizeof(int), cudaMemcpyDeviceToHost, s),
               "copying the result from the GPU");
    download_to_host(g.indices.data() + a * k, out_i.data() + a * k, rows * k * sizeof(int64_t), s, staging,
                     staging_bytes, crew);
    download_to_host(g.distances.data() + a * k, out_d.data() + a * k, rows * k * sizeof(float), s, staging,
                     staging_bytes, crew);
    cuda_check(cudaStreamSynchronize(s), "copying the result from the GPU");
  }

  float max_use(cudaStream_t s) const {
    float u = 0.f;
    cuda_check(cudaMemcpyAsync(&u, use.data(), sizeof(float), cudaMemcpyDeviceToHost, s),
               "copying the result from the GPU");
    cuda_check(cudaStreamSynchronize(s), "copying the result from the GPU");
    return u;
  }

  const FinishRequest& in;
  const size_t nk;
  DeviceBuffer<int64_t> out_i;
  DeviceBuffer<float> out_d;
  DeviceBuffer<int> st;
  DeviceBuffer<float> ukey, use;
  CertifyArgs ca;
  bool prepared = false;
  std::vector<int> status;  ///< host: per row, candidates re-evaluated or -1
};

/// The streamed path's host side: the lists as they come home (left
/// uninitialised: the copy's threads fault their pages in, in parallel),
/// every row's stored norm, and each row's status.
struct StreamedOutput {
  StreamedOutput(const FinishRequest& in, const KnnGraph& g)
      : in(in),
        n(g.n),
        cap(in.lists.k),
        dist(new float[static_cast<size_t>(g.n) * static_cast<size_t>(in.lists.k)]),
        index(new int[static_cast<size_t>(g.n) * static_cast<size_t>(in.lists.k)]),
        fill(static_cast<size_t>(g.n)),
        status(static_cast<size_t>(g.n), -1) {}

  /// Every row's stored norm and the largest (all on the device by now).
  void prepare(cudaStream_t s) {
    if (prepared) return;
    ymax = largest_norm(in.norms, n, s, &norms);
    prepared = true;
  }

  /// Rows [r0, r1)'s lists home on s, through the two pinned buffers.
  void download(int64_t r0, int64_t r1, cudaStream_t s, unsigned char* const staging[2], size_t staging_bytes,
                int threads) {
    const char* what = "copying the lists from the GPU";
    const size_t a = static_cast<size_t>(r0) * cap, m = static_cast<size_t>(r1 - r0) * cap;
    download_to_host(dist.get() + a, in.lists.dist + a, m * sizeof(float), s, staging, staging_bytes, threads);
    download_to_host(index.get() + a, in.lists.index + a, m * sizeof(int), s, staging, staging_bytes, threads);
    cuda_check(cudaMemcpyAsync(fill.data() + r0, in.lists.fill + r0, static_cast<size_t>(r1 - r0) * sizeof(int),
                               cudaMemcpyDeviceToHost, s),
               what);
    cuda_check(cudaStreamSynchronize(s), what);
  }

  /// Rows [r0, r1) certified on the host into g and `status`. certify_rows
  /// reads list row i's own row and norm at i and candidate j's at j, from
  /// one base: with the base at row r0, each candidate's index is made
  /// relative to r0 (negative for earlier rows, still inside the arrays)
  /// and the ranked indices are moved back. A row with fewer than k
  /// entries is left to step 1, which refuses it.
  void certify(int64_t r0, int64_t r1, KnnGraph& g, const exact::ErrorModel& model, int threads) {
    const int k = g.k;
    for (int64_t i = r0; i < r1; ++i)
      if (fill[static_cast<size_t>(i)] < k) return;
    for (int64_t i = r0; i < r1; ++i) {
      int* li = index.get() + static_cast<size_t>(i) * cap;
      for (int t = 0; t < fill[static_cast<size_t>(i)]; ++t) li[t] -= static_cast<int>(r0);
    }
    const int64_t d = in.rows->cols;
    exact::CertifyRequest req;
    req.rows = in.rows->data + r0 * d, req.d = d, req.k = k;
    req.norms = norms.data() + r0, req.ymax = ymax;
    req.lists = {dist.get() + static_cast<size_t>(r0) * cap, index.get() + static_cast<size_t>(r0) * cap,
                 fill.data() + r0, r1 - r0, cap};
    req.model = model, req.metric = in.params->metric, req.threads = threads;
    req.complete = cap >= n - (in.params->keep_self ? 0 : 1);
    const float use = exact::certify_rows(req,
                                          {g.indices.data() + r0 * k, g.distances.data() + r0 * k, status.data() + r0});
    max_use = std::max(max_use, use);
    for (int64_t i = r0; i < r1; ++i)
      if (status[static_cast<size_t>(i)] >= 0)
        for (int j = 0; j < k; ++j) g.indices[static_cast<size_t>(i * k + j)] += r0;
  }

  const FinishRequest& in;
  const int64_t n;
  const int cap;
  std::unique_ptr<float[]> dist;
  std::unique_ptr<int[]> index;
  std::vector<int> fill;
  std::vector<float> norms;
  double ymax = 0;
  bool prepared = false;
  std::vector<int> status;  ///< per row, candidates re-evaluated or -1
  float max_use = 0.f;
};

EarlyFinish::EarlyFinish(const FinishRequest& in, KnnGraph& g, DeviceContext& ctx)
    : in_(in),
      g_(g),
      stream_(ctx.finish),
      copy_stream_(ctx.finish_copy),
      staging_{ctx.finish_staging(0), ctx.finish_staging(1)} {
  DeviceScope scope(in_.device);
  if (in_.device_rows) {
    out_ = std::make_unique<ResidentOutput>(in_, g_);
    crew_ = &ctx.finish_crew();
  } else {
    streamed_ = std::make_unique<StreamedOutput>(in_, g_);
  }
  cuda_check(cudaEventCreateWithFlags(&reported_event_, cudaEventDisableTiming), "creating an event");
  // The result's buffers are cleared on in.stream: the worker's stream waits for that.
  cuda_check(cudaEventRecord(reported_event_, in_.stream), "recording an event");
  cuda_check(cudaStreamWaitEvent(stream_, reported_event_, 0), "ordering streams");
  worker_ = std::thread([this] { work(); });
}

EarlyFinish::~EarlyFinish() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  cudaSetDevice(in_.device);
  cudaStreamSynchronize(stream_);  // nothing may still use the buffers freed next
  cudaStreamSynchronize(copy_stream_);
  if (reported_event_) cudaEventDestroy(reported_event_);
}

double EarlyFinish::since_origin() const {
  return in_.timeline_origin ? seconds_since(*in_.timeline_origin) * 1e3 : 0.0;
}

nlohmann::json EarlyFinish::range_times_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const RangeTimes& r : range_times_)
    rows.push_back({r.r0, r.r1, r.reported, r.woke, r.host_ready, r.done, r.certify_ms, r.copy_ms});
  return {{"fields", {"r0", "r1", "reported", "woke", "host_ready", "done", "certify_ms", "copy_ms"}},
          {"ranges", rows}};
}

void EarlyFinish::rows_final(int64_t rows, cudaStream_t after) {
  {
    std::lock_guard lock(m_);
    if (rows <= reported_) return;
    cuda_check(cudaEventRecord(reported_event_, after), "recording an event");
    reported_ = rows;
    reported_ms_ = since_origin();
  }
  cv_.notify_all();
}

void EarlyFinish::work() {
  try {
    cuda_check(cudaSetDevice(in_.device), "selecting the device");
    if (out_) resident_work();
    else
      streamed_work();
  } catch (...) {
    std::lock_guard lock(m_);
    error_ = std::current_exception();
  }
}

bool EarlyFinish::take_reported(int64_t taken, bool wait, int64_t& rows, double& reported_ms) {
  // The latest report (events complete in stream order, so it covers every
  // earlier one); its event waited for under the lock, before the loop's
  // thread records it again.
  std::unique_lock lock(m_);
  if (wait) cv_.wait(lock, [&] { return stop_ || reported_ > taken; });
  if (stop_) return false;
  rows = reported_, reported_ms = reported_ms_;
  if (rows > taken) cuda_check(cudaStreamWaitEvent(stream_, reported_event_, 0), "ordering streams");
  return true;
}

void EarlyFinish::record_range(RangeTimes times, double certify0, double download0) {
  if (!in_.timeline_origin) return;
  times.host_ready = host_ready_ms_, times.done = since_origin();
  times.certify_ms = certify_ms_ - certify0, times.copy_ms = download_ms_ - download0;
  range_times_.push_back(times);
}

void EarlyFinish::streamed_work() {
  bool host_ready = false;
  for (int64_t done = 0; done < g_.n;) {
    RangeTimes times;
    int64_t rows = 0;
    if (!take_reported(done, true, rows, times.reported)) return;
    times.r0 = done, times.r1 = rows, times.woke = since_origin();
    const double certify0 = certify_ms_, download0 = download_ms_;
    streamed_range(done, rows, host_ready);
    record_range(times, certify0, download0);
    ++ranges_;
    done = rows;
  }
}

/// Rows certified on the worker's stream, waiting to be copied home.
struct EarlyFinish::Piece {
  int64_t r0 = 0, r1 = 0;
  Event start, certified;
  RangeTimes times;
};

int64_t EarlyFinish::piece_rows() const {
  if (const int rows = settings().final_piece_rows; rows > 0) return rows;
  // Four staging buffers' worth of result a piece (12 bytes an entry), so
  // the copy of one piece overlaps the certificate of the next at large k;
  // at small k a piece is all the rows reported.
  const int64_t row_bytes = int64_t{12} * g_.k + 4;
  return std::max<int64_t>(1024, static_cast<int64_t>(4 * DeviceContext::kStagingBytes) / row_bytes);
}

void EarlyFinish::resident_work() {
  const int64_t step = piece_rows();
  std::deque<Piece> certified;
  int64_t taken = 0;
  while (taken < g_.n || !certified.empty()) {
    // What the loop reports is certified at once (it needs no host memory);
    // the worker waits for a report only when nothing is left to copy.
    if (taken < g_.n) {
      int64_t rows = taken;
      double reported_ms = 0;
      if (!take_reported(taken, certified.empty(), rows, reported_ms)) return;
      // The largest norm once the loop has reported rows: its stream then
      // follows every row's upload and norm (the seeds precede every strip).
      // Read as the worker starts, it was whatever the buffer held before.
      out_->prepare(stream_);
      const double woke = since_origin();
      for (int64_t r = taken; r < rows; r += step) {
        Piece& p = certified.emplace_back();
        ++pieces_;
        p.r0 = r, p.r1 = std::min(rows, r + step);
        p.times.r0 = p.r0, p.times.r1 = p.r1, p.times.reported = reported_ms, p.times.woke = woke;
        p.start.record(stream_);
        out_->certify(p.r0, p.r1, stream_);
        p.certified.record(stream_);
      }
      taken = rows;
    }
    if (certified.empty()) continue;
    const int64_t host_rows = in_.host_result ? in_.host_result->rows_in(g_.n) : g_.n;
    if (host_rows < certified.front().r1) {
      // Its host pages are not in yet: certify what the loop reports meanwhile.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    copy_pieces_home(certified, host_rows);
  }
}

int64_t HostResult::rows_in(int64_t n) const {
  if (ready_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    ready_.get();  // its error, if it failed
    return n;
  }
  return rows_ready_.load(std::memory_order_acquire);
}

void EarlyFinish::copy_pieces_home(std::deque<Piece>& certified, int64_t host_rows) {
  size_t m = 1;
  while (m < certified.size() && certified[m].r1 <= host_rows &&
         certified[m].certified.done("certifying the neighbour lists"))
    ++m;
  const Piece& first = certified.front();
  const Piece& last = certified[m - 1];
  if (ranges_ == 0) host_ready_ms_ = since_origin();
  const double certify0 = certify_ms_, download0 = download_ms_;
  // The copy runs on a stream of its own, so the certificate of the pieces
  // after these goes on meanwhile. Pageable copies run at a fraction of the
  // link's rate: the result comes home through the worker's pinned buffers
  // (the device's upload staging buffers may still carry uploads). The
  // range's uncertified rows come too, unwritten (initcheck reports those
  // reads); their entries come home again once ranked (copy_listed_rows_home).
  const Event e1, e2;
  cuda_check(cudaStreamWaitEvent(copy_stream_, last.certified, 0), "ordering streams");
  e1.record(copy_stream_);
  out_->copy_rows_home_staged(first.r0, last.r1, g_, copy_stream_, staging_, DeviceContext::kStagingBytes, *crew_);
  e2.record(copy_stream_);
  e2.synchronize("copying the result from the GPU");
  for (size_t i = 0; i < m; ++i) certify_ms_ += certified[i].certified.since(certified[i].start);
  download_ms_ += e2.since(e1);
  RangeTimes times = first.times;
  times.r1 = last.r1;
  record_range(times, certify0, download0);
  ++ranges_;
  certified.erase(certified.begin(), certified.begin() + static_cast<std::ptrdiff_t>(m));
}

void EarlyFinish::streamed_range(int64_t done, int64_t rows, bool& host_ready) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!host_ready) {
    streamed_->prepare(stream_);
    if (in_.host_result) in_.host_result->wait_ready();
    host_ready = true;
    host_ready_ms_ = since_origin();
  }
  const int threads = hardware_threads(in_.params->threads);
  streamed_->download(done, rows, stream_, staging_, DeviceContext::kStagingBytes, std::min(8, threads));
  const auto t1 = std::chrono::steady_clock::now();
  streamed_->certify(done, rows, g_, exact::make_error_model(g_.d, in_.loop_arithmetic, in_.moved_rows_rounded),
                     std::max(1, threads - 4));
  download_ms_ += std::chrono::duration<double, std::milli>(t1 - t0).count();
  certify_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
}

void EarlyFinish::finish(cudaStream_t after) {
  rows_final(g_.n, after);
  worker_.join();
  if (error_) std::rethrow_exception(error_);
}

namespace {

/// What the final step finds out, written to g.extra (graph.json; the bench
/// and the tests read these keys).
struct FinishStats {
  std::string precision;
  int list_capacity = 0;
  uint64_t reevaluated = 0;  ///< candidates re-evaluated over the certified rows
  int reevaluated_max = 0;
  int64_t certified_rows = 0;
  int64_t uncertified_rows = 0;
  int64_t rescanned_rows = 0;
  size_t exact_scan_rows = 0;
  double c_dot = 0;
  double largest_norm = 0;  ///< the largest stored squared norm (ymax)
  float max_use = 0.f;
  std::optional<int> early_ranges;  ///< copies home beside the loop
  std::optional<int> early_pieces;  ///< pieces certified beside the loop (every row resident)

  nlohmann::json to_json() const {
    nlohmann::json j;
    j["precision"] = precision;
    j["list_capacity"] = list_capacity;
    j["reevaluated_per_row"] = certified_rows > 0
                                   ? static_cast<double>(reevaluated) / static_cast<double>(certified_rows)
                                   : 0.0;
    j["reevaluated_max"] = reevaluated_max;
    j["uncertified_rows"] = uncertified_rows;
    j["rescanned_rows"] = rescanned_rows;
    j["fallback_rows"] = exact_scan_rows;
    j["error_bound_c_dot"] = c_dot;
    j["error_bound_largest_norm"] = largest_norm;
    j["error_bound_max_use"] = max_use;
    if (early_ranges) j["early_ranges"] = *early_ranges;
    if (early_pieces) j["early_pieces"] = *early_pieces;
    return j;
  }
};

}  // namespace

/// The phases of certify_and_finish (final_step.h), in order; they share the
/// request, the graph and each row's status (candidates re-evaluated, or -1
/// while no phase has ranked the row).
class Finisher {
 public:
  Finisher(const FinishRequest& in, KnnGraph& g, Progress& progress, EarlyFinish* early)
      : in_(in),
        g_(g),
        progress_(progress),
        early_(early),
        params_(*in.params),
        s_(in.stream),
        model_(exact::make_error_model(g.d, in.loop_arithmetic, in.moved_rows_rounded)) {
    stats_.precision = to_string(params_.precision);
    stats_.list_capacity = in.lists.k;
    stats_.c_dot = model_.c_dot;
  }

  void run() {
    const auto t_prep = std::chrono::steady_clock::now();
    refuse_short_rows();
    if (in_.device_rows) finish_resident(t_prep);
    else
      finish_streamed();
    progress_.finish();
    exact_scan_uncertified();
    g_.extra.update(stats_.to_json());
  }

 private:
  /// Step 1: a row with fewer than k candidates at a finite distance (NaN
  /// or infinite data) is refused, naming the first -- unless its bound is
  /// finite: a prior bound (device_engine.h) keeps out every point above
  /// it, so its list may end short on any data; the certificate fails such
  /// a row and the rescan or the exact scan ranks it.
  void refuse_short_rows() {
    DeviceBuffer<int> bad(2, "allocating a counter");
    const int init[2] = {0, INT_MAX};
    cuda_check(cudaMemcpyAsync(bad.data(), init, sizeof init, cudaMemcpyHostToDevice, s_), "checking the lists");
    launch_count_short_rows(in_.lists, g_.k, bad.data(), bad.data() + 1, s_);
    int out[2] = {0, 0};
    cuda_check(cudaMemcpyAsync(out, bad.data(), sizeof out, cudaMemcpyDeviceToHost, s_), "checking the lists");
    cuda_check(cudaStreamSynchronize(s_), "checking the lists");
    if (out[0] > 0) recount_short_rows_without_bound(out);
    const Dataset& data = *in_.data;
    if (out[0] > 0)
      throw Error(data.source + (data.source.empty() ? "" : ": ") + "row " + std::to_string(out[1]) +
                  " has fewer than k=" + std::to_string(g_.k) + " neighbours at a finite distance (" +
                  std::to_string(out[0]) + " such rows; the data hold NaN or infinite values?)");
  }

  /// Of the short rows, those whose bound is still +inf: out[0] their
  /// count, out[1] the first (rare: read on the host).
  void recount_short_rows_without_bound(int out[2]) {
    const ListsView& l = in_.lists;
    const size_t n = static_cast<size_t>(l.n);
    std::vector<int> fill(n);
    std::vector<float> thr(n), kth(n);
    const char* what = "checking the lists";
    cuda_check(cudaMemcpyAsync(fill.data(), l.fill, n * sizeof(int), cudaMemcpyDeviceToHost, s_), what);
    cuda_check(cudaMemcpyAsync(thr.data(), l.thr, n * sizeof(float), cudaMemcpyDeviceToHost, s_), what);
    cuda_check(cudaMemcpy2DAsync(kth.data(), sizeof(float), l.dist + (g_.k - 1),
                                 static_cast<size_t>(l.k) * sizeof(float), sizeof(float), n, cudaMemcpyDeviceToHost,
                                 s_),
               what);
    cuda_check(cudaStreamSynchronize(s_), what);
    out[0] = 0, out[1] = INT_MAX;
    for (size_t g = 0; g < n; ++g)
      if ((fill[g] < g_.k || !(kth[g] < INFINITY)) && !(thr[g] < INFINITY)) {
        if (out[0]++ == 0) out[1] = static_cast<int>(g);
      }
  }

  /// The result's host pages are faulted in on another thread meanwhile
  /// (seconds for large N k); waited for only where they are written, so the
  /// certificate and the rescan overlap it.
  void wait_host_result() {
    const auto tw = std::chrono::steady_clock::now();
    if (in_.host_result) in_.host_result->wait_ready();
    g_.timings.emplace_back("result_wait", seconds_since(tw));
  }

  /// Steps 2-3 and the copy home with every row on the device.
  void finish_resident(std::chrono::steady_clock::time_point t_prep) {
    std::unique_ptr<ResidentOutput> own;
    if (!early_) own = std::make_unique<ResidentOutput>(in_, g_);
    ResidentOutput& out = early_ ? *early_->out_ : *own;
    g_.timings.emplace_back("final_prep", seconds_since(t_prep));
    certify_resident(out);
    const std::vector<int> rescanned = rescan(out);
    download_resident(out, rescanned);
  }

  /// Step 2 on the device: the whole certificate now, or what the worker
  /// beside the loop left.
  void certify_resident(ResidentOutput& out) {
    if (early_) {
      const auto tw = std::chrono::steady_clock::now();
      early_->finish(s_);
      g_.timings.emplace_back("final_wait", seconds_since(tw));
      g_.timings.emplace_back("certify", early_->certify_ms_ / 1e3);
      stats_.early_ranges = early_->ranges_;
      stats_.early_pieces = early_->pieces_;
      if (in_.timeline_origin) g_.extra["timeline_final_ranges"] = early_->range_times_json();
    } else {
      Event ev_cert0, ev_cert1;
      out.prepare(s_);
      ev_cert0.record(s_);
      out.certify(0, g_.n, s_);
      ev_cert1.record(s_);
      cuda_check(cudaMemcpyAsync(out.status.data(), out.st.data(), out.status.size() * sizeof(int),
                                 cudaMemcpyDeviceToHost, s_),
                 "copying the result from the GPU");
      cuda_check(cudaStreamSynchronize(s_), "certifying the neighbour lists");
      g_.timings.emplace_back("certify", ev_cert1.since(ev_cert0) / 1e3);
    }
    stats_.max_use = out.max_use(s_);
    stats_.largest_norm = out.ca.ymax;
    status_ = std::move(out.status);
  }

  /// Step 3, the rescan: each uncertified row against every point, with the
  /// same kind of GEMM and bound, keeping what its own k-th upper bound
  /// cannot rule out (up to kRescanCap), ranked exactly into `out`. Returns
  /// the rows it ranked.
  std::vector<int> rescan(ResidentOutput& out) {
    std::vector<int> failed;
    for (int64_t i = 0; i < g_.n; ++i)
      if (status_[static_cast<size_t>(i)] < 0) failed.push_back(static_cast<int>(i));
    stats_.uncertified_rows = static_cast<int64_t>(failed.size());
    const auto tr = std::chrono::steady_clock::now();
    std::vector<int> rescanned;
    if (!failed.empty()) {
      progress_.stage("rescan: " + std::to_string(failed.size()) + " rows whose " + std::to_string(in_.lists.k) +
                          " candidates the error bound could not certify, screened against every point",
                      failed.size(), "rows");
      try {
        rescan_rows(out, failed, rescanned);
      } catch (const DeviceOutOfMemory&) {
        // No room for the rescan's buffers: the exact scan takes every
        // uncertified row (slower, same result).
      }
      progress_.finish();
    }
    g_.timings.emplace_back("rescan", seconds_since(tr));
    return rescanned;
  }

  /// The rescan of rows `failed`, in batches of up to 2048 rows against
  /// column tiles of up to 8192 points; appends the rows it ranked.
  void rescan_rows(ResidentOutput& out, const std::vector<int>& failed, std::vector<int>& rescanned) {
    const float* device_rows = in_.device_rows;
    const int64_t d = in_.rows->cols;
    const bool euclidean = params_.metric == Metric::Euclidean;
    const int R = static_cast<int>(std::min<size_t>(2048, failed.size()));
    const int Wc = static_cast<int>(std::min<int64_t>(8192, g_.n));
    DeviceBuffer<int> fb_dev(static_cast<size_t>(R), "allocating the rescan");
    DeviceBuffer<float> a_rows(static_cast<size_t>(R) * d, "allocating the rescan");
    DeviceBuffer<float> a_norms(static_cast<size_t>(R), "allocating the rescan");
    DeviceBuffer<float> a_ukey(static_cast<size_t>(R), "allocating the rescan");
    DeviceBuffer<float> dots(static_cast<size_t>(R) * Wc, "allocating the rescan");
    DeviceBuffer<int> found(static_cast<size_t>(R), "allocating the rescan");
    DeviceBuffer<int> cand(static_cast<size_t>(R) * kRescanCap, "allocating the rescan");
    DeviceBuffer<int> st2(static_cast<size_t>(R), "allocating the rescan");
    std::vector<int> st2_host(static_cast<size_t>(R));
    for (size_t r0 = 0; r0 < failed.size(); r0 += static_cast<size_t>(R)) {
      const int count = static_cast<int>(std::min<size_t>(static_cast<size_t>(R), failed.size() - r0));
      cuda_check(cudaMemcpyAsync(fb_dev.data(), failed.data() + r0, count * sizeof(int), cudaMemcpyHostToDevice, s_),
                 "copying the rows to rescan to the GPU");
      launch_gather_rows(device_rows, d, in_.norms, out.ukey.data(), fb_dev.data(), count, a_rows.data(),
                         a_norms.data(), a_ukey.data(), s_);
      cuda_check(cudaMemsetAsync(found.data(), 0, count * sizeof(int), s_), "clearing the rescan counters");
      for (int64_t c0 = 0; c0 < g_.n; c0 += Wc) {
        const int cols = static_cast<int>(std::min<int64_t>(Wc, g_.n - c0));
        in_.dot_products(a_rows.data(), count, device_rows + c0 * d, cols, dots.data(), count, s_);
        RescanTile t;
        t.dots = dots.data(), t.ld = count, t.count = count, t.cols = cols, t.c0 = c0;
        t.fb = fb_dev.data(), t.row_norms = a_norms.data(), t.ukey = a_ukey.data(), t.norms = in_.norms;
        t.model = model_, t.euclidean = euclidean, t.keep_self = params_.keep_self;
        t.found = found.data(), t.cand = cand.data();
        launch_rescan_filter(t, s_);
      }
      launch_rescan_select(in_.rows_for_keys(), d, fb_dev.data(), count, found.data(), cand.data(), g_.k, euclidean,
                           out.out_i.data(), out.out_d.data(), st2.data(), s_);
      cuda_check(cudaMemcpyAsync(st2_host.data(), st2.data(), count * sizeof(int), cudaMemcpyDeviceToHost, s_),
                 "copying the rescan's result from the GPU");
      cuda_check(cudaStreamSynchronize(s_), "rescanning rows");
      for (int r = 0; r < count; ++r)
        if (st2_host[static_cast<size_t>(r)] >= 0) {
          status_[static_cast<size_t>(failed[r0 + r])] = st2_host[static_cast<size_t>(r)];
          rescanned.push_back(failed[r0 + r]);
          ++stats_.rescanned_rows;
        }
      progress_.advance(static_cast<uint64_t>(count));
    }
  }

  /// The result home: all of it, or (beside the loop, where the rest is
  /// home already) the rows the rescan ranked since.
  void download_resident(ResidentOutput& out, const std::vector<int>& rescanned) {
    const auto t_down = std::chrono::steady_clock::now();
    if (!early_) {
      wait_host_result();
      const size_t nk = static_cast<size_t>(g_.n) * g_.k;
      const int copy_threads = std::min(8, hardware_threads(params_.threads));
      download_to_host(g_.indices.data(), out.out_i.data(), nk * sizeof(int64_t), s_, in_.staging, in_.staging_bytes,
                       copy_threads);
      download_to_host(g_.distances.data(), out.out_d.data(), nk * sizeof(float), s_, in_.staging, in_.staging_bytes,
                       copy_threads);
    } else {
      out.copy_listed_rows_home(rescanned, g_, s_);
    }
    if (in_.merge_devices_ms) g_.timings.emplace_back("merge_devices", *in_.merge_devices_ms / 1e3);
    g_.timings.emplace_back(early_ ? "download_after" : "download", seconds_since(t_down));
    if (early_) g_.timings.emplace_back("download", early_->download_ms_ / 1e3);
  }

  /// Step 2 for streamed rows (not all on the device): the lists come home
  /// and core's certify_rows judges them, in the device's exact float64
  /// order, reading candidates' rows from host memory -- all now, or what
  /// the worker beside the loop left.
  void finish_streamed() {
    if (early_) {
      const auto tw = std::chrono::steady_clock::now();
      early_->finish(s_);
      g_.timings.emplace_back("final_wait", seconds_since(tw));
      StreamedOutput& out = *early_->streamed_;
      status_ = std::move(out.status);
      stats_.max_use = out.max_use, stats_.largest_norm = out.ymax;
      stats_.early_ranges = early_->ranges_;
      if (in_.timeline_origin) g_.extra["timeline_final_ranges"] = early_->range_times_json();
    } else {
      StreamedOutput out(in_, g_);
      out.prepare(s_);
      const auto t_down = std::chrono::steady_clock::now();
      out.download(0, g_.n, s_, in_.staging, in_.staging_bytes, std::min(8, hardware_threads(params_.threads)));
      const double down_s = seconds_since(t_down);
      wait_host_result();
      const auto th = std::chrono::steady_clock::now();
      out.certify(0, g_.n, g_, model_, params_.threads);
      status_ = std::move(out.status);
      stats_.max_use = out.max_use, stats_.largest_norm = out.ymax;
      certify_s_ = seconds_since(th), download_s_ = down_s;
    }
    for (int st : status_) stats_.uncertified_rows += st < 0;
    if (in_.merge_devices_ms) g_.timings.emplace_back("merge_devices", *in_.merge_devices_ms / 1e3);
    g_.timings.emplace_back("certify", early_ ? early_->certify_ms_ / 1e3 : certify_s_);
    g_.timings.emplace_back("download", early_ ? early_->download_ms_ / 1e3 : download_s_);
  }

  /// Step 4: rows no phase could rank might miss a neighbour from their
  /// list, so every point is evaluated exactly (float64) and ranked by key.
  void exact_scan_uncertified() {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < g_.n; ++i) {
      const int st = status_[static_cast<size_t>(i)];
      if (st < 0) {
        rows.push_back(i);
      } else {
        stats_.reevaluated += static_cast<uint64_t>(st);
        stats_.reevaluated_max = std::max(stats_.reevaluated_max, st);
      }
    }
    stats_.certified_rows = g_.n - static_cast<int64_t>(rows.size());
    stats_.exact_scan_rows = rows.size();
    const auto t4 = std::chrono::steady_clock::now();
    if (!rows.empty()) {
      // The stage's name says what happens, so the terminal shows it.
      progress_.stage("fallback: " + std::to_string(rows.size()) + " rows whose error bound keeps more than " +
                          std::to_string(in_.device_rows ? kRescanCap : in_.lists.k) +
                          " candidates, each ranked by an exact scan of all points",
                      rows.size(), "rows");
      if (in_.device_rows) exact_scan_on_device(rows);
      else
        exact_scan_on_host(rows);
      progress_.finish();
    }
    g_.timings.emplace_back("fallback", seconds_since(t4));
  }

  /// The exact scan's keys on the device (chunks of rows whose keys fill
  /// 64 MB), the k smallest of each row taken on the host.
  void exact_scan_on_device(const std::vector<int64_t>& rows) {
    const int64_t n = g_.n;
    const int64_t chunk = std::min<int64_t>(exact_scan_chunk(n), static_cast<int64_t>(rows.size()));
    DeviceBuffer<int> rows_dev(static_cast<size_t>(chunk), "allocating the fallback scan");
    DeviceBuffer<float> keys_dev(static_cast<size_t>(chunk * n), "allocating the fallback scan");
    std::vector<float> keys(static_cast<size_t>(chunk * n));
    std::vector<int> idx(static_cast<size_t>(chunk));
    for (size_t r0 = 0; r0 < rows.size(); r0 += static_cast<size_t>(chunk)) {
      const int count = static_cast<int>(std::min<size_t>(static_cast<size_t>(chunk), rows.size() - r0));
      for (int r = 0; r < count; ++r) idx[static_cast<size_t>(r)] = static_cast<int>(rows[r0 + r]);
      cuda_check(cudaMemcpyAsync(rows_dev.data(), idx.data(), count * sizeof(int), cudaMemcpyHostToDevice, s_),
                 "copying the fallback rows to the GPU");
      launch_fallback_keys(in_.rows_for_keys(), n, in_.rows->cols, rows_dev.data(), count,
                           params_.metric == Metric::Euclidean, params_.keep_self, keys_dev.data(), s_);
      cuda_check(cudaMemcpyAsync(keys.data(), keys_dev.data(), static_cast<size_t>(count) * n * sizeof(float),
                                 cudaMemcpyDeviceToHost, s_),
                 "copying the fallback keys from the GPU");
      cuda_check(cudaStreamSynchronize(s_), "scanning the fallback rows");
      parallel_for(
          0, count, params_.threads,
          [&](int64_t r) {
        const int64_t row = rows[r0 + static_cast<size_t>(r)];
        exact::select_k_from_keys(keys.data() + r * n, n, g_.k, g_.indices.data() + row * g_.k,
                                  g_.distances.data() + row * g_.k);
          },
          1);
      progress_.advance(static_cast<uint64_t>(count));
    }
  }

  /// The exact scan on the host (streamed rows), 64 rows at a time.
  void exact_scan_on_host(const std::vector<int64_t>& rows) {
    const exact::ExactScanRequest scan{in_.rows->data,    g_.n,           in_.rows->cols, g_.k, params_.metric,
                                       params_.keep_self, params_.threads};
    for (size_t r0 = 0; r0 < rows.size(); r0 += 64) {
      const std::vector<int64_t> part(rows.begin() + r0, rows.begin() + std::min(rows.size(), r0 + 64));
      exact::exact_scan_rows(scan, part, g_.indices.data(), g_.distances.data());
      progress_.advance(part.size());
    }
  }

  const FinishRequest& in_;
  KnnGraph& g_;
  Progress& progress_;
  EarlyFinish* early_;
  const KnnParams& params_;
  cudaStream_t s_;
  const exact::ErrorModel model_;
  std::vector<int> status_;
  FinishStats stats_;
  double certify_s_ = 0, download_s_ = 0;  ///< streamed, after the loop
};

void certify_and_finish(const FinishRequest& in, KnnGraph& g, Progress& progress, EarlyFinish* early) {
  Finisher(in, g, progress, early).run();
}

}  // namespace manifold::gpu
