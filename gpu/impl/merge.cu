// Folding candidates into the per-row lists. Every (row, neighbour) pair
// reaches a row exactly once (from the one tile that holds it), so all keys
// (distance, index) of a row are distinct and a merge is a rank computation:
// an entry's place in the merged list is its place in its own sorted run
// plus the number of entries of the other run before it. Two paths:
//  - warp path (small lists, few candidates): one warp per row, candidates
//    ranked by counting, lists searched by bisection;
//  - block path (any k up to kMaxK): one block per row; the candidates that
//    can still rank are sorted in shared memory (bitonic) and merged with a
//    shared-memory copy of the list, keeping the lower k -- the truncated
//    merge of sorted chunks (Li & Amenta), which is what reaches k in the
//    thousands.
// With pending room (block path, ListsView::pend_cap), a row's candidates
// wait unsorted beside its list, appended by a warp, until they would
// overflow the room (then the block merge takes them with the tile's) or
// the row is final (launch_flush_pending): most tiles bring a row a few
// candidates, and a merge copies and rewrites its whole list.
#include <algorithm>
#include <climits>
#include <cmath>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int kThreads = kMergeThreads;
constexpr int kWarps = kThreads / 32;
// Threads of a block-path launch (no warp path): a block holds a whole row's
// list, so shared memory allows only a few blocks a multiprocessor, and the
// merge waits on shared-memory and barrier latency; twice the warps of a
// warp-path block keep more of it in flight (bench/gpu/RESULTS.md).
constexpr int kBlockThreads = 2 * kMergeThreads;
constexpr int kWarpSmemFloats = kMergeWarpSmemFloats;
static_assert(2 * (kWarpMergeMaxK + kWarpMergeMaxC) <= kWarpSmemFloats, "warp merge buffers");
static_assert(256 + 2 * kWarpMergeMaxK <= kWarpSmemFloats, "seed selection buffers");

struct Item {
  int row = 0;  // global row whose list receives the candidates
  const float* dist = nullptr;
  const int* index = nullptr;
  int count = 0;
  int slot = -1;
};

// Candidates of one tile, listed by the filter kernel in `dirty`.
struct TileSource {
  static constexpr bool kAppends = true;
  CandidatesView c;
  int counter, reset_counter, r0, c0;
  __device__ int items() const { return c.n_dirty[counter]; }
  __device__ Item item(int it) const {
    Item x;
    x.slot = c.dirty[it];
    size_t base;
    if (x.slot < c.T) {
      x.row = r0 + x.slot;
      base = static_cast<size_t>(x.slot) * c.W;
    } else {
      x.row = c0 + (x.slot - c.T);
      base = static_cast<size_t>(c.T) * c.W + static_cast<size_t>(x.slot - c.T) * c.T;
    }
    x.dist = c.dist + base;
    x.index = c.index + base;
    x.count = c.count[x.slot];
    return x;
  }
  __device__ bool wanted(const ListsView&, const Item& x) const { return x.count > 0; }
  __device__ void done(const Item& x) const { c.count[x.slot] = 0; }
  __device__ void finish() const { c.n_dirty[reset_counter] = 0; }
};

// Dense seed tiles of consecutive blocks: batch row i holds the other rows
// of its block (T rows, the last block shorter) at i * stride.
struct SeedSource {
  static constexpr bool kAppends = false;
  const float* dist;
  const int* index;
  int* n_dirty;
  int reset_counter, stride, r0, rows, T;
  bool keep_self;
  __device__ int items() const { return rows; }
  __device__ Item item(int it) const {
    Item x;
    x.row = r0 + it;
    x.dist = dist + static_cast<size_t>(it) * stride;
    x.index = index + static_cast<size_t>(it) * stride;
    const int z = it / T;
    x.count = min(T, rows - z * T) - (keep_self ? 0 : 1);
    return x;
  }
  __device__ bool wanted(const ListsView&, const Item& x) const { return x.count > 0; }
  __device__ void done(const Item&) const {}
  __device__ void finish() const { n_dirty[reset_counter] = 0; }
};

// A chunk [from, from+len) of another device's lists, row by row.
struct ListSource {
  static constexpr bool kAppends = false;
  const float* dist;
  const int* index;
  const int* fill;
  int k;
  int64_t n;
  int from, len;
  __device__ int items() const { return static_cast<int>(n); }
  __device__ Item item(int it) const {
    Item x;
    x.row = it;
    x.dist = dist + static_cast<size_t>(it) * k + from;
    x.index = index + static_cast<size_t>(it) * k + from;
    x.count = max(0, min(len, fill[it] - from));
    return x;
  }
  __device__ bool wanted(const ListsView&, const Item& x) const { return x.count > 0; }
  __device__ void done(const Item&) const {}
  __device__ void finish() const {}
};

