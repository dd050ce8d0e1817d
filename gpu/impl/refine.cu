// The final exact step, as the CPU backend's refine_graph: each selected
// neighbour's squared distance is recomputed directly (sum of squared
// differences in float64, free of the GEMM's cancellation error), turned into
// the metric's true distance, and each row is re-sorted by (distance, index).
#include <algorithm>
#include <climits>
#include <cmath>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int kThreads = 128;

__global__ __launch_bounds__(kThreads) void refine_kernel(const float* __restrict__ rows, int64_t d, ListsView l,
                                                          int euclidean, int64_t* __restrict__ out_index,
                                                          float* __restrict__ out_dist) {
  extern __shared__ float smem[];
  const int k = l.k;
  const int p = next_pow2(k);
  float* sd = smem;
  int* si = reinterpret_cast<int*>(sd + p);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  for (int64_t g = blockIdx.x; g < l.n; g += gridDim.x) {
    const float* x = rows + g * d;
    const int* li = l.index + g * k;
    for (int j = warp; j < k; j += kThreads / 32) {
      const int nb = li[j];
      const double s = warp_sum_sq_diff(x, rows + static_cast<int64_t>(nb) * d, d, lane);
      if (lane == 0) sd[j] = true_distance(s, euclidean), si[j] = nb;
    }
    for (int j = k + threadIdx.x; j < p; j += kThreads) sd[j] = INFINITY, si[j] = INT_MAX;
    __syncthreads();
    block_bitonic_sort(sd, si, p);
    for (int j = threadIdx.x; j < k; j += kThreads) {
      out_index[g * k + j] = si[j];
      out_dist[g * k + j] = sd[j];
    }
    __syncthreads();
  }
}

}  // namespace

size_t refine_shared_bytes(int k) { return 2 * sizeof(float) * static_cast<size_t>(next_pow2(k)); }

void launch_refine(const float* rows, int64_t d, ListsView lists, bool euclidean, int64_t* out_index,
                   float* out_dist, cudaStream_t s) {
  const size_t smem = refine_shared_bytes(lists.k);
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(refine_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
               "raising the refine kernel's shared memory limit");
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int64_t grid = std::min<int64_t>(lists.n, static_cast<int64_t>(sms > 0 ? sms : 80) * 16);
  refine_kernel<<<static_cast<int>(grid), kThreads, smem, s>>>(rows, d, lists, euclidean ? 1 : 0, out_index, out_dist);
  launch_check("refine kernel");
}

}  // namespace manifold::gpu
