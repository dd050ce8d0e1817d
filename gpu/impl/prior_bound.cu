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

constexpr int kBins = 1024;
constexpr int kLevels = 2;
// Threads of a row's block: 256 up to kWideSample sample columns (six
// blocks an SM), 512 above (two blocks an SM where their distances fit).
constexpr int kNarrowThreads = 256;
constexpr int kWideThreads = 512;
constexpr int kWideSample = 8192;
// Shared memory besides the row's distances: the histogram, the block
// reduction's scratch and the chosen bin.
constexpr size_t kStaticShared = (kBins + kWideThreads / 32 + 4) * sizeof(int);

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

template <int kThreads>
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

// The first bin where the running count of hist reaches `want`, by the
// first warp: each lane sums 32 consecutive bins, a warp scan finds the lane
// whose bins hold it, and that lane walks its own. Writes the bin (-1:
// fewer than `want` in all) to chosen[0] and the count of the bins before
// it to chosen[1].
__device__ __forceinline__ void find_bin(const int* hist, int want, int* chosen) {
  static_assert(kBins == 32 * 32, "a lane sums 32 bins");
  const int lane = threadIdx.x;
  int own = 0;
  for (int b = 0; b < 32; ++b) own += hist[lane * 32 + b];
  int run = own;  // inclusive prefix over the lanes
  for (int off = 1; off < 32; off <<= 1) {
    const int o = __shfl_up_sync(0xffffffffu, run, off);
    if (lane >= off) run += o;
  }
  const unsigned reach = __ballot_sync(0xffffffffu, run >= want);
  if (reach == 0) {
    if (lane == 0) chosen[0] = -1;
    return;
  }
  if (lane == __ffs(reach) - 1) {
    int before = run - own, b = lane * 32;
    for (; before + hist[b] < want; ++b) before += hist[b];
    chosen[0] = b, chosen[1] = before;
  }
}

// One block a row: the row's m sample distances into shared memory (NaN as
// +inf; their least, largest and finite count on the way), then the
// rank-th smallest bracketed by histograms: each level counts the values
// still in play in kBins equal bins between their least and largest and
// keeps the bin holding the rank-th; the bound is the largest value of the
// last bin kept, so at least `rank` sample values lie at or below it. Bins
// are a monotone function of the value, so every value of an earlier bin
// lies below every value of the kept one. m is a multiple of 4 (whole
// float4 loads of the row's dot products).
template <int kThreads>
__global__ __launch_bounds__(kThreads, kThreads == kWideThreads ? 2 : 6) void prior_bound_kernel(PriorBoundArgs a) {
  extern __shared__ float4 vals4[];
  float* vals = reinterpret_cast<float*>(vals4);
  __shared__ int hist[kBins];
  __shared__ float scratch[kThreads / 32];
  __shared__ int chosen[2];
  const int m4 = a.m / 4;
  const float4* norms4 = reinterpret_cast<const float4*>(a.sample_norms);
  for (int i = blockIdx.x; i < a.count; i += gridDim.x) {
    const int64_t g = a.r0 + i;
    const float ni = a.row_norms[g];
    const float4* dots4 = reinterpret_cast<const float4*>(a.dots + static_cast<int64_t>(i) * a.m);
    float lo = INFINITY, hi = -INFINITY;
    int finite = 0;
    auto distance = [&](float dot, float norm) {
      const float v = fmaf(-2.f, dot, ni + norm);
      if (!(v < INFINITY)) return INFINITY;  // NaN and +inf
      lo = fminf(lo, v), hi = fmaxf(hi, v), ++finite;
      return v;
    };
#pragma unroll 4
    for (int j = threadIdx.x; j < m4; j += kThreads) {
      const float4 dot = dots4[j], norm = norms4[j];
      vals4[j] = make_float4(distance(dot.x, norm.x), distance(dot.y, norm.y), distance(dot.z, norm.z),
                             distance(dot.w, norm.w));
    }
    // Values in play: finite, within [lo, hi], and in the bins kept so far
    // (marked by setting the others to -inf below / +inf above).
    int want = a.rank;
    lo = block_reduce<kThreads>(lo, false, scratch);
    hi = block_reduce<kThreads>(hi, true, scratch);
    if (threadIdx.x == 0) chosen[0] = 0;
    __syncthreads();
    atomicAdd(&chosen[0], finite);
    __syncthreads();
    if (chosen[0] < want) lo = INFINITY;  // fewer finite distances than the rank: no bound
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
      if (threadIdx.x < 32) find_bin(hist, want, chosen);
      __syncthreads();
      const int b = chosen[0], before = chosen[1];
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
      lo = block_reduce<kThreads>(nlo, false, scratch);
      hi = block_reduce<kThreads>(nhi, true, scratch);
    }
    if (threadIdx.x == 0 && lo <= hi && hi < INFINITY) a.thr[g] = fminf(a.thr[g], hi);
    __syncthreads();  // vals is rewritten by the next row
  }
}

template <int kThreads>
void launch_prior_bound_with(const PriorBoundArgs& a, cudaStream_t s) {
  const size_t smem = prior_bound_shared_bytes(a.m);
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(prior_bound_kernel<kThreads>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the prior bound kernel's shared memory limit");
  prior_bound_kernel<kThreads><<<std::min(a.count, 65535), kThreads, smem, s>>>(a);
  launch_check("prior bound kernel");
}

}  // namespace

void launch_gather_sample(const float* rows, const float* norms, int64_t n, int64_t d, int m, float* out_rows,
                          float* out_norms, cudaStream_t s) {
  gather_sample_kernel<<<std::min(m, 4096), 128, 0, s>>>(rows, norms, n, d, m, out_rows, out_norms);
  launch_check("prior bound: gathering the sample");
}

size_t prior_bound_shared_bytes(int m) { return static_cast<size_t>(m) * sizeof(float); }

int prior_bound_max_sample(size_t shared_optin) {
  if (shared_optin <= kStaticShared) return 0;
  return static_cast<int>((shared_optin - kStaticShared) / sizeof(float)) / 1024 * 1024;
}

void launch_prior_bound(const PriorBoundArgs& a, cudaStream_t s) {
  if (a.m % 4 != 0) throw Error("the prior bound's sample must be a multiple of 4 columns");
  if (a.m > kWideSample) launch_prior_bound_with<kWideThreads>(a, s);
  else
    launch_prior_bound_with<kNarrowThreads>(a, s);
}

}  // namespace manifold::gpu
