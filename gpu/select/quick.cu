// select=quick, after Komarov, Dashti & D'Souza (2014), GPU-based quick
// multi-select. A worker -- one warp (quick_kernel) or one thread block
// (quick_block_kernel) -- takes one row at a time: its current list (k
// entries, unordered) and the tile's entries that passed the row's bound,
// and selects the k smallest (distance, index) keys among them.
//
// Warp variant. Each partition pass reads the range 32 entries at a time. A
// ballot on "less than the pivot" (and one on "greater") tells every lane,
// through __popc of the lanes below it, where its entry goes in a 32-wide
// staging array in shared memory: smaller ones from the left, greater ones
// from the right. The warp then writes the staged entries to the auxiliary
// array with two coalesced stores -- smaller ones after those already placed
// at the left end, greater ones before those at the right end -- so the
// input is read once and no prefix sum is needed. The pivot (keys are
// distinct, so exactly one entry equals it) lands between the two parts,
// which makes every pass shrink the range.
//
// Block variant (the paper's "one thread block per query"): 256 threads
// read the range 256 entries at a time. Each warp ballots and popcs its 32
// entries as above, for positions within the warp; the block synchronises
// and one thread turns the 8 warps' counts into each warp's offsets (a
// serial scan of 8 numbers, no parallel prefix sum); every thread then
// stages its entry in a 256-wide shared array (smaller from the left,
// greater from the right) and the block writes both parts out with
// coalesced stores, exactly as a warp does. Three barriers per 256 entries.
// Every thread walks the same items and passes: the chunk totals come from
// shared memory, so lo, hi, the split and the pivot position are the same in
// all of them and no barrier is ever reached by part of the block.
//
// Which variant runs (chosen at every launch; tests force either through
// Settings::quick): the block variant for lists of
// kQuickBlockMinK entries or more (select_kernels.h), where a row's range is
// thousands of entries and few rows are dirty per tile, so a warp per row
// leaves most of the GPU idle; the warp variant otherwise.
//
// The input and auxiliary arrays (2 x cap entries of scratch per worker)
// swap after every pass. Rather than copying a settled part (entries known
// to be among the k smallest) back into the array the next pass writes, the
// worker keeps a stack of references to it -- which array, which positions
// -- and gathers all of them into the row's list once at the end (the
// paper's stack of partition references): in lanes' registers for a warp, in
// shared memory for a block. Settled parts are disjoint and, together with
// the final one, cover positions [0, k) exactly, each at its final position.
//
// The pivot is an entry at a pseudo-random position of the range (as in the
// paper, a random pivot), drawn from a hash of (row, slot, pass) so that
// runs are reproducible; both variants draw the same pivots.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "manifold/error.h"
#include "select/common.cuh"
#include "select/select_kernels.h"
#include "settings.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

constexpr int kThreads = 128;  // warp variant: 4 warps per block, each on its own rows
constexpr int kWarps = kThreads / 32;
constexpr int kStack = 32;  // settled-part references held before an early gather
// Block variant: 8 warps. 256 entries per step keep the three barriers of a
// step cheap against the loads and stores of a first pass over thousands of
// entries, while later passes (a few hundred entries) still keep most
// threads busy, which 512 would not; the serial scan is over 8 counts.
constexpr int kBlockThreads = 256;
constexpr int kBlockWarps = kBlockThreads / 32;
// Resident blocks per SM the block variant's grid (and scratch) is sized
// for: 1024 of the SM's 2048 threads, at up to 64 registers each.
constexpr int kBlocksPerSm = 4;

__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/// The pivot's offset into a range of `size` entries at pass `iter` of the
/// item's row: pseudo-random, the same on every run and in both variants.
__device__ __forceinline__ int pivot_offset(const SlotItem& x, uint32_t iter, int size) {
  const uint32_t h = mix32(static_cast<uint32_t>(x.row) * 0x9e3779b9u + iter * 0x85ebca6bu +
                           static_cast<uint32_t>(x.slot));
  return static_cast<int>(__umulhi(h, static_cast<uint32_t>(size)));
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

/// The largest v of the block's threads, in every thread; red: kBlockWarps
/// floats of shared memory, free again when it returns.
__device__ __forceinline__ float block_max(float v, float* red) {
  v = warp_max(v);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kBlockWarps; ++w) v = fmaxf(v, red[w]);
  __syncthreads();
  return v;
}

