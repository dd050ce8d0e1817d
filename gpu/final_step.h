#pragma once
// Certify and finish: the final step every GPU selection strategy ends with
// (the engine's warp and merge, and the papers' quick, sort, heap and
// bitonic), from per-row candidate lists ranked by the tile loop's distance
// `a` to the exact graph in host memory.
//  1. rows whose list is short (NaN or infinite data) are refused;
//  2. certify (impl/certify.cu, or core's exact::certify_rows for streamed
//     rows): rows whose list provably holds the k nearest by the exact key
//     are ranked by re-evaluating in float64 the candidates the bound cannot
//     rule out;
//  3. rescan: resident rows the bound cannot certify are screened on the
//     device against every point (the caller's kind of GEMM, so the same
//     bound);
//  4. exact scan: what is left is ranked from every point's exact key
//     (device or host; "fallback" in graph.json and the progress stages);
// and the result comes home (download). docs/PRECISION.md has the argument.
// One copy of this logic, so every strategy returns the same graph, entry
// for entry.
#include <cuda_runtime_api.h>

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "impl/kernels.h"
#include "manifold/knn.h"
#include "manifold/progress.h"
#include "utils/copy_crew.h"
#include "utils/resources.h"

namespace manifold::gpu {

class DeviceContext;

/// Candidates kept per row beyond k: the room the certificate needs between
/// the k-th upper bound and the last list entry (manifold/exact/error_bound.h). The
/// TF32 bound is ~10x wider than float32's, so fast-exact keeps more, and
/// its window grows with d (docs/PRECISION.md, "How much slack"): d is the
/// rows' dimension. Settings::slack overrides (tests force the fallback with it).
int list_slack(int k, bool tensor, int64_t d);

/// The list capacity of every strategy: k + slack, at most every other point
/// (then every list is complete and trivially certified) and at most kMaxK.
int list_capacity(int k, int64_t n, bool keep_self, bool tensor, int64_t d);

/// C = A B^T for row-major A (m x d) and B (ncols x d) into column-major C
/// (leading dimension ldc), on stream s, with the tile loop's kind of GEMM.
using DotProducts =
    std::function<void(const float* a, int m, const float* b, int ncols, float* c, int ldc, cudaStream_t s)>;

/// The result's host pages (KnnGraph::allocate_result) faulted in on a
/// thread of its own while the GPU computes. Start it last, once the final
/// step's worker exists: a thread or stream made while the pages are being
/// faulted in waits for the address space's lock (bench/gpu/RESULTS.md,
/// "The worker's pieces").
class HostResult {
 public:
  HostResult() : ready_(promise_.get_future().share()) {}
  ~HostResult() { wait(); }
  HostResult(const HostResult&) = delete;
  HostResult& operator=(const HostResult&) = delete;
  /// Waits until every page is in (rethrows the faulting's error).
  void wait_ready() const { ready_.get(); }
  /// r: rows [0, r) of the n are in, n once all are (never waits; rethrows
  /// the faulting's error).
  int64_t rows_in(int64_t n) const;
  /// Starts faulting in g's result; `then` runs on that thread afterwards.
  void start(KnnGraph& g, std::function<void()> then = {});
  /// Waits for the thread (if it was started).
  void wait() {
    if (task_.valid()) task_.wait();
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> ready_;
  std::atomic<int64_t> rows_ready_{0};
  std::future<void> task_;
};

/// What certify_and_finish works on.
struct FinishRequest {
  const Dataset* data = nullptr;  ///< for messages (its source)
  const KnnParams* params = nullptr;
  const PreparedRows* rows = nullptr;  ///< host copy of the prepared rows
  ListsView lists;                     ///< capacity lists.k, each row ascending by (a, index)
  const float* device_rows = nullptr;  ///< all rows on this device as the loop multiplied them, or nullptr (streamed)
  const float* key_rows = nullptr;     ///< the rows exact keys come from, where they differ from device_rows (rows
                                       ///< moved with rounding), or nullptr
  const float* norms = nullptr;        ///< device: the stored squared norms of all rows
  cudaStream_t stream = nullptr;       ///< on the current device; everything runs on it
  exact::DotArithmetic loop_arithmetic = exact::DotArithmetic::Float32;  ///< how the loop computed its dot products
  bool moved_rows_rounded = false;  ///< the loop's rows were moved with rounding (exact/translation.h)
  /// On the device: the rows exact keys are taken from.
  const float* rows_for_keys() const { return key_rows ? key_rows : device_rows; }
  DotProducts dot_products;  ///< for the rescan (resident rows)
  /// Device-merge time to report, when there was one (the engine's; it is
  /// written among the final step's timings, as before).
  std::optional<double> merge_devices_ms;
  /// The result's host memory being faulted in meanwhile (g.indices and
  /// g.distances resized to n*k); waited for before they are written --
  /// beside the loop, only up to the rows copied. Null: already in.
  const HostResult* host_result = nullptr;
  /// Two pinned host buffers of staging_bytes each, free for the final step:
  /// the result goes to host memory through them (DMA into one while host
  /// threads copy out of the other). Null: a plain pageable copy.
  unsigned char* staging[2] = {nullptr, nullptr};
  size_t staging_bytes = 0;
  int device = 0;  ///< the device of lists, rows and stream
  /// MANIFOLD_GPU_TIMELINE=1: the worker's ranges go into g.extra's
  /// "timeline_final_ranges", in ms since this time (the build's start).
  std::optional<std::chrono::steady_clock::time_point> timeline_origin;
};

/// Copies `bytes` from device memory to pageable host memory through the two
/// pinned staging buffers (chunk c is DMA'd into staging[c % 2] on stream s
/// while `threads` host threads copy chunk c - 1 out of the other; chunks of
/// staging_bytes, or a quarter of a smaller copy, at least 1 MiB), or with
/// one cudaMemcpyAsync where there are none or the copy is under 2 MiB. Pageable
/// copies run at about a third of the link's rate (the driver stages them
/// through its own buffers on one thread).
void download_to_host(void* dst, const void* src, size_t bytes, cudaStream_t s, unsigned char* const staging[2],
                      size_t staging_bytes, int threads);
/// The same with the host copies on `crew`'s threads (started once, before
/// the result's pages are faulted in: utils/copy_crew.h).
void download_to_host(void* dst, const void* src, size_t bytes, cudaStream_t s, unsigned char* const staging[2],
                      size_t staging_bytes, CopyCrew& crew);

struct ResidentOutput;  // the resident path's device buffers (final_step.cpp)
struct StreamedOutput;  // the streamed path's host side (final_step.cpp)
class Finisher;         // certify_and_finish's phases (final_step.cpp)

/// Step 2 and the copy home beside the tile loop (one GPU): the loop's
/// thread reports each time more rows' lists are final (every row resident:
/// after strip I, rows of blocks 0..I take no more candidates; streamed:
/// after each panel, the rows of it and of the panels before); a worker
/// thread certifies those rows and copies their result into g, so when the
/// loop ends only the last rows are left. Every row resident
/// (in.device_rows), it certifies on the device, on its own stream
/// (`stream`, the device context's finish stream); the rows and norms of
/// `in` must be on the device once the first reported rows are final.
/// Streamed, it copies the reported rows' lists home and certifies them on
/// the host (core's certify_rows, reading candidates' rows from host
/// memory, on all cores but four, left to the loop and its copies); every
/// row's norm must be on the device by the first report.
/// certify_and_finish(in, g, progress, this) finishes it; destroying it
/// first (an error or a cancellation) stops the worker after its current
/// range.
class EarlyFinish {
 public:
  /// Runs on ctx's finish stream, with ctx's finish staging buffers (taken
  /// here, before the loop); ctx is in.device's context.
  EarlyFinish(const FinishRequest& in, KnnGraph& g, DeviceContext& ctx);
  ~EarlyFinish();
  EarlyFinish(const EarlyFinish&) = delete;
  EarlyFinish& operator=(const EarlyFinish&) = delete;

