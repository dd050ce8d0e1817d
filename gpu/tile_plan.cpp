#include "tile_plan.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "impl/sizes.h"
#include "manifold/error.h"
#include "utils/format.h"

namespace manifold::gpu {

namespace {

uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

uint64_t workspace_for(uint64_t budget) {
  return std::clamp<uint64_t>(budget / 16, uint64_t{1} << 20, uint64_t{32} << 20);
}

// Tile buffers (two, so a GEMM can run while the previous tile is filtered;
// none for the fused kernel), and the sets of candidate slots (T rows of
// capacity W, W columns of capacity T) with their counters.
uint64_t loop_bytes(int T, int W, bool fused, int sets) {
  const uint64_t t = static_cast<uint64_t>(T), w = static_cast<uint64_t>(W);
  return (fused ? 0 : 2 * t * w * 4) + static_cast<uint64_t>(sets) * (2 * t * w * 8 + (t + w) * 8) + 128;
}

/// Candidate sets: four for the fused kernel with every row resident (tile
/// t's kernel waits for tile t - 4's merge), two otherwise. Streamed, the
/// memory of two more (16 T W bytes each) is better spent on wider tiles or
/// a larger panel: with two, the loop measured as fast as with four
/// (bench/gpu/RESULTS.md).
int candidate_sets(bool fused, bool resident) { return fused && resident ? kFusedCandidateSets : 2; }

/// Widest column window (blocks per streamed tile) tried.
constexpr int kMaxWindow = 4;

}  // namespace

int64_t TilePlan::blocks() const { return (n + T - 1) / T; }

uint64_t list_bytes(int64_t n, int k) {
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(k) * 8 + static_cast<uint64_t>(n) * 8;
}

uint64_t pending_bytes(int64_t n, int room) {
  if (room <= 0) return 0;
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(room) * 8 + static_cast<uint64_t>(n) * 4;
}

namespace {

/// A "TxW" tile override (Settings::tile, tests): T a multiple of 128, W a
/// multiple of T; {0, 0} where absent or malformed.
std::pair<int, int> parse_tile_override(const std::string& text) {
  int T = 0, W = 0;
  if (!text.empty() && std::sscanf(text.c_str(), "%dx%d", &T, &W) == 2 && T >= 128 && T % 128 == 0 && W >= T &&
      W % T == 0)
    return {T, W};
  return {0, 0};
}

/// The resident tile shapes in the order they are tried, largest first.
std::vector<std::pair<int, int>> resident_shapes(const PlanRequest& r, std::pair<int, int> tile_override) {
  std::vector<std::pair<int, int>> shapes = {{2048, 4096}, {2048, 2048}, {1024, 2048}, {1024, 1024}, {512, 1024},
                                             {512, 512},   {256, 512},   {256, 256},   {128, 256},   {128, 128}};
  // The fused kernel launches one block per 128 x 128 entries: wider tiles
  // leave less of the last wave idle and need fewer launches and merges. As
  // wide as 32768 columns where the first strip still has 16 tiles: the
  // widest measured fastest at N = 1M; at N = 100k, where a tile of 32768
  // columns is a third of a strip and its candidate slots take longer to set
  // up, 8192-16384 (bench/gpu/RESULTS.md).
  if (r.fused) {
    shapes.insert(shapes.begin(), {2048, 8192});
    for (int W : {16384, 32768})
      if (static_cast<uint64_t>(r.n) >= 16 * static_cast<uint64_t>(W)) shapes.insert(shapes.begin(), {2048, W});
  }
  // cuBLAS + filter (d > 256, or no TF32 mma for fast-exact): each tile's filter and
  // merge share the GPU with the next tile's GEMM, and their cost per tile
  // falls with fewer, wider tiles (the filter reads a tile beyond L2 at the
  // HBM rate). As wide as 32768 columns where the first strip still has 12
  // tiles: at (200k, 4096) the loop was fastest at 16384-32768, at
  // (100k, 1024) at 8192 (bench/gpu/RESULTS.md).
  if (!r.fused)
    for (int W : {8192, 16384, 32768})
      if (static_cast<uint64_t>(r.n) >= 12 * static_cast<uint64_t>(W)) shapes.insert(shapes.begin(), {2048, W});
  if (tile_override.first > 0) shapes.insert(shapes.begin(), tile_override);
  return shapes;
}

/// Bytes every plan of one request holds whatever its tiles.
struct FixedBytes {
  uint64_t lists = 0;      ///< the per-row lists (list_bytes)
  uint64_t workspace = 0;  ///< cuBLAS workspace
  /// Device 0 also holds the other devices' lists while merging them, then
  /// the int64 + float output of the refinement.
  uint64_t merge_extra = 0;
  /// The final step's result (int64 index + float distance), per-row status
  /// and bound for the rescan. (The rescan's own buffers, ~100 MB at most,
  /// are taken when needed; without room for them its rows go to the scan.)
  uint64_t out = 0;
};

FixedBytes fixed_bytes(const PlanRequest& r) {
  const uint64_t n = static_cast<uint64_t>(r.n);
  FixedBytes f;
  f.lists = list_bytes(r.n, r.k);
  f.workspace = workspace_for(r.budget);
  f.merge_extra = r.devices > 1 ? f.lists : 0;
  f.out = n * static_cast<uint64_t>(r.k_out > 0 ? r.k_out : r.k) * 12 + n * 8;
  return f;
}

/// One plan of tiles T0 x W0 (clipped to the rows; streaming: W0 = window
/// * T0); nullopt where it does not fit the budget or the merge's shared
/// memory.
std::optional<TilePlan> plan_of_shape(const PlanRequest& r, const FixedBytes& f, int T0, int W0, bool resident) {
  const uint64_t n = static_cast<uint64_t>(r.n), d = static_cast<uint64_t>(r.d);
  const int T = static_cast<int>(std::min<uint64_t>(T0, round_up(n, 128)));
  const int W = static_cast<int>(std::min<uint64_t>(W0, round_up(n, T)));
  if (merge_shared_bytes(r.k, std::max(T, W)) > r.shared_memory) return std::nullopt;
  TilePlan p;
  p.n = r.n, p.d = r.d, p.k = r.k;
  p.T = T, p.W = W, p.resident = resident, p.fused = r.fused, p.budget = r.budget, p.workspace = f.workspace;
  p.sets = candidate_sets(r.fused, resident);
  // Streaming keeps every row's norm (n floats) for the final step.
  // The fused kernel also keeps every block transposed (dpad x T floats).
  const uint64_t tposed = r.fused ? static_cast<uint64_t>(T) * static_cast<uint64_t>(fused_dpad(r.d)) * 4 : 0;
  const uint64_t blocks_all = (n + T - 1) / T;
  const uint64_t data = resident ? n * d * 4 + n * 4 + blocks_all * tposed : n * 4;
  // The pending room is the loop's (freed with its buffers), resident only.
  p.pending = resident ? r.pending : 0;
  const uint64_t loop = loop_bytes(T, W, r.fused, p.sets) + pending_bytes(r.n, p.pending);
  const uint64_t slot_bytes = static_cast<uint64_t>(T) * (d + 1) * 4 + tposed;
  uint64_t slots = 0;
  if (!resident) {
    // The two column windows, and as many panel blocks as the budget
    // leaves (at least 2, at most every block): a larger panel means each
    // streamed block serves more tiles.
    const uint64_t windows = 2 * static_cast<uint64_t>(W / T);
    const uint64_t fixed = f.lists + data + loop + f.workspace + windows * slot_bytes;
    const int64_t blocks = static_cast<int64_t>(blocks_all);
    const uint64_t room = r.budget > fixed ? (r.budget - fixed) / slot_bytes : 0;
    const int64_t panel = std::clamp<int64_t>(static_cast<int64_t>(std::min<uint64_t>(room, INT32_MAX - 2)), 2,
                                              std::max<int64_t>(2, blocks));
    p.slots = static_cast<int>(panel + 2);
    slots = (static_cast<uint64_t>(panel) + windows) * slot_bytes;
  }
  p.bytes = f.lists + data + slots + loop + f.workspace;
  p.final_bytes = f.lists + data + f.workspace + (resident ? std::max(f.out, f.merge_extra) : f.merge_extra);
  p.list_bytes = f.lists;
  p.loop_bytes = loop;
  p.row_bytes = resident ? n * d * 4 + n * 4 + blocks_all * tposed : slots;
  if (std::max(p.bytes, p.final_bytes) > r.budget) return std::nullopt;
  return p;
}

/// Streaming: of the heights (4096 rows, then the resident shapes') and
/// windows of 1, 2 or 4 consecutive column blocks per tile, the largest tile
/// (fewer kernel launches and merges) among the plans whose panel needs at
/// most twice the fewest passes over the later blocks (each pass streams
/// them all again); nullopt where none fits.
std::optional<TilePlan> best_streamed_plan(const PlanRequest& r, const FixedBytes& f,
                                           const std::vector<std::pair<int, int>>& shapes) {
  std::vector<int> heights = {4096};
  for (auto [T, W] : shapes)
    if (std::find(heights.begin(), heights.end(), T) == heights.end()) heights.push_back(T);
  std::vector<TilePlan> streamed;
  for (int T : heights)
    for (int m = 1; m <= kMaxWindow; m *= 2)
      if (auto p = plan_of_shape(r, f, T, m * T, false)) streamed.push_back(*p);
  if (streamed.empty()) return std::nullopt;
  auto passes = [&](const TilePlan& p) {
    const int64_t strips = (p.blocks() + r.devices - 1) / std::max(1, r.devices);
    return (strips + p.panel() - 1) / p.panel();
  };
  int64_t fewest = INT64_MAX;
  for (const TilePlan& p : streamed) fewest = std::min(fewest, passes(p));
  const TilePlan* best = nullptr;
  for (const TilePlan& p : streamed) {
    if (passes(p) > 2 * fewest) continue;
    const uint64_t entries = static_cast<uint64_t>(p.T) * static_cast<uint64_t>(p.W);
    const uint64_t most = best ? static_cast<uint64_t>(best->T) * static_cast<uint64_t>(best->W) : 0;
    if (!best || entries > most || (entries == most && passes(p) < passes(*best))) best = &p;
  }
  return *best;
}

/// The one-line refusal when not even the smallest streaming plan fits.
Error budget_too_small(const PlanRequest& r, const FixedBytes& f) {
  const uint64_t d = static_cast<uint64_t>(r.d);
  const uint64_t least = f.lists + static_cast<uint64_t>(r.n) * 4 +
                         4 * 128 * (d + 1 + (r.fused ? static_cast<uint64_t>(fused_dpad(r.d)) : 0)) * 4 +
                         loop_bytes(128, 128, r.fused, candidate_sets(r.fused, false)) + workspace_for(0) +
                         f.merge_extra;
  return Error("GPU memory budget of " + format_bytes(static_cast<double>(r.budget)) +
               " is too small for N=" + std::to_string(r.n) + ", k=" + std::to_string(r.k_out > 0 ? r.k_out : r.k) +
               ": the neighbour lists alone take " + format_bytes(static_cast<double>(f.lists)) +
               " and the smallest plan needs " + format_bytes(static_cast<double>(least)) +
               " (raise --gpu-memory or lower -k)");
}

}  // namespace

TilePlan plan_tiles(const PlanRequest& r) {
  const std::pair<int, int> tile_override = parse_tile_override(r.tile_override);
  const std::vector<std::pair<int, int>> shapes = resident_shapes(r, tile_override);
  const FixedBytes f = fixed_bytes(r);
  for (auto [T, W] : shapes)
    if (auto p = plan_of_shape(r, f, T, W, true)) return *p;
  // Resident without the pending room before streaming the rows.
  PlanRequest bare = r;
  bare.pending = 0;
  if (r.pending > 0)
    for (auto [T, W] : shapes)
      if (auto p = plan_of_shape(bare, f, T, W, true)) return *p;
  // Streaming: an override that fits, else the best streamed plan.
  if (tile_override.first > 0)
    if (auto p = plan_of_shape(bare, f, tile_override.first, tile_override.second, false)) return *p;
  if (auto p = best_streamed_plan(bare, f, shapes)) return *p;
  throw budget_too_small(bare, f);
}

TilePlan plan_selection_tiles(const PlanRequest& r, int T, int W, uint64_t selection_bytes) {
  const uint64_t n = static_cast<uint64_t>(r.n), d = static_cast<uint64_t>(r.d);
  TilePlan p;
  p.n = r.n, p.d = r.d, p.k = r.k;
  p.T = T, p.W = W, p.resident = true, p.fused = false, p.budget = r.budget, p.workspace = workspace_for(r.budget);
  p.list_bytes = list_bytes(r.n, r.k);
  p.row_bytes = n * d * 4 + n * 4;
  p.loop_bytes = 2 * static_cast<uint64_t>(T) * static_cast<uint64_t>(W) * 4 + selection_bytes + 128;
  p.bytes = p.list_bytes + p.row_bytes + p.loop_bytes + p.workspace;
  const uint64_t out = n * static_cast<uint64_t>(r.k_out > 0 ? r.k_out : r.k) * 12 + n * 8;
  p.final_bytes = p.list_bytes + p.row_bytes + p.workspace + out;
  return p;
}

}  // namespace manifold::gpu
