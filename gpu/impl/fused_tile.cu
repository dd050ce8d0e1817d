// The fused tile kernels: the tile's dot products by a register-blocked
// float32 FFMA GEMM (seed tiles; exact's strips before compute capability
// 8.0) or by TF32 mma.sync on tensor cores (fast-exact's strips, and exact's
// from operands split into two TF32 parts), turned into squared distances
// and filtered against the row and column bounds in registers, so the tile
// is never written to memory.
// They exist because cuBLAS reaches only ~60% of its large-GEMM rate when
// the inner dimension is short (d ~ 128-256: few main-loop steps per block,
// then a whole tile to write back, which the filter then reads again).
// Below: the FFMA kernel; the TF32 kernel, at the end, shares its copies,
// pipeline and epilogue.
//
// Layout: the operands are the row blocks transposed on the device
// (feature-major, [dpad][ld], see launch_transpose_block), so a k-slab of
// 128 rows is 128 contiguous floats and goes from global to shared memory by
// cp.async (16 bytes a thread, no registers, no transposing stores), through
// a 3-stage pipeline of 16-deep k-slabs (48 KB of shared memory, half the
// barriers of the 4-stage pipeline of 8-deep slabs, which measured slower).
// Each copy's source moves on by one slab from the last, so the main loop
// computes no addresses from the slab index. A strip block also fetches its
// rows' and columns' norms and bounds (2 KB) with the first slab, so the
// epilogue waits on no global load (dynamic shared memory: 50 KB a block).
// The default shape: 256 threads compute a 128 x 128 block as 8 warps of
// 64 x 32, each thread 8 x 8 entries (16 warps per SM hide the shared-memory
// and barrier latency). 8 x 16 entries per thread with 128 threads -- the
// shape of cuBLAS's FFMA kernels -- measured slower here (bench/gpu/RESULTS.md):
// 8 warps per SM and an unrolled epilogue too large for the instruction cache.
// Within a slab, each k-step's operand fragments are loaded while the step
// before computes (two register sets, the 16 steps unrolled whole): 1%
// faster at d = 128. Reaching across the slab's barrier as well (the barrier
// moved before the slab's last k-step) measured slower, and slower still
// capped at 112 registers to leave an SM room for a merge block.
//
// Each entry is computed in one fixed order -- one fmaf chain over c =
// 0..d-1 (the zero padding rows c >= d leave it unchanged), or one fixed
// sequence of mma -- whatever the tile shape, device or launch: the same
// input gives the same distances bit for bit, in memory, streamed or split
// over GPUs.
#include <algorithm>
#include <cmath>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int BM = 128, BN = 128;

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async4(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// A candidate to its row's slot (row role) or its column's slot (column
// role): a place by one global atomic on the slot's count, the slot listed
// as dirty by the first. Entries outside the tile, and self pairs unless
// kept, are not candidates. Returns the candidates written.
__device__ __forceinline__ unsigned push_to_slots(float* cdist, int* cindex, int* count, int* dirty, int* n_dirty,
                                                  int T, int W, int r0, int c0, int rows, int cols, bool keep_self,
                                                  int li, int lj, float dist, bool row_role, bool col_role) {
  const int gi = r0 + li, gj = c0 + lj;
  unsigned pushed = 0;
  if (row_role && lj < cols && (keep_self || gi != gj)) {
    const int pos = atomicAdd(count + li, 1);
    if (pos == 0) dirty[atomicAdd(n_dirty, 1)] = li;
    const size_t at = static_cast<size_t>(li) * W + pos;
    cdist[at] = dist;
    cindex[at] = gj;
    ++pushed;
  }
  if (col_role && li < rows) {
    const int slot = T + lj;
    const int pos = atomicAdd(count + slot, 1);
    if (pos == 0) dirty[atomicAdd(n_dirty, 1)] = slot;
    const size_t at = static_cast<size_t>(T) * W + static_cast<size_t>(lj) * T + pos;
    cdist[at] = dist;
    cindex[at] = gi;
    ++pushed;
  }
  return pushed;
}

/// A strip block's candidates, staged in shared memory while the block
/// filters its entries and sent to their slots by all its threads after it.
/// Pushed where they pass, each candidate's global atomic is a round trip
/// its warp waits for, one passing lane after another: at k = 1000 that
/// made the strip kernel half as slow again as at k = 20. Staged, a warp's
/// candidates cost one shared-memory atomic (filter_epilogue), and the
/// global atomics of the block's candidates are in flight together.
/// A candidate is its distance and its place in the block and roles, packed
/// in 16 bits (pack_where).
constexpr int kStagedCap = 2048;
struct StagedCandidates {
  float dist[kStagedCap];
  unsigned where[kStagedCap];
  int n;
};

/// Block row bi and column bj (each < 128) and the roles.
__device__ __forceinline__ unsigned pack_where(int bi, int bj, bool row_role, bool col_role) {
  static_assert(BM <= 128 && BN <= 128, "a block's row and column take 7 bits each");
  return static_cast<unsigned>(bi) | static_cast<unsigned>(bj) << 7 | static_cast<unsigned>(row_role) << 14 |
         static_cast<unsigned>(col_role) << 15;
}

/// The staged candidates to their slots, all threads of the block in turn.
__device__ __forceinline__ unsigned push_staged(const FusedTileArgs& f, const CandidatesView& c, int* n_dirty,
                                                const StagedCandidates* staged, int i_base, int j_base, int t,
                                                int threads) {
  const int n = min(staged->n, kStagedCap);
  unsigned pushed = 0;
  for (int e = t; e < n; e += threads) {
    const unsigned w = staged->where[e];
    pushed += push_to_slots(c.dist, c.index, c.count, c.dirty, n_dirty, c.T, c.W, f.r0, f.c0, f.rows, f.cols,
                            f.keep_self, i_base + (w & 127), j_base + (w >> 7 & 127), staged->dist[e], w >> 14 & 1,
                            w >> 15 & 1);
  }
  return pushed;
}

// ---- Epilogue: the block's entries to distances ------------------------------
// A thread holds 8 x TN entries: rows i_base + row_at[r >> 2] + (r & 3),
// columns j_base + wn + 16 (q >> 2) + (q & 3).

/// Dense seed tiles: the thread's distances (NaN as +inf, so that it never
/// sorts ahead of a real distance), in place of the dot products. Tile z is
/// batch rows z T.. (T = f.ldt) against themselves; `rows` of them are real.
template <int TN>
__device__ __forceinline__ void seed_distances(const FusedTileArgs& f, const float (&acc)[8][TN], int i_base,
                                               int j_base, int wm, int wn, int z, int rows, float (&dv)[8][TN]) {
  const int T = f.ldt;
  const int row_at[2] = {wm, wm + 32};
  float nj[TN], nr[8];
#pragma unroll
  for (int q = 0; q < TN; ++q) {
    const int j = j_base + wn + 16 * (q >> 2) + (q & 3);
    nj[q] = j < rows ? f.col_norms[z * T + j] : 0.f;
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int li = i_base + row_at[r >> 2] + (r & 3);
    nr[r] = li < rows ? f.row_norms[z * T + li] : 0.f;
  }
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      const float dist = fmaf(-2.f, acc[r][q], nr[r] + nj[q]);
      dv[r][q] = dist == dist ? dist : INFINITY;
    }
}