/// A worker's scratch: two arrays of `cap` entries (input and auxiliary,
/// swapping roles after every pass), chosen by a 0/1 selector rather than an
/// indexed array, which would live in local memory.
struct Scratch {
  float* d0;
  float* d1;
  int* i0;
  int* i1;
  __device__ __forceinline__ float* dist(int a) const { return a ? d1 : d0; }
  __device__ __forceinline__ int* index(int a) const { return a ? i1 : i0; }
};

/// One dirty row of the tile: its slot item, its list (k places), and how
/// many entries there are to choose from (the list's, then the tile's).
struct RowWork {
  SlotItem x;
  float* ld;  ///< the row's list
  int* li;
  int f;  ///< entries in the list
  int m;  ///< f + the tile's entries
};

__device__ __forceinline__ RowWork row_work(const ListsView& l, const Slots& s, int it) {
  RowWork w;
  w.x = slot_item(s, it);
  w.ld = l.dist + static_cast<size_t>(w.x.row) * l.k;
  w.li = l.index + static_cast<size_t>(w.x.row) * l.k;
  w.f = l.fill[w.x.row];
  w.m = w.f + w.x.count;
  return w;
}

/// The row's list is done for this tile: its fill, its bound (the largest
/// distance, once the list is full) and an empty slot for the next tile.
/// One thread calls it.
__device__ __forceinline__ void record_row(const ListsView& l, const Slots& s, const RowWork& w, int fill, float mx) {
  l.fill[w.x.row] = fill;
  if (fill == l.k) l.thr[w.x.row] = mx;
  s.count[w.x.slot] = 0;
}

// ---- The workers: a warp or a block on one row ------------------------------
// Both variants run the same selection (append, load, partition passes,
// gather) through a worker that says how many threads share the row, which
// one this is, how they wait for each other and how they partition a range.

/// One partition pass of a warp over [lo, hi) of src around the pivot (pd,
/// pi): smaller entries to the left end of dst, greater ones to the right
/// end, 32 at a time through the warp's staging arrays (sgd, sgi), and the
/// pivot between them. Returns the pivot's position, which is its rank.
__device__ __forceinline__ int warp_partition(const float* src_d, const int* src_i, float* dst_d, int* dst_i, int lo,
                                              int hi, float pd, int pi, float* sgd, int* sgi, int lane) {
  int nl = 0, ng = 0;  // placed so far at the left and right ends
  for (int b = lo; b < hi; b += 32) {
    const int e = b + lane;
    const bool valid = e < hi;
    float vd = 0.f;
    int vi = 0;
    if (valid) vd = src_d[e], vi = src_i[e];
    const bool lt = valid && key_less(vd, vi, pd, pi);
    const bool gt = valid && key_less(pd, pi, vd, vi);
    const unsigned mlt = __ballot_sync(kFullMask, lt);
    const unsigned mgt = __ballot_sync(kFullMask, gt);
    const int nlt = __popc(mlt), ngt = __popc(mgt);
    if (lt) {
      const int p = __popc(mlt & lanes_below(lane));
      sgd[p] = vd, sgi[p] = vi;
    } else if (gt) {
      const int p = 31 - __popc(mgt & lanes_below(lane));
      sgd[p] = vd, sgi[p] = vi;
    }
    __syncwarp();
    if (lane < nlt) {
      dst_d[lo + nl + lane] = sgd[lane], dst_i[lo + nl + lane] = sgi[lane];
    } else if (lane >= 32 - ngt) {
      const int p = hi - ng - (32 - lane);
      dst_d[p] = sgd[lane], dst_i[p] = sgi[lane];
    }
    __syncwarp();
    nl += nlt, ng += ngt;
  }
  const int split = lo + nl;
  if (lane == 0) dst_d[split] = pd, dst_i[split] = pi;
  __syncwarp();
  return split;
}

/// The warp's stack of settled parts, in registers: lane r holds reference
/// r (array ref_a, positions [ref_b, ref_e)).
struct WarpSettled {
  int ref_a = 0, ref_b = 0, ref_e = 0, n_refs = 0;
  float mx = -INFINITY;  ///< the largest distance this lane gathered

