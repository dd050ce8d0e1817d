#include "tile_plan.h"

#include <algorithm>
#include <cstdio>
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
// capacity W, W columns of capacity T) with their counters: two, three for
// the fused kernel (device_engine.h).
uint64_t loop_bytes(int T, int W, bool fused) {
  const uint64_t t = static_cast<uint64_t>(T), w = static_cast<uint64_t>(W);
  return (fused ? 0 : 2 * t * w * 4) + (fused ? kFusedCandidateSets : 2) * (2 * t * w * 8 + (t + w) * 8) + 128;
}

}  // namespace

int64_t TilePlan::blocks() const { return (n + T - 1) / T; }

uint64_t list_bytes(int64_t n, int k) {
  return static_cast<uint64_t>(n) * static_cast<uint64_t>(k) * 8 + static_cast<uint64_t>(n) * 8;
}

TilePlan plan_tiles(const PlanRequest& r) {
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
  int oT = 0, oW = 0;
  if (!r.tile_override.empty() && std::sscanf(r.tile_override.c_str(), "%dx%d", &oT, &oW) == 2 && oT >= 128 &&
      oT % 128 == 0 && oW >= oT && oW % oT == 0)
    shapes.insert(shapes.begin(), {oT, oW});

  const uint64_t n = static_cast<uint64_t>(r.n), d = static_cast<uint64_t>(r.d);
  const uint64_t lists = list_bytes(r.n, r.k);
  const uint64_t ws = workspace_for(r.budget);
  const uint64_t nmax = round_up(n, 128);
  // Device 0 also holds the other devices' lists while merging them, then the
  // int64 + float output of the refinement.
  const uint64_t merge_extra = r.devices > 1 ? lists : 0;
  // The final step's result (int64 index + float distance), per-row status
  // and bound for the rescan. (The rescan's own buffers, ~100 MB at most,
  // are taken when needed; without room for them its rows go to the scan.)
  const uint64_t out = n * static_cast<uint64_t>(r.k_out > 0 ? r.k_out : r.k) * 12 + n * 8;

  auto fits_shared = [&](int W) { return merge_shared_bytes(r.k, W) <= r.shared_memory; };

  for (bool resident : {true, false}) {
    // Streaming tiles are square (one row block against one column block);
    // 4096 x 4096 halves the tiles of 2048 x 2048 (fewer filter and merge
    // launches, a more efficient GEMM) when the budget has room.
    std::vector<std::pair<int, int>> tried = shapes;
    if (!resident) tried.insert(tried.begin() + (oT > 0 ? 1 : 0), {4096, 4096});
    for (auto [T0, W0] : tried) {
      const int T = static_cast<int>(std::min<uint64_t>(T0, nmax));
      const int W = static_cast<int>(std::min<uint64_t>(resident ? W0 : T, round_up(n, T)));
      if (!fits_shared(std::max(T, W))) continue;
      TilePlan p;
      p.n = r.n, p.d = r.d, p.k = r.k;
      p.T = T, p.W = W, p.resident = resident, p.fused = r.fused, p.budget = r.budget, p.workspace = ws;
      // Streaming keeps every row's norm (n floats) for the final step.
      // The fused kernel also keeps every block transposed (dpad x T floats).
      const uint64_t tposed = r.fused ? static_cast<uint64_t>(T) * static_cast<uint64_t>(fused_dpad(r.d)) * 4 : 0;
      const uint64_t blocks_all = (n + T - 1) / T;
      const uint64_t data = resident ? n * d * 4 + n * 4 + blocks_all * tposed : n * 4;
      const uint64_t loop = loop_bytes(T, W, r.fused);
      const uint64_t slot_bytes = static_cast<uint64_t>(T) * (d + 1) * 4 + tposed;
      if (!resident) {
        // As many slots as the budget leaves (at least 4, at most every
        // block): a larger panel means each streamed block serves more tiles.
        const uint64_t fixed = lists + data + loop + ws;
        const int64_t blocks = static_cast<int64_t>((n + T - 1) / T);
        const uint64_t room = r.budget > fixed ? (r.budget - fixed) / slot_bytes : 0;
        p.slots = static_cast<int>(std::clamp<int64_t>(static_cast<int64_t>(std::min<uint64_t>(room, INT32_MAX)), 4,
                                                       std::max<int64_t>(4, blocks)));
      }
      const uint64_t slots = resident ? 0 : static_cast<uint64_t>(p.slots) * slot_bytes;
      p.bytes = lists + data + slots + loop + ws;
      p.final_bytes = lists + data + ws + (resident ? std::max(out, merge_extra) : merge_extra);
      p.list_bytes = lists;
      p.loop_bytes = loop;
      p.row_bytes = resident ? n * d * 4 + n * 4 + blocks_all * tposed : slots;
      if (std::max(p.bytes, p.final_bytes) <= r.budget) return p;
    }
  }
  const uint64_t least = lists + n * 4 +
                         4 * 128 * (d + 1 + (r.fused ? static_cast<uint64_t>(fused_dpad(r.d)) : 0)) * 4 +
                         loop_bytes(128, 128, r.fused) + workspace_for(0) + merge_extra;
  throw Error("GPU memory budget of " + format_bytes(static_cast<double>(r.budget)) +
              " is too small for N=" + std::to_string(r.n) + ", k=" + std::to_string(r.k_out > 0 ? r.k_out : r.k) +
              ": the neighbour lists alone take " + format_bytes(static_cast<double>(lists)) +
              " and the smallest plan needs " + format_bytes(static_cast<double>(least)) +
              " (raise --gpu-memory or lower -k)");
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
