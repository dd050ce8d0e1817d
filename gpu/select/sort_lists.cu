// Orders each row's list ascending by (distance, index) before the final
// step, which reads the lists in the engine's layout (impl/kernels.h:
// ascending, the last entry the largest). heap keeps a max-heap and quick an
// unordered set in the list arrays during the loop; one block per row sorts
// its `fill` entries in shared memory (block_bitonic_sort, padded with
// (+inf, INT_MAX), which sort after every real entry) and writes them back.
#include <algorithm>
#include <climits>
#include <cmath>

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

}  // namespace

size_t sort_lists_shared_bytes(int capacity) {
  return static_cast<size_t>(pow2_at_least(std::max(capacity, 2))) * (sizeof(float) + sizeof(int));
}

void launch_sort_lists(ListsView lists, cudaStream_t stream) {
  if (lists.n == 0 || lists.k < 2) return;
  const int p = pow2_at_least(lists.k);
  const size_t smem = sort_lists_shared_bytes(lists.k);
  int dev = 0, sms = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the device's SM count");
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
