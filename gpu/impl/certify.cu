// The GPU's certification, by the rules and names of core's
// manifold/exact/certify.h: certify each row's candidate list with the error
// bound of manifold/exact/error_bound.h, re-evaluate exactly what the bound
// cannot rule out, and rank by the exact key. Rows the bound cannot certify
// (their list might miss a neighbour) are left to the fallback scan, whose
// keys the second kernel computes.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "impl/kernels.h"
#include "impl/two_run_sort.cuh"
#include "settings.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int kThreads = 256;

// One row's list, as both certification kernels read it.
struct CertRow {
  int f;            // entries in the list
  const float* ld;  // their GEMM distances, ascending
  const int* li;    // their indices
  double ni;        // the row's stored squared norm
};

__device__ __forceinline__ CertRow cert_row(const CertifyArgs& c, int64_t g) {
  return {c.lists.fill[g], c.lists.dist + g * c.lists.k, c.lists.index + g * c.lists.k, c.norms[g]};
}

// Each entry's upper bound, rounded up to float (so still an upper bound on
// its s64), +inf past the list up to P, with its place in si; by the
// threads first, first + step, ...
__device__ __forceinline__ void upper_keys(const CertifyArgs& c, const CertRow& r, int P, float* sd, int* si, int first,
                                           int step) {
  for (int t = first; t < P; t += step) {
    if (t < r.f) {
      const double a = r.ld[t];
      const double e = exact::entry_error(a, r.ni, c.norms[r.li[t]], c.model);
      sd[t] = __double2float_ru(exact::upper64(a, e, c.model));
    } else {
      sd[t] = INFINITY;
    }
    si[t] = t;
  }
}

// Every point missing from a list either failed the row's bound when its
// tile was filtered (its GEMM distance above the bound then, which only
// tightens, so above the final bound) or ranks after a full list's last
// entry: the smaller of the final bound and that entry is below every
// missing point's distance; with the largest norm such a point can have and
// still rank (exact::missing_norm_cap) its lower bound is still below U
// when the certificate fails. A list that never filled up, its bound
// still +inf, holds every point with a comparable distance (NaN never
// enters); one that a prior bound kept short (device_engine.h) is judged by
// that bound, and fails when it holds fewer than k entries (U is +inf).
__device__ __forceinline__ bool certificate_fails(const CertifyArgs& c, const CertRow& r, int64_t g, float uk) {
  if (c.complete) return false;
  const bool full = r.f == c.lists.k;
  const float thr = c.lists.thr ? c.lists.thr[g] : INFINITY;  // the row's final bound
  if (!full && !(thr < INFINITY)) return false;
  const double amax = full ? fminf(thr, r.ld[c.lists.k - 1]) : thr;
  const double ny = exact::missing_norm_cap(r.ni, uk, c.ymax, c.model);
  const double lmin = exact::lower64(amax, exact::entry_error(amax, r.ni, ny, c.model), c.model);
  return !(exact::key_of(lmin, c.euclidean) > exact::key_of(uk, c.euclidean));
}

// Whether entry (a, j)'s lower bound ranks no later than U.
__device__ __forceinline__ bool may_rank(const CertifyArgs& c, const CertRow& r, double a, int j, float ukey) {
  const double e = exact::entry_error(a, r.ni, c.norms[j], c.model);
  return exact::key_of(exact::lower64(a, e, c.model), c.euclidean) <= ukey;
}

// Candidate j (GEMM distance sd[j], index si[j]) of row x re-evaluated by
// one warp: lane 0 writes its exact key to sd[j] and returns `use` raised to
// how much of the bound the real error used (evidence for the model).
__device__ __forceinline__ float reevaluate(const CertifyArgs& c, const CertRow& r, const float* x, float* sd,
                                            const int* si, int j, int lane, float use) {
  const int nb = si[j];
  const double s = warp_sum_sq_diff(x, c.rows + static_cast<int64_t>(nb) * c.d, c.d, lane);
  if (lane == 0) {
    const double a = sd[j];
    use = fmaxf(use, static_cast<float>(fabs(a - s) / exact::entry_error(a, r.ni, c.norms[nb], c.model)));
    sd[j] = exact::key_of(s, c.euclidean);
  }
  return use;
}

// The row's k best, sorted in (sd, si), out; by the threads first, first + step, ...
__device__ __forceinline__ void write_row(const CertifyArgs& c, int64_t g, const float* sd, const int* si, int first,
                                          int step) {
  for (int j = first; j < c.k; j += step) {
    c.out_index[g * c.k + j] = si[j];
    c.out_dist[g * c.k + j] = sd[j];
  }
}

