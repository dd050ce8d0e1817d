// The tile filter kernel: turns one tile of dot products into squared
// distances and filters them, in one read, against the bounds of both the
// tile's rows and its columns (the distance matrix is symmetric, so the tile
// also stands for its mirror image below the diagonal). After a row's first
// tile its bound is its k-th distance so far, so only a handful of entries
// per row and tile pass; they are appended to per-slot candidate lists that
// the merge kernel folds into the row lists.
#include <cmath>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int kThreads = 256;       // 8 warps
constexpr int kRowsPerBlock = 128;  // 32 lanes x 4 consecutive rows (one float4)
constexpr int kColsPerWarp = 16;
constexpr int kColsPerBlock = kColsPerWarp * (kThreads / 32);
constexpr int kUnroll = 4;  // columns whose loads are in flight together

/// A lane's four consecutive rows of the tile (one float4 of each column):
/// whether each lies in the tile, its global index, its norm and its bound
/// (-inf outside the tile: such a row never passes).
struct LaneRows {
  float ni[4], tr[4];
  int gi[4];
  bool ok[4];
};

__device__ __forceinline__ LaneRows lane_rows(const TileView& t, const float* __restrict__ thr, int i0) {
  LaneRows r;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int i = i0 + q;
    r.ok[q] = i < t.rows;
    r.gi[q] = t.r0 + i;
    r.ni[q] = r.ok[q] ? t.row_norms[i] : 0.f;
    r.tr[q] = r.ok[q] ? __ldg(thr + t.r0 + i) : -INFINITY;
  }
  return r;
}

/// A diagonal tile seeding empty lists: every entry of the warp's columns
/// [jb, je) goes to its row at a fixed place (self skipped), no atomics; one
/// warp sets the rows' counts and dirty entries, one thread the tile's.
__device__ __forceinline__ void seed_dense(const TileView& t, const CandidatesView& c, int counter, const LaneRows& r,
                                           int i0, int jb, int je, int warp) {
  for (int j = jb; j < je; ++j) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(t.dots + static_cast<size_t>(j) * t.ld + i0));
    const float dots[4] = {v.x, v.y, v.z, v.w};
    const float nj = __ldg(t.col_norms + j);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int i = i0 + q;
      if (!r.ok[q] || (!t.keep_self && j == i)) continue;
      const int pos = (t.keep_self || j < i) ? j : j - 1;
      const float dist = fmaf(-2.f, dots[q], r.ni[q] + nj);
      c.dist[static_cast<size_t>(i) * c.W + pos] = dist == dist ? dist : INFINITY;  // NaN sorts as +inf
      c.index[static_cast<size_t>(i) * c.W + pos] = t.c0 + j;
    }
  }
  if (blockIdx.y == 0 && warp == 0) {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (r.ok[q]) {
        c.count[i0 + q] = t.cols - (t.keep_self ? 0 : 1);
        c.dirty[i0 + q] = i0 + q;
      }
  }
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    c.n_dirty[counter] = t.rows;
    atomicAdd(c.total, static_cast<unsigned long long>(t.rows) * (t.cols - (t.keep_self ? 0 : 1)));
  }
}

/// Row role: each lane owns its rows, so an entry that passes its row's
/// bound is appended with plain atomics (appends are rare); `pushed` counts.
__device__ __forceinline__ void push_row_role(const CandidatesView& c, int counter, int i0, int gj,
                                              const float (&dq)[4], const bool (&pr)[4], unsigned& pushed) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if (!pr[q]) continue;
    const int slot = i0 + q;
    const int pos = atomicAdd(c.count + slot, 1);
    if (pos == 0) c.dirty[atomicAdd(c.n_dirty + counter, 1)] = slot;
    const size_t at = static_cast<size_t>(slot) * c.W + pos;
    c.dist[at] = dq[q];
    c.index[at] = gj;
    ++pushed;
  }
}

