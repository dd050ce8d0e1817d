// Row norms, list initialisation and small utility kernels.
#include <cmath>
#include <climits>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

// One warp per row; float64 partial sums so the norm rounds to float once,
// like the CPU backend's.
__global__ void row_norms_kernel(const float* __restrict__ rows, int64_t n, int64_t d, float* __restrict__ norms) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); r < n; r += warps) {
    const float* x = rows + r * d;
    double s = 0;
    for (int64_t c = lane; c < d; c += 32) {
      const double v = x[c];
      s = __dadd_rn(s, __dmul_rn(v, v));
    }
    for (int off = 16; off > 0; off >>= 1) s = __dadd_rn(s, __shfl_down_sync(kFullMask, s, off));
    if (lane == 0) norms[r] = static_cast<float>(s);
  }
}

__global__ void init_lists_kernel(ListsView l) {
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < l.n;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    l.fill[g] = 0;
    l.thr[g] = INFINITY;
    if (l.pend_fill) l.pend_fill[g] = 0;
  }
}

__global__ void count_short_rows_kernel(ListsView l, int* bad, int* first_bad) {
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < l.n;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Short, or full only thanks to NaN/inf entries (kept as +inf).
    if (l.fill[g] < l.k || !(l.thr[g] < INFINITY)) {
      atomicAdd(bad, 1);
      atomicMin(first_bad, static_cast<int>(g));
    }
  }
}

__global__ void count_short_rows_k_kernel(ListsView l, int k, int* bad, int* first_bad) {
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < l.n;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // Short, or the k-th entry is +inf (NaN or infinite data).
    if (l.fill[g] < k || !(l.dist[g * l.k + k - 1] < INFINITY)) {
      atomicAdd(bad, 1);
      atomicMin(first_bad, static_cast<int>(g));
    }
  }
}

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fill_random_kernel(float* x, int64_t count, uint64_t seed) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(i));
    x[i] = static_cast<float>(static_cast<double>(h >> 40) * (1.0 / 8388608.0) - 1.0);
  }
}

// Exact by the offsets' choice (core: exact_translation): __fsub_rn keeps
// the subtraction from being contracted or reassociated.
__global__ void translate_rows_kernel(float* __restrict__ rows, int64_t count, int64_t d,
                                      const float* __restrict__ offset) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    rows[i] = __fsub_rn(rows[i], offset[i % d]);
}

int grid_for(int64_t items, int per_block) {
  const int64_t g = (items + per_block - 1) / per_block;
  return static_cast<int>(g < 1 ? 1 : (g > 65535 * 4 ? 65535 * 4 : g));
}

}  // namespace

void launch_row_norms(const float* rows, int64_t n, int64_t d, float* norms, cudaStream_t s) {
  if (n == 0) return;
  row_norms_kernel<<<grid_for(n, 8), 256, 0, s>>>(rows, n, d, norms);
  launch_check("row norms kernel");
}

void launch_translate_rows(float* rows, int64_t n, int64_t d, const float* offset, cudaStream_t s) {
  if (n == 0 || d == 0) return;
  translate_rows_kernel<<<grid_for(n * d, 256 * 8), 256, 0, s>>>(rows, n * d, d, offset);
  launch_check("row translation kernel");
}

void launch_init_lists(ListsView lists, cudaStream_t s) {
  init_lists_kernel<<<grid_for(lists.n, 256), 256, 0, s>>>(lists);
  launch_check("list initialisation kernel");
}

void launch_count_short_rows(ListsView lists, int* bad, int* first_bad, cudaStream_t s) {
  count_short_rows_kernel<<<grid_for(lists.n, 256), 256, 0, s>>>(lists, bad, first_bad);
  launch_check("list check kernel");
}

void launch_count_short_rows(ListsView lists, int k, int* bad, int* first_bad, cudaStream_t s) {
  count_short_rows_k_kernel<<<grid_for(lists.n, 256), 256, 0, s>>>(lists, k, bad, first_bad);
  launch_check("list check kernel");
}

void launch_fill_random(float* x, int64_t count, uint64_t seed, cudaStream_t s) {
  fill_random_kernel<<<grid_for(count, 1024), 256, 0, s>>>(x, count, seed);
  launch_check("random fill kernel");
}

}  // namespace manifold::gpu