  /// Every referenced part into the row's list, where each already sits at
  /// its final position; the stack is empty after.
  __device__ __forceinline__ void gather(const Scratch& b, const RowWork& w, int lane) {
    for (int r = 0; r < n_refs; ++r) {
      const int a = __shfl_sync(kFullMask, ref_a, r);
      const int pb = __shfl_sync(kFullMask, ref_b, r);
      const int pe = __shfl_sync(kFullMask, ref_e, r);
      for (int p = pb + lane; p < pe; p += 32) {
        const float v = b.dist(a)[p];
        w.ld[p] = v, w.li[p] = b.index(a)[p];
        mx = fmaxf(mx, v);
      }
    }
    n_refs = 0;
  }

  __device__ __forceinline__ void push(const Scratch& b, const RowWork& w, int lane, int a, int pb, int pe) {
    if (n_refs == kStack) gather(b, w, lane);  // rare: a deep run of settled parts
    if (lane == n_refs) ref_a = a, ref_b = pb, ref_e = pe;
    ++n_refs;
  }
};

/// One warp per row: its lanes, __syncwarp, its staging arrays.
struct WarpWorker {
  static constexpr int kSize = 32;
  using Settled = WarpSettled;
  int rank;  ///< the lane
  float* sgd;
  int* sgi;

  __device__ __forceinline__ void sync() const { __syncwarp(); }
  __device__ __forceinline__ float max(float v) const { return warp_max(v); }
  __device__ __forceinline__ int partition(const float* src_d, const int* src_i, float* dst_d, int* dst_i, int lo,
                                           int hi, float pd, int pi) const {
    return warp_partition(src_d, src_i, dst_d, dst_i, lo, hi, pd, pi, sgd, sgi, rank);
  }
  __device__ __forceinline__ void gather(Settled& st, const Scratch& b, const RowWork& w) const {
    st.gather(b, w, rank);
  }
  __device__ __forceinline__ void push(Settled& st, const Scratch& b, const RowWork& w, int a, int pb, int pe) const {
    st.push(b, w, rank, a, pb, pe);
  }
};

struct BlockShared {
  // One 256-wide staging array: smaller entries from the left, greater from the right.
  float stage_d[kBlockThreads];
  int stage_i[kBlockThreads];
  // Per warp: its count of smaller (greater) entries in the chunk, replaced
  // by thread 0 with the warp's offset among them; the chunk's totals.
  int warp_lt[kBlockWarps], warp_gt[kBlockWarps];
  int chunk_lt, chunk_gt;
  // The stack of settled-part references: array, positions [b, e).
  int ref_a[kStack], ref_b[kStack], ref_e[kStack];
  float red[kBlockWarps];  // block_max
};

/// One thread: the warps' counts of smaller (greater) entries in the chunk
/// become their offsets among them, and the chunk's totals are set (a serial
/// scan of kBlockWarps numbers, cheaper here than a parallel prefix sum).
__device__ __forceinline__ void chunk_offsets(BlockShared& sh) {
  int al = 0, ag = 0;
  for (int w = 0; w < kBlockWarps; ++w) {
    const int cl = sh.warp_lt[w], cg = sh.warp_gt[w];
    sh.warp_lt[w] = al, sh.warp_gt[w] = ag;
    al += cl, ag += cg;
  }
  sh.chunk_lt = al, sh.chunk_gt = ag;
}

