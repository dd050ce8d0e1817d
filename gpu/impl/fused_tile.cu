// The fused tile kernel: the tile's dot products by a register-blocked
// float32 FFMA GEMM, turned into squared distances and filtered against the
// row and column bounds in registers, so the tile is never written to
// memory. It exists because cuBLAS reaches only ~60% of its large-GEMM rate
// when the inner dimension is short (d ~ 128-256: few main-loop steps per
// block, then a whole tile to write back, which the filter then reads again).
//
// Layout: the operands are the row blocks transposed on the device
// (feature-major, [dpad][ld], see launch_transpose_block), so a k-slab of
// 128 rows is 128 contiguous floats and goes from global to shared memory by
// cp.async (16 bytes a thread, no registers, no transposing stores), through
// a 4-stage pipeline of 8-deep k-slabs. The default shape: 256 threads
// compute a 128 x 128 block as 8 warps of 64 x 32, each thread 8 x 8 entries
// (16 warps per SM hide the shared-memory and barrier latency). Measured on
// an H200 (bench/gpu/README.md), 8 x 16 entries per thread with 128 threads
// -- the shape of cuBLAS's FFMA kernels -- was 25-45% slower here: 8 warps
// per SM and an unrolled epilogue too large for the instruction cache.
// MANIFOLD_GPU_FUSED picks another shape for tuning runs.
//
// Each entry is one fmaf chain over c = 0..d-1 in order (the zero padding
// rows c >= d leave it unchanged), whatever the tile shape, device or
// launch: the same input gives the same distances bit for bit, in memory,
// streamed or split over GPUs.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "impl/kernels.h"
#include "utils/cuda_check.h"
#include "utils/keys.cuh"

