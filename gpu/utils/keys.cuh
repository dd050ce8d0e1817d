#pragma once
// Device helpers shared by the selection and refinement kernels: the
// (distance, index) order of core's TopK (smaller index wins a tie), a
// shared-memory bitonic sort, rank searches, and warp reductions.
#include <cuda_runtime.h>

#include <cstdint>

namespace manifold::gpu {

constexpr unsigned kFullMask = 0xffffffffu;

/// (da, ia) < (db, ib) in the graph's order. NaN never compares less, so a NaN
/// distance never enters a list (filters use <=, which is false for NaN too).
__device__ __forceinline__ bool key_less(float da, int ia, float db, int ib) {
  return da < db || (da == db && ia < ib);
}

/// Number of entries of the sorted arrays (d, ix)[0, n) that are less than
/// (kd, ki): the position (kd, ki) takes when merged into them.
__device__ __forceinline__ int count_less_sorted(const float* d, const int* ix, int n, float kd, int ki) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (key_less(d[mid], ix[mid], kd, ki)) lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// One compare-exchange of a bitonic sort's step (size, stride): pair t.
__device__ __forceinline__ void bitonic_exchange(float* d, int* ix, int t, int size, int stride) {
  const int lo = 2 * t - (t & (stride - 1));
  const int hi = lo + stride;
  const bool ascending = (lo & size) == 0;
  const float a = d[lo], b = d[hi];
  const int ia = ix[lo], ib = ix[hi];
  if (key_less(b, ib, a, ia) == ascending) {
    d[lo] = b, ix[lo] = ib;
    d[hi] = a, ix[hi] = ia;
  }
}

/// Ascending bitonic sort of (d, ix)[0, p) in shared memory, p a power of two,
/// by all threads of the block (every thread must call it).
__device__ inline void block_bitonic_sort(float* d, int* ix, int p) {
  for (int size = 2; size <= p; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < (p >> 1); t += blockDim.x) bitonic_exchange(d, ix, t, size, stride);
      __syncthreads();
    }
  }
}

/// The same by the 32 lanes of one warp on its own arrays, p <= 64 (a pair
/// a lane: written as a loop over pairs, it spilled registers).
__device__ inline void warp_bitonic_sort(float* d, int* ix, int p, int lane) {
  for (int size = 2; size <= p; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      if (lane < (p >> 1)) bitonic_exchange(d, ix, lane, size, stride);
      __syncwarp();
    }
  }
}

__host__ __device__ constexpr int next_pow2(int x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

/// The exact key's float64 sum of squared differences, in a fixed order that
/// host code reproduces exactly (core's exact::exact_sum_sq_diff): lane l sums the terms
/// c = l, l+32, ... in order, then a butterfly tree halves 16, 8, 4, 2, 1.
/// Products and sums are rounded separately (no FMA) for the same reason.
__device__ __forceinline__ double warp_sum_sq_diff(const float* x, const float* y, int64_t d, int lane) {
  double s = 0;
  for (int64_t c = lane; c < d; c += 32) {
    const double t = __dsub_rn(static_cast<double>(x[c]), static_cast<double>(y[c]));
    s = __dadd_rn(s, __dmul_rn(t, t));
  }
  for (int off = 16; off > 0; off >>= 1) s = __dadd_rn(s, __shfl_down_sync(kFullMask, s, off));
  return s;  // valid in lane 0
}

/// The metric's true distance from a float64 squared distance, rounded the way
/// core's to_true_distance does (float first, then sqrt or halving).
__device__ __forceinline__ float true_distance(double d2, int metric_is_euclidean) {
  float f = static_cast<float>(d2);
  if (f < 0.f) f = 0.f;
  return metric_is_euclidean ? sqrtf(f) : 0.5f * f;
}

}  // namespace manifold::gpu