/// One partition pass of the block over [lo, hi) of src around the pivot
/// (pd, pi): smaller entries to the left end of dst, greater ones to the
/// right end, kBlockThreads at a time through the shared staging array, and
/// the pivot between them. Returns the pivot's position, which is its rank.
/// Every thread walks the same chunks: the totals come from shared memory.
__device__ __forceinline__ int block_partition(const float* src_d, const int* src_i, float* dst_d, int* dst_i, int lo,
                                               int hi, float pd, int pi, BlockShared& sh) {
  const int tid = threadIdx.x;
  const int lane = tid & 31;
  const int warp = tid >> 5;
  int nl = 0, ng = 0;  // placed so far at the left and right ends
  for (int b = lo; b < hi; b += kBlockThreads) {
    const int e = b + tid;
    const bool valid = e < hi;
    float vd = 0.f;
    int vi = 0;
    if (valid) vd = src_d[e], vi = src_i[e];
    const bool lt = valid && key_less(vd, vi, pd, pi);
    const bool gt = valid && key_less(pd, pi, vd, vi);
    const unsigned mlt = __ballot_sync(kFullMask, lt);
    const unsigned mgt = __ballot_sync(kFullMask, gt);
    // (1) The warps' counts. The previous chunk's readers of these and of
    // the staging array are past its barrier (3), so they may be overwritten.
    if (lane == 0) sh.warp_lt[warp] = __popc(mlt), sh.warp_gt[warp] = __popc(mgt);
    __syncthreads();
    // (2) One thread: the warps' offsets within the chunk, and its totals.
    if (tid == 0) chunk_offsets(sh);
    __syncthreads();
    // (3) Staging: smaller from the left, greater from the right.
    if (lt) {
      const int p = sh.warp_lt[warp] + __popc(mlt & lanes_below(lane));
      sh.stage_d[p] = vd, sh.stage_i[p] = vi;
    } else if (gt) {
      const int p = kBlockThreads - 1 - (sh.warp_gt[warp] + __popc(mgt & lanes_below(lane)));
      sh.stage_d[p] = vd, sh.stage_i[p] = vi;
    }
    __syncthreads();
    // (4) Coalesced stores: smaller after those at the left end, greater
    // before those at the right end.
    const int nlt = sh.chunk_lt, ngt = sh.chunk_gt;
    if (tid < nlt) {
      dst_d[lo + nl + tid] = sh.stage_d[tid], dst_i[lo + nl + tid] = sh.stage_i[tid];
    } else if (tid >= kBlockThreads - ngt) {
      const int p = hi - ng - (kBlockThreads - tid);
      dst_d[p] = sh.stage_d[tid], dst_i[p] = sh.stage_i[tid];
    }
    nl += nlt, ng += ngt;
  }
  const int split = lo + nl;
  if (tid == 0) dst_d[split] = pd, dst_i[split] = pi;
  __syncthreads();  // the pass's stores are visible to the whole block
  return split;
}

/// The block's stack of settled parts, in shared memory: thread 0 writes the
/// references, n_refs is the same in every thread.
struct BlockSettled {
  int n_refs = 0;
  float mx = -INFINITY;  ///< the largest distance this thread gathered

  /// Every referenced part into the row's list, where each already sits at
  /// its final position; the stack is empty after.
  __device__ __forceinline__ void gather(const Scratch& b, const RowWork& w, const BlockShared& sh) {
    __syncthreads();  // the referenced parts and the stack entries are written
    for (int r = 0; r < n_refs; ++r) {
      const int a = sh.ref_a[r], pb = sh.ref_b[r], pe = sh.ref_e[r];
      const float* gd = b.dist(a);
      const int* gi = b.index(a);
      for (int p = pb + threadIdx.x; p < pe; p += kBlockThreads) {
        const float v = gd[p];
        w.ld[p] = v, w.li[p] = gi[p];
        mx = fmaxf(mx, v);
      }
    }
    __syncthreads();  // every thread has read the stack before it is reused
    n_refs = 0;
  }

  __device__ __forceinline__ void push(const Scratch& b, const RowWork& w, BlockShared& sh, int a, int pb, int pe) {
    if (n_refs == kStack) gather(b, w, sh);  // rare: a deep run of settled parts
    if (threadIdx.x == 0) sh.ref_a[n_refs] = a, sh.ref_b[n_refs] = pb, sh.ref_e[n_refs] = pe;
    ++n_refs;
  }
};

/// One thread block per row: its threads, __syncthreads, its shared memory.
struct BlockWorker {
  static constexpr int kSize = kBlockThreads;
  using Settled = BlockSettled;
  int rank;  ///< the thread
  BlockShared* sh;

