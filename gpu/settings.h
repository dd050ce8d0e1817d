#pragma once
// Every setting of the GPU library that is not a command-line option, in one
// place, read from the environment once (docs/ARCHITECTURE.md lists every
// MANIFOLD_* variable). Two kinds:
//
// * From the environment: two traces and a selection table measured
//   elsewhere.
// * For tests only (no variable): overrides that make small inputs reach
//   paths that the defaults reach only on large ones (many tiles, no room in
//   the lists, the block kernels, the other dot-product kernel), set
//   in-process with ScopedSettings; the GPU test programs take
//   --gemm=fused|cublas to run a whole suite on one kernel.
//
// Plain C++17: kernels' launchers (*.cu) read it too.
#include <string>

#include "manifold/settings_store.h"

namespace manifold::gpu {

/// Which kernel computes a tile's dot products.
enum class GemmPath {
  Auto,       ///< the fused kernel where d <= kFusedMaxD (kSplitFusedMaxD: exact's split), else cuBLAS + filter
  Fused,      ///< the fused kernel for every d
  FusedFfma,  ///< the fused kernel for every d, exact's strips by FFMA (as before compute capability 8.0)
  Cublas,     ///< cuBLAS SGEMM + the bound filter for every d
};

/// Which quick-select kernel runs (select/quick.cu).
enum class QuickChoice {
  Auto,  ///< a warp a row below kQuickBlockMinK list entries, else a block a row
  Warp,
  Block,
};

struct Settings {
  // ---- from the environment ----
  bool timeline = false;         ///< MANIFOLD_GPU_TIMELINE=1: per-tile CUDA events in the graph's JSON
  bool chebyshev_trace = false;  ///< MANIFOLD_CHEB_TRACE (set, not "0"): the GPU eigensolver's steps on stderr
  std::string select_table;      ///< MANIFOLD_SELECT_TABLE=FILE: replaces the built-in `auto` table

  // ---- for tests only ----
  GemmPath gemm = GemmPath::Auto;  ///< every tile's dot products by one kernel, whatever d
  std::string tile;                ///< "TxW": the engine's first tile shape, where it fits (tile_plan.h)
  std::string select_tile;         ///< "TxW": the papers' strategies' tile (select/paper_strategies.cpp)
  int slack = -1;                  ///< the lists' room beyond k; -1: the rule of list_slack()
  bool final_beside_loop = true;   ///< false: one GPU's final step waits for the whole loop
  int final_piece_rows = 0;        ///< the final step's rows a piece beside the loop; 0: the rule of piece_rows()
  bool certify_by_warp = true;     ///< false: the block certification kernel for every list size
  QuickChoice quick = QuickChoice::Auto;
  /// Large-k lists' prior bound (device_engine.h): columns sampled, -1 the
  /// rule of prior_bound_plan(), 0 none; and the rank taken among them, -1
  /// the rule (a small rank makes the bound too tight: short lists, which the
  /// rescan and the exact scan must rank).
  int prior_sample = -1;
  int prior_rank = -1;
  /// Block-path lists' pending room (ListsView): entries a row keeps aside
  /// between merges, -1 the default (kPendingRoom), 0 none.
  int pending_room = -1;
  bool spmm_cusparse = false;  ///< true: cuSPARSE's SpMM (CSR_ALG2) for every block width
  bool translate = true;       ///< false: the rows keep their place (core's exact_translation not applied)
};

/// The settings of this process: the environment's, read on first use, or
/// what a ScopedSettings put in place. UsageError naming the variable for a
/// value it does not take (and again at every later call).
const Settings& settings();

/// The environment's settings (`lookup` is std::getenv, or a test's table).
Settings settings_from_environment(const char* (*lookup)(const char*));

/// The store settings() reads (the environment's once, or an override's).
SettingsStore<Settings>& settings_store();

/// Replaces the process's settings for one scope (tests; not thread-safe:
/// set them before any build starts).
class ScopedSettings : public ScopedOverride<Settings, settings_store> {
 public:
  using ScopedOverride::ScopedOverride;
};

}  // namespace manifold::gpu
