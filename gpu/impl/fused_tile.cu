// The fused tile kernel (MANIFOLD_GPU_GEMM=fused): the tile's dot products by
// a register-blocked float32 FFMA GEMM (128 x 128 per block, 8 x 8 per
// thread), turned into squared distances and filtered against the row and
// column bounds in registers, so the tile is never written to memory. It
// exists because cuBLAS reaches only ~60% of its large-GEMM rate when the
// inner dimension is ~128 (few main-loop steps per block, then a whole tile
// to write back). Measured on an H200 it is not there yet: ~23 TFLOP/s at
// d = 128 against cuBLAS's ~30 (bench/gpu/README.md), so cuBLAS stays the
// default; it is kept, tested and sanitizer-clean as the base to tune.
//
// Each entry is one fmaf chain over c = 0..d-1 in order, whatever the tile
// shape, device or launch: the same input gives the same distances
// bit for bit, in memory, streamed or split over GPUs.
#include <cmath>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int BM = 128, BN = 128, BK = 8;
constexpr int kPad = BM + 4;  // 528-byte rows: the two k-halves of a warp's stores fall in different banks
constexpr int kThreads = 256;

// Thread t stages row t/2, columns k0 + 4 (t % 2) .. +3 of a 128 x 8 slab.
template <bool VEC>
__device__ __forceinline__ void load_slab(const float* __restrict__ base, int64_t d, int valid, int k0, int t,
                                          float (&v)[4]) {
  const int m = t >> 1;
  const int64_t kq = k0 + ((t & 1) << 2);
  if (VEC) {
    if (m < valid && kq < d) {
      const float4 x = __ldg(reinterpret_cast<const float4*>(base + static_cast<int64_t>(m) * d + kq));
      v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
      v[0] = v[1] = v[2] = v[3] = 0.f;
    }
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      v[e] = (m < valid && kq + e < d) ? __ldg(base + static_cast<int64_t>(m) * d + kq + e) : 0.f;
  }
}

__device__ __forceinline__ void store_slab(float (*s)[kPad], int t, const float (&v)[4]) {
  const int m = t >> 1;
  const int kq = (t & 1) << 2;
#pragma unroll
  for (int e = 0; e < 4; ++e) s[kq + e][m] = v[e];
}