  __device__ __forceinline__ void sync() const { __syncthreads(); }
  __device__ __forceinline__ float max(float v) const { return block_max(v, sh->red); }
  __device__ __forceinline__ int partition(const float* src_d, const int* src_i, float* dst_d, int* dst_i, int lo,
                                           int hi, float pd, int pi) const {
    return block_partition(src_d, src_i, dst_d, dst_i, lo, hi, pd, pi, *sh);
  }
  __device__ __forceinline__ void gather(Settled& st, const Scratch& b, const RowWork& w) const {
    st.gather(b, w, *sh);
  }
  __device__ __forceinline__ void push(Settled& st, const Scratch& b, const RowWork& w, int a, int pb, int pe) const {
    st.push(b, w, *sh, a, pb, pe);
  }
};

// ---- The selection of one row, by either worker -----------------------------

/// A list with room for the tile's entries (m <= k): nothing to drop yet, so
/// they are appended; a list that is full now gets its bound.
template <class Worker>
__device__ __forceinline__ void append_entries(const ListsView& l, const Slots& s, const RowWork& w, const Worker& wk) {
  for (int e = wk.rank; e < w.x.count; e += Worker::kSize) w.ld[w.f + e] = w.x.dist[e], w.li[w.f + e] = w.x.index[e];
  wk.sync();
  float mx = -INFINITY;
  if (w.m == l.k)
    for (int e = wk.rank; e < l.k; e += Worker::kSize) mx = fmaxf(mx, w.ld[e]);
  mx = wk.max(mx);  // a block's max also orders every read of fill and count before the writes
  if (wk.rank == 0) record_row(l, s, w, w.m, mx);
  wk.sync();
}

/// The first pass's input array: the list, then the tile's entries.
template <class Worker>
__device__ __forceinline__ void load_input(const RowWork& w, const Scratch& b, const Worker& wk) {
  for (int e = wk.rank; e < w.f; e += Worker::kSize) b.d0[e] = w.ld[e], b.i0[e] = w.li[e];
  for (int e = wk.rank; e < w.x.count; e += Worker::kSize) b.d0[w.f + e] = w.x.dist[e], b.i0[w.f + e] = w.x.index[e];
  wk.sync();
}

/// A list that overflows (m > k), its entries in the scratch's first array:
/// partition passes until the k smallest are settled, then gathered into
/// the row's list. Returns the largest distance this thread gathered.
template <class Worker>
__device__ __forceinline__ float select_smallest(const RowWork& w, const Scratch& b, int k, const Worker& wk) {
  typename Worker::Settled settled;
  // Invariant: positions [0, lo) hold settled entries (by reference), the
  // range [lo, hi) of array `cur` holds ranks lo..hi-1, and lo < k < hi.
  int lo = 0, hi = w.m, cur = 0;
  for (uint32_t iter = 0;; ++iter) {
    const float* src_d = b.dist(cur);
    const int* src_i = b.index(cur);
    // Every thread reads the same pivot (the last pass's writes were made
    // visible by the sync that ended it).
    const int pp = lo + pivot_offset(w.x, iter, hi - lo);
    const int split = wk.partition(src_d, src_i, b.dist(cur ^ 1), b.index(cur ^ 1), lo, hi, src_d[pp], src_i[pp]);
    if (split == k || split + 1 == k) {
      wk.push(settled, b, w, cur ^ 1, lo, k);
      break;
    }
    if (split > k) {
      hi = split;  // the k smallest lie among the smaller part
    } else {
      wk.push(settled, b, w, cur ^ 1, lo, split + 1);  // the smaller part and the pivot are in
      lo = split + 1;
    }
    cur ^= 1;
  }
  wk.gather(settled, b, w);
  return settled.mx;
}

/// Dirty row `it` of the tile, by one worker with scratch b.
template <class Worker>
__device__ __forceinline__ void select_row(const ListsView& l, const Slots& s, int it, const Scratch& b,
                                           const Worker& wk) {
  const RowWork w = row_work(l, s, it);
  if (w.m <= l.k) {
    append_entries(l, s, w, wk);
    return;
  }
  load_input(w, b, wk);
  const float mx = wk.max(select_smallest(w, b, l.k, wk));
  wk.sync();
  if (wk.rank == 0) record_row(l, s, w, l.k, mx);
  wk.sync();
}