/// Column role: the whole warp shares column jj, so the lanes' entries that
/// pass its bound take places from one atomic per warp, in lane order (an
/// inclusive warp scan of the lanes' counts); `pushed` counts.
__device__ __forceinline__ void push_column_role(const CandidatesView& c, int counter, int jj, int lane,
                                                 const LaneRows& r, const float (&dq)[4], const bool (&pc)[4],
                                                 unsigned& pushed) {
  const int mine = pc[0] + pc[1] + pc[2] + pc[3];
  int incl = mine;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int o = __shfl_up_sync(kFullMask, incl, off);
    if (lane >= off) incl += o;
  }
  const int total = __shfl_sync(kFullMask, incl, 31);
  if (total == 0) return;
  const int slot = c.T + jj;
  int base = 0;
  if (lane == 31) {
    base = atomicAdd(c.count + slot, total);
    if (base == 0) c.dirty[atomicAdd(c.n_dirty + counter, 1)] = slot;
  }
  base = __shfl_sync(kFullMask, base, 31);
  int pos = base + incl - mine;
  const size_t region = static_cast<size_t>(c.T) * c.W + static_cast<size_t>(jj) * c.T;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if (!pc[q]) continue;
    c.dist[region + pos] = dq[q];
    c.index[region + pos] = r.gi[q];
    ++pos;
  }
  pushed += mine;
}

/// Column jj of the tile against the lane's rows: the four distances, each
/// tested against its row's bound and the column's; the rare passes are
/// appended to the row's and the column's candidates; `pushed` counts them.
__device__ __forceinline__ void filter_column(const TileView& t, const float* __restrict__ thr, const CandidatesView& c,
                                              int counter, const LaneRows& r, int i0, int jj, const float4& v, int lane,
                                              unsigned& pushed) {
  const float nj = __ldg(t.col_norms + jj);
  const int gj = t.c0 + jj;
  const float tc = jj >= t.col_role_from ? __ldg(thr + gj) : -INFINITY;
  const float dots[4] = {v.x, v.y, v.z, v.w};
  float dq[4];
  bool pr[4], pc[4];
  bool any = false;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    // (|x|^2 + |y|^2) - 2 x.y, rounded as the CPU backend rounds it.
    dq[q] = fmaf(-2.f, dots[q], r.ni[q] + nj);
    pr[q] = r.ok[q] && dq[q] <= r.tr[q] && (t.keep_self || r.gi[q] != gj);
    pc[q] = r.ok[q] && dq[q] <= tc;
    any |= pr[q] | pc[q];
  }
  if (!__any_sync(kFullMask, any)) return;
  push_row_role(c, counter, i0, gj, dq, pr, pushed);
  push_column_role(c, counter, jj, lane, r, dq, pc, pushed);
}

// Four blocks a multiprocessor (64 registers, no spills): a column that
// passes anything waits on its atomics, and twice the warps of two blocks
// hide that wait (4-7% off the loop where most columns pass something:
// fast-exact's wide lists; bench/gpu/RESULTS.md).
__global__ __launch_bounds__(kThreads, 4) void filter_tile_kernel(TileView t, const float* __restrict__ thr,
                                                                  CandidatesView c, int counter) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int i0 = blockIdx.x * kRowsPerBlock + lane * 4;
  const int jb = (blockIdx.y * (kThreads / 32) + warp) * kColsPerWarp;
  if (jb >= t.cols) return;  // warp-uniform
  const int je = min(jb + kColsPerWarp, t.cols);
  const LaneRows r = lane_rows(t, thr, i0);
  if (t.dense) {
    seed_dense(t, c, counter, r, i0, jb, je, warp);
    return;
  }
  unsigned pushed = 0;
  for (int j = jb; j < je; j += kUnroll) {
    // kUnroll columns' loads in flight together, then each column filtered.
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (j + u < je) v[u] = __ldg(reinterpret_cast<const float4*>(t.dots + static_cast<size_t>(j + u) * t.ld + i0));
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (j + u >= je) break;
      filter_column(t, thr, c, counter, r, i0, j + u, v[u], lane, pushed);
    }
  }
  for (int off = 16; off > 0; off >>= 1) pushed += __shfl_down_sync(kFullMask, pushed, off);
  if (lane == 0 && pushed) atomicAdd(c.total, static_cast<unsigned long long>(pushed));
}

}  // namespace

void launch_filter_tile(const TileView& t, const float* thr, CandidatesView c, int counter, cudaStream_t s) {
  if (t.rows <= 0 || t.cols <= 0) return;
  const dim3 grid((t.rows + kRowsPerBlock - 1) / kRowsPerBlock, (t.cols + kColsPerBlock - 1) / kColsPerBlock);
  filter_tile_kernel<<<grid, kThreads, 0, s>>>(t, thr, c, counter);
  launch_check("tile filter kernel");
}

}  // namespace manifold::gpu
