// select=heap, after Kato & Hosino (2010): every row keeps a bounded
// max-heap of its k best (distance, index) keys, so the k-th best -- the
// bound a newcomer must beat -- is the root, read in O(1). A block takes a
// row's entries of the tile; its threads read them with a stride of the block
// size (coalesced), keep in a small thread-local buffer those that beat the
// heap top, and the buffered entries are then pushed one by one by a single
// thread while the others wait -- the paper's "push elements of buffer
// (blocking other threads)". A round's buffer is at most kBuffer entries per
// thread; after each round the top is read again, so later rounds filter
// against a tighter bound.
//
// The heap lives in the row's list arrays (dist/index at row*k): no extra
// memory; launch_sort_lists orders the rows for the final step.
#include <algorithm>
#include <climits>
#include <cmath>

#include "select/common.cuh"
#include "select/select_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

constexpr int kThreads = 128;
constexpr int kBuffer = 4;  // entries each thread examines (and may buffer) per round

// Max-heap by (distance, index) in hd/hi; `fill` entries.
__device__ void heap_push(float* hd, int* hi, int& fill, int k, float d, int id) {
  if (fill < k) {
    // Not yet full: append and sift up.
    int pos = fill++;
    while (pos > 0) {
      const int parent = (pos - 1) >> 1;
      if (!key_less(hd[parent], hi[parent], d, id)) break;
      hd[pos] = hd[parent], hi[pos] = hi[parent];
      pos = parent;
    }
    hd[pos] = d, hi[pos] = id;
    return;
  }
  if (!key_less(d, id, hd[0], hi[0])) return;  // does not beat the k-th best
  // Replace the root and sift down.
  int pos = 0;
  for (;;) {
    const int l = 2 * pos + 1;
    if (l >= k) break;
    const int r = l + 1;
    const int big = (r < k && key_less(hd[l], hi[l], hd[r], hi[r])) ? r : l;
    if (!key_less(d, id, hd[big], hi[big])) break;
    hd[pos] = hd[big], hi[pos] = hi[big];
    pos = big;
  }
  hd[pos] = d, hi[pos] = id;
}

__global__ __launch_bounds__(kThreads) void heap_kernel(ListsView l, Slots s) {
  __shared__ float bd[kThreads * kBuffer];
  __shared__ int bi[kThreads * kBuffer];
  __shared__ int n_buffered, fill;
  __shared__ float top_d;
  __shared__ int top_i;
  const int k = l.k;
  const int items = *s.n_dirty;
  for (int it = blockIdx.x; it < items; it += gridDim.x) {
    const SlotItem x = slot_item(s, it);
    float* hd = l.dist + static_cast<size_t>(x.row) * k;
    int* hi = l.index + static_cast<size_t>(x.row) * k;
    if (threadIdx.x == 0) {
      n_buffered = 0;
      fill = l.fill[x.row];
      top_d = fill == k ? hd[0] : INFINITY;
      top_i = fill == k ? hi[0] : INT_MAX;
    }
    __syncthreads();
    for (int base = 0; base < x.count; base += kThreads * kBuffer) {
      const bool full = fill == k;
      const float td = top_d;
      const int ti = top_i;
      float d[kBuffer];
      int id[kBuffer];
      bool keep[kBuffer];
      int mine = 0;
#pragma unroll
      for (int q = 0; q < kBuffer; ++q) {
        const int e = base + q * kThreads + threadIdx.x;
        keep[q] = false;
        if (e < x.count) {
          d[q] = x.dist[e];
          id[q] = x.index[e];
          keep[q] = !full || key_less(d[q], id[q], td, ti);
        }
        mine += keep[q];
      }
      if (mine) {
        int at = atomicAdd(&n_buffered, mine);
#pragma unroll
        for (int q = 0; q < kBuffer; ++q)
          if (keep[q]) bd[at] = d[q], bi[at] = id[q], ++at;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        int f = fill;
        for (int b = 0; b < n_buffered; ++b) heap_push(hd, hi, f, k, bd[b], bi[b]);
        fill = f;
        n_buffered = 0;
        if (f == k) top_d = hd[0], top_i = hi[0];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      l.fill[x.row] = fill;
      if (fill == k) l.thr[x.row] = top_d;
      s.count[x.slot] = 0;
    }
    __syncthreads();
  }
}

}  // namespace

void launch_heap_push(ListsView lists, Slots s, cudaStream_t stream) {
  int dev = 0, sms = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the device's SM count");
  // Up to the slots of a tile; idle blocks return at once.
  const int grid = std::min(s.T + s.W, sms * 16);
  heap_kernel<<<grid, kThreads, 0, stream>>>(lists, s);
  launch_check("heap kernel");
}

}  // namespace manifold::gpu::select