// Rows [r0, r0 + rows) with pending entries: no new candidates, the merge
// takes the pending ones.
struct PendingSource {
  static constexpr bool kAppends = false;
  int64_t r0;
  int rows;
  __device__ int items() const { return rows; }
  __device__ Item item(int it) const {
    Item x;
    x.row = static_cast<int>(r0 + it);
    return x;
  }
  __device__ bool wanted(const ListsView& l, const Item& x) const { return l.pend_fill[x.row] > 0; }
  __device__ void done(const Item&) const {}
  __device__ void finish() const {}
};

// A row's bound only ever tightens: a device that seeded a row it does not
// own keeps that seed's bound while its own list is still short.
__device__ __forceinline__ void publish(const ListsView& l, int row, int nf, const float* od) {
  l.fill[row] = nf;
  if (nf == l.k) l.thr[row] = fminf(l.thr[row], od[l.k - 1]);
}

template <class Source>
__device__ void warp_merge(const ListsView& l, const Source& src, const Item& x, float* smem, int lane) {
  float* od = smem;
  int* oi = reinterpret_cast<int*>(od + kWarpMergeMaxK);
  float* cd = reinterpret_cast<float*>(oi + kWarpMergeMaxK);
  int* ci = reinterpret_cast<int*>(cd + kWarpMergeMaxC);
  const int k = l.k;
  float* ld = l.dist + static_cast<size_t>(x.row) * k;
  int* li = l.index + static_cast<size_t>(x.row) * k;
  const int f = l.fill[x.row];
  for (int b = lane; b < x.count; b += 32) cd[b] = x.dist[b], ci[b] = x.index[b];
  __syncwarp();
  for (int a = lane; a < f; a += 32) {
    const float kd = ld[a];
    const int ki = li[a];
    int r = a;
    for (int t = 0; t < x.count; ++t) r += key_less(cd[t], ci[t], kd, ki);
    if (r < k) od[r] = kd, oi[r] = ki;
  }
  for (int b = lane; b < x.count; b += 32) {
    const float kd = cd[b];
    const int ki = ci[b];
    int r = count_less_sorted(ld, li, f, kd, ki);
    for (int t = 0; t < x.count; ++t) r += key_less(cd[t], ci[t], kd, ki);
    if (r < k) od[r] = kd, oi[r] = ki;
  }
  __syncwarp();
  const int nf = min(k, f + x.count);
  for (int a = lane; a < nf; a += 32) ld[a] = od[a], li[a] = oi[a];
  if (lane == 0) {
    publish(l, x.row, nf, od);
    src.done(x);
  }
  __syncwarp();
}