constexpr int kStageLd = BN + 1;  // staged row stride: row and column reads free of bank conflicts

/// Seed pass `pass` (0..3) stages the block's rows first .. first + 31
/// (first = 64 (pass / 2) + 32 (pass % 2)): the warps of row group pass / 2
/// write their half pass % 2 of the rows (the unrolled loop over both halves
/// keeps dv's index a constant, so dv stays in registers).
template <int TN>
__device__ __forceinline__ void stage_seed_rows(const float (&dv)[8][TN], int pass, int wm, int wn, float* stage) {
  const int group = wm >> 6, lr0 = wm & 63;  // the warp's 64-row group; the thread's first row in it
  if (group != (pass >> 1)) return;
#pragma unroll
  for (int rr = 0; rr < 4; ++rr) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h != (pass & 1)) continue;
      const int r = 4 * h + rr;
#pragma unroll
      for (int q = 0; q < TN; ++q) stage[(lr0 + rr) * kStageLd + wn + 16 * (q >> 2) + (q & 3)] = dv[r][q];
    }
  }
}

/// The 32 staged rows (block rows first..) to their candidate rows: a warp
/// per row, lanes on consecutive columns, each entry at its fixed place
/// (self skipped; row z T + li of the batch at (z T + li) * c.W).
template <int TN>
__device__ __forceinline__ void store_seed_rows(const FusedTileArgs& f, const CandidatesView& c, const float* stage,
                                                int i_base, int j_base, int first, int z, int rows, int warp,
                                                int lane) {
  constexpr int kAllWarps = 64 / TN;  // 128 * 16 / TN threads
  const int T = f.ldt;
  for (int e = warp; e < 32; e += kAllWarps) {
    const int li = i_base + first + e;
    if (li >= rows) continue;
    float* cd = c.dist + static_cast<size_t>(z * T + li) * c.W;
    int* ci = c.index + static_cast<size_t>(z * T + li) * c.W;
#pragma unroll
    for (int m = 0; m < BN / 32; ++m) {
      const int col = 32 * m + lane, j = j_base + col;
      if (j >= rows || (!f.keep_self && j == li)) continue;
      const int pos = (f.keep_self || j < li) ? j : j - 1;
      cd[pos] = stage[e * kStageLd + col];
      ci[pos] = f.c0 + z * T + j;
    }
  }
}