  /// Rows [0, rows) are final once the work queued on `after` so far is
  /// done (called from the loop's thread; never blocks on the GPU).
  void rows_final(int64_t rows, cudaStream_t after);

 private:
  friend class Finisher;
  /// Reports every row final after the work queued on `after`, waits for
  /// the worker and rethrows its error.
  void finish(cudaStream_t after);
  /// One range's way through the worker (timeline runs): host times in ms
  /// since in.timeline_origin, GPU times as CUDA-event spans.
  struct RangeTimes {
    int64_t r0 = 0, r1 = 0;
    double reported = 0;    ///< the loop reported r1 final
    double woke = 0;        ///< the worker took the range
    double host_ready = 0;  ///< the first copy home began (the pages of its rows were in)
    double done = 0;        ///< the range was certified and home
    double certify_ms = 0, copy_ms = 0;
  };
  struct Piece;
  void work();
  /// Every row resident: certifies each report's rows at once, in pieces
  /// (piece_rows), and copies the certified pieces home in order, as their
  /// host pages come in, on a stream of its own: the first piece and every
  /// later one already certified and with its pages in, in one copy.
  void resident_work();
  int64_t piece_rows() const;
  void copy_pieces_home(std::deque<Piece>& certified, int64_t host_rows);
  /// Streamed rows: each report's rows come home and are certified on the host.
  void streamed_work();
  void streamed_range(int64_t done, int64_t rows, bool& host_ready);
  /// The rows reported final (into `rows`; waits for more than `taken`
  /// where `wait`); false once told to stop.
  bool take_reported(int64_t taken, bool wait, int64_t& rows, double& reported_ms);
  void record_range(RangeTimes times, double certify0, double download0);

