#pragma once
// Sizes the kernels and the host's tile plan (gpu/tile_plan.cpp) share,
// CUDA-free, so the plan builds and is tested where there is no nvcc
// (tests/core/test_tile_plan.cpp, in CI).
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace manifold::gpu {

/// Features of the fused kernel's transposed blocks: d rounded up to 16 (a
/// whole number of the kernel's k-slabs).
constexpr int64_t fused_dpad(int64_t d) { return (d + 15) / 16 * 16; }

/// Candidate sets the fused kernel's tiles take in turn (tile t's kernel
/// waits for tile t - 4's merge; device_engine.h); the cuBLAS path has two.
constexpr int kFusedCandidateSets = 4;

/// Merge paths: warps take rows whose merge is small, blocks the rest; with
/// force_block every row goes through the block path (select=merge).
constexpr int kWarpMergeMaxK = 256;
constexpr int kWarpMergeMaxC = 64;
constexpr int kMaxK = 16384;  ///< largest list capacity (candidates kept per row)
/// Largest k a caller may ask for: k plus the certificate's room (k/8 or
/// k/4, see gpu_knn_backend.cpp) stays within kMaxK, and the final step's
/// shared memory (8 bytes per entry of the next power of two) within 128 KB.
constexpr int kMaxNeighbours = 14336;
/// Candidates a block-path merge sorts at a time.
constexpr int kMergeChunk = 4096;

/// Threads of a merge block, and the shared memory of each of its warps: the
/// warp merge's output list and candidates, or the seed selection's 256
/// histogram bins and its k chosen entries.
constexpr int kMergeThreads = 128;
constexpr int kMergeWarpSmemFloats = 2 * (kWarpMergeMaxK + 128);

/// Bytes of dynamic shared memory the merge kernel needs (max_candidates: the
/// largest slot capacity); the device must allow them.
inline size_t merge_shared_bytes(int k, int max_candidates) {
  int chunk = 1;  // the next power of two of the candidates sorted at a time
  while (chunk < std::min(std::max(max_candidates, 1), kMergeChunk)) chunk <<= 1;
  const size_t block = 2 * sizeof(float) * (static_cast<size_t>(k) + static_cast<size_t>(chunk));
  const size_t warps = (kMergeThreads / 32) * kMergeWarpSmemFloats * sizeof(float);
  return block > warps ? block : warps;
}

}  // namespace manifold::gpu