/// A block above the tile's diagonal also writes the mirror image: column j
/// of the staged rows is row j's places li (j > li: no self).
template <int TN>
__device__ __forceinline__ void store_seed_mirror(const FusedTileArgs& f, const CandidatesView& c, const float* stage,
                                                  int i_base, int j_base, int first, int z, int rows, int warp,
                                                  int lane) {
  constexpr int kAllWarps = 64 / TN;
  const int T = f.ldt;
  const int li = i_base + first + lane;
  for (int col = warp; col < BN; col += kAllWarps) {
    const int j = j_base + col;
    if (j >= rows || li >= rows) continue;
    const size_t at = static_cast<size_t>(z * T + j) * c.W + li;
    c.dist[at] = stage[lane * kStageLd + col];
    c.index[at] = f.c0 + z * T + li;
  }
}

/// Seed tiles (block z of the batch against itself) filling empty lists:
/// every entry goes to its row at a fixed place (self skipped), no atomics
/// (launch_seed_tiles). The tile is symmetric: only blocks on and above its
/// diagonal run, and one above it also writes each entry (li, j) to row j at
/// place li (the same fmaf chain and norm sum as (j, li) would give, bit for
/// bit). The entries go out through shared memory (the operand slabs, free
/// now), 32 rows at a time, so that a warp's stores cover whole runs of a
/// row: stored straight from the registers, a warp's store touched 8 rows
/// (mirrored: 4) in pieces of 4 bytes, and the seed kernel ran at half the
/// strip kernel's rate (bench/gpu/RESULTS.md).
template <int TN>
__device__ __forceinline__ void seed_epilogue(const FusedTileArgs& f, const CandidatesView& c,
                                              const float (&acc)[8][TN], int i_base, int j_base, int wm, int wn, int t,
                                              int lane, float* stage) {
  const bool mirror = blockIdx.y > blockIdx.x;
  const int z = blockIdx.z;
  const int rows = min(f.ldt, f.rows - z * f.ldt);
  float dv[8][TN];  // the distances replace the dot products (acc is dead from here)
  seed_distances<TN>(f, acc, i_base, j_base, wm, wn, z, rows, dv);
  const int warp = t >> 5;
  __syncthreads();  // every warp is past its last read of the slabs
#pragma unroll 1
  for (int pass = 0; pass < 4; ++pass) {
    const int first = (pass >> 1) * 64 + (pass & 1) * 32;
    stage_seed_rows<TN>(dv, pass, wm, wn, stage);
    __syncthreads();
    store_seed_rows<TN>(f, c, stage, i_base, j_base, first, z, rows, warp, lane);
    if (mirror) store_seed_mirror<TN>(f, c, stage, i_base, j_base, first, z, rows, warp, lane);
    __syncthreads();  // the stage is read before the next pass writes it
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && t == 0)
    atomicAdd(c.total, static_cast<unsigned long long>(rows) * (rows - (f.keep_self ? 0 : 1)));
}

/// A strip block's row and column norms and bounds, fetched into shared
/// memory with the first operand slab (their global loads, issued in the
/// epilogue, left every warp waiting on memory at the block's end). A bound
/// read at the block's start rather than its end is at most a few merges
/// older, so looser or equal: the filter passes the same entries or a few
/// more, and the merge, which keeps each list's lowest entries of list and
/// candidates, drops those.
constexpr int kEdgeRowNorm = 0, kEdgeRowBound = 1, kEdgeColNorm = 2, kEdgeColBound = 3;

/// Threads 0..127 fetch row i_base + t's norm and bound, threads 128..255
/// column j_base + t - 128's; outside the tile (or, for bounds, the column
/// role) a thread writes the value that never passes: norm 0, bound -inf.
__device__ __forceinline__ void fetch_edges(const FusedTileArgs& f, int i_base, int j_base, int t, float (*edge)[BM]) {
  const int e = t & (BM - 1);
  if (t < BM) {
    const int li = i_base + e;
    if (li < f.rows) {
      cp_async4(&edge[kEdgeRowNorm][e], f.row_norms + li);
      cp_async4(&edge[kEdgeRowBound][e], f.thr + f.r0 + li);
    } else {
      edge[kEdgeRowNorm][e] = 0.f;
      edge[kEdgeRowBound][e] = -INFINITY;
    }
  } else if (t < BM + BN) {
    const int lj = j_base + e;
    if (lj < f.cols) cp_async4(&edge[kEdgeColNorm][e], f.col_norms + lj);
    else
      edge[kEdgeColNorm][e] = 0.f;
    if (lj < f.cols && lj >= f.col_role_from) cp_async4(&edge[kEdgeColBound][e], f.thr + f.c0 + lj);
    else
      edge[kEdgeColBound][e] = -INFINITY;
  }
}