namespace manifold::gpu {

namespace {

constexpr int BM = 128, BN = 128;

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Where a tile's candidates go (CandidatesView and the tile's place), kept
// in shared memory so the out-of-line pushes take one pointer.
struct PushTarget {
  float* cdist;
  int* cindex;
  int* count;
  int* dirty;
  int* n_dirty;
  int T, W, r0, c0, rows, cols;
  bool keep_self;
};

// The rare entry that passes a bound, appended to its row's and/or its
// column's candidates. Out of line, so the unrolled epilogue
// stays a few instructions per entry (the kernel's code must fit the
// instruction cache). Queueing the entries in shared memory for the whole
// block to push after the epilogue was measured slower (bench/gpu/README.md).
__device__ __noinline__ void push_candidate(const PushTarget* target, int li, int lj, float dist, bool row_role,
                                            bool col_role, unsigned* pushed) {
  const PushTarget& p = *target;
  const int gi = p.r0 + li, gj = p.c0 + lj;
  if (row_role && lj < p.cols && (p.keep_self || gi != gj)) {
    const int pos = atomicAdd(p.count + li, 1);
    if (pos == 0) p.dirty[atomicAdd(p.n_dirty, 1)] = li;
    const size_t at = static_cast<size_t>(li) * p.W + pos;
    p.cdist[at] = dist;
    p.cindex[at] = gj;
    ++*pushed;
  }
  if (col_role && li < p.rows) {
    const int slot = p.T + lj;
    const int pos = atomicAdd(p.count + slot, 1);
    if (pos == 0) p.dirty[atomicAdd(p.n_dirty, 1)] = slot;
    const size_t at = static_cast<size_t>(p.T) * p.W + static_cast<size_t>(lj) * p.T + pos;
    p.cdist[at] = dist;
    p.cindex[at] = gi;
    ++*pushed;
  }
}

// TN: columns per thread (16: 128 threads, warps of 64 x 64; 8: 256 threads,
// warps of 64 x 32); every thread has 8 rows. KU: k-steps unrolled.
// BK: k-steps per shared-memory slab (one barrier each), kStages: slabs in flight.
//
// The launch's 128 x 128 block tiles (gx down the rows, gy across the
// columns) are dealt to the blocks round robin: one block per tile by
// default; with MANIFOLD_GPU_FUSED_GRID=persistent, as many blocks as the
// SMs hold, each running its tiles' k-slabs as one stream through the
// cp.async pipeline (the first slabs of its next tile load while it
// finishes the current one). The SMs' idle time between a launch's waves is
// filled instead by the next tile's kernel on a second stream
// (device_engine.cpp); see bench/gpu/README.md for both.
template <int TN, int KU, int BK = 8, int kStages = 4>
__global__ __launch_bounds__(128 * 16 / TN, 2) void fused_tile_kernel(FusedTileArgs f, CandidatesView c, int counter) {
  constexpr int kThreads = 128 * 16 / TN;
  constexpr int kWarpsN = 128 / (TN * 4);
  constexpr int kCopies = 32 * BK / kThreads;  // 16-byte copies per thread per operand and slab
  __shared__ __align__(16) float as[kStages][BK][BM];
  __shared__ __align__(16) float bs[kStages][BK][BN];
  __shared__ PushTarget target;
  const int t = threadIdx.x;
  if (t == 0)
    target = PushTarget{c.dist, c.index, c.count, c.dirty, c.n_dirty + counter, c.T, c.W,
                        f.r0,   f.c0,    f.rows,  f.cols,  f.keep_self};
  const int gx = (f.rows + BM - 1) / BM, gy = (f.cols + BN - 1) / BN;
  const int ntiles = gx * gy;
  const int nk = f.dpad / BK;  // dpad: a multiple of 16
  // This block's tiles: blockIdx.x, blockIdx.x + gridDim.x, ...; its slabs
  // g = tile * nk + kt in order.
  const int my_tiles = blockIdx.x < ntiles ? (ntiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int total = my_tiles * nk;
  const int64_t ldt = f.ldt;
  const int cr = t >> 5, cc = (t & 31) * 4;
  // The A operand of tile id: rows i_base.. of the row block; B: tile columns
  // j_base.., which lie in one row block (tiles start on a block boundary,
  // and blocks are multiples of 128 rows).
  auto load = [&](int stage, int g) {
    const int i = g / nk, kt = g - i * nk;
    const int id = blockIdx.x + i * gridDim.x;
    const int i_base = (id % gx) * BM, j_base = (id / gx) * BN;
    const float* a = f.at + i_base;
    const float* b = f.bt + static_cast<int64_t>(j_base / f.ldt) * f.block_stride + (j_base % f.ldt);
    const int64_t k0 = static_cast<int64_t>(kt) * BK;
#pragma unroll
    for (int h = 0; h < kCopies; ++h) {
      const int r = cr + (kThreads / 32) * h;  // slab row (k), h-th copy
      cp_async16(&as[stage][r][cc], a + (k0 + r) * ldt + cc);
      cp_async16(&bs[stage][r][cc], b + (k0 + r) * ldt + cc);
    }
  };

  // In a warp, 8 x 4 threads of 8 x TN entries: rows ty*4 + {0..3} and
  // 32 + ty*4 + {0..3}, columns tx*4 + 16 q + {0..3}. A warp's fragment
  // loads touch 128 and 64 contiguous bytes (one shared-memory wavefront
  // each; lanes with the same ty or tx broadcast).
  const int warp = t >> 5, lane = t & 31;
  const int wm = (warp / kWarpsN) * 64 + (lane >> 2) * 4;
  const int wn = (warp % kWarpsN) * (TN * 4) + (lane & 3) * 4;
  const int row_at[2] = {wm, wm + 32};

  float acc[8][TN];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[r][q] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < total) load(s, s);
    cp_async_commit();
  }
  unsigned pushed = 0;
  int kt = 0, tile_no = 0;
#pragma unroll 1
  for (int g = 0; g < total; ++g) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // slab g is in shared memory; stage (g - 1) % kStages is free
    if (g + kStages - 1 < total) load((g + kStages - 1) % kStages, g + kStages - 1);
    cp_async_commit();
    const int st = g % kStages;
#pragma unroll KU
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[st][k][wm]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[st][k][wm + 32]);
      float bv[TN];