// The row's certificate from `kth_upper`, the k-th smallest upper bound
// (read by thread 0 only; every thread learns the verdict): U is its key; a
// row whose certificate fails is marked for the rescan (status -1, its U
// kept) and the block moves to its next row. Also zeroes the survivor count.
struct BlockVerdict {
  int count, fail;
  float ukey;
};

__device__ __forceinline__ bool certificate_holds(const CertifyArgs& c, const CertRow& r, int64_t g,
                                                  const float* kth_upper, BlockVerdict& v) {
  if (threadIdx.x == 0) {
    v.ukey = exact::key_of(*kth_upper, c.euclidean);
    v.fail = certificate_fails(c, r, g, *kth_upper);
    v.count = 0;
  }
  __syncthreads();
  if (v.fail) {
    if (threadIdx.x == 0) {
      c.status[g] = -1;
      if (c.ukey) c.ukey[g] = v.ukey;
    }
    __syncthreads();
    return false;
  }
  return true;
}

// The candidates whose lower bound ranks no later than U, appended to
// (dd, di), each re-evaluated exactly by one warp (reevaluate); returns how
// many (every thread) and raises `use`.
__device__ __forceinline__ int rerank_survivors(const CertifyArgs& c, const CertRow& r, int64_t g, BlockVerdict& v,
                                                float* dd, int* di, float& use) {
  const float ukey = v.ukey;
  for (int t = threadIdx.x; t < r.f; t += blockDim.x) {
    const int j = r.li[t];
    if (may_rank(c, r, r.ld[t], j, ukey)) {
      const int p = atomicAdd(&v.count, 1);
      dd[p] = r.ld[t];
      di[p] = j;
    }
  }
  __syncthreads();
  const int cnt = v.count;
  const float* x = c.rows + g * c.d;
  const int lane = threadIdx.x & 31;
  for (int j = threadIdx.x >> 5; j < cnt; j += kThreads / 32) use = reevaluate(c, r, x, dd, di, j, lane, use);
  return cnt;
}

__global__ __launch_bounds__(kThreads) void certify_kernel(CertifyArgs c) {
  extern __shared__ float smem[];
  __shared__ BlockVerdict v;
  const int P = next_pow2(c.lists.k);
  float* sd = smem;
  int* si = reinterpret_cast<int*>(sd + P);
  const int lane = threadIdx.x & 31;
  float use = 0.f;
  const int64_t end = c.row_end < 0 ? c.lists.n : c.row_end;
  for (int64_t g = c.row_begin + blockIdx.x; g < end; g += gridDim.x) {
    const CertRow r = cert_row(c, g);
    // U: the k-th smallest upper bound (rounded up to float, so still an
    // upper bound on the k-th smallest s64 of the row).
    upper_keys(c, r, P, sd, si, threadIdx.x, blockDim.x);
    __syncthreads();
    block_bitonic_sort(sd, si, P);
    if (!certificate_holds(c, r, g, &sd[c.k - 1], v)) continue;
    const int cnt = rerank_survivors(c, r, g, v, sd, si, use);
    const int pc = next_pow2(cnt);
    for (int t = cnt + threadIdx.x; t < pc; t += blockDim.x) sd[t] = INFINITY, si[t] = INT_MAX;
    __syncthreads();
    block_bitonic_sort(sd, si, pc);
    write_row(c, g, sd, si, threadIdx.x, blockDim.x);
    if (threadIdx.x == 0) c.status[g] = cnt;
    __syncthreads();
  }
  if (lane == 0 && use > 0.f) atomicMax(reinterpret_cast<int*>(c.max_use), __float_as_int(use));
}