/// Where a thread's 8 x 8 accumulators lie in its block: entry [r][q] is
/// block row row(r), column col(q). The FFMA tile's thread holds rows wm +
/// 32 (r / 4) + r % 4 and columns wn + 16 (q / 4) + q % 4 (its two float4
/// fragments of A, two of B).
struct FfmaLayout {
  int wm, wn;
  __device__ __forceinline__ int row(int r) const { return wm + 32 * (r >> 2) + (r & 3); }
  __device__ __forceinline__ int col(int q) const { return wn + 16 * (q >> 2) + (q & 3); }
};

/// Out of line: an entry past the stage's end, to its slots at once (rare).
/// One copy per kernel (Layout): a function called from two kernels is
/// compiled with the full calling convention, which grew the FFMA kernel's
/// code by a sixth.
template <class Layout>
__device__ __noinline__ unsigned push_past_stage(const FusedTileArgs& f, const CandidatesView& c, int* n_dirty, int li,
                                                 int lj, float dist, bool row_role, bool col_role) {
  return push_to_slots(c.dist, c.index, c.count, c.dirty, n_dirty, c.T, c.W, f.r0, f.c0, f.rows, f.cols, f.keep_self,
                       li, lj, dist, row_role, col_role);
}

/// Strip tiles: each entry filtered against its row's and its column's
/// bounds (from fetch_edges), the entries that pass staged a warp at a
/// time, then sent to their slots by the whole block. A first pass marks
/// this thread's passing entries (a bit each); the warp takes places for
/// all of them by one shared atomic (a scan of the lanes' counts); a second
/// pass writes each marked entry to its place. Where entries were staged
/// one at a time, the lanes passing an entry took the warp into a divergent
/// call, and with a few percent of entries passing (random rows: 7% at k =
/// 20-100) some lane passed almost every one of a thread's 64 entries.
template <int TN, class Layout>
__device__ __forceinline__ void filter_epilogue(const FusedTileArgs& f, const CandidatesView& c, int counter,
                                                const float (&acc)[8][TN], int i_base, int j_base, Layout at, int t,
                                                int lane, const float (*edge)[BM], StagedCandidates* staged) {
  static_assert(8 * TN <= 64, "a bit per entry");
  int* n_dirty = c.n_dirty + counter;
  float nj[TN], tc[TN], ni[8], tr[8];
#pragma unroll
  for (int q = 0; q < TN; ++q) {
    nj[q] = edge[kEdgeColNorm][at.col(q)];
    tc[q] = edge[kEdgeColBound][at.col(q)];
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    ni[r] = edge[kEdgeRowNorm][at.row(r)];
    tr[r] = edge[kEdgeRowBound][at.row(r)];
  }
  unsigned long long passed = 0;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) {
      const float dist = fmaf(-2.f, acc[r][q], ni[r] + nj[q]);
      if (dist <= tr[r] || dist <= tc[q]) passed |= 1ull << (r * TN + q);
    }
  const int mine = __popcll(passed);
  int upto = mine;  // inclusive scan of the lanes' counts
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int v = __shfl_up_sync(kFullMask, upto, off);
    if (lane >= off) upto += v;
  }
  int place = 0;
  if (lane == 31 && upto) place = atomicAdd(&staged->n, upto);
  place = __shfl_sync(kFullMask, place, 31) + upto - mine;
  unsigned pushed = 0;
  if (passed) {
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
      for (int q = 0; q < TN; ++q) {
        if (!(passed >> (r * TN + q) & 1)) continue;
        const float dist = fmaf(-2.f, acc[r][q], ni[r] + nj[q]);
        const bool pr = dist <= tr[r], pc = dist <= tc[q];
        if (place < kStagedCap) {
          staged->dist[place] = dist;
          staged->where[place] = pack_where(at.row(r), at.col(q), pr, pc);
        } else {
          pushed += push_past_stage<Layout>(f, c, n_dirty, i_base + at.row(r), j_base + at.col(q), dist, pr, pc);
        }
        ++place;
      }
  }
  __syncthreads();  // every warp's candidates are staged
  pushed += push_staged(f, c, n_dirty, staged, i_base, j_base, t, 128 * 16 / TN);
  for (int off = 16; off > 0; off >>= 1) pushed += __shfl_down_sync(kFullMask, pushed, off);
  if (lane == 0 && pushed) atomicAdd(c.total, static_cast<unsigned long long>(pushed));
}

/// This thread's cp.async copies of the operand slabs (shared rows of LD
/// floats): slab rows cr + (kThreads / 32) h, floats cc..cc+3, of A (block rows i_base.. of the row
/// block) and B (tile columns j_base.., which lie in one row block: tiles
/// start on a block boundary, and blocks are multiples of 128 rows). Each
/// load moves the sources on by one slab (BK feature rows), so the loop
/// computes no addresses from the slab index. A batch of seed tiles
/// (gridDim.z > 1): tile z is block z against itself.
template <int BK, int kThreads, int LD = BM>
struct SlabCopies {
  static constexpr int kCopies = 32 * BK / kThreads;  // 16-byte copies per thread per operand and slab
  int64_t ldt;
  int cr, cc;
  const float* ga;
  const float* gb;

