// The bound filters of the papers' strategies. A tile of dot products is
// read once; each entry becomes a squared distance and is kept when it is
// within its row's current bound (the k-th distance so far, +inf while the
// list is short) -- and, for tiles above the diagonal, within its column's
// bound, since the tile also stands for its mirror image. Bounds use <=: an
// entry equal to the k-th distance may still win on the smaller index.
//
// Layout: one thread per tile row, a block covers kRows rows and kCols
// columns; for each column the threads of a warp read consecutive rows, so
// every load of the column-major tile is coalesced.
#include <cmath>

#include "select/common.cuh"
#include "select/select_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

constexpr int kRows = 256;  // threads per block, one row each
constexpr int kCols = 32;   // columns per block

// quick, heap, bitonic: entries appended to per-slot lists.
__global__ __launch_bounds__(kRows) void slot_filter_kernel(Tile t, const float* __restrict__ thr, Slots s) {
  const int lane = threadIdx.x & 31;
  const int i = blockIdx.x * kRows + threadIdx.x;
  const int j0 = blockIdx.y * kCols;
  const int j1 = min(j0 + kCols, t.cols);
  const bool ok = i < t.rows;
  const int gi = t.r0 + i;
  const float ni = ok ? t.row_norms[i] : 0.f;
  // A thread past the tile's rows never passes (NaN-free -inf bound).
  const float tr = ok ? thr[gi] : -INFINITY;
  unsigned passed = 0;
  for (int j = j0; j < j1; ++j) {  // uniform over the block: ballots below see every lane
    const int gj = t.c0 + j;
    const float dq = squared_distance(ni, t.col_norms[j], ok ? t.dots[static_cast<size_t>(j) * t.ld + i] : 0.f);
    // NaN fails every <=: it never enters a list (rows left short are reported).
    if (ok && dq <= tr && (t.keep_self || gi != gj)) {
      const int pos = atomicAdd(s.count + i, 1);
      if (pos == 0) s.dirty[atomicAdd(s.n_dirty, 1)] = i;
      const size_t at = static_cast<size_t>(i) * s.W + pos;
      s.dist[at] = dq;
      s.index[at] = gj;
      ++passed;
    }
    if (t.col_role) {
      // The whole warp shares column j: one atomic per warp, each lane's
      // place from the ballot (no prefix sum).
      const bool pc = ok && dq <= thr[gj];
      const unsigned mask = __ballot_sync(kFullMask, pc);
      if (mask) {
        const int leader = __ffs(mask) - 1;
        const int slot = s.T + j;
        int base = 0;
        if (lane == leader) {
          base = atomicAdd(s.count + slot, __popc(mask));
          if (base == 0) s.dirty[atomicAdd(s.n_dirty, 1)] = slot;
        }
        base = __shfl_sync(kFullMask, base, leader);
        if (pc) {
          const size_t at = static_cast<size_t>(s.T) * s.W + static_cast<size_t>(j) * s.T + base +
                            __popc(mask & lanes_below(lane));
          s.dist[at] = dq;
          s.index[at] = gi;
          ++passed;
        }
      }
    }
  }
  for (int off = 16; off > 0; off >>= 1) passed += __shfl_down_sync(kFullMask, passed, off);
  if (lane == 0 && passed) atomicAdd(s.total, static_cast<unsigned long long>(passed));
}

// sort: one flat array of 64-bit keys, (distance, column, row) from the high
// bits down, so one radix sort orders by distance and breaks ties the way
// both the row lists (smaller column) and the column lists (smaller row) need.
__global__ __launch_bounds__(kRows) void sort_filter_kernel(Tile t, const float* __restrict__ thr, SortBuffers b) {
  const int lane = threadIdx.x & 31;
  const int i = blockIdx.x * kRows + threadIdx.x;
  const int j0 = blockIdx.y * kCols;
  const int j1 = min(j0 + kCols, t.cols);
  const bool ok = i < t.rows;
  const int gi = t.r0 + i;
  const float ni = ok ? t.row_norms[i] : 0.f;
  const float tr = ok ? thr[gi] : -INFINITY;
  int mine = 0;  // triples of this thread's row
  for (int j = j0; j < j1; ++j) {
    const int gj = t.c0 + j;
    const float dq = squared_distance(ni, t.col_norms[j], ok ? t.dots[static_cast<size_t>(j) * t.ld + i] : 0.f);
    const bool pr = ok && dq <= tr && (t.keep_self || gi != gj);
    const bool pc = t.col_role && ok && dq <= thr[gj];
    const bool keep = pr || pc;
    const unsigned mask = __ballot_sync(kFullMask, keep);
    if (!mask) continue;
    const int leader = __ffs(mask) - 1;
    int base = 0;
    if (lane == leader) {
      base = atomicAdd(b.n_items, __popc(mask));
      atomicAdd(b.col_count + j, __popc(mask));
    }
    base = __shfl_sync(kFullMask, base, leader);
    if (keep) {
      b.keys[0][base + __popc(mask & lanes_below(lane))] = (static_cast<uint64_t>(ordered_bits(dq)) << 32) |
                                                           (static_cast<uint64_t>(j) << 16) | static_cast<uint64_t>(i);
      ++mine;
    }
  }
  if (mine) atomicAdd(b.row_count + i, mine);
}

dim3 filter_grid(const Tile& t) { return dim3((t.rows + kRows - 1) / kRows, (t.cols + kCols - 1) / kCols); }

}  // namespace

void launch_slot_filter(const Tile& t, const float* thr, Slots s, cudaStream_t stream) {
  if (t.rows <= 0 || t.cols <= 0) return;
  slot_filter_kernel<<<filter_grid(t), kRows, 0, stream>>>(t, thr, s);
  launch_check("select filter kernel");
}

void launch_sort_filter(const Tile& t, const float* thr, SortBuffers b, cudaStream_t stream) {
  if (t.rows <= 0 || t.cols <= 0) return;
  sort_filter_kernel<<<filter_grid(t), kRows, 0, stream>>>(t, thr, b);
  launch_check("sort filter kernel");
}

}  // namespace manifold::gpu::select
