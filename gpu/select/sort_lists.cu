// Orders each row's list ascending by (distance, index) before the final
// step, which reads the lists in the engine's layout (impl/kernels.h:
// ascending, the last entry the largest). heap keeps a max-heap and quick an
// unordered set in the list arrays during the loop; one block per row sorts
// its `fill` entries in shared memory (block_bitonic_sort, padded with
// (+inf, INT_MAX), which sort after every real entry) and writes them back.
// Lists longer than kSharedSortEntries (k over 14336) are sorted in two runs
// (impl/two_run_sort.cuh), the first parked in a per-block global scratch.
#include <algorithm>
#include <climits>
#include <cmath>

#include "impl/two_run_sort.cuh"
#include "select/common.cuh"
#include "select/select_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

int pow2_at_least(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

__global__ void sort_lists_kernel(ListsView l, int p) {
  extern __shared__ unsigned char smem[];
  float* sd = reinterpret_cast<float*>(smem);
  int* si = reinterpret_cast<int*>(sd + p);
  for (int64_t row = blockIdx.x; row < l.n; row += gridDim.x) {
    const int f = l.fill[row];
    float* ld = l.dist + row * l.k;
    int* li = l.index + row * l.k;
    if (f > 1) {  // uniform per block
      int q = 2;
      while (q < f) q <<= 1;
      for (int e = threadIdx.x; e < q; e += blockDim.x) {
        sd[e] = e < f ? ld[e] : INFINITY;
        si[e] = e < f ? li[e] : INT_MAX;
      }
      __syncthreads();
      block_bitonic_sort(sd, si, q);
      __syncthreads();
      for (int e = threadIdx.x; e < f; e += blockDim.x) ld[e] = sd[e], li[e] = si[e];
    }
    __syncthreads();  // the shared arrays are reused by the next row
  }
}

// sort_lists_kernel for lists of more than kSharedSortEntries entries:
// scratch holds kSharedSortEntries entries (distance, then index) per block.
__global__ void sort_long_lists_kernel(ListsView l, float* scratch) {
  extern __shared__ unsigned char smem[];
  float* sd = reinterpret_cast<float*>(smem);
  int* si = reinterpret_cast<int*>(sd + kSharedSortEntries);
  float* run_d = scratch + static_cast<size_t>(blockIdx.x) * 2 * kSharedSortEntries;
  int* run_i = reinterpret_cast<int*>(run_d + kSharedSortEntries);
  for (int64_t row = blockIdx.x; row < l.n; row += gridDim.x) {
    const int f = l.fill[row];
    float* ld = l.dist + row * l.k;
    int* li = l.index + row * l.k;
    // Every entry is read before the first is written back (two_run_sort.cuh).
    if (f > 1) sort_two_runs(ld, li, f, run_d, run_i, sd, si, f, [&](int r, float d, int i) { ld[r] = d, li[r] = i; });
  }
}

}  // namespace

size_t sort_lists_shared_bytes(int capacity) {
  return static_cast<size_t>(std::min(pow2_at_least(std::max(capacity, 2)), kSharedSortEntries)) *
         (sizeof(float) + sizeof(int));
}

void launch_sort_lists(ListsView lists, cudaStream_t stream) {
  if (lists.n == 0 || lists.k < 2) return;
  const int p = pow2_at_least(lists.k);
  const size_t smem = sort_lists_shared_bytes(lists.k);
  int dev = 0, sms = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the device's SM count");
  if (p > kSharedSortEntries) {
    cuda_check(cudaFuncSetAttribute(sort_long_lists_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the list sort kernel's shared memory limit");
    const int grid = static_cast<int>(std::min<int64_t>(lists.n, sms));
    float* scratch = nullptr;
    const size_t bytes = static_cast<size_t>(grid) * 2 * kSharedSortEntries * sizeof(float);
    cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, stream),
               "allocating the list sort's scratch (long lists)");
    sort_long_lists_kernel<<<grid, 256, smem, stream>>>(lists, scratch);
    launch_check("list sort kernel (long lists)");
    cuda_check(cudaFreeAsync(scratch, stream), "releasing the list sort's scratch");
    return;
  }
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(sort_lists_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the list sort kernel's shared memory limit");
  // Half as many threads as entries (one compare-exchange each per stage), 32 to 256.
  const int threads = std::min(256, std::max(32, p / 2));
  const int grid = static_cast<int>(std::min<int64_t>(lists.n, static_cast<int64_t>(sms) * 16));
  sort_lists_kernel<<<grid, threads, smem, stream>>>(lists, p);
  launch_check("list sort kernel");
}

}  // namespace manifold::gpu::select