  double since_origin() const;
  nlohmann::json range_times_json() const;

  const FinishRequest in_;
  KnnGraph& g_;
  cudaStream_t stream_;
  std::unique_ptr<ResidentOutput> out_;       ///< every row resident
  std::unique_ptr<StreamedOutput> streamed_;  ///< streamed rows
  cudaStream_t copy_stream_;                  ///< every row resident: the copies home (the context's)
  CopyCrew* crew_ = nullptr;                  ///< every row resident: the copies' host threads (the context's)
  std::mutex m_;
  std::condition_variable cv_;
  int64_t reported_ = 0;          ///< rows reported final (guarded by m_)
  double reported_ms_ = 0;        ///< when, timeline runs (guarded by m_)
  cudaEvent_t reported_event_{};  ///< completes when they are (guarded by m_)
  bool stop_ = false;
  std::exception_ptr error_;
  unsigned char* staging_[2];                ///< worker: the result's way home (the context's)
  double certify_ms_ = 0, download_ms_ = 0;  ///< worker: CUDA-event sums (streamed: host clock)
  int ranges_ = 0;                           ///< worker: ranges copied home
  int pieces_ = 0;                           ///< worker: pieces certified (every row resident)
  std::vector<RangeTimes> range_times_;      ///< worker, timeline runs
  double host_ready_ms_ = 0;                 ///< worker, timeline runs
  std::thread worker_;
};

/// Certify and finish: runs steps 1-4 and writes g.indices / g.distances (n*k, g.k set), the
/// step's timings ("certify", "rescan", "merge_devices", "download",
/// "fallback", in the engine's order; with `early` also "final_wait", the
/// time the worker's last ranges took after the loop) and its statistics in
/// g.extra (precision, list_capacity, reevaluated_per_row, reevaluated_max,
/// uncertified_rows, rescanned_rows, fallback_rows, error_bound_c_dot,
/// error_bound_max_use; early_ranges and, rows resident, early_pieces with
/// `early`). Progress stages:
/// "certify", then "rescan: ..." and "fallback: ..." naming the rows when
/// there are any. `early`: steps 2 and the copy home ran beside the loop;
/// only the rescan's rows are copied again.
void certify_and_finish(const FinishRequest& in, KnnGraph& g, Progress& progress, EarlyFinish* early = nullptr);

}  // namespace manifold::gpu
