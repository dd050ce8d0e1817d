#pragma once
// Launchers of the engine's kernels (defined in impl/*.cu). Host code sees
// plain structs of device pointers ("views") and a stream; every launcher
// checks its launch.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "impl/sizes.h"
#include "manifold/exact/error_bound.h"

namespace manifold::gpu {

/// Per-row neighbour lists on the device, each ascending by (distance, index):
/// row g holds fill[g] <= k entries at dist/index + g*k; thr[g] is its k-th
/// distance once full (+inf before), the bound a new candidate must meet.
/// With pending room (block-path merges, pend_cap > 0), a row keeps a tile's
/// candidates aside -- pend_fill[g] of them, unsorted, at pend_dist /
/// pend_index + g * pend_cap, each within its bound (and below a full list's
/// last entry) -- and merges them with a later tile's or at
/// launch_flush_pending: a row's nearest are its list and its pending
/// entries together until then.
struct ListsView {
  float* dist = nullptr;
  int* index = nullptr;
  int* fill = nullptr;
  float* thr = nullptr;
  int64_t n = 0;
  int k = 0;
  float* pend_dist = nullptr;
  int* pend_index = nullptr;
  int* pend_fill = nullptr;
  int pend_cap = 0;
};

/// One distance tile: dot products of rows [r0, r0+rows) with rows
/// [c0, c0+cols), column-major with leading dimension ld (element (i, j) at
/// dots[i + j*ld]); squared distances are formed as |x|^2 + |y|^2 - 2 x.y.
/// Columns from col_role_from on lie outside the row block, so the tile also
/// feeds their own lists (the lower-triangle half, never computed).
struct TileView {
  const float* dots = nullptr;
  int ld = 0;
  int rows = 0, cols = 0;
  int r0 = 0, c0 = 0;
  int col_role_from = 0;
  const float* row_norms = nullptr;  ///< |x|^2 of the tile's rows (local index)
  const float* col_norms = nullptr;  ///< |y|^2 of the tile's columns (local index)
  bool keep_self = false;
  /// A diagonal tile seeding empty lists: every entry is a candidate of its
  /// row, written at a fixed place (no bounds, no atomics, no column role).
  bool dense = false;
};

/// The same tile for the fused kernel, which computes the dot products
/// itself from the row blocks transposed on the device (feature-major: block
/// b's element (row i, feature c) at base + c * ldt + i, ldt = the block
/// height T, features padded with zeros to dpad, a multiple of 16). `at`: the
/// row block of rows [r0, r0+rows); `bt`: the block holding column c0, the
/// tile's later columns in the blocks that follow it, block_stride apart.
struct FusedTileArgs {
  const float* at = nullptr;
  const float* bt = nullptr;
  int ldt = 0;
  int dpad = 0;
  int64_t block_stride = 0;
  int rows = 0, cols = 0;
  int r0 = 0, c0 = 0;
  int col_role_from = 0;
  const float* row_norms = nullptr;
  const float* col_norms = nullptr;
  const float* thr = nullptr;
  bool keep_self = false;
  bool dense = false;
  int batch = 1;  ///< dense only: seed tiles of `batch` consecutive blocks (rows: all of them), one launch
  /// Strips only: float32 FFMA; TF32 mma.sync from operands rounded to TF32
  /// (fast-exact); or mma.sync from float32 operands split into two TF32
  /// parts each, three products (exact).
  exact::DotArithmetic strips = exact::DotArithmetic::Float32;
};

/// Candidates that passed a row's bound in one tile, per slot: slot s < T is
/// tile row s (capacity cap_row = tile width), slot T + j is tile column j
/// (capacity cap_col = tile height). Capacities equal the most a slot can
/// receive from one tile, so nothing can overflow. dirty lists the slots that
/// received any (filled in arrival order); n_dirty[counter] counts them, with
/// four counters used in turn so a merge can clear the one of a later tile.
struct CandidatesView {
  float* dist = nullptr;
  int* index = nullptr;
  int* count = nullptr;
  int* dirty = nullptr;
  int* n_dirty = nullptr;               ///< four counters, used by tiles in turn
  unsigned long long* total = nullptr;  ///< candidates ever produced (statistics)
  int T = 0, W = 0;                     ///< slots: T row slots (capacity W), W column slots (capacity T)
};

/// Largest dimension for which the fused kernel computes the dot products
/// by default (FFMA or TF32 strips): up to here it beats cuBLAS + filter
/// (the tile is never written and read back); from d = 1024 cuBLAS runs
/// near its large-GEMM rate (bench/gpu/RESULTS.md).
/// Settings::gemm overrides (tests: gpu/settings.h).
constexpr int64_t kFusedMaxD = 256;
/// The same for exact's split-TF32 strips, which beat cuBLAS SGEMM + filter
/// by 1.6-1.8x at d = 512 and 1024 (bench/gpu/RESULTS.md). Beyond, their
/// bound (3 d tensor-core summands) nears TF32's: fast-exact's window.
constexpr int64_t kSplitFusedMaxD = 1024;

/// Squared row norms in float64, rounded to float (as the CPU backend does).
void launch_row_norms(const float* rows, int64_t n, int64_t d, float* norms, cudaStream_t s);
/// rows[i * d + c] -= offset[c] for i < n: core's exact translation
/// (manifold/exact/translation.h), every subtraction exact by its choice.
void launch_translate_rows(float* rows, int64_t n, int64_t d, const float* offset, cudaStream_t s);
/// Empty lists: fill 0, thr +inf, no pending entries.
void launch_init_lists(ListsView lists, cudaStream_t s);
/// Fused distance + bound filter over one tile of cuBLAS dot products, for
/// its rows and columns.
void launch_filter_tile(const TileView& t, const float* thr, CandidatesView c, int counter, cudaStream_t s);
/// Dot products, distances and the bound filter of one tile in one kernel.
void launch_fused_tile(const FusedTileArgs& f, CandidatesView c, int counter, cudaStream_t s);
/// out[c * ld + i] = rows[i * d + c] for the block's `count` rows (row-major,
/// d features): the fused kernel's operand layout, each value rounded to
/// TF32 when `round_tf32` (the TF32 kernel's operands). Padding is left
/// untouched.
void launch_transpose_block(const float* rows, int count, int64_t d, float* out, int ld, bool round_tf32,
                            cudaStream_t s);
/// Merges the tile's candidates into the lists (rows of the dirty slots) and
/// tightens the bounds; clears dirty counter reset_counter for a later tile.
/// With pending room, a row whose room takes the tile's candidates appends
/// them there instead (no merge).
/// `seed`: a dense diagonal tile whose rows' lists are all empty (a warp
/// selects each row's k directly when k <= kWarpMergeMaxK and not force_block).
void launch_merge_tile(ListsView lists, CandidatesView c, int counter, int reset_counter, int r0, int c0,
                       bool force_block, int max_candidates, cudaStream_t s, bool seed = false);
/// Seeds empty lists from a batch of dense seed tiles (launch_fused_tile with
/// dense): row r0 + i (i < rows) takes its candidates at c.dist/c.index +
/// i * c.W, every other row of its block of T rows, selecting k directly.
/// Clears c.n_dirty[reset_counter] for a later tile.
void launch_merge_seeds(ListsView lists, CandidatesView c, int reset_counter, int r0, int rows, int T, bool keep_self,
                        bool force_block, cudaStream_t s);
/// Merges the pending entries of rows [r0, r1) into their lists (nothing
/// without pending room): before rows are reported final and after the loop.
void launch_flush_pending(ListsView lists, int64_t r0, int64_t r1, cudaStream_t s);
/// Merges another device's lists (rows [0,n), candidates other[g][from, from+len)) into `lists`.
void launch_merge_lists(ListsView lists, const float* other_dist, const int* other_index, const int* other_fill,
                        int from, int len, cudaStream_t s);
/// Rows whose list is short (fewer than k finite distances): count into *bad, first row into *first_bad.
void launch_count_short_rows(ListsView lists, int* bad, int* first_bad, cudaStream_t s);
/// Rows whose k-th entry (position k-1 of lists of capacity lists.k) is
/// missing or not finite: count into *bad, first row into *first_bad.
void launch_count_short_rows(ListsView lists, int k, int* bad, int* first_bad, cudaStream_t s);

/// The final step of both precisions (see manifold/exact/error_bound.h): from each
/// row's list of `lists.k` (the capacity) candidates ranked by the GEMM's
/// distance, the rows whose list provably holds the k nearest (by the exact
/// key: float64 distance, then index) re-evaluate exactly the candidates the
/// bound cannot rule out and write the k nearest; the others are marked for
/// the fallback scan.
struct CertifyArgs {
  const float* rows = nullptr;  ///< all n prepared rows (resident)
  int64_t d = 0;
  const float* norms = nullptr;  ///< all n stored squared norms
  ListsView lists;               ///< capacity lists.k >= k; thr: each row's final bound (null: +inf)
  int k = 0;
  bool euclidean = true;
  bool complete = false;  ///< every other point is in every list (capacity = N-1, or N with self)
  double ymax = 0;        ///< largest stored squared norm
  exact::ErrorModel model;
  int64_t* out_index = nullptr;  ///< n*k
  float* out_dist = nullptr;     ///< n*k
  int* status = nullptr;         ///< per row: candidates re-evaluated, or -1 (not certified)
  float* max_use = nullptr;      ///< largest |a - s64| / bound seen (float bits, >= 0)
  float* ukey = nullptr;         ///< per row not certified: key of its k-th upper bound, for the rescan
  int64_t row_begin = 0;         ///< rows certified: [row_begin, row_end), row_end < 0 for all n
  int64_t row_end = -1;
};
void launch_certify(const CertifyArgs& a, cudaStream_t s);
size_t certify_shared_bytes(int capacity);

/// The rescan of rows the certificate failed (resident rows): every point is
/// screened against the row's own k-th upper bound, with the tile loop's
/// kind of dot product, and the survivors (at most kRescanCap) are ranked
/// exactly. Rows with more survivors are left to the exact scan.
constexpr int kRescanCap = 8192;
/// Copies rows fb[0..count) (and their norms and ukeys) into contiguous buffers.
void launch_gather_rows(const float* rows, int64_t d, const float* norms, const float* ukey, const int* fb, int count,
                        float* out_rows, float* out_norms, float* out_ukey, cudaStream_t s);
struct RescanTile {
  const float* dots = nullptr;  ///< column-major count x cols, leading dimension ld
  int ld = 0, count = 0, cols = 0;
  int64_t c0 = 0;                                     ///< first column's row index
  const int* fb = nullptr;                            ///< the rows' indices
  const float *row_norms = nullptr, *ukey = nullptr;  ///< per rescanned row
  const float* norms = nullptr;                       ///< all n rows
  exact::ErrorModel model;
  bool euclidean = true, keep_self = false;
  int* found = nullptr;  ///< per rescanned row: survivors so far (may exceed kRescanCap)
  int* cand = nullptr;   ///< count x kRescanCap survivors
};
void launch_rescan_filter(const RescanTile& t, cudaStream_t s);
/// Ranks each rescanned row's survivors exactly into out_index/out_dist (row
/// fb[r]); status[r] = survivors, or -1 when they overflowed.
void launch_rescan_select(const float* rows, int64_t d, const int* fb, int count, const int* found, const int* cand,
                          int k, bool euclidean, int64_t* out_index, float* out_dist, int* status, cudaStream_t s);

/// Exact keys of `count` rows (fb[0..count)) against all n rows: keys[r*n + j]
/// = key_of(s64), +inf for the row itself unless keep_self.
void launch_fallback_keys(const float* rows, int64_t n, int64_t d, const int* fb, int count, bool euclidean,
                          bool keep_self, float* keys, cudaStream_t s);

/// The prior bound of large-k lists (device_engine.h): m sample rows spread
/// evenly over [0, n) (and their norms) into out_rows (m x d) and out_norms.
void launch_gather_sample(const float* rows, const float* norms, int64_t n, int64_t d, int m, float* out_rows,
                          float* out_norms, cudaStream_t s);
/// Rows [r0, r0 + count): each one's squared distances to the m sample rows
/// (|x|^2 + |y|^2 - 2 x.y from `dots`, column-major m x count, leading
/// dimension m; m a multiple of 4, `dots` and `sample_norms` 16-byte
/// aligned), and thr[row] lowered to a sample distance with at least `rank`
/// of them at or below it (left as it is where fewer than `rank` are finite).
struct PriorBoundArgs {
  const float* dots = nullptr;
  int m = 0, count = 0;
  int64_t r0 = 0;
  const float* row_norms = nullptr;     ///< all n rows
  const float* sample_norms = nullptr;  ///< m
  int rank = 1;
  float* thr = nullptr;
};
void launch_prior_bound(const PriorBoundArgs& a, cudaStream_t s);
/// Shared memory of launch_prior_bound for m sample columns.
size_t prior_bound_shared_bytes(int m);
/// The most sample columns launch_prior_bound takes on a device with this
/// opt-in shared memory per block (a multiple of 1024; the row's distances
/// are held in shared memory).
int prior_bound_max_sample(size_t shared_optin);

/// Deterministic pseudo-random values in [-1, 1) (never all zero), for the SGEMM rate.
void launch_fill_random(float* x, int64_t count, uint64_t seed, cudaStream_t s);

}  // namespace manifold::gpu
