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
/// Largest list capacity (candidates kept per row): k = kMaxNeighbours plus
/// the float32 certificate's room at d <= 512 (k/8); the larger rooms (of
/// fast-exact, of float32 at larger d) are cut to it (final_step.cpp
/// list_capacity). The merge's shared memory at this
/// capacity (merge_shared_bytes: 8 bytes per entry plus a 4096-entry chunk,
/// 176 KB) fits a Hopper block (227 KB); the tile plan takes only tiles whose
/// merge fits the device (tile_plan.cpp).
constexpr int kMaxK = 18432;
/// Largest k a caller may ask for (FAISS's GPU k-selection stops at 2048).
constexpr int kMaxNeighbours = 16384;
/// Entries one block sorts in shared memory at a time (8 bytes each, 128 KB).
/// Lists longer than this (a capacity over 16384) are sorted in two runs:
/// each run in shared memory, the first parked in a per-block global
/// scratch, then merged by rank (impl/two_run_sort.cuh).
constexpr int kSharedSortEntries = 16384;
/// Candidates a block-path merge sorts at a time.
constexpr int kMergeChunk = 4096;
/// Candidates a row keeps aside between block-path merges (ListsView's
/// pending room): a merge copies and rewrites the row's whole list whatever
/// it brings, and late in the loop a row gains a few candidates a tile, so
/// they wait here, unsorted, until the room would overflow or the row is
/// final (bench/gpu/RESULTS.md, "Candidates kept aside").
constexpr int kPendingRoom = 256;

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