  __device__ __forceinline__ SlabCopies(const FusedTileArgs& f, int i_base, int j_base, int t)
      : ldt(f.ldt), cr(t >> 5), cc((t & 31) * 4) {
    const int64_t zoff = static_cast<int64_t>(blockIdx.z) * f.block_stride;
    ga = f.at + zoff + i_base + cr * ldt + cc;
    gb = f.bt + zoff + static_cast<int64_t>(j_base / f.ldt) * f.block_stride + (j_base % f.ldt) + cr * ldt + cc;
  }

  __device__ __forceinline__ void load(float (*as)[BK][LD], float (*bs)[BK][LD], int stage) {
#pragma unroll
    for (int h = 0; h < kCopies; ++h) {
      const int r = cr + (kThreads / 32) * h;  // slab row (k), h-th copy
      cp_async16(&as[stage][r][cc], ga + (kThreads / 32) * h * ldt);
      cp_async16(&bs[stage][r][cc], gb + (kThreads / 32) * h * ldt);
    }
    ga += BK * ldt;
    gb += BK * ldt;
  }
};

/// A kernel shape's block size and dynamic shared memory: the A and B
/// slabs, then (strips) the block's edges (fetch_edges) and its staged
/// candidates.
template <int TN, int BK, int kStages, bool Dense>
struct FusedShape {
  static constexpr int kThreads = 128 * 16 / TN;
  static constexpr size_t kSlabFloats = static_cast<size_t>(kStages) * BK * BM;
  static constexpr size_t kEdgeBytes = 4 * BM * sizeof(float);
  static constexpr size_t kSharedBytes = 2 * kSlabFloats * sizeof(float) +
                                         (Dense ? 0 : kEdgeBytes + sizeof(StagedCandidates));
};

// TN: columns per thread (16: 128 threads, warps of 64 x 64; 8: 256 threads,
// warps of 64 x 32); every thread has 8 rows.
// BK: k-steps per shared-memory slab (one barrier each), kStages: slabs in flight.
// Dense: the seed kernel, a separate instantiation so the strip kernel's
// code stays as small as it was (it is sensitive to the instruction cache:
// the mirrored seed stores inside it made the strips slower).
template <int TN, int BK, int kStages, bool Dense>
__global__ __launch_bounds__(128 * 16 / TN, 2) void fused_tile_kernel(FusedTileArgs f, CandidatesView c, int counter) {
  using Shape = FusedShape<TN, BK, kStages, Dense>;
  constexpr int kThreads = Shape::kThreads;
  constexpr int kWarpsN = 128 / (TN * 4);
  extern __shared__ __align__(16) float smem[];
  auto as = reinterpret_cast<float(*)[BK][BM]>(smem);
  auto bs = reinterpret_cast<float(*)[BK][BN]>(smem + Shape::kSlabFloats);
  auto edge = reinterpret_cast<float(*)[BM]>(smem + 2 * Shape::kSlabFloats);
  auto staged = reinterpret_cast<StagedCandidates*>(smem + 2 * Shape::kSlabFloats + 4 * BM);
  static_assert(!Dense || 32 * (BN + 1) <= kStages * BK * BM, "the seed epilogue stages 32 rows in the A slabs");
  const int t = threadIdx.x;
  // Seed tiles are symmetric: blocks below the diagonal have nothing to do
  // (their entries are mirrored by the blocks above it, in the epilogue).
  if constexpr (Dense)
    if (blockIdx.y < blockIdx.x) return;
  const int i_base = blockIdx.x * BM, j_base = blockIdx.y * BN;
  SlabCopies<BK, kThreads> copies(f, i_base, j_base, t);
  auto load = [&](int stage) { copies.load(as, bs, stage); };

  // In a warp, 8 x 4 threads of 8 x TN entries: rows ty*4 + {0..3} and
  // 32 + ty*4 + {0..3}, columns tx*4 + 16 q + {0..3}. A warp's fragment
  // loads touch 128 and 64 contiguous bytes (one shared-memory wavefront
  // each; lanes with the same ty or tx broadcast).
  const int warp = t >> 5, lane = t & 31;
  const int wm = (warp / kWarpsN) * 64 + (lane >> 2) * 4;
  const int wn = (warp % kWarpsN) * (TN * 4) + (lane & 3) * 4;

  float acc[8][TN];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] = 0.f;

  // The edges join the first slab's copy group (waited for with it); the
  // main loop's first barrier publishes the empty stage.
  if constexpr (!Dense) {
    fetch_edges(f, i_base, j_base, t, edge);
    if (t == 0) staged->n = 0;
  }
  const int nk = f.dpad / BK;  // dpad: a multiple of 16 (fused_dpad)
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nk) load(s);
    cp_async_commit();
  }
  int st = 0, next = kStages - 1;  // the slab computed, the stage the next load fills
