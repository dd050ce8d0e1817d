#pragma once
// `--select auto`: the fastest strategy for (N, k), from a table measured by
// `manifold bench --backend gpu --select all` (bench/gpu/select/).
#include <cstdint>
#include <string>

namespace manifold::gpu::select {

/// The measured winner for the bucket of (n, k): one of warp, merge, quick,
/// sort, heap, bitonic, always one that supports k. The table was measured
/// on one GPU; with several (`devices` > 1) the engine's own strategy, which
/// splits the work over all of them, is returned ("warp").
std::string best_strategy(int64_t n, int k, int devices = 1);

}  // namespace manifold::gpu::select
