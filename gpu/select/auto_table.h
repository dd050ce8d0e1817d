#pragma once
// `--select auto`: the fastest strategy for (N, k), from a table measured by
// `manifold bench --backend gpu --select all` (bench/gpu/select/).
#include <cstdint>
#include <string>

namespace manifold::gpu::select {

/// The measured winner for the bucket of (n, k): one of warp, merge, quick,
/// sort, heap, bitonic, always one that supports k.
std::string best_strategy(int64_t n, int k);

}  // namespace manifold::gpu::select