#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // slab kt is in shared memory; stage (kt - 1) % kStages is free
    if (kt + kStages - 1 < nk) load(next);
    cp_async_commit();
    // Each k-step's fragments are loaded while the step before computes:
    // two register sets, the slab's steps unrolled whole so that a set's
    // index is a constant (bench/gpu/RESULTS.md, "Fragments a step ahead").
    float4 fa[2][2], fb[2][TN / 4];
    auto fragments = [&](int set, int k) {
      fa[set][0] = *reinterpret_cast<const float4*>(&as[st][k][wm]);
      fa[set][1] = *reinterpret_cast<const float4*>(&as[st][k][wm + 32]);
#pragma unroll
      for (int q = 0; q < TN / 4; ++q) fb[set][q] = *reinterpret_cast<const float4*>(&bs[st][k][wn + 16 * q]);
    };
    fragments(0, 0);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) fragments((k + 1) & 1, k + 1);
      const float4 a0 = fa[k & 1][0], a1 = fa[k & 1][1];
      float bv[TN];
#pragma unroll
      for (int q = 0; q < TN / 4; ++q) {
        const float4 bq = fb[k & 1][q];
        bv[4 * q] = bq.x, bv[4 * q + 1] = bq.y, bv[4 * q + 2] = bq.z, bv[4 * q + 3] = bq.w;
      }
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) acc[r][q] = fmaf(av[r], bv[q], acc[r][q]);
    }
    st = st + 1 == kStages ? 0 : st + 1;
    next = next + 1 == kStages ? 0 : next + 1;
  }
  cp_async_wait<0>();
  if constexpr (Dense) seed_epilogue<TN>(f, c, acc, i_base, j_base, wm, wn, t, lane, &as[0][0][0]);
  else
    filter_epilogue<TN>(f, c, counter, acc, i_base, j_base, FfmaLayout{wm, wn}, t, lane, edge, staged);
}

// ---- The strip kernel on tensor cores (fast-exact's, and exact's split) ----
// The same block (128 x 128 entries, 256 threads), pipeline and filter as the
// FFMA kernel, with each warp's 64 x 32 entries computed by mma.sync
// m16n8k8 TF32 (float32 accumulation) instead of FFMA chains. fast-exact:
// the operands are TF32 already (the blocks are rounded to it when
// transposed, launch_transpose_block), so the tensor cores see exactly the
// values the error model's input rounding (u_in) allows for. exact (kSplit):
// the operands are float32, each split into two TF32 parts in registers,
// three mma a tile; error_bound.h's SplitTf32 bounds it (6 times float32
// FFMA's window at d = 256, a tenth of TF32's), and it is faster than the
// FFMA kernel at every d measured (bench/gpu/RESULTS.md). Products and sums follow
// the model's tensor-core accumulation (u_acc = 2^-22). Seed tiles stay on
// the FFMA kernel (T / N of the entries: 3% at 80k rows): their entries,
// from the same rows, are within either bound.
//
// The slab rows are padded to kTf32Ld floats: a fragment load reads, per
// lane, row 8 k + t (t = lane % 4) at column g (g = lane / 4), and a stride
// of 136 floats puts those 32 reads in 32 banks (with 128 they would share 8).
constexpr int kTf32Ld = BM + 8;

/// d += a b on one m16n8k8 TF32 tile (PTX's fragment layouts: a0 (g, t), a1
/// (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (t, g), b1 (t + 4, g); d
/// (g, 2 t), (g, 2 t + 1), (g + 8, 2 t), (g + 8, 2 t + 1)).
__device__ __forceinline__ void mma_tf32(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // the backend plans no TF32 tiles before compute capability 8.0
#endif
}

/// A TF32 warp's accumulators: [r][q] is the m16n8 tile (r / 2, q / 2)'s
/// entry at row g + 8 (r % 2), column 2 t + q % 2, so block row wm + 16 (r /
/// 2) + 8 (r % 2) (wm: the warp's first row plus g) and column wn + 8 (q /
/// 2) + q % 2 (wn: its first column plus 2 t).
struct Tf32Layout {
  int wm, wn;
  __device__ __forceinline__ int row(int r) const { return wm + 16 * (r >> 1) + 8 * (r & 1); }
  __device__ __forceinline__ int col(int q) const { return wn + 8 * (q >> 1) + (q & 1); }
};

/// v split for exact's strips: head = v cut to TF32 (its 13 low fraction
/// bits cleared), tail = the remainder (exact in float32) cut likewise, so
/// v = head + tail + r with |r| <= 2^-20 |v| (error_bound.h, SplitTf32).
/// Cutting is one logic instruction a part; cvt.rna.tf32.f32 made the
/// kernel 20% slower (bench/gpu/RESULTS.md) for a bound the model does not need.
__device__ __forceinline__ void split_tf32(float v, unsigned& head, unsigned& tail) {
  head = __float_as_uint(v) & 0xffffe000u;
  tail = __float_as_uint(v - __uint_as_float(head)) & 0xffffe000u;
}