// workers: warps that have scratch (2 * cap entries each); warps beyond them
// in the last block leave at once.
__global__ __launch_bounds__(kThreads) void quick_kernel(ListsView l, Slots s, float* __restrict__ sd,
                                                         int* __restrict__ si, int cap, int workers) {
  __shared__ float stage_d[kWarps][32];
  __shared__ int stage_i[kWarps][32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int gw = blockIdx.x * kWarps + warp;
  const int n_warps = min(static_cast<int>(gridDim.x) * kWarps, workers);
  if (gw >= n_warps) return;  // whole warps; this kernel has no block barrier
  // The warp's scratch: arrays 2 gw and 2 gw + 1.
  float* const d0 = sd + static_cast<size_t>(gw) * 2 * cap;
  int* const i0 = si + static_cast<size_t>(gw) * 2 * cap;
  const Scratch b{d0, d0 + cap, i0, i0 + cap};
  const WarpWorker wk{lane, stage_d[warp], stage_i[warp]};
  const int items = *s.n_dirty;
  for (int it = gw; it < items; it += n_warps) select_row(l, s, it, b, wk);
}

// One block per row item (grid-stride over the items); block b's scratch is
// arrays 2b and 2b+1 of `cap` entries. Every __syncthreads (here and in the
// helpers above) is reached by all threads: the item loop, the append test,
// the pass loop and the chunk loop depend only on values every thread reads
// alike (the item, the list's fill, the chunk totals in shared memory).
__global__ __launch_bounds__(kBlockThreads) void quick_block_kernel(ListsView l, Slots s, float* __restrict__ sd,
                                                                    int* __restrict__ si, int cap) {
  __shared__ BlockShared sh;
  // The block's scratch: arrays 2b and 2b+1 (b: the block's index).
  float* const d0 = sd + static_cast<size_t>(blockIdx.x) * 2 * cap;
  int* const i0 = si + static_cast<size_t>(blockIdx.x) * 2 * cap;
  const Scratch b{d0, d0 + cap, i0, i0 + cap};
  const BlockWorker wk{static_cast<int>(threadIdx.x), &sh};
  const int items = *s.n_dirty;
  for (int it = blockIdx.x; it < items; it += gridDim.x) select_row(l, s, it, b, wk);
}

}  // namespace

QuickVariant quick_variant(int k) {
  // Settings::quick (tests) forces either, so both meet the same data.
  switch (settings().quick) {
    case QuickChoice::Warp: return QuickVariant::Warp;
    case QuickChoice::Block: return QuickVariant::Block;
    case QuickChoice::Auto: break;
  }
  return k >= kQuickBlockMinK ? QuickVariant::Block : QuickVariant::Warp;
}

const char* quick_variant_name(QuickVariant v) { return v == QuickVariant::Block ? "block" : "warp"; }

int quick_warps(int device_sms, int slots) {
  const int warps = std::max(1, std::min(slots, device_sms * 16));
  return (warps + kWarps - 1) / kWarps * kWarps;
}

int quick_blocks(int device_sms, int slots) { return std::max(1, std::min(slots, device_sms * kBlocksPerSm)); }

int quick_workers(QuickVariant v, int device_sms, int slots) {
  return v == QuickVariant::Block ? quick_blocks(device_sms, slots) : quick_warps(device_sms, slots);
}

QuickVariant launch_quick_select(ListsView lists, Slots s, float* scratch_dist, int* scratch_index, int cap,
                                 int workers, cudaStream_t stream) {
  // The variant is chosen anew at every launch; either runs on any number of
  // workers >= 1, each with its own scratch, so the scratch need not have been
  // sized for the variant that runs.
  const QuickVariant v = quick_variant(lists.k);
  if (v == QuickVariant::Block) {
    quick_block_kernel<<<workers, kBlockThreads, 0, stream>>>(lists, s, scratch_dist, scratch_index, cap);
    launch_check("quick multi-select kernel (a block per row)");
  } else {
    quick_kernel<<<(workers + kWarps - 1) / kWarps, kThreads, 0, stream>>>(lists, s, scratch_dist, scratch_index, cap,
                                                                           workers);
    launch_check("quick multi-select kernel (a warp per row)");
  }
  return v;
}

}  // namespace manifold::gpu::select