// certify_kernel for lists longer than one block's shared memory sorts
// (next_pow2(capacity) > kSharedSortEntries, k over 14336): the same steps,
// the row's entries in this block's global scratch (`scratch`: capacity
// entries of distance then index per block), each sort in two runs
// (two_run_sort.cuh), which yields the same order as certify_kernel's
// single sort, so the same results.
__global__ __launch_bounds__(kThreads) void certify_long_kernel(CertifyArgs c, float* scratch) {
  extern __shared__ float smem[];
  __shared__ BlockVerdict v;
  __shared__ float s_kth;
  float* sd = smem;
  int* si = reinterpret_cast<int*>(sd + kSharedSortEntries);
  const int cap = c.lists.k;
  float* gd = scratch + static_cast<size_t>(blockIdx.x) * 2 * cap;
  int* gi = reinterpret_cast<int*>(gd + cap);
  const int lane = threadIdx.x & 31;
  float use = 0.f;
  const int64_t end = c.row_end < 0 ? c.lists.n : c.row_end;
  for (int64_t g = c.row_begin + blockIdx.x; g < end; g += gridDim.x) {
    const CertRow r = cert_row(c, g);
    // U: the k-th smallest upper bound.
    upper_keys(c, r, cap, gd, gi, threadIdx.x, blockDim.x);
    __syncthreads();
    sort_two_runs(gd, gi, cap, gd, gi, sd, si, c.k, [&](int rank, float d, int) {
      if (rank == c.k - 1) s_kth = d;
    });
    if (!certificate_holds(c, r, g, &s_kth, v)) continue;
    const int cnt = rerank_survivors(c, r, g, v, gd, gi, use);
    __syncthreads();
    float* od = c.out_dist + g * c.k;
    int64_t* oi = c.out_index + g * c.k;
    sort_two_runs(gd, gi, cnt, gd, gi, sd, si, c.k, [&](int rank, float d, int i) { od[rank] = d, oi[rank] = i; });
    // Never expected (the k entries of the smallest upper bounds all rank
    // no later than U): fewer survivors than k read as certify_kernel's padding.
    for (int j = cnt + threadIdx.x; j < c.k; j += blockDim.x) od[j] = INFINITY, oi[j] = INT_MAX;
    if (threadIdx.x == 0) c.status[g] = cnt;
    __syncthreads();
  }
  if (lane == 0 && use > 0.f) atomicMax(reinterpret_cast<int*>(c.max_use), __float_as_int(use));
}

// certify_kernel for lists of at most kWarpCap entries: a warp a row, its
// own 2 x 64 words of shared memory, no block barriers. With k = 20 (36
// entries) the block kernel kept 256 threads on a 64-entry sort and ~20
// re-evaluations per row, and while it runs beside the tile loop
// (EarlyFinish) it took that much more of the GPU from the strips. Same
// arithmetic and the same (key, index) order: the same results bit for bit
// (GpuEngine.WarpCertifyMatchesBlock).
constexpr int kWarpCap = 64;
constexpr int kWarpsPerBlock = kThreads / 32;

__global__ __launch_bounds__(kThreads) void certify_warp_kernel(CertifyArgs c) {
  __shared__ float s_d[kWarpsPerBlock][kWarpCap];
  __shared__ int s_i[kWarpsPerBlock][kWarpCap];
  const int P = next_pow2(c.lists.k);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  float* sd = s_d[warp];
  int* si = s_i[warp];
  const unsigned below = (1u << lane) - 1u;
  float use = 0.f;
  const int64_t end = c.row_end < 0 ? c.lists.n : c.row_end;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t g = c.row_begin + static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp; g < end; g += step) {
    const CertRow r = cert_row(c, g);
    // U: the k-th smallest upper bound, as in certify_kernel.
    upper_keys(c, r, P, sd, si, lane, 32);
    __syncwarp();
    warp_bitonic_sort(sd, si, P, lane);
    const float ukey = exact::key_of(sd[c.k - 1], c.euclidean);
    const bool fail = certificate_fails(c, r, g, sd[c.k - 1]);
    __syncwarp();  // every lane has read sd[k - 1] before sd is reused
    if (fail) {
      if (lane == 0) {
        c.status[g] = -1;
        if (c.ukey) c.ukey[g] = ukey;
      }
      continue;
    }

    // The candidates whose lower bound ranks no later than U, packed in list
    // order (a ballot per 32 entries).
    int cnt = 0;
    for (int t0 = 0; t0 < r.f; t0 += 32) {
      const int t = t0 + lane;
      const bool keep = t < r.f && may_rank(c, r, r.ld[t], r.li[t], ukey);
      const unsigned mask = __ballot_sync(kFullMask, keep);
      if (keep) {
        const int p = cnt + __popc(mask & below);
        sd[p] = r.ld[t];
        si[p] = r.li[t];
      }
      cnt += __popc(mask);
    }
    __syncwarp();
    const float* x = c.rows + g * c.d;
    for (int j = 0; j < cnt; ++j) use = reevaluate(c, r, x, sd, si, j, lane, use);
    const int pc = next_pow2(cnt);
    for (int t = cnt + lane; t < pc; t += 32) sd[t] = INFINITY, si[t] = INT_MAX;
    __syncwarp();
    warp_bitonic_sort(sd, si, pc, lane);
    write_row(c, g, sd, si, lane, 32);
    if (lane == 0) c.status[g] = cnt;
    __syncwarp();  // the row's results are read before the next row overwrites sd
  }
  if (lane == 0 && use > 0.f) atomicMax(reinterpret_cast<int*>(c.max_use), __float_as_int(use));
}

