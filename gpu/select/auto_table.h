#pragma once
// `--select auto`: the fastest strategy for (N, k), from a table measured by
// `manifold bench --backend gpu --select all` (bench/gpu/select/).
#include <cstdint>
#include <string>

#include "manifold/knn.h"

namespace manifold::gpu::select {

/// The measured winner for the bucket of (n, k): any strategy but auto,
/// always one that supports k. The table was measured on one GPU; with
/// several (`devices` > 1) the engine's own strategy, which splits the work
/// over all of them, is returned (Select::Warp).
///
/// MANIFOLD_SELECT_TABLE=FILE replaces the built-in table with one measured
/// on another GPU (`make_table.py --write-table-file FILE`): a line
/// `k K1 K2 ...`, then one line `N S1 S2 ...` per N bucket (a strategy per
/// k), `#` comments. A file that cannot be read or parsed throws Error
/// naming the file and line.
Select best_strategy(int64_t n, int k, int devices = 1);

/// The table in use, as the text best_strategy() would parse (for JSON
/// reports and tests).
std::string table_text();

}  // namespace manifold::gpu::select
