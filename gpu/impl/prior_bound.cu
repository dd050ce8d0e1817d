// The prior bound of large-k lists (device_engine.h): each row's distance to
// a fixed sample of columns, and the rank-r one of those as the row's bound
// before the tile loop. The bound only decides which candidates the filter
// passes; the certificate takes the final bound as the lower bound of every
// point a list lacks (certify.cu), so no choice of sample or rank changes
// the result -- a bound too tight leaves a short list, which the rescan or
// the exact scan ranks.
#include <cmath>

#include "impl/kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kBins = 1024;
constexpr int kLevels = 2;

// Sample column j of m: rows spread evenly over [0, n), whatever their
// order in the file.
__device__ __forceinline__ int64_t prior_sample_row(int j, int m, int64_t n) {
  return (static_cast<int64_t>(2 * j + 1) * n) / (2 * static_cast<int64_t>(m));
}

__global__ void gather_sample_kernel(const float* rows, const float* norms, int64_t n, int64_t d, int m,
                                     float* out_rows, float* out_norms) {
  for (int j = blockIdx.x; j < m; j += gridDim.x) {
    const int64_t src = prior_sample_row(j, m, n);
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) out_rows[j * d + c] = rows[src * d + c];
    if (threadIdx.x == 0) out_norms[j] = norms[src];
  }
}

__device__ __forceinline__ float block_reduce(float v, bool take_max, float* scratch) {
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = take_max ? fmaxf(v, o) : fminf(v, o);
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();  // scratch is free
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) v = take_max ? fmaxf(v, scratch[w]) : fminf(v, scratch[w]);
  return v;
}

// One block a row: the row's m sample distances into shared memory (NaN as
// +inf), then the rank-th smallest bracketed by histograms: each level
// counts the values still in play in kBins equal bins between their least
// and largest and keeps the bin holding the rank-th; the bound is the
// largest value of the last bin kept, so at least `rank` sample values lie
// at or below it. Bins are a monotone function of the value, so every value
// of an earlier bin lies below every value of the kept one.
__global__ __launch_bounds__(kThreads) void prior_bound_kernel(PriorBoundArgs a) {
  extern __shared__ float vals[];
  __shared__ int hist[kBins];
  __shared__ float scratch[kThreads / 32];
  __shared__ int chosen;
  for (int i = blockIdx.x; i < a.count; i += gridDim.x) {
    const int64_t g = a.r0 + i;
    const float ni = a.row_norms[g];
    const float* dots = a.dots + static_cast<int64_t>(i) * a.m;
    for (int j = threadIdx.x; j < a.m; j += kThreads) {
      const float v = fmaf(-2.f, dots[j], ni + a.sample_norms[j]);
      vals[j] = v == v ? v : INFINITY;
    }
    __syncthreads();
    // Values in play: finite, within [lo, hi], and in the bins kept so far
    // (marked by setting the others to -inf below / +inf above).
    int want = a.rank;
    float lo = INFINITY, hi = -INFINITY;
    for (int j = threadIdx.x; j < a.m; j += kThreads)
      if (vals[j] < INFINITY) lo = fminf(lo, vals[j]), hi = fmaxf(hi, vals[j]);
    lo = block_reduce(lo, false, scratch);
    hi = block_reduce(hi, true, scratch);
    if (threadIdx.x == 0) chosen = 0;
    __syncthreads();
    int mine = 0;
    for (int j = threadIdx.x; j < a.m; j += kThreads) mine += vals[j] < INFINITY;
    atomicAdd(&chosen, mine);
    __syncthreads();
    if (chosen < want) lo = INFINITY;  // fewer finite distances than the rank: no bound
    __syncthreads();
    for (int level = 0; level < kLevels && lo < hi; ++level) {
      for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
      __syncthreads();
      const float scale = kBins / (hi - lo);
      for (int j = threadIdx.x; j < a.m; j += kThreads) {
        const float v = vals[j];
        if (v >= lo && v <= hi) {
          const int b = min(kBins - 1, max(0, static_cast<int>((v - lo) * scale)));
          atomicAdd(&hist[b], 1);
        }
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        int run = 0, b = 0;
        for (; b < kBins; ++b) {
          if (run + hist[b] >= want) break;
          run += hist[b];
        }
        chosen = b < kBins ? b : -1;
        hist[0] = run;  // values of the earlier bins
      }
      __syncthreads();
      const int b = chosen, before = hist[0];
      __syncthreads();
      if (b < 0) {
        lo = INFINITY;  // fewer than `want` values in play: no bound
        break;
      }
      want -= before;
      // The values of the kept bin: the rest leave play (earlier bins below
      // it as -inf, later ones as +inf).
      float nlo = INFINITY, nhi = -INFINITY;
      for (int j = threadIdx.x; j < a.m; j += kThreads) {
        const float v = vals[j];
        if (!(v >= lo && v <= hi)) continue;
        const int vb = min(kBins - 1, max(0, static_cast<int>((v - lo) * scale)));
        if (vb < b) vals[j] = -INFINITY;
        else if (vb > b)
          vals[j] = INFINITY;
        else
          nlo = fminf(nlo, v), nhi = fmaxf(nhi, v);
      }
      lo = block_reduce(nlo, false, scratch);
      hi = block_reduce(nhi, true, scratch);
    }
    if (threadIdx.x == 0 && lo <= hi && hi < INFINITY) a.thr[g] = fminf(a.thr[g], hi);
    __syncthreads();  // vals is rewritten by the next row
  }
}

}  // namespace

void launch_gather_sample(const float* rows, const float* norms, int64_t n, int64_t d, int m, float* out_rows,
                          float* out_norms, cudaStream_t s) {
  gather_sample_kernel<<<std::min(m, 4096), 128, 0, s>>>(rows, norms, n, d, m, out_rows, out_norms);
  launch_check("prior bound: gathering the sample");
}

size_t prior_bound_shared_bytes(int m) { return static_cast<size_t>(m) * sizeof(float); }

void launch_prior_bound(const PriorBoundArgs& a, cudaStream_t s) {
  const size_t smem = prior_bound_shared_bytes(a.m);
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(prior_bound_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the prior bound kernel's shared memory limit");
  prior_bound_kernel<<<std::min(a.count, 65535), kThreads, smem, s>>>(a);
  launch_check("prior bound kernel");
}

}  // namespace manifold::gpu
