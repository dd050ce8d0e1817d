#pragma once
// The tile loop of one GPU. First every diagonal tile (row block I against
// itself) seeds the lists, so each row has a finite bound before any other
// tile is seen (with the fused kernel and resident rows, 2W/T blocks are
// uploaded and seeded per launch); then each assigned strip -- row block I against all columns
// after it, W at a time -- is computed tile by tile: the dot products (cuBLAS
// SGEMM then the filter kernel, or the fused kernel alone), the squared
// distances filtered against each row's and each column's bound, and the
// merge that folds the few survivors into the device's per-row lists.
// Rows come from host memory through pinned staging buffers on a copy
// stream; with a resident plan each block is copied once. Otherwise a panel
// of row blocks stays on the device while every later column block streams
// past it once, W / T consecutive blocks at a time (a column window; two
// windows, so the next arrives while the tiles read this one): each tile is
// a panel block against the window, and each block copied serves a whole
// panel's worth of tiles.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "device_context.h"
#include "impl/kernels.h"
#include "manifold/progress.h"
#include "tile_plan.h"
#include "utils/resources.h"

namespace manifold::gpu {

struct EngineStats {
  uint64_t tiles = 0;
  double gemm_ms = 0;       ///< time the tiles' dot products ran (CUDA events; fused: the fused kernel; overlaps once)
  double select_ms = 0;     ///< summed filter + merge time of the tiles (CUDA events; fused: merge only)
  double loop_ms = 0;       ///< first copy to last merge (CUDA events)
  double seed_ms = 0;       ///< first copy to the last seed tile's merge (CUDA events)
  double prior_ms = 0;      ///< the prior bound: its sample's GEMM and rank selection (CUDA events)
  int prior_sample = 0;     ///< columns the prior bound sampled (0: none)
  int prior_rank = 0;       ///< the rank taken among them
  double gemm_flop = 0;     ///< 2 rows cols d over all tiles computed
  uint64_t candidates = 0;  ///< entries that passed a bound
  uint64_t h2d_bytes = 0;   ///< rows copied to the device

  /// MANIFOLD_GPU_TIMELINE=1 only: when each tile and each block's upload
  /// ran, for finding where the loop waits (bench/gpu/RESULTS.md). GPU times
  /// in ms after loop_start; host times in ms after the host saw loop_start
  /// complete (the same origin, to the event's latency).
  struct TileTimes {
    uint64_t t;
    int64_t I, c0, cols;
    bool dense;
    int stream;
    double issued, gemm_start, gemm_end, sel_start, sel_end;
  };
  struct UploadTimes {
    int64_t block;
    double issued, copied, done;  ///< host: started, host copies done; GPU: on the device
  };
  std::vector<TileTimes> tile_times;
  std::vector<UploadTimes> upload_times;
};

/// A selection strategy of the papers (gpu/select/paper_strategies.cpp) in
/// place of the engine's filter and merge: each tile's dot products (cuBLAS,
/// resident or streamed rows alike) go to select() on the selection stream,
/// after the tile's GEMM. The strategy owns its buffers; the lists, their
/// bounds (thr) and everything else of the loop stay the engine's.
class TileSelection {
 public:
  virtual ~TileSelection() = default;
  /// Folds the entries of `view` within their row's (and, from
  /// view.col_role_from on, their column's) bound into `lists`, queued on
  /// stream s; records `dots_read` on s once the dot products have been read
  /// (the engine then reuses the tile buffer).
  virtual void select(const TileView& view, const ListsView& lists, const float* thr, cudaStream_t s,
                      const Event& dots_read) = 0;
};

/// The prior bound of large-k lists: before the seeds, each row's squared
/// distances to `sample` columns spread evenly over the rows, and the
/// `rank`-th smallest of them (an actual distance, so at least `rank` points
/// lie at or below it) as the row's bound. Without it a row's bound is +inf
/// until its list is full, and a diagonal seed tile of a few thousand
/// columns fills a list of thousands only halfway, so most of the loop
/// passes ~5 capacities of candidates a row; with it about one. The rank is
/// chosen so that the capacity-th distance lies below the bound with high
/// probability (binomial: the mean plus four standard deviations). It only
/// filters: the certificate takes the smaller of the final bound and a full
/// list's last entry as the lower bound of every point a list lacks
/// (impl/certify.cu), and a row whose list ends short goes to the rescan.
struct PriorBoundPlan {
  int sample = 0;  ///< 0: no prior bound
  int rank = 0;
};
/// The rule: lists past the warp merge's size (large k); sample columns
/// enough that kPriorSampleMean of them are expected within the capacity-th
/// distance, within [kPriorMinSample, kPriorMaxSample], at most a quarter of
/// the rows and what the rank selection's shared memory holds
/// (`shared_optin`, the device's opt-in bytes a block), and at least 64; a
/// rank below half of them. A larger sample costs a GEMM of N x m and its
/// selection and saves candidates: at Li-Amenta's case (1M x 64, k = 1000)
/// 16384 columns beat 8192 and 24576 (bench/gpu/RESULTS.md, "A larger
/// sample for the prior bound"). Settings::prior_sample / prior_rank
/// override. Only where one device holds every row and runs every strip
/// (run() checks), with the engine's own filter and merge.
constexpr double kPriorSampleMean = 18;
constexpr int64_t kPriorMinSample = 8192;
constexpr int64_t kPriorMaxSample = 16384;
PriorBoundPlan prior_bound_plan(const TilePlan& plan, size_t shared_optin);

class DeviceEngine {
 public:
  /// Takes the device's context (waiting for another build on it to finish)
  /// and allocates what the plan needs (throws DeviceOutOfMemory).
  /// `arithmetic`: the dot products. Tf32 (--precision fast-exact): on
  /// tensor cores, cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 or the
  /// fused kernel's TF32 strips from rows rounded to TF32. SplitTf32 (exact,
  /// fused plans on compute capability 8.0 and later): the fused kernel's
  /// strips from float32 rows split into two TF32 parts each; every cuBLAS
  /// GEMM and the seed tiles float32. Float32: cuBLAS SGEMM in the engine's
  /// math mode or the fused FFMA kernel.
  /// `selection` (cuBLAS plans only; outlives the engine): a paper
  /// strategy's selection instead of the filter and merge, which then get
  /// no candidate sets.
  DeviceEngine(int device, const float* host_rows, const TilePlan& plan, bool keep_self, bool force_block,
               exact::DotArithmetic arithmetic = exact::DotArithmetic::Float32, TileSelection* selection = nullptr);
  ~DeviceEngine();
  DeviceEngine(const DeviceEngine&) = delete;
  DeviceEngine& operator=(const DeviceEngine&) = delete;

