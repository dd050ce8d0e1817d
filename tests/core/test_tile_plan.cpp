// The tile plan (gpu/tile_plan.cpp), a CUDA-free host function: no device
// and no nvcc needed, so these run in CI (tests/CMakeLists.txt compiles the
// plan in where the GPU library is not built). The tile width follows N, for
// the fused kernel and cuBLAS alike (wider tiles where the strips are long;
// bench/gpu/RESULTS.md), every plan stays within its budget, a tight budget
// falls back to narrower tiles, then to streaming, and streamed tiles span
// windows of column blocks.
#include <gtest/gtest.h>

#include <algorithm>

#include "tile_plan.h"

using namespace manifold::gpu;

namespace {

PlanRequest request(int64_t n, int64_t d, bool fused, uint64_t budget) {
  PlanRequest r;
  r.n = n, r.d = d, r.k = 36, r.budget = budget, r.fused = fused;
  r.shared_memory = 227 * 1024;  // an H100's or H200's opt-in shared memory per block
  return r;
}

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(TilePlan, FusedTilesWidenWithN) {
  struct Case {
    int64_t n;
    int W;
  };
  for (Case c : {Case{100000, 8192}, Case{262143, 8192}, Case{262144, 16384}, Case{524287, 16384}, Case{524288, 32768},
                 Case{1000000, 32768}}) {
    const TilePlan p = plan_tiles(request(c.n, 128, true, 64 * kGiB));
    EXPECT_TRUE(p.resident) << c.n;
    EXPECT_EQ(p.T, 2048) << c.n;
    EXPECT_EQ(p.W, c.W) << "N = " << c.n;
    EXPECT_LE(std::max(p.bytes, p.final_bytes), p.budget);
  }
  // The cuBLAS path widens too, with 12 tiles in the first strip: 2048 x 4096
  // up to N = 98303, then 8192, 16384 and 32768 columns.
  for (Case c : {Case{98303, 4096}, Case{98304, 8192}, Case{196607, 8192}, Case{196608, 16384}, Case{393215, 16384},
                 Case{393216, 32768}, Case{1000000, 32768}}) {
    const TilePlan p = plan_tiles(request(c.n, 1024, false, 64 * kGiB));
    EXPECT_TRUE(p.resident) << c.n;
    EXPECT_EQ(p.T, 2048) << c.n;
    EXPECT_EQ(p.W, c.W) << "cuBLAS, N = " << c.n;
    EXPECT_LE(std::max(p.bytes, p.final_bytes), p.budget);
  }
  // A budget just under the widest cuBLAS plan's need takes the next width.
  const TilePlan widest = plan_tiles(request(1000000, 1024, false, 64 * kGiB));
  const TilePlan next = plan_tiles(request(1000000, 1024, false, std::max(widest.bytes, widest.final_bytes) - 1));
  EXPECT_TRUE(next.resident);
  EXPECT_EQ(next.W, 16384);
  // Small N: one tile covers the rows.
  const TilePlan small = plan_tiles(request(1000, 128, true, 64 * kGiB));
  EXPECT_EQ(small.T, 1024);
  EXPECT_EQ(small.W, 1024);
}

TEST(TilePlan, TightBudgetsFallBackToNarrowerTilesThenStreaming) {
  // At N = 1M the 2048 x 32768 plan's candidate slots take ~2 GB: a budget
  // just under its need takes the next width down, and so on.
  const TilePlan wide = plan_tiles(request(1000000, 128, true, 64 * kGiB));
  ASSERT_EQ(wide.W, 32768);
  const TilePlan mid = plan_tiles(request(1000000, 128, true, std::max(wide.bytes, wide.final_bytes) - 1));
  EXPECT_TRUE(mid.resident);
  EXPECT_EQ(mid.W, 16384);
  EXPECT_LE(std::max(mid.bytes, mid.final_bytes), mid.budget);
  const TilePlan narrow = plan_tiles(request(1000000, 128, true, std::max(mid.bytes, mid.final_bytes) - 1));
  EXPECT_EQ(narrow.W, 8192);
  // Less than the rows themselves: the rows stream, each tile a panel block
  // against a window of whole column blocks.
  const TilePlan streamed = plan_tiles(request(1000000, 128, true, wide.row_bytes / 2));
  EXPECT_FALSE(streamed.resident);
  EXPECT_EQ(streamed.W % streamed.T, 0);
  EXPECT_GE(streamed.panel(), 2);
  EXPECT_LE(std::max(streamed.bytes, streamed.final_bytes), streamed.budget);
  // An override that fits is honoured.
  PlanRequest r = request(1000000, 128, true, 64 * kGiB);
  r.tile_override = "1024x8192";
  const TilePlan forced = plan_tiles(r);
  EXPECT_EQ(forced.T, 1024);
  EXPECT_EQ(forced.W, 8192);
}

// Streamed tiles: the largest tile whose panel needs at most twice the
// fewest passes over the later blocks. At N = 1M, d = 256 a quarter of the
// rows' room takes 4096 x 4096 (6 passes; 2048 x 2048 would take 3); less
// room, 2048-row blocks against windows of two column blocks; less still,
// one.
TEST(TilePlan, StreamedTilesTakeTheLargestWithinTwiceTheFewestPasses) {
  struct Case {
    uint64_t budget;
    int T, W;
  };
  for (Case c : {Case{1300000000, 4096, 4096}, Case{1000000000, 2048, 4096}, Case{700000000, 2048, 2048}}) {
    const TilePlan p = plan_tiles(request(1000000, 256, true, c.budget));
    EXPECT_FALSE(p.resident);
    EXPECT_EQ(p.T, c.T) << c.budget;
    EXPECT_EQ(p.W, c.W) << c.budget;
    EXPECT_EQ(p.sets, 2);
    EXPECT_GE(p.panel(), 2);
    EXPECT_LE(std::max(p.bytes, p.final_bytes), p.budget);
  }
  // An override that fits is honoured, windows included.
  PlanRequest r = request(1000000, 128, true, 1000000000);
  r.tile_override = "512x1536";
  const TilePlan forced = plan_tiles(r);
  EXPECT_FALSE(forced.resident);
  EXPECT_EQ(forced.T, 512);
  EXPECT_EQ(forced.W, 1536);
  EXPECT_EQ(forced.window(), 3);
  // A malformed override is ignored on both paths: the plan is the one
  // without it (rows a multiple of 128, the kernels' block).
  r.tile_override = "";
  const TilePlan plain = plan_tiles(r);
  for (const char* bad : {"100x200", "256x300", "512x256", "x", "1024"}) {
    r.tile_override = bad;
    const TilePlan p = plan_tiles(r);
    EXPECT_EQ(p.T, plain.T) << bad;
    EXPECT_EQ(p.W, plain.W) << bad;
    EXPECT_EQ(p.slots, plain.slots) << bad;
  }
}

// The lists' pending room (block-path merges keep candidates aside between
// merges): granted with the rows resident, counted in the loop's bytes; a
// budget that holds the resident plan only without it drops the room rather
// than stream the rows; streamed plans take none.
TEST(TilePlan, PendingRoomIsTheLoopsWhereItFits) {
  PlanRequest r = request(1000000, 64, true, 64 * kGiB);
  r.k = 1152, r.k_out = 1000;
  const TilePlan bare = plan_tiles(r);
  r.pending = 256;
  const TilePlan with_room = plan_tiles(r);
  ASSERT_TRUE(with_room.resident);
  EXPECT_EQ(with_room.pending, 256);
  EXPECT_EQ(pending_bytes(1000000, 256), uint64_t{1000000} * 256 * 8 + 1000000 * 4);
  EXPECT_EQ(with_room.T, bare.T);
  EXPECT_EQ(with_room.W, bare.W);
  EXPECT_EQ(with_room.loop_bytes, bare.loop_bytes + pending_bytes(1000000, 256));
  EXPECT_EQ(with_room.bytes, bare.bytes + pending_bytes(1000000, 256));
  EXPECT_LE(std::max(with_room.bytes, with_room.final_bytes), with_room.budget);
  // Room for the widest resident plan, not for any resident plan and a
  // pending room of 4096 entries a row (33 GB).
  r.budget = std::max(bare.bytes, bare.final_bytes);
  r.pending = 4096;
  const TilePlan tight = plan_tiles(r);
  EXPECT_EQ(tight.W, bare.W);
  EXPECT_TRUE(tight.resident);
  EXPECT_EQ(tight.pending, 0);
  EXPECT_LE(std::max(tight.bytes, tight.final_bytes), tight.budget);
  // Less than the rows: streamed, no room.
  r.budget = bare.list_bytes + bare.row_bytes / 2 + kGiB;
  const TilePlan streamed = plan_tiles(r);
  EXPECT_FALSE(streamed.resident);
  EXPECT_EQ(streamed.pending, 0);
  EXPECT_EQ(pending_bytes(1000000, 0), 0u);
}

}  // namespace
