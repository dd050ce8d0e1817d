// select=bitonic, after Sismanis, Pitsianis & Sun (2012): truncated bitonic
// sort (TBiS). A block takes one row at a time: its sorted list and the
// tile's entries that passed the row's bound, cut into chunks of p = k
// rounded up to a power of two (the list is chunk 0; the rest padded with
// +inf). Every step is a data-independent compare-exchange network:
//  1. bitonic sort of every chunk, even chunks ascending, odd descending
//     (the first log p stages of a full bitonic sort do exactly that);
//  2. truncated merges: an ascending and a descending chunk side by side form
//     a bitonic sequence, whose element-wise minimum is the p smallest of the
//     pair, itself bitonic; a bitonic merge sorts it (ascending or descending
//     as the next level needs), and the upper half is dropped. Each level
//     halves the chunks until one -- the new list -- is left.
// Shared memory holds the whole row (list + entries), so k is limited to
// what fits (k <= 8192 with tiles of up to 4096 entries).
#include <algorithm>
#include <climits>
#include <cmath>

#include "select/common.cuh"
#include "select/select_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ void compare_exchange(float* d, int* ix, int a, int b, bool ascending) {
  const float da = d[a], db = d[b];
  const int ia = ix[a], ib = ix[b];
  if (key_less(db, ib, da, ia) == ascending) {
    d[a] = db, ix[a] = ib;
    d[b] = da, ix[b] = ia;
  }
}

/// Entries one row takes in shared memory: p (the list) plus the slot's
/// entries rounded up to whole chunks, chunks rounded up to a power of two.
__host__ __device__ int row_entries(int k, int count) {
  const int p = next_pow2(k);
  return next_pow2(1 + (count + p - 1) / p) * p;
}

__global__ __launch_bounds__(kThreads) void bitonic_kernel(ListsView l, Slots s, int max_entries) {
  extern __shared__ float smem[];
  float* xd = smem;
  int* xi = reinterpret_cast<int*>(smem + max_entries);
  const int k = l.k;
  const int p = next_pow2(k);
  const int items = *s.n_dirty;
  for (int it = blockIdx.x; it < items; it += gridDim.x) {
    const SlotItem x = slot_item(s, it);
    float* ld = l.dist + static_cast<size_t>(x.row) * k;
    int* li = l.index + static_cast<size_t>(x.row) * k;
    const int f = l.fill[x.row];
    const int M = row_entries(k, x.count);
    const int chunks = M / p;
    for (int e = threadIdx.x; e < M; e += kThreads) {
      float d = INFINITY;
      int id = INT_MAX;  // padding sorts after every real entry, +inf ones included
      if (e < p) {
        if (e < f) d = ld[e], id = li[e];
      } else if (e - p < x.count) {
        d = x.dist[e - p], id = x.index[e - p];
      }
      xd[e] = d, xi[e] = id;
    }
    __syncthreads();
    // 1. Chunks of p sorted, alternating directions.
    for (int size = 2; size <= p; size <<= 1)
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int t = threadIdx.x; t < M / 2; t += kThreads) {
          const int lo = 2 * t - (t & (stride - 1));
          compare_exchange(xd, xi, lo, lo + stride, (lo & size) == 0);
        }
        __syncthreads();
      }
    // 2. Truncated merges. At a level, live chunks sit `span` chunks apart;
    // pair q joins chunks 2q*span (ascending) and (2q+1)*span (descending).
    for (int span = 1; span < chunks; span <<= 1) {
      const int pairs = chunks / (2 * span);
      for (int t = threadIdx.x; t < pairs * p; t += kThreads) {
        const int q = t / p, i = t - q * p;
        const int a = q * 2 * span * p + i, b = a + span * p;
        if (key_less(xd[b], xi[b], xd[a], xi[a])) xd[a] = xd[b], xi[a] = xi[b];
      }
      __syncthreads();
      const int half = p >> 1;
      for (int stride = half; stride > 0; stride >>= 1) {
        for (int t = threadIdx.x; t < pairs * half; t += kThreads) {
          const int q = t / half, u = t - q * half;
          const int lo = q * 2 * span * p + 2 * u - (u & (stride - 1));
          // Merged chunk q is chunk q of the next level: even ascending, odd descending.
          compare_exchange(xd, xi, lo, lo + stride, (q & 1) == 0);
        }
        __syncthreads();
      }
    }
    const int nf = min(k, f + x.count);
    for (int e = threadIdx.x; e < nf; e += kThreads) ld[e] = xd[e], li[e] = xi[e];
    if (threadIdx.x == 0) {
      l.fill[x.row] = nf;
      if (nf == k) l.thr[x.row] = xd[k - 1];
      s.count[x.slot] = 0;
    }
    __syncthreads();
  }
}

}  // namespace

size_t bitonic_shared_bytes(int k, int max_entries) {
  return static_cast<size_t>(row_entries(k, max_entries)) * (sizeof(float) + sizeof(int));
}

void launch_bitonic_select(ListsView lists, Slots s, int max_entries, cudaStream_t stream) {
  const size_t smem = bitonic_shared_bytes(lists.k, max_entries);
  int dev = 0, sms = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the device's SM count");
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(bitonic_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the bitonic kernel's shared memory limit");
  const int grid = std::min(s.T + s.W, sms * 8);
  bitonic_kernel<<<grid, kThreads, smem, stream>>>(lists, s, row_entries(lists.k, max_entries));
  launch_check("truncated bitonic sort kernel");
}

}  // namespace manifold::gpu::select