__global__ void gather_rows_kernel(const float* __restrict__ rows, int64_t d, const float* __restrict__ norms,
                                   const float* __restrict__ ukey, const int* __restrict__ fb, int count,
                                   float* __restrict__ out_rows, float* __restrict__ out_norms,
                                   float* __restrict__ out_ukey) {
  for (int r = blockIdx.x; r < count; r += gridDim.x) {
    const int64_t g = fb[r];
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) out_rows[r * d + c] = rows[g * d + c];
    if (threadIdx.x == 0) out_norms[r] = norms[g], out_ukey[r] = ukey[g];
  }
}

// One thread per (rescanned row, point); consecutive threads take
// consecutive rows of a column-major tile (coalesced reads). The distance is
// formed exactly as in the tile loop, so the same bound holds.
__global__ void rescan_filter_kernel(RescanTile t) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  const int jj = blockIdx.y;
  if (r >= t.count || jj >= t.cols) return;
  const int64_t j = t.c0 + jj;
  const int64_t g = t.fb[r];
  if (j == g && !t.keep_self) return;
  const float ni = t.row_norms[r], nj = t.norms[j];
  const float a = fmaf(-2.f, t.dots[static_cast<size_t>(jj) * t.ld + r], ni + nj);
  if (!(a == a)) return;  // NaN: no comparable distance (non-finite data)
  const double e = exact::entry_error(a, ni, nj, t.model);
  if (exact::key_of(exact::lower64(a, e, t.model), t.euclidean) <= t.ukey[r]) {
    const int pos = atomicAdd(t.found + r, 1);
    if (pos < kRescanCap) t.cand[static_cast<size_t>(r) * kRescanCap + pos] = static_cast<int>(j);
  }
}

__global__ __launch_bounds__(kThreads) void rescan_select_kernel(const float* __restrict__ rows, int64_t d,
                                                                 const int* __restrict__ fb, const int* found,
                                                                 const int* cand, int k, int euclidean,
                                                                 int64_t* out_index, float* out_dist, int* status) {
  extern __shared__ float smem[];
  float* sd = smem;
  int* si = reinterpret_cast<int*>(sd + kRescanCap);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r = blockIdx.x;
  const int cnt = found[r];
  // Too many survivors for shared memory, or (never expected: the k
  // entries behind the bound survive) too few: the exact scan decides.
  if (cnt > kRescanCap || cnt < k) {
    if (threadIdx.x == 0) status[r] = -1;
    return;
  }
  const int64_t g = fb[r];
  const float* x = rows + g * d;
  for (int t = warp; t < cnt; t += kThreads / 32) {
    const int nb = cand[static_cast<size_t>(r) * kRescanCap + t];
    const double s = warp_sum_sq_diff(x, rows + static_cast<int64_t>(nb) * d, d, lane);
    if (lane == 0) sd[t] = exact::key_of(s, euclidean != 0), si[t] = nb;
  }
  const int pc = next_pow2(max(cnt, 1));
  for (int t = cnt + threadIdx.x; t < pc; t += blockDim.x) sd[t] = INFINITY, si[t] = INT_MAX;
  __syncthreads();
  block_bitonic_sort(sd, si, pc);
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    out_index[g * k + j] = si[j];
    out_dist[g * k + j] = sd[j];
  }
  if (threadIdx.x == 0) status[r] = cnt;
}

// One warp per (row, point) pair, consecutive warps on consecutive points of
// the same row, in the refinement's own summation order.
__global__ void fallback_keys_kernel(const float* __restrict__ rows, int64_t n, int64_t d, const int* __restrict__ fb,
                                     int count, int euclidean, int keep_self, float* __restrict__ keys) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5);
  const int64_t total = static_cast<int64_t>(count) * n;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); p < total; p += warps) {
    const int64_t r = p / n;
    const int64_t j = p - r * n;
    const int64_t g = fb[r];
    const double s = warp_sum_sq_diff(rows + g * d, rows + j * d, d, lane);
    if (lane == 0) keys[p] = (j == g && !keep_self) ? INFINITY : exact::key_of(s, euclidean != 0);
  }
}

int sm_count() {
  int dev = 0, sms = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the device properties");
  return sms > 0 ? sms : 80;
}

}  // namespace