template <bool VEC>
__global__ __launch_bounds__(kThreads, 2) void fused_tile_kernel(FusedTileArgs f, CandidatesView c, int counter) {
  __shared__ __align__(16) float as[2][BK][kPad];
  __shared__ __align__(16) float bs[2][BK][kPad];
  const int t = threadIdx.x;
  // Warp tiles of 32 x 64 (4 x 2 warps); in a warp, 4 x 8 threads of 8 x 8
  // entries, as two 4-row and two 4-column groups 16 rows / 32 columns apart.
  // A warp's fragment loads then touch 64 and 128 contiguous bytes: one
  // shared-memory wavefront each.
  const int warp = t >> 5, lane = t & 31;
  const int wm = (warp >> 1) * 32 + (lane >> 3) * 4;
  const int wn = (warp & 1) * 64 + (lane & 7) * 4;
  const int i_base = blockIdx.x * BM, j_base = blockIdx.y * BN;
  const float* a = f.a + static_cast<int64_t>(i_base) * f.d;
  const float* b = f.b + static_cast<int64_t>(j_base) * f.d;
  const int arows = min(BM, f.rows - i_base), bcols = min(BN, f.cols - j_base);

  float acc[8][8];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < 8; ++q) acc[r][q] = 0.f;

  float ra[4], rb[4];
  load_slab<VEC>(a, f.d, arows, 0, t, ra);
  load_slab<VEC>(b, f.d, bcols, 0, t, rb);
  store_slab(as[0], t, ra);
  store_slab(bs[0], t, rb);
  __syncthreads();
  const int nk = static_cast<int>((f.d + BK - 1) / BK);
  for (int kt = 0; kt < nk; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < nk;
    if (more) {
      load_slab<VEC>(a, f.d, arows, (kt + 1) * BK, t, ra);
      load_slab<VEC>(b, f.d, bcols, (kt + 1) * BK, t, rb);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[cur][k][wm]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[cur][k][wm + 16]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[cur][k][wn]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[cur][k][wn + 32]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int q = 0; q < 8; ++q) acc[r][q] = fmaf(av[r], bv[q], acc[r][q]);
    }
    if (more) {
      // The other buffer was last read in iteration kt-1, before its barrier.
      store_slab(as[cur ^ 1], t, ra);
      store_slab(bs[cur ^ 1], t, rb);
    }
    __syncthreads();
  }

  // Epilogue: distances and bounds.
  int li[8], lj[8];
  float ni[8], tr[8], nj[8], tc[8];
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    li[r] = i_base + wm + (r < 4 ? r : 16 + r - 4);
    const bool ok = li[r] < f.rows;
    ni[r] = ok ? f.row_norms[li[r]] : 0.f;
    tr[r] = ok && !f.dense ? __ldg(f.thr + f.r0 + li[r]) : -INFINITY;
  }
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    lj[q] = j_base + wn + (q < 4 ? q : 32 + q - 4);
    const bool ok = lj[q] < f.cols;
    nj[q] = ok ? f.col_norms[lj[q]] : 0.f;
    tc[q] = ok && !f.dense && lj[q] >= f.col_role_from ? __ldg(f.thr + f.c0 + lj[q]) : -INFINITY;
  }
  unsigned pushed = 0;
  if (f.dense) {
    // A diagonal tile seeding empty lists: every entry goes to its row at a
    // fixed place (self skipped), no atomics.
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      if (li[r] >= f.rows) continue;
      float* cd = c.dist + static_cast<size_t>(li[r]) * c.W;
      int* ci = c.index + static_cast<size_t>(li[r]) * c.W;
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        const int j = lj[q];
        if (j >= f.cols || (!f.keep_self && j == li[r])) continue;
        const int pos = (f.keep_self || j < li[r]) ? j : j - 1;
        const float dist = fmaf(-2.f, acc[r][q], ni[r] + nj[q]);
        cd[pos] = dist == dist ? dist : INFINITY;  // NaN sorts as +inf: never ahead of a real distance
        ci[pos] = f.c0 + j;
      }
    }
    if (blockIdx.y == 0 && t < BM && i_base + t < f.rows) {
      c.count[i_base + t] = f.cols - (f.keep_self ? 0 : 1);
      c.dirty[i_base + t] = i_base + t;
    }
    if (blockIdx.x == 0 && blockIdx.y == 0 && t == 0) {
      c.n_dirty[counter] = f.rows;
      atomicAdd(c.total, static_cast<unsigned long long>(f.rows) * (f.cols - (f.keep_self ? 0 : 1)));
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const float dist = fmaf(-2.f, acc[r][q], ni[r] + nj[q]);
      const int gi = f.r0 + li[r], gj = f.c0 + lj[q];
      // tr / tc are -inf outside the tile, so these also check the bounds.
      if (dist <= tr[r] && lj[q] < f.cols && (f.keep_self || gi != gj)) {
        const int slot = li[r];
        const int pos = atomicAdd(c.count + slot, 1);
        if (pos == 0) c.dirty[atomicAdd(c.n_dirty + counter, 1)] = slot;
        const size_t at = static_cast<size_t>(slot) * c.W + pos;
        c.dist[at] = dist;
        c.index[at] = gj;
        ++pushed;
      }
      if (dist <= tc[q] && li[r] < f.rows) {
        const int slot = c.T + lj[q];
        const int pos = atomicAdd(c.count + slot, 1);
        if (pos == 0) c.dirty[atomicAdd(c.n_dirty + counter, 1)] = slot;
        const size_t at = static_cast<size_t>(c.T) * c.W + static_cast<size_t>(lj[q]) * c.T + pos;
        c.dist[at] = dist;
        c.index[at] = gi;
        ++pushed;
      }
    }
  }
  for (int off = 16; off > 0; off >>= 1) pushed += __shfl_down_sync(kFullMask, pushed, off);
  if ((t & 31) == 0 && pushed) atomicAdd(c.total, static_cast<unsigned long long>(pushed));
}

}  // namespace

void launch_fused_tile(const FusedTileArgs& f, CandidatesView c, int counter, cudaStream_t s) {
  if (f.rows <= 0 || f.cols <= 0) return;
  const dim3 grid((f.rows + BM - 1) / BM, (f.cols + BN - 1) / BN);
  const bool vec = f.d % 4 == 0 && reinterpret_cast<uintptr_t>(f.a) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(f.b) % 16 == 0;
  if (vec) fused_tile_kernel<true><<<grid, kThreads, 0, s>>>(f, c, counter);
  else fused_tile_kernel<false><<<grid, kThreads, 0, s>>>(f, c, counter);
  launch_check("fused tile kernel");
}

}  // namespace manifold::gpu