/// One slab's k-steps of 8 on a warp's 64 x 32 entries: per step, the B
/// fragments of its four 8-column tiles, then per 16-row tile its A fragment
/// and 4 mma. kSplit: the operands are float32, split by split_tf32, and
/// each tile takes three mma (tail x head, head x tail, head x head).
template <int BK, bool kSplit>
__device__ __forceinline__ void tf32_slab(const float (*as)[kTf32Ld], const float (*bs)[kTf32Ld], int wm, int wn, int g,
                                          int tq, float (&acc)[8][8]) {
#pragma unroll
  for (int k0 = 0; k0 < BK; k0 += 8) {
    unsigned b[4][2], bt[4][2];
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int n = wn + 8 * ni + g;
      const float v0 = bs[k0 + tq][n], v1 = bs[k0 + tq + 4][n];
      if constexpr (kSplit) {
        split_tf32(v0, b[ni][0], bt[ni][0]);
        split_tf32(v1, b[ni][1], bt[ni][1]);
      } else {
        b[ni][0] = __float_as_uint(v0), b[ni][1] = __float_as_uint(v1);
      }
    }
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
      const int m = wm + 16 * mi + g;
      const float v[4] = {as[k0 + tq][m], as[k0 + tq][m + 8], as[k0 + tq + 4][m], as[k0 + tq + 4][m + 8]};
      unsigned a[4], at[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if constexpr (kSplit) {
          split_tf32(v[e], a[e], at[e]);
        } else {
          a[e] = __float_as_uint(v[e]);
        }
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        if constexpr (kSplit) {
          mma_tf32(acc[2 * mi][2 * ni], acc[2 * mi][2 * ni + 1], acc[2 * mi + 1][2 * ni], acc[2 * mi + 1][2 * ni + 1],
                   at, b[ni]);
          mma_tf32(acc[2 * mi][2 * ni], acc[2 * mi][2 * ni + 1], acc[2 * mi + 1][2 * ni], acc[2 * mi + 1][2 * ni + 1],
                   a, bt[ni]);
        }
        mma_tf32(acc[2 * mi][2 * ni], acc[2 * mi][2 * ni + 1], acc[2 * mi + 1][2 * ni], acc[2 * mi + 1][2 * ni + 1], a,
                 b[ni]);
      }
    }
  }
}

/// The TF32 kernel's dynamic shared memory: the A and B slabs (padded
/// rows), then the block's edges. Its staged candidates take the slabs'
/// place once the main loop is done with them (54 KB a block, not 70).
template <int BK, int kStages>
struct Tf32Shape {
  static constexpr int kThreads = 256;
  static constexpr size_t kSlabFloats = static_cast<size_t>(kStages) * BK * kTf32Ld;
  static constexpr size_t kSharedBytes = 2 * kSlabFloats * sizeof(float) + 4 * BM * sizeof(float);
  static_assert(sizeof(StagedCandidates) <= 2 * kSlabFloats * sizeof(float), "the staged candidates fit the slabs");
};

template <int BK, int kStages, bool kSplit>
__global__ __launch_bounds__(256, 2) void fused_tf32_kernel(FusedTileArgs f, CandidatesView c, int counter) {
  using Shape = Tf32Shape<BK, kStages>;
  extern __shared__ __align__(16) float smem[];
  auto as = reinterpret_cast<float(*)[BK][kTf32Ld]>(smem);
  auto bs = reinterpret_cast<float(*)[BK][kTf32Ld]>(smem + Shape::kSlabFloats);
  auto edge = reinterpret_cast<float(*)[BM]>(smem + 2 * Shape::kSlabFloats);
  auto staged = reinterpret_cast<StagedCandidates*>(smem);  // after the main loop
  const int t = threadIdx.x;
  const int i_base = blockIdx.x * BM, j_base = blockIdx.y * BN;
  SlabCopies<BK, 256, kTf32Ld> copies(f, i_base, j_base, t);
  const int warp = t >> 5, lane = t & 31, g = lane >> 2, tq = lane & 3;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // 2 x 4 warps

  float acc[8][8];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < 8; ++q) acc[r][q] = 0.f;
  fetch_edges(f, i_base, j_base, t, edge);  // with the first slab's copy group, as in the FFMA kernel
  const int nk = f.dpad / BK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nk) copies.load(as, bs, s);
    cp_async_commit();
  }
  int st = 0, next = kStages - 1;
#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // slab kt is in shared memory; stage (kt - 1) % kStages is free
    if (kt + kStages - 1 < nk) copies.load(as, bs, next);
    cp_async_commit();
    tf32_slab<BK, kSplit>(as[st], bs[st], wm, wn, g, tq, acc);
    st = st + 1 == kStages ? 0 : st + 1;
    next = next + 1 == kStages ? 0 : next + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is past its last read of the slabs
  if (t == 0) staged->n = 0;
  __syncthreads();
  filter_epilogue<8>(f, c, counter, acc, i_base, j_base, Tf32Layout{wm + g, wn + 2 * tq}, t, lane, edge, staged);
}

