#pragma once
// The selection strategies of the papers the engine comes from (issue 7):
// quick (Komarov et al.), sort (Dashti et al.), heap (Kato-Hosino),
// bitonic (Sismanis et al.). `warp` and `merge` are the engine's own
// (device_engine); these run through the same tile loop, each tile's dot
// products handed to their selection (device_engine.h TileSelection).
#include <cstddef>
#include <cstdint>
#include <string>

#include "manifold/error.h"
#include "manifold/knn.h"

namespace manifold::gpu::select {

/// What a strategy cannot do (k beyond what it holds, fast-exact, more
/// device memory than is free), refused in one line before any work.
/// `--select auto` takes the engine instead.
class StrategyRefusal : public UsageError {
 public:
  using UsageError::UsageError;
};

/// True for the strategies this module implements.
bool is_paper_strategy(Select s);

/// The largest k `strategy` supports for n rows of d on a device with this
/// much opt-in shared memory per block and tiles W columns wide: its lists hold
/// k + slack (final_step.h), and bitonic's network, the list sort (heap,
/// quick) and the final step's certificate each hold a list in one block's
/// shared memory.
int largest_k(Select strategy, int64_t n, int64_t d, bool keep_self, int W, size_t shared_optin);

/// Builds the exact graph with `params.select`; same contract and result as
/// the engine (the k smallest exact keys per row, certified by the engine's
/// final step). Refuses with one line (StrategyRefusal) what a strategy
/// cannot do.
KnnGraph build_with_paper_strategy(const Dataset& data, const KnnParams& params, Progress& progress);

}  // namespace manifold::gpu::select