  /// Every row this engine uploads is moved by `offset` (d floats; core's
  /// choose_translation) before its norm is taken. `keep_unmoved` (resident
  /// plans; a rounded move): the rows as they were are kept beside the moved
  /// ones, for the exact keys (unmoved_rows). Call before run().
  void translate_rows_by(const std::vector<float>& offset, bool keep_unmoved);

  /// Runs on this device: seeds all row blocks (keeping the seed's entries
  /// only for `owned` blocks, the bound for the others), then the strips.
  /// Call from one thread. Advances `progress` per finished tile; stops
  /// between tiles (Cancelled) when progress is cancelled or `stop` is set.
  /// `rows_final` (may be empty) is told, each time more leading rows'
  /// lists are final, how many: after strip I (streaming: after the panel
  /// ending with strip I) when strips 0..I were all this device's, rows
  /// [0, (I + 1) T) take no more candidates once the work queued on `after`
  /// is done (final_step.h EarlyFinish).
  using RowsFinal = std::function<void(int64_t rows, cudaStream_t after)>;
  void run(const std::vector<int64_t>& strips, Progress& progress, const std::atomic<bool>& stop,
           const RowsFinal& rows_final = {});

  int device() const { return ctx_.device; }
  const std::string& device_name() const { return ctx_.name; }
  ListsView lists() const;
  /// Timeline runs: the host time the tiles' times count from.
  std::chrono::steady_clock::time_point timeline_origin() const { return host_t0_; }
  const EngineStats& stats() const { return stats_; }
  cudaStream_t stream() const { return ctx_.select.get(); }

  /// Frees the tile and candidate buffers (and streaming slots) after run(),
  /// unless the plan's budget holds them and the final step together.
  void release_loop_buffers();
  /// Resident plans: copies any block still missing and returns all rows on
  /// the device, ready on stream(). Streaming plans: nullptr.
  const float* all_rows();
  /// Resident plans: where all rows will be (complete once the seeds and
  /// the first strip are done). Streaming plans: nullptr.
  const float* resident_rows() const { return plan_.resident ? rows_.data() : nullptr; }
  /// Resident plans moved with rounding: the rows as they were, which exact
  /// keys are taken from; else nullptr (the keys come from resident_rows()).
  const float* unmoved_rows() const { return unmoved_rows_.size() ? unmoved_rows_.data() : nullptr; }

  /// Stored squared norms of all n rows (as the tile loop used them), ready
  /// after run() and all_rows() / release_loop_buffers().
  const float* norms() const { return plan_.resident ? norms_.data() : all_norms_.data(); }

