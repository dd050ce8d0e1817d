// select=quick, after Komarov, Dashti & D'Souza (2014), GPU-based quick
// multi-select. One warp takes one row at a time: its current list (k
// entries, unordered) and the tile's entries that passed the row's bound, and
// selects the k smallest (distance, index) keys among them.
//
// Each partition pass reads the range 32 entries at a time. A ballot on
// "less than the pivot" (and one on "greater") tells every lane, through
// __popc of the lanes below it, where its entry goes in a 32-wide staging
// array in shared memory: smaller ones from the left, greater ones from the
// right. The warp then writes the staged entries to the auxiliary array with
// two coalesced stores -- smaller ones after those already placed at the
// left end, greater ones before those at the right end -- so the input is
// read once and no prefix sum is needed. The pivot (keys are distinct, so
// exactly one entry equals it) lands between the two parts, which makes
// every pass shrink the range.
//
// The input and auxiliary arrays swap after every pass. Rather than copying
// a settled part (entries known to be among the k smallest) back into the
// array the next pass writes, the warp keeps a stack of references to it --
// which array, which positions -- and gathers all of them into the row's
// list once at the end (the paper's stack of partition references). Settled
// parts are disjoint and, together with the final one, cover positions
// [0, k) exactly, each at its final position.
//
// The pivot is an entry at a pseudo-random position of the range (as in the
// paper, a random pivot), drawn from a hash so that runs are reproducible.
#include <algorithm>
#include <cmath>

#include "select/common.cuh"
#include "select/select_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kStack = 32;  // references held by the warp, one per lane

__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

__global__ __launch_bounds__(kThreads) void quick_kernel(ListsView l, Slots s, float* __restrict__ sd,
                                                         int* __restrict__ si, int cap) {
  __shared__ float stage_d[kWarps][32];
  __shared__ int stage_i[kWarps][32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int gw = blockIdx.x * kWarps + warp;
  const int n_warps = gridDim.x * kWarps;
  // The warp's two arrays (input and auxiliary, swapping roles), chosen by
  // a 0/1 selector rather than an indexed array, which would live in local memory.
  float* const d0 = sd + static_cast<size_t>(gw) * 2 * cap;
  float* const d1 = d0 + cap;
  int* const i0 = si + static_cast<size_t>(gw) * 2 * cap;
  int* const i1 = i0 + cap;
  auto bdist = [&](int a) { return a ? d1 : d0; };
  auto bidx = [&](int a) { return a ? i1 : i0; };
  float* sgd = stage_d[warp];
  int* sgi = stage_i[warp];
  const int k = l.k;
  const int items = *s.n_dirty;
  for (int it = gw; it < items; it += n_warps) {
    const SlotItem x = slot_item(s, it);
    float* ld = l.dist + static_cast<size_t>(x.row) * k;
    int* li = l.index + static_cast<size_t>(x.row) * k;
    const int f = l.fill[x.row];
    const int m = f + x.count;
    if (m <= k) {
      // Nothing to drop yet: append.
      for (int e = lane; e < x.count; e += 32) ld[f + e] = x.dist[e], li[f + e] = x.index[e];
      __syncwarp();
      float mx = -INFINITY;
      if (m == k)
        for (int e = lane; e < k; e += 32) mx = fmaxf(mx, ld[e]);
      mx = warp_max(mx);
      if (lane == 0) {
        l.fill[x.row] = m;
        if (m == k) l.thr[x.row] = mx;
        s.count[x.slot] = 0;
      }
      __syncwarp();
      continue;
    }

    // The input array: the list, then the tile's entries.
    for (int e = lane; e < f; e += 32) d0[e] = ld[e], i0[e] = li[e];
    for (int e = lane; e < x.count; e += 32) d0[f + e] = x.dist[e], i0[f + e] = x.index[e];
    __syncwarp();

    // Lane r holds reference r of the stack: array ref_a, positions [ref_b, ref_e).
    int ref_a = 0, ref_b = 0, ref_e = 0, n_refs = 0;
    float mx = -INFINITY;  // largest distance this lane gathered
    auto gather = [&]() {
      for (int r = 0; r < n_refs; ++r) {
        const int a = __shfl_sync(kFullMask, ref_a, r);
        const int b = __shfl_sync(kFullMask, ref_b, r);
        const int e = __shfl_sync(kFullMask, ref_e, r);
        for (int p = b + lane; p < e; p += 32) {
          const float v = bdist(a)[p];
          ld[p] = v, li[p] = bidx(a)[p];
          mx = fmaxf(mx, v);
        }
      }
      n_refs = 0;
    };
    auto push = [&](int a, int b, int e) {
      if (n_refs == kStack) gather();  // rare: a deep run of settled parts
      if (lane == n_refs) ref_a = a, ref_b = b, ref_e = e;
      ++n_refs;
    };

    // Invariant: positions [0, lo) hold settled entries (by reference), the
    // range [lo, hi) of array `cur` holds ranks lo..hi-1, and lo < k < hi.
    int lo = 0, hi = m, cur = 0;
    for (uint32_t iter = 0;; ++iter) {
      const float* src_d = bdist(cur);
      const int* src_i = bidx(cur);
      float* dst_d = bdist(cur ^ 1);
      int* dst_i = bidx(cur ^ 1);
      const uint32_t size = static_cast<uint32_t>(hi - lo);
      const int pp = lo + static_cast<int>(mix32(static_cast<uint32_t>(x.row) * 0x9e3779b9u + iter * 0x85ebca6bu +
                                                 static_cast<uint32_t>(x.slot)) % size);
      const float pd = src_d[pp];
      const int pi = src_i[pp];
      int nl = 0, ng = 0;
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
      const int split = lo + nl;  // the pivot's rank and place
      if (lane == 0) dst_d[split] = pd, dst_i[split] = pi;
      __syncwarp();
      if (split == k || split + 1 == k) {
        push(cur ^ 1, lo, k);
        break;
      }
      if (split > k) {
        hi = split;  // the k smallest lie among the smaller part
      } else {
        push(cur ^ 1, lo, split + 1);  // the smaller part and the pivot are in
        lo = split + 1;
      }
      cur ^= 1;
    }
    gather();
    mx = warp_max(mx);
    __syncwarp();
    if (lane == 0) {
      l.fill[x.row] = k;
      l.thr[x.row] = mx;
      s.count[x.slot] = 0;
    }
    __syncwarp();
  }
}

}  // namespace

int quick_warps(int device_sms, int slots) {
  const int warps = std::max(1, std::min(slots, device_sms * 16));
  return (warps + kWarps - 1) / kWarps * kWarps;
}

void launch_quick_select(ListsView lists, Slots s, float* scratch_dist, int* scratch_index, int cap, int warps,
                         cudaStream_t stream) {
  quick_kernel<<<warps / kWarps, kThreads, 0, stream>>>(lists, s, scratch_dist, scratch_index, cap);
  launch_check("quick multi-select kernel");
}

}  // namespace manifold::gpu::select