// Order-preserving unsigned image of a distance (NaN never reaches here:
// the seed writes it as +inf); -0 is taken as +0, as the list order does.
__device__ __forceinline__ unsigned radix_key(float x) {
  const unsigned u = __float_as_uint(x == 0.f ? 0.f : x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// A seed row (its list still empty, every other point of its diagonal tile
// a candidate, written in index order): one warp finds the k-th smallest
// key by a radix select (four 8-bit passes over the candidates, a 256-bin
// histogram in shared memory), takes the entries below it and, of those
// equal to it, the first in index order, and writes them ranked. This
// replaces sorting the whole tile row (Li & Amenta's merge would sort
// thousands of candidates to keep k).
template <class Source>
__device__ void warp_seed(const ListsView& l, const Source& src, const Item& x, float* smem, int lane) {
  unsigned* hist = reinterpret_cast<unsigned*>(smem);
  float* sd = smem + 256;
  int* si = reinterpret_cast<int*>(sd + kWarpMergeMaxK);
  const int k = l.k, m = x.count;
  int nsel = 0;
  if (m <= k) {
    for (int b = lane; b < m; b += 32) sd[b] = x.dist[b], si[b] = x.index[b];
    nsel = m;
  } else {
    unsigned prefix = 0, mask = 0;
    int want = k;  // rank (from 1) of the k-th smallest among the keys matching prefix
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int b = lane; b < 256; b += 32) hist[b] = 0;
      __syncwarp();
      for (int b = lane; b < m; b += 32) {
        const unsigned u = radix_key(x.dist[b]);
        if ((u & mask) == prefix) atomicAdd(&hist[(u >> shift) & 255u], 1u);
      }
      __syncwarp();
      unsigned c[8], sum = 0;
#pragma unroll
      for (int e = 0; e < 8; ++e) c[e] = hist[lane * 8 + e], sum += c[e];
      unsigned incl = sum;
      for (int off = 1; off < 32; off <<= 1) {
        const unsigned o = __shfl_up_sync(kFullMask, incl, off);
        if (lane >= off) incl += o;
      }
      const unsigned excl = incl - sum;
      const unsigned hit = __ballot_sync(kFullMask,
                                         excl < static_cast<unsigned>(want) && static_cast<unsigned>(want) <= incl);
      const int owner = __ffs(hit) - 1;
      int digit = 0, before = 0;
      if (lane == owner) {
        unsigned run = excl;
        for (int e = 0; e < 8; ++e) {
          if (run + c[e] >= static_cast<unsigned>(want)) {
            digit = lane * 8 + e;
            break;
          }
          run += c[e];
        }
        before = static_cast<int>(run);
      }
      digit = __shfl_sync(kFullMask, digit, owner);
      before = __shfl_sync(kFullMask, before, owner);
      want -= before;
      prefix |= static_cast<unsigned>(digit) << shift;
      mask |= 255u << shift;
      __syncwarp();
    }
    // prefix is the k-th smallest key; `want` entries equal to it belong in
    // (the first ones, which are the smallest indices), all smaller ones do.
    int taken_eq = 0;
    for (int b0 = 0; b0 < m; b0 += 32) {
      const int b = b0 + lane;
      const unsigned u = b < m ? radix_key(x.dist[b]) : 0xffffffffu;
      const bool less = b < m && u < prefix;
      const bool eq = b < m && u == prefix;
      const unsigned below = (1u << lane) - 1u;
      const unsigned eqm = __ballot_sync(kFullMask, eq);
      const bool take = less || (eq && taken_eq + __popc(eqm & below) < want);
      const unsigned tm = __ballot_sync(kFullMask, take);
      if (take) {
        const int at = nsel + __popc(tm & below);
        sd[at] = x.dist[b], si[at] = x.index[b];
      }
      nsel += __popc(tm);
      taken_eq += __popc(eqm);
    }
  }
  __syncwarp();
  float* ld = l.dist + static_cast<size_t>(x.row) * k;
  int* li = l.index + static_cast<size_t>(x.row) * k;
  for (int a = lane; a < nsel; a += 32) {
    const float kd = sd[a];
    const int ki = si[a];
    int r = 0;
    for (int t = 0; t < nsel; ++t) r += key_less(sd[t], si[t], kd, ki);
    ld[r] = kd, li[r] = ki;
  }
  __syncwarp();
  if (lane == 0) {
    publish(l, x.row, nsel, ld);
    src.done(x);
  }
  __syncwarp();
}

// Entries a thread keeps in flight in the block merge's list passes: the
// passes wait on memory latency (a global load, a chain of shared-memory
// bisection steps), so each thread takes kInFlight entries at once.
constexpr int kInFlight = 4;

// The row's list (f entries) into shared memory, kInFlight loads a thread
// issued before their stores.
__device__ __forceinline__ void copy_list(const float* ld, const int* li, int f, float* sd, int* si) {
  for (int a0 = threadIdx.x; a0 < f; a0 += kInFlight * blockDim.x) {
    float d[kInFlight];
    int ix[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int a = a0 + u * blockDim.x;
      if (a < f) d[u] = ld[a], ix[u] = li[a];
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int a = a0 + u * blockDim.x;
      if (a < f) sd[a] = d[u], si[a] = ix[u];
    }
  }
}

// Each list entry (sd, si)[a] moves down by the number of candidates ahead
// of it: its rank among (cd, ci)[0, p), p a power of two whose padding
// (+inf, INT_MAX) sorts after every entry, found by a branch-free bisection
// (the largest pos with cd[pos - 1] ahead, then one more step), kInFlight
// entries a thread side by side. Entries with no candidate ahead stay where
// they are; those pushed to rank k or later drop out.
__device__ __forceinline__ void move_list_entries(const float* sd, const int* si, int f, const float* cd, const int* ci,
                                                  int p, float* ld, int* li, int k) {
  for (int a0 = threadIdx.x; a0 < f; a0 += kInFlight * blockDim.x) {
    float ed[kInFlight];
    int ei[kInFlight], pos[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int a = min(a0 + u * blockDim.x, f - 1);  // past the fill: a copy of the last, not written
      ed[u] = sd[a], ei[u] = si[a], pos[u] = 0;
    }
    for (int step = p >> 1; step > 0; step >>= 1) {
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        if (key_less(cd[pos[u] + step - 1], ci[pos[u] + step - 1], ed[u], ei[u])) pos[u] += step;
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int a = a0 + u * blockDim.x;
      const int before = pos[u] + key_less(cd[pos[u]], ci[pos[u]], ed[u], ei[u]);
      if (a < f && before > 0 && a + before < k) ld[a + before] = ed[u], li[a + before] = ei[u];
    }
  }
}