size_t certify_shared_bytes(int capacity) {
  return 2 * sizeof(float) * static_cast<size_t>(std::min(next_pow2(capacity), kSharedSortEntries));
}

// Lists over kSharedSortEntries: a block an SM (its shared memory is the
// sorts' 128 KB), each with its global scratch, allocated on the stream for
// this launch (the certification runs per strip beside the tile loop, so
// nothing waits for the allocation or the release).
static void launch_certify_long(const CertifyArgs& a, int64_t rows, size_t smem, cudaStream_t s) {
  cuda_check(cudaFuncSetAttribute(certify_long_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)),
             "raising the certification kernel's shared memory limit");
  const int grid = static_cast<int>(std::min<int64_t>(rows, sm_count()));
  float* scratch = nullptr;
  const size_t bytes = static_cast<size_t>(grid) * 2 * sizeof(float) * static_cast<size_t>(a.lists.k);
  cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), bytes, s),
             "allocating the certification's scratch (long lists)");
  certify_long_kernel<<<grid, kThreads, smem, s>>>(a, scratch);
  launch_check("certification kernel (long lists)");
  cuda_check(cudaFreeAsync(scratch, s), "releasing the certification's scratch");
}

void launch_certify(const CertifyArgs& a, cudaStream_t s) {
  const int64_t rows = (a.row_end < 0 ? a.lists.n : a.row_end) - a.row_begin;
  if (rows <= 0) return;
  // Settings::certify_by_warp = false (tests): the block kernel for every
  // capacity, so both kernels meet the same lists.
  if (settings().certify_by_warp && next_pow2(a.lists.k) <= kWarpCap) {
    const int64_t grid = std::min<int64_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock,
                                           static_cast<int64_t>(sm_count()) * 8);
    certify_warp_kernel<<<static_cast<int>(grid), kThreads, 0, s>>>(a);
    launch_check("certification kernel (a warp a row)");
    return;
  }
  const size_t smem = certify_shared_bytes(a.lists.k);
  if (next_pow2(a.lists.k) > kSharedSortEntries) {
    launch_certify_long(a, rows, smem, s);
    return;
  }
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(certify_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the certification kernel's shared memory limit");
  const int64_t grid = std::min<int64_t>(rows, static_cast<int64_t>(sm_count()) * 8);
  certify_kernel<<<static_cast<int>(grid), kThreads, smem, s>>>(a);
  launch_check("certification kernel");
}

void launch_gather_rows(const float* rows, int64_t d, const float* norms, const float* ukey, const int* fb, int count,
                        float* out_rows, float* out_norms, float* out_ukey, cudaStream_t s) {
  if (count <= 0) return;
  gather_rows_kernel<<<std::min(count, 65535), 256, 0, s>>>(rows, d, norms, ukey, fb, count, out_rows, out_norms,
                                                            out_ukey);
  launch_check("row gather kernel");
}

void launch_rescan_filter(const RescanTile& t, cudaStream_t s) {
  if (t.count <= 0 || t.cols <= 0) return;
  const dim3 grid((t.count + 255) / 256, t.cols);
  rescan_filter_kernel<<<grid, 256, 0, s>>>(t);
  launch_check("rescan filter kernel");
}

void launch_rescan_select(const float* rows, int64_t d, const int* fb, int count, const int* found, const int* cand,
                          int k, bool euclidean, int64_t* out_index, float* out_dist, int* status, cudaStream_t s) {
  if (count <= 0) return;
  const size_t smem = 2 * sizeof(float) * static_cast<size_t>(kRescanCap);
  cuda_check(cudaFuncSetAttribute(rescan_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)),
             "raising the rescan kernel's shared memory limit");
  rescan_select_kernel<<<count, kThreads, smem, s>>>(rows, d, fb, found, cand, k, euclidean ? 1 : 0, out_index,
                                                     out_dist, status);
  launch_check("rescan select kernel");
}

void launch_fallback_keys(const float* rows, int64_t n, int64_t d, const int* fb, int count, bool euclidean,
                          bool keep_self, float* keys, cudaStream_t s) {
  if (count <= 0 || n <= 0) return;
  const int64_t warps_needed = static_cast<int64_t>(count) * n;
  const int64_t grid = std::min<int64_t>((warps_needed + 7) / 8, static_cast<int64_t>(sm_count()) * 32);
  fallback_keys_kernel<<<static_cast<int>(grid), 256, 0, s>>>(rows, n, d, fb, count, euclidean ? 1 : 0,
                                                              keep_self ? 1 : 0, keys);
  launch_check("fallback key kernel");
}

}  // namespace manifold::gpu
