#pragma once
// Copies into pinned staging buffers: the one host-side copy of the upload
// pipeline (rows -> pinned staging -> DMA to the GPU).
//
// With ordinary stores the copy and the DMA that reads the buffer next slow
// each other down: the DMA has to snoop the caches the copy filled.
// Non-temporal stores write the staging buffer straight to memory, past the
// caches, and the pipeline runs at nearly the rate of either alone
// (bench/gpu/RESULTS.md, "Staging copy").
#include <cstddef>

#include "manifold/parallel.h"

namespace manifold::gpu {

/// Copies `bytes` from `src` to `dst` with non-temporal stores where the
/// processor has them (x86-64), std::memcpy elsewhere. The regions must not
/// overlap; `dst` should not be read by this thread soon after.
void stream_copy(void* dst, const void* src, size_t bytes);

/// stream_copy spread over up to `threads` threads of `pool`, in pieces of
/// at least `min_piece` bytes (rounded to whole pages, so each piece's
/// stores start aligned when `dst` does).
void staging_copy(void* dst, const void* src, size_t bytes, int threads, size_t min_piece,
                  LoopPool& pool = LoopPool::instance());

}  // namespace manifold::gpu