// A candidate that can still rank in its row: within the row's bound (the
// filter's test, which seed entries and entries filtered before the bound
// tightened have not met) and, for a full list, ahead of its last entry.
__device__ __forceinline__ bool may_rank(float cdist, int cindex, float bound, bool full, float last_d, int last_i) {
  return cdist <= bound && (!full || key_less(cdist, cindex, last_d, last_i));
}

// Candidates are taken kMergeChunk at a time. For each chunk the row's list
// is copied into shared memory, and of the chunk only the candidates that
// rank below a full list's last entry are kept (the others would land at
// rank k or later; the bound they passed may have tightened since the tile
// was filtered) and sorted there. Every rank is then a bisection in shared
// memory -- a list entry's among the sorted candidates, a candidate's in the
// list copy -- and each entry is written once, straight to its place in the
// row's list in global memory: list entries ahead of every candidate stay
// where they are. Shared memory holds k + chunk entries whatever a slot's
// capacity.
template <class Source>
__device__ void block_merge(const ListsView& l, const Source& src, const Item& x, float* smem, int chunk) {
  __shared__ int kept;
  const int k = l.k;
  float* sd = smem;  // the list as it was before this chunk
  int* si = reinterpret_cast<int*>(sd + k);
  float* cd = reinterpret_cast<float*>(si + k);  // the chunk's candidates that may rank, sorted
  int* ci = reinterpret_cast<int*>(cd + chunk);
  float* ld = l.dist + static_cast<size_t>(x.row) * k;
  int* li = l.index + static_cast<size_t>(x.row) * k;
  int f = l.fill[x.row];
  // The row's pending entries come first, then the source's candidates.
  const int pc = l.pend_cap > 0 ? l.pend_fill[x.row] : 0;
  const float* pd = pc ? l.pend_dist + static_cast<size_t>(x.row) * l.pend_cap : nullptr;
  const int* pi = pc ? l.pend_index + static_cast<size_t>(x.row) * l.pend_cap : nullptr;
  const int total = pc + x.count;
  for (int from = 0; from < total; from += chunk) {
    const int len = min(chunk, total - from);
    if (threadIdx.x == 0) kept = 0;
    copy_list(ld, li, f, sd, si);
    __syncthreads();
    const bool full = f == k;
    // The row's bound (a prior bound keeps it below +inf before the list is
    // full): seed entries, written without it, and entries filtered before
    // it tightened are dropped above it, as the filter would have.
    const float bound = l.thr[x.row];
    const float last_d = full ? sd[k - 1] : INFINITY;
    const int last_i = full ? si[k - 1] : INT_MAX;
    // Kept candidates are appended a warp at a time, in any order: the sort
    // below orders them (blockDim.x is a multiple of 32, so whole warps loop).
    const int lane = threadIdx.x & 31;
    for (int b0 = 0; b0 < len; b0 += blockDim.x) {
      const int b = b0 + threadIdx.x;
      float cdist = INFINITY;
      int cindex = INT_MAX;
      bool keep = false;
      if (b < len) {
        const int e = from + b;
        if (e < pc) cdist = pd[e], cindex = pi[e];
        else
          cdist = x.dist[e - pc], cindex = x.index[e - pc];
        keep = may_rank(cdist, cindex, bound, full, last_d, last_i);
      }
      const unsigned mask = __ballot_sync(kFullMask, keep);
      int base = 0;
      if (lane == 0 && mask) base = atomicAdd(&kept, __popc(mask));
      base = __shfl_sync(kFullMask, base, 0);
      if (keep) {
        const int at = base + __popc(mask & ((1u << lane) - 1u));
        cd[at] = cdist, ci[at] = cindex;
      }
    }
    __syncthreads();
    const int m = kept;
    const int p = next_pow2(m);
    for (int b = m + threadIdx.x; b < p; b += blockDim.x) cd[b] = INFINITY, ci[b] = INT_MAX;
    __syncthreads();  // every thread has read `kept` before the next chunk resets it
    if (m == 0) continue;
    block_bitonic_sort(cd, ci, p);
    move_list_entries(sd, si, f, cd, ci, p, ld, li, k);
    for (int b = threadIdx.x; b < m; b += blockDim.x) {
      if (b >= k) break;  // sorted: position b + (list entries before it) >= k
      const float ed = cd[b];
      const int ei = ci[b];
      const int r = b + count_less_sorted(sd, si, f, ed, ei);
      if (r < k) ld[r] = ed, li[r] = ei;
    }
    f = min(k, f + m);
    __syncthreads();  // the block's writes to the list are seen by the next chunk's copy and by publish
  }
  if (threadIdx.x == 0) {
    if (pc) l.pend_fill[x.row] = 0;
    publish(l, x.row, f, ld);
    src.done(x);
  }
  __syncthreads();
}