  /// C = A B^T for row-major A (m x d) and B (n x d) into column-major C
  /// (m x n, leading dimension ldc), with the same kind of GEMM as the tile
  /// loop (so the same error bound holds), on stream `s`.
  void dot_products(const float* a, int m, const float* b, int n, float* c, int ldc, cudaStream_t s);

  /// Tiles run() computes for these strips (seeds included).
  static uint64_t tiles_for(const TilePlan& plan, const std::vector<int64_t>& strips);
  /// Row blocks seeded by one launch (fused kernel, resident rows; else 1).
  static int64_t seed_batch(const TilePlan& plan);

 private:
  /// One tile of the loop: tile t, rows [r0, r0 + rows) (row block I)
  /// against columns [c0, c0 + cols); dense: a seed tile; gs: its GEMM
  /// stream (gemm_stream(t)).
  struct TileJob {
    uint64_t t;
    int64_t I, r0, rows, c0, cols;
    bool dense;
    int gs;
  };
  /// Streaming: where a tile's operands are -- the slot of its rows and of
  /// its first column block (the others follow in consecutive slots), and
  /// the regions holding them (kWindows + 0/1, or kPanel).
  struct Streamed {
    int slot_a, slot_b, region_a, region_b;
  };
  /// Where a tile's operands are on the device: the rows and norms of its
  /// rows (a) and of its columns (b), and the slots holding them (-1:
  /// resident plans).
  struct TileOperands {
    const float *a_rows = nullptr, *a_norms = nullptr, *b_rows = nullptr, *b_norms = nullptr;
    int slot_a = -1, slot_b = -1;
  };
  /// Streaming: consecutive slots uploaded together and read by tiles: a
  /// column window or the panel. `ready`: the upload is done; `free[s]`: the
  /// last tile reading it on stream s (0, 1: the GEMM streams, 2: the
  /// selection stream) is done, so the next upload may overwrite it.
  struct Region {
    int first_slot = 0;
    int64_t b0 = -1, b1 = -1;  ///< windows: the blocks held
    Event ready, free[3];
    bool recorded[3] = {false, false, false};
    char waited = 0;  ///< bit s: GEMM stream s waits for `ready`
  };
  static constexpr int kPanel = 2;  ///< regions_[0], [1]: the column windows

  /// Where run() is in its loop: the next tile's number, the column window
  /// the next upload goes to (streaming), the rows whose pending entries are
  /// merged ([0, flushed)), and what it reports to.
  struct LoopCursor {
    Progress& progress;
    const std::atomic<bool>& stop;
    const RowsFinal& rows_final;
    uint64_t t = 0;
    int w = 0;
    int64_t flushed = 0;
  };
  // run()'s phases: the seeds of every row block, the strips (resident or
  // streamed), the loop's end (the last merges and the statistics).
  void seed_every_block(LoopCursor& at, const std::set<int64_t>& owned);
  void resident_strips(LoopCursor& at, const std::vector<int64_t>& strips);
  void streamed_strips(LoopCursor& at, const std::vector<int64_t>& strips);
  void finish_loop(LoopCursor& at, const Event& seeds_end);
  /// Queues the next tile (or seed batch), first completing the tile that
  /// leaves the ring.
  void queue_tile(LoopCursor& at, int64_t I, int64_t c0, int64_t cols, bool dense, const Streamed* where);
  void queue_seed_tiles(LoopCursor& at, int64_t b0, int64_t blocks, const Streamed* where);
  /// Rows [0, rows) take no more candidates: their pending entries merged,
  /// then rows_final told.
  void report_final(LoopCursor& at, int64_t rows);
  /// Queues tile t: operands (where: streaming only), kernels, merge.
  void tile(uint64_t t, int64_t I, int64_t c0, int64_t cols, bool dense, const Streamed* where = nullptr);
  TileOperands tile_operands(const TileJob& job);
  TileOperands streamed_operands(const TileJob& job, const Streamed& where);
  void fused_tile(const TileJob& job, const TileOperands& op, const CandidatesView& cv, int counter,
                  const DeviceContext::TileEvents* before);
  void cublas_tile(const TileJob& job, const TileOperands& op, const CandidatesView& cv, int counter,
                   const DeviceContext::TileEvents* before);
  void tile_gemm(const TileJob& job, const TileOperands& op, float* dots);
  void complete(uint64_t t, Progress& progress, const std::atomic<bool>& stop);
  void ensure_block(int64_t b, int stream = 0);  ///< resident plans
  void seed_tiles(uint64_t t, int64_t b0, int64_t blocks, const Streamed* where = nullptr);
  /// Every block uploaded and each row's prior bound in thr (resident rows;
  /// the candidate sets, unused before the seeds, hold its scratch).
  void prior_bounds(const PriorBoundPlan& pp);
  int gemm_stream(uint64_t t) const;  ///< 0 or 1: ctx_.gemm or ctx_.gemm2
  /// Candidate set of tile t (sets in turn), its rows `row_stride` apart.
  CandidatesView candidate_set(uint64_t t, int row_stride);
  void upload_blocks(int64_t b, int64_t blocks, float* rows, float* norms, float* rows_t);
  void upload_resident(int64_t b, int64_t blocks);
  void host_copy(void* dst, const void* src, size_t bytes);
  // Streaming.
  void upload_region(int64_t b, int64_t blocks, int slot);
  void load_window(int w, int64_t b0, int64_t b1);
  void load_panel(const int64_t* strips, size_t count);
  void use_region(int region, int gs);
  void region_read(int region, int stream);
  /// Column windows of consecutive blocks from `from` on (streaming).
  static std::vector<std::pair<int64_t, int64_t>> windows(const TilePlan& plan, int64_t from);