#pragma unroll
      for (int q = 0; q < TN / 4; ++q) {
        const float4 bq = *reinterpret_cast<const float4*>(&bs[st][k][wn + 16 * q]);
        bv[4 * q] = bq.x, bv[4 * q + 1] = bq.y, bv[4 * q + 2] = bq.z, bv[4 * q + 3] = bq.w;
      }
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
      for (int r = 0; r < 8; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) acc[r][q] = fmaf(av[r], bv[q], acc[r][q]);
    }
    if (++kt < nk) continue;

    // Epilogue of the tile just finished: distances and bounds, while the
    // next tile's first slabs are on their way.
    kt = 0;
    const int id = blockIdx.x + tile_no * gridDim.x;
    const int bx = id % gx, by = id / gx;
    const int i_base = bx * BM, j_base = by * BN;
    if (f.dense) {
      // A diagonal tile seeding empty lists: every entry goes to its row at a
      // fixed place (self skipped), no atomics.
#pragma unroll 1
      for (int r = 0; r < 8; ++r) {
        const int li = i_base + row_at[r >> 2] + (r & 3);
        if (li >= f.rows) continue;
        const float ni = f.row_norms[li];
        float* cd = c.dist + static_cast<size_t>(li) * c.W;
        int* ci = c.index + static_cast<size_t>(li) * c.W;
#pragma unroll
        for (int q = 0; q < TN; ++q) {
          const int j = j_base + wn + 16 * (q >> 2) + (q & 3);
          if (j >= f.cols || (!f.keep_self && j == li)) continue;
          const int pos = (f.keep_self || j < li) ? j : j - 1;
          float v = 0.f;
#pragma unroll
          for (int rr = 0; rr < 8; ++rr)
            if (rr == r) v = acc[rr][q];
          const float dist = fmaf(-2.f, v, ni + f.col_norms[j]);
          cd[pos] = dist == dist ? dist : INFINITY;  // NaN sorts as +inf: never ahead of a real distance
          ci[pos] = f.c0 + j;
        }
      }
      if (by == 0)
        for (int i = t; i < BM; i += kThreads)
          if (i_base + i < f.rows) {
            c.count[i_base + i] = f.cols - (f.keep_self ? 0 : 1);
            c.dirty[i_base + i] = i_base + i;
          }
      if (id == 0 && t == 0) {
        c.n_dirty[counter] = f.rows;
        atomicAdd(c.total, static_cast<unsigned long long>(f.rows) * (f.cols - (f.keep_self ? 0 : 1)));
      }
    } else {
      float nj[TN], tc[TN];
#pragma unroll
      for (int q = 0; q < TN; ++q) {
        const int lj = j_base + wn + 16 * (q >> 2) + (q & 3);
        const bool ok = lj < f.cols;
        nj[q] = ok ? f.col_norms[lj] : 0.f;
        // -inf outside the tile or the column role: never passes.
        tc[q] = ok && lj >= f.col_role_from ? __ldg(f.thr + f.c0 + lj) : -INFINITY;
      }
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        const int li = i_base + row_at[r >> 2] + (r & 3);
        const bool row_ok = li < f.rows;
        const float ni = row_ok ? f.row_norms[li] : 0.f;
        const float tr = row_ok ? __ldg(f.thr + f.r0 + li) : -INFINITY;
#pragma unroll
        for (int q = 0; q < TN; ++q) {
          const float dist = fmaf(-2.f, acc[r][q], ni + nj[q]);
          const bool pr = dist <= tr, pc = dist <= tc[q];
          if (pr || pc) {
            const int lj = j_base + wn + 16 * (q >> 2) + (q & 3);
            push_candidate(&target, li, lj, dist, pr, pc, &pushed);
          }
        }
      }
    }
    ++tile_no;
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
      for (int q = 0; q < TN; ++q) acc[r][q] = 0.f;
  }
  cp_async_wait<0>();
  for (int off = 16; off > 0; off >>= 1) pushed += __shfl_down_sync(kFullMask, pushed, off);
  if (lane == 0 && pushed) atomicAdd(c.total, static_cast<unsigned long long>(pushed));
}