// A row whose pending room takes all of a tile's candidates appends those
// that can still rank (within its bound and, for a full list, below its
// last entry, as the merge would keep them), one warp; false (nothing
// done) where they would overflow the room. The list, and so the filter
// each later candidate met, is the same as when the earlier pending entries
// were appended: they all still rank.
template <class Source>
__device__ bool append_to_pending(const ListsView& l, const Source& src, const Item& x, int lane) {
  const int have = l.pend_fill[x.row];
  if (have + x.count > l.pend_cap) return false;
  // A list short of k (a prior bound holds most rows there for much of the
  // loop) keeps every candidate within its bound.
  const bool full = l.fill[x.row] == l.k;
  const size_t last = static_cast<size_t>(x.row) * l.k + l.k - 1;
  const float last_d = full ? l.dist[last] : INFINITY, bound = l.thr[x.row];
  const int last_i = full ? l.index[last] : INT_MAX;
  float* pd = l.pend_dist + static_cast<size_t>(x.row) * l.pend_cap;
  int* pi = l.pend_index + static_cast<size_t>(x.row) * l.pend_cap;
  int at = have;
  for (int b0 = 0; b0 < x.count; b0 += 32) {
    const int b = b0 + lane;
    float cdist = INFINITY;
    int cindex = INT_MAX;
    bool keep = false;
    if (b < x.count) {
      cdist = x.dist[b], cindex = x.index[b];
      keep = may_rank(cdist, cindex, bound, full, last_d, last_i);
    }
    const unsigned mask = __ballot_sync(kFullMask, keep);
    if (keep) {
      const int o = at + __popc(mask & ((1u << lane) - 1u));
      pd[o] = cdist, pi[o] = cindex;
    }
    at += __popc(mask);
  }
  if (lane == 0) {
    l.pend_fill[x.row] = at;
    src.done(x);
  }
  __syncwarp();
  return true;
}

// The block path with pending room: a block takes its items a round at a
// time; its warps append each item's candidates where they fit the row's
// room and queue the others, which the whole block then merges.
template <class Source>
__device__ void append_or_merge(const ListsView& l, const Source& src, int n_items, float* smem, int chunk) {
  // Items a round: four a warp of a block-path block (eight warps), so
  // most warps have an append in flight while the block's merges wait for
  // the round's queue (not tuned: bench/gpu/RESULTS.md tried rooms only).
  constexpr int kRound = 32;
  __shared__ int queued[kRound];
  __shared__ int n_queued;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int first = blockIdx.x; first < n_items; first += kRound * gridDim.x) {
    if (threadIdx.x == 0) n_queued = 0;
    __syncthreads();
    for (int j = warp; j < kRound; j += warps) {
      const int it = first + j * gridDim.x;
      if (it >= n_items) break;
      const Item x = src.item(it);
      if (!src.wanted(l, x) || append_to_pending(l, src, x, lane)) continue;
      if (lane == 0) queued[atomicAdd(&n_queued, 1)] = it;
    }
    __syncthreads();
    for (int q = 0; q < n_queued; ++q) block_merge(l, src, src.item(queued[q]), smem, chunk);
    __syncthreads();  // every thread has read n_queued before the next round resets it
  }
}

