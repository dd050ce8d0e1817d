#pragma once
// Sorting a list longer than one block's shared memory holds (up to
// 2 x kSharedSortEntries entries; k = 16384 lists hold 18432): the first
// kSharedSortEntries entries are sorted in shared memory and parked in a
// global scratch, the rest sorted in shared memory and kept there, and every
// entry's place in the whole is its place in its own run plus the entries of
// the other run before it (a rank merge, as the engine's list merge). The
// (distance, index) keys of one list are distinct (every pair reaches a list
// once; positions or indices break ties), so the places are a permutation;
// ties would still give one (strict count one way, non-strict the other).
#include <climits>
#include <cmath>

#include "impl/sizes.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

/// Number of entries of the sorted arrays (d, ix)[0, n) not greater than (kd, ki).
__device__ __forceinline__ int count_not_greater_sorted(const float* d, const int* ix, int n, float kd, int ki) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (!key_less(kd, ki, d[mid], ix[mid])) lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// Loads (src_d, src_i)[0, n) into shared (sd, si), pads to the next power of
/// two with (+inf, INT_MAX) -- after every real entry -- and sorts it; by
/// every thread of the block, n <= kSharedSortEntries.
__device__ inline void sort_run_in_shared(const float* src_d, const int* src_i, int n, float* sd, int* si) {
  const int p = next_pow2(max(n, 1));
  for (int e = threadIdx.x; e < p; e += blockDim.x) {
    const bool real = e < n;
    sd[e] = real ? src_d[e] : INFINITY;
    si[e] = real ? src_i[e] : INT_MAX;
  }
  __syncthreads();
  block_bitonic_sort(sd, si, p);
}

/// Sorts (src_d, src_i)[0, n), n <= 2 kSharedSortEntries, and hands the
/// first `take` of the order to emit(rank, distance, index), each rank once
/// (by some thread). sd/si: kSharedSortEntries entries of shared memory;
/// run_d/run_i: a global scratch of kSharedSortEntries entries (it may be
/// src itself: the first run is read before it is written back). emit may
/// write into src once every thread has passed the call's first barrier
/// after the loads, which is before any emit. By every thread of the block.
template <class Emit>
__device__ void sort_two_runs(const float* src_d, const int* src_i, int n, float* run_d, int* run_i, float* sd, int* si,
                              int take, Emit emit) {
  const int na = min(n, kSharedSortEntries), nb = n - na;
  sort_run_in_shared(src_d, src_i, na, sd, si);
  if (nb == 0) {  // one run: emit straight from shared memory
    for (int r = threadIdx.x; r < min(take, na); r += blockDim.x) emit(r, sd[r], si[r]);
    __syncthreads();
    return;
  }
  for (int e = threadIdx.x; e < na; e += blockDim.x) run_d[e] = sd[e], run_i[e] = si[e];
  __syncthreads();
  sort_run_in_shared(src_d + na, src_i + na, nb, sd, si);
  for (int a = threadIdx.x; a < na; a += blockDim.x) {
    const float kd = run_d[a];
    const int ki = run_i[a];
    const int r = a + count_less_sorted(sd, si, nb, kd, ki);
    if (r < take) emit(r, kd, ki);
  }
  for (int b = threadIdx.x; b < nb; b += blockDim.x) {
    if (b >= take) break;  // sorted: its place is at least b
    const float kd = sd[b];
    const int ki = si[b];
    const int r = b + count_not_greater_sorted(run_d, run_i, na, kd, ki);
    if (r < take) emit(r, kd, ki);
  }
  __syncthreads();
}

}  // namespace manifold::gpu
