#pragma once
// How the engine cuts the work to fit a device memory budget: tile sizes,
// whether every row stays on the device or row blocks stream from host
// memory, and the bytes each buffer takes.
#include <cstdint>
#include <string>

namespace manifold::gpu {

struct TilePlan {
  int T = 0;             ///< tile height: rows of a row block (multiple of 128)
  int W = 0;             ///< tile width: columns per tile (a multiple of T)
  bool resident = true;  ///< all rows on the device; otherwise blocks stream through slots
  bool fused = false;    ///< dot products by the fused kernel (no tile buffers) instead of cuBLAS
  int sets = 2;          ///< candidate sets the tiles take in turn (device_engine.h)
  /// Streaming: the panel's row blocks + 2. The device holds the panel and
  /// two column windows of W / T consecutive blocks each (one being read,
  /// the next arriving): slots - 2 + 2 W / T blocks.
  int slots = 0;
  uint64_t budget = 0;                     ///< bytes the plan may use on each device
  uint64_t bytes = 0;                      ///< bytes it uses during the tile loop (peak)
  uint64_t final_bytes = 0;                ///< bytes of the final merge and refinement
  uint64_t workspace = 0;                  ///< cuBLAS workspace
  int64_t blocks() const;                  ///< row blocks of n rows
  int window() const { return W / T; }     ///< streaming: column blocks a tile spans
  int panel() const { return slots - 2; }  ///< streaming: row blocks the panel holds
  int64_t n = 0, d = 0;
  int k = 0;                                               ///< list capacity per row
  int pending = 0;                                         ///< each row's pending room (ListsView); 0: none
  uint64_t list_bytes = 0, loop_bytes = 0, row_bytes = 0;  ///< parts of `bytes`, for reports
};

struct PlanRequest {
  int64_t n = 0, d = 0;
  int k = 0;                 ///< list capacity per row (candidates kept; >= the k asked for)
  int k_out = 0;             ///< neighbours in the result (0: k)
  uint64_t budget = 0;       ///< bytes allowed per device
  int devices = 1;           ///< devices sharing the work (device 0 merges their lists)
  bool fused = false;        ///< the fused kernel computes the dot products (no tile buffers)
  size_t shared_memory = 0;  ///< the device's opt-in shared memory per block
  /// Each row's pending room asked for (block-path merges): granted where a
  /// resident plan of any tile shape fits with it (every shape is tried with
  /// it before any without it); resident plans that fit only without it,
  /// and streamed plans, take none.
  int pending = 0;
  std::string tile_override;  ///< "TxW" (Settings::tile, tests), honoured when it fits
};

/// The largest tiles that fit, preferring all rows resident. Throws Error
/// (one line) when even the smallest streaming plan exceeds the budget.
TilePlan plan_tiles(const PlanRequest& r);

/// A resident cuBLAS plan of tiles T x W for a paper strategy's selection
/// (device_engine.h TileSelection): two tile buffers and the strategy's
/// `selection_bytes` instead of the engine's candidate sets; `bytes` and
/// `final_bytes` as plan_tiles counts them. The caller compares them with
/// r.budget (a strategy refuses what does not fit rather than stream).
TilePlan plan_selection_tiles(const PlanRequest& r, int T, int W, uint64_t selection_bytes);

/// Bytes of the per-row lists: dist + index per entry, fill + bound per row.
uint64_t list_bytes(int64_t n, int k);
/// Bytes of the rows' pending room: dist + index per entry, fill per row.
uint64_t pending_bytes(int64_t n, int room);

}  // namespace manifold::gpu