template <class Source>
// chunk: candidates sorted at a time, a power of two; shared memory holds k + chunk entries.
// blockDim.x: kThreads where the warp path runs (its items are strided by
// kWarps), kBlockThreads otherwise.
__global__ __launch_bounds__(kBlockThreads) void merge_kernel(ListsView l, Source src, bool force_block, int chunk,
                                                              bool seed) {
  extern __shared__ float smem[];
  const int n_items = src.items();
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const bool warp_path = !force_block && l.k <= kWarpMergeMaxK;
  if (warp_path && seed) {
    // A seed tile: every list is empty, every item a whole tile row.
    for (int it = blockIdx.x * kWarps + warp; it < n_items; it += gridDim.x * kWarps) {
      const Item x = src.item(it);
      if (x.count > 0) warp_seed(l, src, x, smem + warp * kWarpSmemFloats, lane);
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) src.finish();
    return;
  }
  if (warp_path) {
    for (int it = blockIdx.x * kWarps + warp; it < n_items; it += gridDim.x * kWarps) {
      const Item x = src.item(it);
      if (x.count == 0 || x.count > kWarpMergeMaxC) continue;
      warp_merge(l, src, x, smem + warp * kWarpSmemFloats, lane);
    }
    __syncthreads();
  }
  if constexpr (Source::kAppends) {
    if (l.pend_cap > 0 && !seed) {
      append_or_merge(l, src, n_items, smem, chunk);
      if (blockIdx.x == 0 && threadIdx.x == 0) src.finish();
      return;
    }
  }
  for (int it = blockIdx.x; it < n_items; it += gridDim.x) {
    const Item x = src.item(it);
    // A count read as 0 here was merged by a warp above (or had nothing).
    if (!src.wanted(l, x) || (warp_path && x.count <= kWarpMergeMaxC)) continue;
    block_merge(l, src, x, smem, chunk);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) src.finish();
}

// Blocks of a merge launch: 4 a multiprocessor. A tile's merge runs beside
// the next tiles' kernels and gets a multiprocessor only where a kernel
// block has finished; half as many merge blocks (each taking more rows)
// hold fewer of those places, and the builds measured faster than with 8
// (bench/gpu/RESULTS.md).
int merge_grid() {
  static int grid = [] {
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    constexpr int kBlocksPerSm = 4;
    return (sms > 0 ? sms : 80) * kBlocksPerSm;
  }();
  return grid;
}

template <class Source>
void launch_merge(ListsView l, Source src, bool force_block, int max_candidates, cudaStream_t s, bool seed = false) {
  const size_t smem = merge_shared_bytes(l.k, max_candidates);
  const int chunk = next_pow2(std::min(std::max(max_candidates, 1), kMergeChunk));
  static thread_local int configured_device = -1;
  static thread_local size_t configured_bytes = 0;
  int dev = 0;
  cudaGetDevice(&dev);
  if (smem > 48 * 1024 && (dev != configured_device || smem > configured_bytes)) {
    cuda_check(cudaFuncSetAttribute(merge_kernel<Source>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the merge kernel's shared memory limit");
    configured_device = dev;
    configured_bytes = smem;
  }
  const int threads = !force_block && l.k <= kWarpMergeMaxK ? kThreads : kBlockThreads;
  merge_kernel<Source><<<merge_grid(), threads, smem, s>>>(l, src, force_block, chunk, seed);
  launch_check("merge kernel");
}

}  // namespace

void launch_merge_tile(ListsView lists, CandidatesView c, int counter, int reset_counter, int r0, int c0,
                       bool force_block, int max_candidates, cudaStream_t s, bool seed) {
  launch_merge(lists, TileSource{c, counter, reset_counter, r0, c0}, force_block, max_candidates, s, seed);
}

void launch_flush_pending(ListsView lists, int64_t r0, int64_t r1, cudaStream_t s) {
  if (lists.pend_cap == 0 || r1 <= r0) return;
  launch_merge(lists, PendingSource{r0, static_cast<int>(r1 - r0)}, true, lists.pend_cap, s);
}

void launch_merge_seeds(ListsView lists, CandidatesView c, int reset_counter, int r0, int rows, int T, bool keep_self,
                        bool force_block, cudaStream_t s) {
  launch_merge(lists, SeedSource{c.dist, c.index, c.n_dirty, reset_counter, c.W, r0, rows, T, keep_self}, force_block,
               T, s, true);
}

void launch_merge_lists(ListsView lists, const float* other_dist, const int* other_index, const int* other_fill,
                        int from, int len, cudaStream_t s) {
  launch_merge(lists, ListSource{other_dist, other_index, other_fill, lists.k, lists.n, from, len}, false, len, s);
}

}  // namespace manifold::gpu