/// Launches a kernel of the file with its dynamic shared memory; the limit
/// is the kernel's own attribute, per device: raised once per device and
/// host thread for each kernel.
template <auto kKernel, int kThreads, size_t kSharedBytes>
void launch_kernel(dim3 grid, const FusedTileArgs& f, CandidatesView c, int counter, cudaStream_t s, const char* what) {
  static thread_local uint64_t configured = 0;  // bit d: device d done
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "finding the current GPU");
  if (dev >= 64 || !(configured >> dev & 1)) {
    cuda_check(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kSharedBytes)),
               "raising the fused kernel's shared memory limit");
    if (dev < 64) configured |= uint64_t{1} << dev;
  }
  kKernel<<<grid, kThreads, kSharedBytes, s>>>(f, c, counter);
  launch_check(what);
}

template <int TN, int BK, int kStages, bool Dense>
void launch_shape(dim3 grid, const FusedTileArgs& f, CandidatesView c, int counter, cudaStream_t s, const char* what) {
  using Shape = FusedShape<TN, BK, kStages, Dense>;
  launch_kernel<fused_tile_kernel<TN, BK, kStages, Dense>, Shape::kThreads, Shape::kSharedBytes>(grid, f, c, counter, s,
                                                                                                 what);
}

/// v rounded to TF32 (10 fraction bits, to nearest, ties away from zero),
/// as a float whose 13 low bits are zero.
__device__ __forceinline__ float to_tf32(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(v));
  return __uint_as_float(u);
#else
  return v;
#endif
}

// out[c * ld + i] = rows[i * d + c] (rounded to TF32 for the TF32 kernel) for i < count, c < d (32 x 32 tiles
// through shared memory, both sides coalesced). Padding rows (c >= d) and
// columns (i >= count) are left as they are (zero from allocation).
__global__ void transpose_block_kernel(const float* __restrict__ rows, int count, int64_t d, float* __restrict__ out,
                                       int ld, bool round_tf32) {
  __shared__ float tile[32][33];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32, i0 = static_cast<int64_t>(blockIdx.y) * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int64_t i = i0 + y, c = c0 + threadIdx.x;
    if (i < count && c < d) tile[y][threadIdx.x] = rows[i * d + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int64_t c = c0 + y, i = i0 + threadIdx.x;
    if (i < count && c < d) out[c * ld + i] = round_tf32 ? to_tf32(tile[threadIdx.x][y]) : tile[threadIdx.x][y];
  }
}

}  // namespace

void launch_fused_tile(const FusedTileArgs& f, CandidatesView c, int counter, cudaStream_t s) {
  if (f.rows <= 0 || f.cols <= 0) return;
  // Seed tiles: one grid layer per block (rows: the whole batch's).
  const int span_r = f.dense ? std::min(f.rows, f.ldt) : f.rows, span_c = f.dense ? span_r : f.cols;
  const dim3 grid((span_r + BM - 1) / BM, (span_c + BN - 1) / BN, f.dense ? f.batch : 1);
  // 8 x 8 entries a thread, 256 threads, 16-deep slabs x 3 stages: the shape
  // measured fastest of those tried (bench/gpu/RESULTS.md); seed tiles too.
  if (f.dense) {
    launch_shape<8, 16, 3, true>(grid, f, c, counter, s, "fused seed kernel");
    return;
  }
  using Tf32 = Tf32Shape<16, 3>;
  if (f.strips == exact::DotArithmetic::SplitTf32) {
    launch_kernel<fused_tf32_kernel<16, 3, true>, Tf32::kThreads, Tf32::kSharedBytes>(grid, f, c, counter, s,
                                                                                      "fused split-TF32 tile kernel");
    return;
  }
  if (f.strips == exact::DotArithmetic::Tf32) {
    launch_kernel<fused_tf32_kernel<16, 3, false>, Tf32::kThreads, Tf32::kSharedBytes>(grid, f, c, counter, s,
                                                                                       "fused TF32 tile kernel");
    return;
  }
  launch_shape<8, 16, 3, false>(grid, f, c, counter, s, "fused tile kernel");
}

void launch_transpose_block(const float* rows, int count, int64_t d, float* out, int ld, bool round_tf32,
                            cudaStream_t s) {
  if (count <= 0 || d <= 0) return;
  const dim3 grid(static_cast<unsigned>((d + 31) / 32), static_cast<unsigned>((count + 31) / 32));
  transpose_block_kernel<<<grid, dim3(32, 8), 0, s>>>(rows, count, d, out, ld, round_tf32);
  launch_check("transposing a row block");
}

}  // namespace manifold::gpu