// out[c * ld + i] = rows[i * d + c] for i < count, c < d (32 x 32 tiles
// through shared memory, both sides coalesced). Padding rows (c >= d) and
// columns (i >= count) are left as they are (zero from allocation).
__global__ void transpose_block_kernel(const float* __restrict__ rows, int count, int64_t d, float* __restrict__ out,
                                       int ld) {
  __shared__ float tile[32][33];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32, i0 = static_cast<int64_t>(blockIdx.y) * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int64_t i = i0 + y, c = c0 + threadIdx.x;
    if (i < count && c < d) tile[y][threadIdx.x] = rows[i * d + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int64_t c = c0 + y, i = i0 + threadIdx.x;
    if (i < count && c < d) out[c * ld + i] = tile[threadIdx.x][y];
  }
}

}  // namespace

void launch_fused_tile(const FusedTileArgs& f, CandidatesView c, int counter, cudaStream_t s) {
  if (f.rows <= 0 || f.cols <= 0) return;
  const int ntiles = ((f.rows + BM - 1) / BM) * ((f.cols + BN - 1) / BN);
  // MANIFOLD_GPU_FUSED=TNxKU picks a shape (measured in bench/gpu/README.md).
  static const int variant = [] {
    const char* v = std::getenv("MANIFOLD_GPU_FUSED");
    if (!v) return 0;
    if (!std::strcmp(v, "16x8")) return 1;
    if (!std::strcmp(v, "16x4")) return 5;
    if (!std::strcmp(v, "16x2")) return 2;
    if (!std::strcmp(v, "8x4")) return 4;
    return 0;
  }();
  // A block per tile, or (MANIFOLD_GPU_FUSED_GRID=persistent) as many as
  // the SMs hold at once, fewer if that deals the tiles evenly (1024 tiles
  // on 264 places: 256 blocks of 4).
  static const bool per_tile = [] {
    const char* v = std::getenv("MANIFOLD_GPU_FUSED_GRID");
    return !(v && !std::strcmp(v, "persistent"));
  }();
  auto run = [&](auto kernel, int threads) {
    int grid = ntiles;
    if (!per_tile) {
      // Blocks the device holds at once, per device (one shape a process).
      static std::atomic<int> held[64];
      int device = 0;
      cuda_check(cudaGetDevice(&device), "querying the device");
      int places = device < 64 ? held[device].load(std::memory_order_relaxed) : 0;
      if (places == 0) {
        int sms = 0, per_sm = 0;
        cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "querying the device");
        cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0),
                   "querying the fused kernel's occupancy");
        places = std::max(1, sms * per_sm);
        if (device < 64) held[device].store(places, std::memory_order_relaxed);
      }
      const int rounds = (ntiles + places - 1) / places;
      grid = (ntiles + rounds - 1) / rounds;
    }
    kernel<<<grid, threads, 0, s>>>(f, c, counter);
  };
  switch (variant) {
    case 1: run(fused_tile_kernel<16, 8>, 128); break;
    case 2: run(fused_tile_kernel<16, 2>, 128); break;
    case 4: run(fused_tile_kernel<8, 4>, 256); break;
    case 5: run(fused_tile_kernel<16, 4>, 128); break;
    default: run(fused_tile_kernel<8, 8>, 256); break;
  }
  launch_check("fused tile kernel");
}

void launch_transpose_block(const float* rows, int count, int64_t d, float* out, int ld, cudaStream_t s) {
  if (count <= 0 || d <= 0) return;
  const dim3 grid(static_cast<unsigned>((d + 31) / 32), static_cast<unsigned>((count + 31) / 32));
  transpose_block_kernel<<<grid, dim3(32, 8), 0, s>>>(rows, count, d, out, ld);
  launch_check("transposing a row block");
}

}  // namespace manifold::gpu
