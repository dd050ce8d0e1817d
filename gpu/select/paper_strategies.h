#pragma once
// The selection strategies of the papers the engine comes from (issue 7):
// quick (Komarov et al.), sort (Dashti et al.), heap (Kato-Hosino),
// bitonic (Sismanis et al.). `warp` and `merge` are the engine's own
// (device_engine); these run their own tile loop over the same resources.
#include <string>

#include "manifold/knn.h"

namespace manifold::gpu::select {

/// True for the strategies this module implements.
bool is_paper_strategy(const std::string& name);

/// Builds the exact graph with `params.select`; same contract as the GPU
/// backend (self excluded unless keep_self, (distance, index) order, exact
/// re-evaluation). Refuses with one line what a strategy cannot do (e.g. k).
KnnGraph build_with_paper_strategy(const Dataset& data, const KnnParams& params, Progress& progress);

}  // namespace manifold::gpu::select