  DeviceContext& ctx_;
  std::unique_lock<std::mutex> lock_;
  const float* host_rows_;
  TilePlan plan_;
  bool keep_self_, force_block_;
  bool tensor_;  // cuBLAS's GEMMs (tiles, prior bound, rescan) in TF32
  // The fused kernel's strips: FFMA, TF32 from operands rounded to TF32 when
  // transposed, or split TF32 (Float32 in cuBLAS plans, which have none).
  exact::DotArithmetic strips_;
  TileSelection* selection_;
  double gemm_busy_until_ = 0;  ///< end of the latest completed tile's kernel, ms after loop_start

  DeviceBuffer<float> list_dist_, thr_;
  DeviceBuffer<int> list_index_, fill_;
  // Each row's pending room (plan.pending entries; ListsView), and its fill.
  DeviceBuffer<float> pend_dist_;
  DeviceBuffer<int> pend_index_, pend_fill_;
  DeviceBuffer<float> rows_, norms_;  // resident: all rows; streaming: `slots` blocks
  DeviceBuffer<float> rows_t_;        // fused kernel: each slot's block transposed, dpad x T
  DeviceBuffer<float> all_norms_;     // streaming: the norms of every row, kept for the final step
  DeviceBuffer<float> translation_;   // d offsets subtracted from every uploaded row, or none
  DeviceBuffer<float> unmoved_rows_;  // resident, rounded move: the rows as uploaded, or none
  DeviceBuffer<float> tiles_[2];      // cuBLAS path only
  // Candidate sets, used by tiles in turn, so a tile's merge can run while
  // the next tiles are computed: two for cuBLAS + filter (the filter and the
  // merge share a stream), four for the fused kernel (tile t's kernel
  // waits for tile t - 4's merge; with three, a second kernel was held back
  // by a merge for a quarter of the loop at N = 100k, where the tiles are
  // short: bench/gpu/RESULTS.md). Tile t uses dirty counter t % kCounters; its merge
  // clears the one of tile t + sets_ (tiles t + 1 .. t + sets_ - 1 may hold
  // theirs).
  static constexpr int kMaxSets = kFusedCandidateSets, kCounters = 8;
  static_assert(kMaxSets < kCounters && kMaxSets < DeviceContext::kRing, "counters and events of the tiles in flight");
  int sets_ = 2;
  DeviceBuffer<float> cand_dist_[kMaxSets];
  DeviceBuffer<int> cand_index_[kMaxSets], cand_count_[kMaxSets], dirty_[kMaxSets];
  DeviceBuffer<int> n_dirty_;
  DeviceBuffer<unsigned long long> cand_total_;
  int staging_next_ = 0;

  // Resident: which blocks are on the device (slot b holds block b) and
  // whether each GEMM stream waited for their upload.
  std::vector<int64_t> block_slot_;
  std::vector<Event> slot_ready_;
  std::vector<char> slot_waited_;  // bit s: gemm stream s waits for the slot's upload
  // Streaming: the two column windows and the panel; the panel slot of each
  // block in the panel (-1: not in it).
  Region regions_[3];
  std::vector<int> panel_slot_;

  // MANIFOLD_GPU_TIMELINE=1: stats_.tile_times and upload_times.
  bool timeline_ = false;
  std::chrono::steady_clock::time_point host_t0_;
  std::vector<EngineStats::TileTimes> issued_;  // by tile number, filled in by complete()
  std::vector<Event> upload_done_;
  double host_ms() const;

  Event prior_start_, prior_end_;  ///< the prior bound's span on the GEMM stream

  EngineStats stats_;
};

}  // namespace manifold::gpu
