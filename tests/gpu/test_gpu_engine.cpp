// The GPU engine's machinery: memory budgets that force many tiles and
// streaming from host memory, several devices, bad input, cancellation
// between tiles, the CLI, and a small run for compute-sanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "device_context.h"
#include "device_engine.h"
#include "final_step.h"
#include "settings.h"
#include "tile_plan.h"
#include "impl/sizes.h"
#include "utils/resources.h"
#include "gpu_test_util.h"
#include "manifold/error.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "manifold/graph_io.h"
#include "manifold/knn.h"
#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace gpu_tests;

namespace {

// Device bytes of the candidate lists for k (exact precision keeps k +
// max(16, k/8) candidates per row, see gpu_knn_backend.cpp), plus the
// per-row status and bound of the final step.
uint64_t lists_bytes(int64_t n, int k) {
  const int cap = k + std::max(16, k / 8);
  return static_cast<uint64_t>(n) * cap * 8 + static_cast<uint64_t>(n) * 16;
}

// The final step runs beside the loop with one GPU only (gpu_knn_backend.cpp,
// start_final_step): its tests name device 0, so hosts with more GPUs run them
// as written.
KnnParams on_one_gpu(int k, Metric m = Metric::Euclidean) {
  KnnParams p = params(k, m);
  p.devices = {0};
  return p;
}

// Every way of running the engine (tiles, streaming, devices) ranks by the
// same exact key, so graphs must be identical entry for entry.
void expect_same_graph(const KnnGraph& a, const KnnGraph& b, const Dataset& ds, const Reference& ref,
                       const std::string& what) {
  ASSERT_EQ(check_graph(b, ds, ref), "") << what;
  EXPECT_EQ(first_difference(a, b), "") << what;
}

TEST(GpuEngine, SmallBudgetManyResidentTiles) {
  REQUIRE_GPU();
  const int64_t n = 5000, d = 96;
  const int k = 32;
  Dataset ds = random_dataset(n, d, 2024);
  KnnGraph big = build("gpu", ds, params(k));
  KnnParams p = params(k);
  // Rows, lists and the result fit; the tiles get only a few megabytes.
  p.gpu_memory = lists_bytes(n, k) + n * (d + 1) * 4 + n * k * 12 + (3 << 20);
  KnnGraph small = build("gpu", ds, p);
  EXPECT_TRUE(small.extra["resident"].get<bool>());
  EXPECT_LT(small.extra["tile_rows"].get<int>(), 2048);
  EXPECT_GT(small.extra["tiles"].get<int>(), 50);
  EXPECT_LE(small.extra["planned_bytes"].get<uint64_t>(), p.gpu_memory);
  Reference ref = brute_force(ds, k, Metric::Euclidean, false);
  EXPECT_EQ(check_graph(big, ds, ref), "");
  expect_same_graph(big, small, ds, ref, "small budget vs default");
}

TEST(GpuEngine, StreamsRowsWhenTheyDoNotFit) {
  REQUIRE_GPU();
  const int64_t n = 6000, d = 96;
  const int k = 32;
  for (Metric m : {Metric::Euclidean, Metric::Cosine}) {
    Dataset ds = random_dataset(n, d, 99 + static_cast<int>(m));
    KnnGraph in_memory = build("gpu", ds, params(k, m));
    KnnParams p = params(k, m);
    // Less than the rows need: blocks must stream through a few slots.
    p.gpu_memory = lists_bytes(n, k) + n * d * 4 * 2 / 5 + (4 << 20);
    KnnGraph streamed = build("gpu", ds, p);
    EXPECT_FALSE(streamed.extra["resident"].get<bool>()) << "budget " << p.gpu_memory;
    EXPECT_GT(streamed.extra["h2d_bytes"].get<uint64_t>(), static_cast<uint64_t>(n * d * 4));
    Reference ref = brute_force(ds, k, m, false);
    EXPECT_EQ(check_graph(in_memory, ds, ref), "");
    expect_same_graph(in_memory, streamed, ds, ref, "streamed vs in memory, " + to_string(m));
  }
}

TEST(GpuEngine, StreamsPanelsPastManySlots) {
  REQUIRE_GPU();
  // 80 row blocks of 128 (the budget forces small tiles), slots for about a
  // quarter of them: several panels, each streaming the later blocks once.
  const int64_t n = 10240, d = 64;
  const int k = 16;
  Dataset ds = random_dataset(n, d, 515);
  KnnGraph in_memory = build("gpu", ds, params(k));
  KnnParams p = params(k);
  p.devices = {0};  // one device's budget (several add room to merge lists)
  p.gpu_memory = lists_bytes(n, k) + n * 4 + n * (d + 1) * 4 / 4 + (2 << 20);
  KnnGraph streamed = build("gpu", ds, p);
  EXPECT_FALSE(streamed.extra["resident"].get<bool>());
  EXPECT_GT(streamed.extra["slots"].get<int>(), 4);
  std::cout << "[ info ] panels: tile " << streamed.extra["tile_rows"] << ", slots " << streamed.extra["slots"]
            << ", copied " << streamed.extra["h2d_bytes"] << " bytes for " << n * d * 4 << " of rows\n";
  EXPECT_EQ(first_difference(in_memory, streamed), "");
  EXPECT_EQ(first_difference(in_memory, exact_reference(ds, k, Metric::Euclidean, false)), "");
}

// Streamed tiles span a window of consecutive column blocks: 79 blocks of
// 128 rows (the last short), windows of 3 blocks (the last short too), and
// panels of 25 blocks (43 on the cuBLAS path, which keeps no transposed
// copies), so windows that overlap a panel's own blocks start its tiles
// inside the window, and panels end inside windows.
TEST(GpuEngine, StreamsWideTilesThroughColumnWindows) {
  REQUIRE_GPU();
  const int64_t n = 10000, d = 64;
  const int k = 16;
  Dataset ds = random_dataset(n, d, 4242);
  WithSettings tile([](gpu::Settings& s) { s.tile = "128x384"; });
  KnnGraph in_memory = build("gpu", ds, params(k));
  KnnParams p = params(k);
  p.devices = {0};
  // The lists, every row's norm, the workspace, tile buffers and candidate
  // sets, and 22 blocks' room (rows, norm and transposed copy: 128 x
  // (2 d + 1) floats each) beyond that.
  p.gpu_memory = lists_bytes(n, k) + n * 4 + (3 << 20) + 22 * 128 * (2 * d + 1) * 4;
  KnnGraph streamed = build("gpu", ds, p);
  ASSERT_FALSE(streamed.extra["resident"].get<bool>()) << "budget " << p.gpu_memory;
  EXPECT_TRUE(streamed.extra.contains("early_ranges")) << "streamed rows certified beside the loop";
  EXPECT_EQ(streamed.extra["tile_rows"].get<int>(), 128);
  EXPECT_EQ(streamed.extra["tile_cols"].get<int>(), 384);
  const int panel = streamed.extra["panel_blocks"].get<int>();
  EXPECT_GE(panel, 4);
  EXPECT_LE(panel, 45) << "at least two panels";
  std::cout << "[ info ] windows: panel " << panel << " blocks, " << streamed.extra["tiles"] << " tiles, copied "
            << streamed.extra["h2d_bytes"] << " bytes for " << n * d * 4 << " of rows\n";
  EXPECT_EQ(first_difference(in_memory, streamed), "");
  EXPECT_EQ(first_difference(in_memory, exact_reference(ds, k, Metric::Euclidean, false)), "");
}

TEST(GpuEngine, SeveralDevicesGiveTheSameGraph) {
  REQUIRE_GPU();
  if (gpu::device_count() < 2) GTEST_SKIP() << "fewer than 2 CUDA devices: multi-GPU test skipped";
  Dataset ds = random_dataset(9000, 64, 8);
  Reference ref = brute_force(ds, 20, Metric::Euclidean, false);
  KnnParams one = params(20);
  one.devices = {0};
  KnnGraph a = build("gpu", ds, one);
  for (const char* precision : {"exact", "fast-exact"}) {
    // 128 x 256 tiles: 71 row blocks, so each device runs many strips beyond
    // its seeds (at most one seed tile a row block).
    WithSettings tile([](gpu::Settings& s) { s.tile = "128x256"; });
    KnnParams two = params(20);
    two.devices = {0, 1};
    two.precision = parse_precision(precision);
    KnnGraph b = build("gpu", ds, two);
    EXPECT_EQ(b.extra["devices"].size(), 2u);
    expect_same_graph(a, b, ds, ref, std::string("two devices vs one, ") + precision);
    for (auto& dev : b.extra["per_device"]) EXPECT_GT(dev["tiles"].get<uint64_t>(), 71u);
    // All visible devices by default.
    KnnParams all = params(20);
    all.precision = parse_precision(precision);
    KnnGraph c = build("gpu", ds, all);
    EXPECT_EQ(c.extra["devices"].size(), static_cast<size_t>(gpu::device_count()));
    expect_same_graph(a, c, ds, ref, std::string("all devices vs one, ") + precision);
  }
  // Two devices and a budget that streams the rows: still the same graph.
  KnnParams small = params(20);
  small.devices = {0, 1};
  small.gpu_memory = 2 * lists_bytes(9000, 20) + 9000 * 65 * 4 / 4 + (1 << 20);
  KnnGraph s = build("gpu", ds, small);
  EXPECT_FALSE(s.extra["resident"].get<bool>());
  expect_same_graph(a, s, ds, ref, "two devices, streamed, vs one in memory");
  // Near-duplicates spread over both devices' strips, with fallback rows.
  Dataset nd = near_duplicates(6000, 32, 9, 20, 60, 1e-6f);
  KnnParams nd1 = params(10);
  nd1.devices = {0};
  KnnParams nd2 = params(10);
  nd2.devices = {0, 1};
  nd2.precision = Precision::FastExact;
  KnnGraph x = build("gpu", nd, nd1);
  KnnGraph y = build("gpu", nd, nd2);
  // Clusters of 60 exceed exact's 26 candidates (rescanned) but not
  // fast-exact's 106 (certified): two different routes to one graph.
  EXPECT_GT(x.extra["uncertified_rows"].get<int64_t>(), 0);
  EXPECT_EQ(first_difference(x, y), "") << "near-duplicates, two devices fast-exact vs one exact";
}

TEST(GpuEngine, BadInputGivesOneClearLine) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(500, 8, 1);
  auto one_line = [](const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; };

  std::string e = gpu_error_of<UsageError>(ds, params(0));
  EXPECT_NE(e.find("-k 0"), std::string::npos) << e;
  e = gpu_error_of<UsageError>(ds, params(500));
  EXPECT_NE(e.find("between 1 and 499"), std::string::npos) << e;
  KnnParams p = params(5);
  p.devices = {97};
  e = gpu_error_of<UsageError>(ds, p);
  EXPECT_NE(e.find("GPU 97 does not exist"), std::string::npos) << e;

  Dataset big = random_dataset(20000, 4, 2);
  p = params(16385);
  e = gpu_error_of<UsageError>(big, p);
  EXPECT_NE(e.find("up to 16384"), std::string::npos) << e;
  p = params(1000);
  p.gpu_memory = 1 << 20;  // the lists alone need 160 MB
  e = gpu_error_of<Error>(big, p);
  EXPECT_NE(e.find("too small"), std::string::npos) << e;
  EXPECT_TRUE(one_line(e)) << e;

  // NaN in the data: no finite distances for that row.
  std::vector<float> v(ds.data(), ds.data() + ds.rows() * ds.cols());
  v[37 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
  Dataset nan_ds(500, 8, std::move(v));
  e = gpu_error_of<Error>(nan_ds, params(5));
  EXPECT_NE(e.find("row 37"), std::string::npos) << e;
  EXPECT_TRUE(one_line(e)) << e;

  // A zero row has no cosine distance: the message names it.
  std::vector<float> z(ds.data(), ds.data() + ds.rows() * ds.cols());
  for (int c = 0; c < 8; ++c) z[12 * 8 + c] = 0.f;
  Dataset zero_ds(500, 8, std::move(z));
  e = gpu_error_of<Error>(zero_ds, params(5, Metric::Cosine));
  EXPECT_NE(e.find("row 12"), std::string::npos) << e;

  // The device is still usable after all of that.
  KnnGraph g = build("gpu", ds, params(5));
  EXPECT_EQ(check_graph(g, ds, brute_force(ds, 5, Metric::Euclidean, false)), "");
}

// Cancels once the tile loop has reported progress.
class CancelAfterTiles : public ProgressSink {
 public:
  explicit CancelAfterTiles(std::atomic<bool>& flag) : flag_(flag) {}
  void report(const ProgressEvent& e) override {
    if (e.stage == "knn" && e.done >= 3) flag_ = true;
    if (e.stage == "knn") last_total = e.total;
  }
  uint64_t last_total = 0;

 private:
  std::atomic<bool>& flag_;
};

// A build of 20000 random rows with `p`, cancelled once the tile loop has
// reported three tiles (it must throw Cancelled); returns the loop's tile count.
uint64_t cancelled_build(KnnBackend& backend, const KnnParams& p) {
  Dataset ds = random_dataset(20000, 64, 4);
  std::atomic<bool> cancel{false};
  CancelAfterTiles sink(cancel);
  Progress progress(&sink, &cancel, 0.0);
  EXPECT_THROW(backend.build(ds, p, progress), Cancelled);
  return sink.last_total;
}

std::unique_ptr<KnnBackend> gpu_backend() {
  register_cpu_backend();
  gpu::register_gpu_backend();
  return make_backend("gpu");
}

TEST(GpuEngine, CancelsBetweenTiles) {
  REQUIRE_GPU();
  auto backend = gpu_backend();
  KnnParams p = params(10);
  p.gpu_memory = lists_bytes(20000, 10) + 20000 * 65 * 4 + 20000 * 10 * 12 + (6 << 20);  // many small tiles
  EXPECT_GT(cancelled_build(*backend, p), 10u);
  // Nothing is left behind on the device: the next build works.
  Progress quiet;
  KnnGraph g = backend->build(random_dataset(800, 8, 5), params(4), quiet);
  EXPECT_EQ(g.n, 800);
}

// MANIFOLD_GPU_TIMELINE=1 (Settings::timeline): every tile's kernel and merge
// and every block's upload by CUDA events, one row per tile in the graph's
// JSON, the build's host milestones, and the final step's ranges beside the
// loop, which cover every row once, in order (bench/gpu/timeline.py reads
// them); nothing of it without.
TEST(GpuEngine, TimelineRecordsEveryTile) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(1500, 24, 31);
  WithSettings tile([](gpu::Settings& s) { s.tile = "128x256"; });
  const KnnGraph plain = build("gpu", ds, on_one_gpu(8));
  EXPECT_FALSE(plain.extra["per_device"][0].contains("timeline"));
  EXPECT_FALSE(plain.extra.contains("timeline_host_events"));
  EXPECT_FALSE(plain.extra.contains("timeline_final_ranges"));
  WithSettings on([](gpu::Settings& s) { s.timeline = true; });
  const KnnGraph g = build("gpu", ds, on_one_gpu(8));
  EXPECT_EQ(check_graph(g, ds, brute_force(ds, 8, Metric::Euclidean, false)), "");
  const nlohmann::json& dev = g.extra["per_device"][0];
  ASSERT_TRUE(dev.contains("timeline")) << dev.dump();
  const nlohmann::json& tl = dev["timeline"];
  ASSERT_EQ(tl["tile_fields"][7], "gemm_start");
  ASSERT_GT(dev["tiles"].get<int64_t>(), 1);
  EXPECT_EQ(static_cast<int64_t>(tl["tiles"].size()), dev["tiles"].get<int64_t>());
  for (const nlohmann::json& t : tl["tiles"]) {
    EXPECT_LE(t[7].get<double>(), t[8].get<double>()) << t.dump();   // kernel start <= end
    EXPECT_LE(t[9].get<double>(), t[10].get<double>()) << t.dump();  // merge start <= end
  }
  EXPECT_FALSE(tl["uploads"].empty());

  const nlohmann::json& ev = g.extra["timeline_host_events"];
  ASSERT_TRUE(ev.is_object()) << g.extra.dump();
  EXPECT_LE(ev["final_step_started"].get<double>(), ev["loop_end"].get<double>()) << ev.dump();
  EXPECT_LE(ev["loop_end"].get<double>(), ev["final_end"].get<double>()) << ev.dump();
  EXPECT_LE(ev["result_allocated"].get<double>(), ev["final_end"].get<double>()) << ev.dump();
  const nlohmann::json& fr = g.extra["timeline_final_ranges"];
  ASSERT_EQ(fr["fields"][0], "r0");
  ASSERT_EQ(static_cast<int>(fr["ranges"].size()), g.extra["early_ranges"].get<int>());
  int64_t next = 0;
  for (const nlohmann::json& r : fr["ranges"]) {
    EXPECT_EQ(r[0].get<int64_t>(), next) << fr.dump();
    EXPECT_GT(r[1].get<int64_t>(), next) << fr.dump();
    EXPECT_LE(r[2].get<double>(), r[5].get<double>()) << r.dump();  // reported before it was home
    next = r[1].get<int64_t>();
  }
  EXPECT_EQ(next, g.n);
}

// The same with the final step beside the loop (final_step.h EarlyFinish):
// a generous budget, so the certificate runs while the loop still does; the
// cancellation must stop its worker too, and leave the device usable.
TEST(GpuEngine, CancelsWithTheFinalStepRunning) {
  REQUIRE_GPU();
  WithSettings tile([](gpu::Settings& s) { s.tile = "128x256"; });  // 157 strips
  auto backend = gpu_backend();
  cancelled_build(*backend, params(10));
  Progress quiet;
  Dataset small = random_dataset(3000, 24, 6);
  KnnGraph g = backend->build(small, on_one_gpu(7), quiet);
  EXPECT_TRUE(g.extra.contains("early_ranges"));
  EXPECT_EQ(check_graph(g, small, brute_force(small, 7, Metric::Euclidean, false)), "");
}

// The final step beside the tile loop: with 128 x 256 tiles there are many
// strips, and each one's rows are certified and copied home while the later
// strips run. The graph must equal the float64 reference and, entry for
// entry, the final step run after the loop (Settings::final_beside_loop), on
// both dot-product paths and both merge paths, with the worker's pieces as
// the rule makes them (one a report here) and of 97 rows (several a report,
// certified ahead of their copy home); near-duplicate clusters make the
// rescan re-rank rows already copied home.
TEST(GpuEngine, FinalStepBesideTheLoop) {
  REQUIRE_GPU();
  WithSettings tile([](gpu::Settings& s) { s.tile = "128x256"; });
  Dataset ds = random_dataset(3000, 40, 2026);
  for (const char* gemm : {"fused", "cublas"}) {
    WithSettings path([gemm](gpu::Settings& s) {
      s.gemm = std::string(gemm) == "fused" ? gpu::GemmPath::Fused : gpu::GemmPath::Cublas;
    });
    for (int k : {1, 20, 300}) {
      const std::string what = std::string(gemm) + " k=" + std::to_string(k);
      KnnGraph early = build("gpu", ds, on_one_gpu(k, Metric::Cosine));
      ASSERT_TRUE(early.extra.contains("early_ranges")) << what;
      std::cout << "[ info ] " << what << ": " << early.extra["early_ranges"] << " ranges certified beside the loop\n";
      EXPECT_EQ(check_graph(early, ds, brute_force(ds, k, Metric::Cosine, false)), "") << what;
      {
        WithSettings pieces([](gpu::Settings& s) { s.final_piece_rows = 97; });
        KnnGraph small_pieces = build("gpu", ds, on_one_gpu(k, Metric::Cosine));
        EXPECT_GE(small_pieces.extra["early_pieces"].get<int>(), (3000 + 96) / 97) << what;
        EXPECT_EQ(first_difference(early, small_pieces), "") << what << ", pieces of 97 rows";
      }
      WithSettings off([](gpu::Settings& s) { s.final_beside_loop = false; });
      KnnGraph after = build("gpu", ds, on_one_gpu(k, Metric::Cosine));
      EXPECT_FALSE(after.extra.contains("early_ranges")) << what;
      EXPECT_EQ(first_difference(early, after), "") << what;
    }
  }
  Dataset nd = near_duplicates(3000, 16, 9, 12, 40, 1e-6f);
  KnnGraph e = build("gpu", nd, on_one_gpu(6));
  EXPECT_TRUE(e.extra.contains("early_ranges"));
  EXPECT_GT(e.extra["rescanned_rows"].get<int64_t>(), 0);
  EXPECT_EQ(first_difference(e, exact_reference(nd, 6, Metric::Euclidean, false)), "");
}

// Lists of up to 64 entries are certified a warp a row (impl/certify.cu),
// longer ones a block a row. Same arithmetic, same order: the warp kernel
// must give the block kernel's graph entry for entry, re-evaluate as many
// candidates and see the same largest use of the bound, on certified rows
// and on rows it must hand to the rescan (near-duplicates), beside the loop
// and after it.
// Streamed rows certified beside the loop: after each panel the engine
// reports its rows final, and EarlyFinish copies their lists home and
// certifies them on the host while the later panels run (the engine and
// the final step driven as the backend drives them, with 47 row blocks and
// panels of 8 or 11). The graph must equal the in-memory one entry for
// entry.
TEST(GpuEngine, StreamedFinalStepBesideTheLoop) {
  REQUIRE_GPU();
  const int64_t n = 6000, d = 48;
  const int k = 20;
  Dataset ds = random_dataset(n, d, 3131);
  KnnParams p = params(k);
  KnnGraph in_memory = build("gpu", ds, p);

  PreparedRows rows = prepare_rows(ds, p.metric);
  gpu::PlanRequest req;
  req.n = n, req.d = d, req.k = gpu::list_capacity(k, n, p.keep_self, false, d), req.k_out = k;
  req.fused = gpu::settings().gemm != gpu::GemmPath::Cublas;
  req.shared_memory = gpu::DeviceContext::get(0).shared_optin;
  req.tile_override = "128x256";
  req.budget = gpu::list_bytes(n, req.k) + n * 4 + (1 << 20) + 1100000 + 12 * 128 * (2 * d + 1) * 4;
  const gpu::TilePlan plan = gpu::plan_tiles(req);
  ASSERT_FALSE(plan.resident);
  ASSERT_LE(plan.panel(), 12) << "several panels";
  auto engine = std::make_unique<gpu::DeviceEngine>(0, rows.data, plan, p.keep_self, false);

  KnnGraph g = empty_graph(ds, p, "gpu");
  g.allocate_result();
  gpu::FinishRequest fin;
  fin.data = &ds, fin.params = &p, fin.rows = &rows, fin.lists = engine->lists(), fin.norms = engine->norms();
  fin.stream = engine->stream(), fin.device = 0;
  {
    gpu::EarlyFinish early(fin, g, gpu::DeviceContext::get(0));
    std::vector<int64_t> strips(static_cast<size_t>(plan.blocks()));
    for (size_t i = 0; i < strips.size(); ++i) strips[i] = static_cast<int64_t>(i);
    Progress quiet;
    std::atomic<bool> stop{false};
    engine->run(strips, quiet, stop, [&](int64_t r, cudaStream_t after) { early.rows_final(r, after); });
    engine->release_loop_buffers();
    gpu::certify_and_finish(fin, g, quiet, &early);
  }
  engine.reset();
  ASSERT_TRUE(g.extra.contains("early_ranges"));
  const int panels = static_cast<int>((plan.blocks() + plan.panel() - 1) / plan.panel());
  // One report per panel; the worker takes every report made while it was
  // busy as one range.
  EXPECT_GE(g.extra["early_ranges"].get<int>(), 1);
  EXPECT_LE(g.extra["early_ranges"].get<int>(), panels);
  std::cout << "[ info ] streamed, certified beside the loop: " << g.extra["early_ranges"] << " ranges of "
            << plan.panel() << " blocks\n";
  EXPECT_EQ(first_difference(in_memory, g), "");
  EXPECT_EQ(first_difference(g, exact_reference(ds, k, Metric::Euclidean, false)), "");
}

TEST(GpuEngine, WarpCertifyMatchesBlock) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(2500, 48, 2027);
  Dataset nd = near_duplicates(2500, 16, 9, 12, 40, 1e-6f);
  for (bool beside : {true, false}) {
    // Beside the loop: 128 x 256 tiles, many strips. After it: the default plan.
    WithSettings t([beside](gpu::Settings& s) {
      s.tile = beside ? "128x256" : "";
      s.final_beside_loop = beside;
    });
    for (int k : {1, 8, 20, 40}) {
      for (Metric m : {Metric::Euclidean, Metric::Cosine}) {
        for (const Dataset* data : {&ds, &nd}) {
          const std::string what = std::string(beside ? "beside" : "after") + " the loop, k=" + std::to_string(k) +
                                   " " + to_string(m) + (data == &nd ? " near-duplicates" : "");
          KnnGraph warp = build("gpu", *data, on_one_gpu(k, m));
          WithSettings block([](gpu::Settings& s) { s.certify_by_warp = false; });
          KnnGraph blk = build("gpu", *data, on_one_gpu(k, m));
          ASSERT_LE(warp.extra["list_capacity"].get<int>(), 64) << what;
          EXPECT_EQ(warp.extra.contains("early_ranges"), beside) << what;
          EXPECT_EQ(first_difference(warp, blk), "") << what;
          EXPECT_EQ(warp.extra["reevaluated_per_row"], blk.extra["reevaluated_per_row"]) << what;
          EXPECT_EQ(warp.extra["rescanned_rows"], blk.extra["rescanned_rows"]) << what;
          EXPECT_EQ(warp.extra["error_bound_max_use"], blk.extra["error_bound_max_use"]) << what;
          if (data == &ds) {
            EXPECT_EQ(check_graph(warp, ds, brute_force(ds, k, m, false)), "") << what;
          } else if (k == 8) {
            EXPECT_GT(warp.extra["rescanned_rows"].get<int64_t>(), 0) << what;
          }
        }
      }
    }
  }
}

// Device memory kept between builds (utils/device_memory.h): a block of the
// same size comes back from the cache, the free-memory figure counts it, and
// a request that fits only without the cache empties it and succeeds.
TEST(GpuMemory, CacheReusesAndGivesWay) {
  REQUIRE_GPU();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  gpu::device_trim_cache(0);
  const size_t mb = size_t{1} << 20;
  void* first = nullptr;
  {
    gpu::DeviceBuffer<float> a(5 * mb, "test");
    first = a.data();
    EXPECT_EQ(gpu::device_cached_bytes(0), 0u);
  }
  EXPECT_EQ(gpu::device_cached_bytes(0), 20 * mb);
  {
    gpu::DeviceBuffer<float> b(5 * mb - 7, "test");  // rounds to the same 20 MB
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(gpu::device_cached_bytes(0), 0u);
    // Fresh bytes through the reused block: it is real, writable memory.
    std::vector<float> x(b.size());
    std::mt19937 rng(7);
    for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    ASSERT_EQ(cudaMemcpy(b.data(), x.data(), b.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<float> y(b.size());
    ASSERT_EQ(cudaMemcpy(y.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(x == y);
  }
  // Half the free memory cached; then 3/4 of it asked for: only without the cache.
  const size_t free0 = gpu::device_free_bytes();
  { gpu::DeviceBuffer<unsigned char> half(free0 / 2, "test"); }
  EXPECT_GE(gpu::device_cached_bytes(0), free0 / 2);
  EXPECT_GE(gpu::device_free_bytes() + 64 * mb, free0);
  {
    gpu::DeviceBuffer<unsigned char> big(free0 / 4 * 3, "test");
    EXPECT_NE(big.data(), nullptr);
    EXPECT_LT(gpu::device_cached_bytes(0), free0 / 2);
  }
  gpu::device_trim_cache(0);
  EXPECT_EQ(gpu::device_cached_bytes(0), 0u);
  // More than the device has: one clear error, never a crash.
  EXPECT_THROW(gpu::DeviceBuffer<unsigned char>(free0 * 4, "allocating a test buffer"), gpu::DeviceOutOfMemory);
}

TEST(GpuEngine, SgemmRateIsMeasured) {
  REQUIRE_GPU();
  const gpu::SgemmRate r = gpu::measure_sgemm(0, 1024, 1024, 512, 3);
  EXPECT_GT(r.tflops, 0.5);
  EXPECT_GT(r.median_s, 0.0);
  EXPECT_NE(r.math_mode, "");
}

TEST(GpuEngine, CliUsesTheGpuAndMatchesTheCpu) {
  REQUIRE_GPU();
  TempDir t;
  Dataset ds = random_dataset(1500, 20, 77);
  npy::write(t / "x.npy", ds.data(), {ds.rows(), ds.cols()});
  std::string err;
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 12 --metric pearson -o " + (t / "g") + " --quiet", &err), 0) << err;
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 12 --metric pearson --backend cpu -o " + (t / "c") + " --quiet",
                    &err),
            0)
      << err;
  KnnGraph g = read_graph(t / "g");
  KnnGraph c = read_graph(t / "c");
  EXPECT_EQ(g.backend, "gpu") << "--backend auto takes the GPU when there is one";
  EXPECT_EQ(g.fingerprint, ds.fingerprint());
  EXPECT_GE(same_rows(g, c), ds.rows() - 3);
  EXPECT_EQ(check_graph(g, ds, brute_force(ds, 12, Metric::Pearson, false)), "");
  // A bad strategy: exit status 2 and one line.
  EXPECT_EQ(run_cli("knn " + (t / "x.npy") + " -k 3 --backend gpu --select bogus -o " + (t / "h"), &err), 2);
  EXPECT_NE(err.find("--select"), std::string::npos) << err;
  // fast-exact through the CLI: the same graph, and graph.json says how many
  // candidates were re-evaluated.
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 12 --metric pearson --precision fast-exact -o " + (t / "f") +
                        " --quiet",
                    &err),
            0)
      << err;
  KnnGraph f = read_graph(t / "f");
  EXPECT_EQ(first_difference(g, f), "");
  EXPECT_EQ(f.extra["precision"], "fast-exact");
  EXPECT_GE(f.extra["reevaluated_per_row"].get<double>(), 12.0);
}

// Small and quick: what compute-sanitizer (memcheck, racecheck) runs.
TEST(GpuSanitizer, SmallRunsOfEveryPath) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(1500, 200, 42, 30);
  for (int k : {1, 32, 300}) {
    for (const char* select : {"warp", "merge"}) {
      KnnParams p = params(k, Metric::Cosine);
      p.select = parse_select(select);
      KnnGraph g = build("gpu", ds, p);
      EXPECT_EQ(check_graph(g, ds, brute_force(ds, k, Metric::Cosine, false)), "") << select << " k=" << k;
      p.precision = Precision::FastExact;
      EXPECT_EQ(first_difference(g, build("gpu", ds, p)), "") << "fast-exact " << select << " k=" << k;
    }
  }
  {
    // 128 x 256 tiles: twelve strips, each strip's rows certified and copied
    // home beside the loop (final_step.h EarlyFinish).
    WithSettings tile([](gpu::Settings& s) { s.tile = "128x256"; });
    KnnGraph g = build("gpu", ds, on_one_gpu(32, Metric::Cosine));
    EXPECT_TRUE(g.extra.contains("early_ranges"));
    EXPECT_EQ(check_graph(g, ds, brute_force(ds, 32, Metric::Cosine, false)), "") << "128 x 256 tiles";
  }
  KnnParams p = params(8, Metric::Euclidean, true);
  // Streamed, 128-row tiles (the fused kernel also keeps its blocks transposed).
  // d = 200 <= kFusedMaxD: the fused kernel unless the program runs with --gemm=cublas.
  const bool fused = gpu::settings().gemm != gpu::GemmPath::Cublas;
  p.gpu_memory = lists_bytes(1500, 8) + 1500 * 200 * 4 / 2 * (fused ? 2 : 1) + (gpu::kFusedCandidateSets << 19);
  KnnGraph s = build("gpu", ds, p);
  EXPECT_FALSE(s.extra["resident"].get<bool>());
  EXPECT_EQ(check_graph(s, ds, brute_force(ds, 8, Metric::Euclidean, true)), "");
  // No certificate can hold: the rescan on the device (resident), the
  // exact scan on the host (streamed).
  WithSettings none([](gpu::Settings& s) { s.slack = 0; });  // no room: every row not complete falls back
  KnnParams f = params(8, Metric::Euclidean, true);
  f.precision = Precision::FastExact;
  KnnGraph fr = build("gpu", ds, f);
  EXPECT_EQ(fr.extra["uncertified_rows"].get<int64_t>(), ds.rows());
  EXPECT_EQ(fr.extra["rescanned_rows"].get<int64_t>(), ds.rows());
  EXPECT_EQ(first_difference(s, fr), "");
  // fast-exact streamed: the fused kernel's strips on tensor cores (TF32
  // mma, from blocks rounded when transposed), or cuBLAS TF32.
  f.gpu_memory = p.gpu_memory;
  KnnGraph fs = build("gpu", ds, f);
  EXPECT_FALSE(fs.extra["resident"].get<bool>());
  EXPECT_EQ(fs.extra["tile_kernel"], fused ? "fused TF32 GEMM + filter" : "cuBLAS TF32 GEMM + filter");
  EXPECT_EQ(fs.extra["fallback_rows"].get<int64_t>(), ds.rows());
  EXPECT_EQ(first_difference(s, fs), "");
}

// Smaller still, for racecheck, which instruments every shared-memory access:
// the fused and filter kernels, both merge paths, the certification and the
// fallback scan.
TEST(GpuSanitizer, TinyRunsForRacecheck) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(400, 40, 43, 10);
  for (int k : {1, 32, 300}) {
    for (const char* select : {"warp", "merge"}) {
      KnnParams p = params(k, Metric::Pearson, k == 32);
      p.select = parse_select(select);
      KnnGraph g = build("gpu", ds, p);
      EXPECT_EQ(check_graph(g, ds, brute_force(ds, k, Metric::Pearson, k == 32)), "") << select << " k=" << k;
      p.precision = Precision::FastExact;
      EXPECT_EQ(first_difference(g, build("gpu", ds, p)), "") << "fast-exact " << select << " k=" << k;
    }
  }
  Dataset nd = near_duplicates(300, 16, 4, 3, 40, 1e-6f);
  KnnGraph e = build("gpu", nd, params(6));
  EXPECT_GT(e.extra["rescanned_rows"].get<int64_t>(), 0);
  EXPECT_EQ(first_difference(e, exact_reference(nd, 6, Metric::Euclidean, false)), "");
}

// Data larger than host memory stream from a memory-mapped float32 .npy: the
// engine must read row blocks from the mapping, never copy all of it. The
// process's anonymous memory (what a copy would take; the mapping's pages
// are file-backed and the kernel can drop them) must grow by far less than
// the data during a build.
long rss_anon_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("RssAnon:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

class PeakAnon : public ProgressSink {
 public:
  void report(const ProgressEvent&) override { peak = std::max(peak, rss_anon_kb()); }
  long peak = 0;
};

TEST(GpuEngine, ReadsMappedRowsWithoutCopyingThem) {
  REQUIRE_GPU();
  if (rss_anon_kb() < 0) GTEST_SKIP() << "no RssAnon in /proc/self/status";
  TempDir t;
  const int64_t n = 100000, d = 1024;  // 400 MB
  {
    Dataset ds = random_dataset(n, d, 61);
    npy::write(t / "x.npy", ds.data(), {ds.rows(), ds.cols()});
  }
  Dataset mapped = load_dataset(t / "x.npy");
  register_cpu_backend();
  gpu::register_gpu_backend();
  auto backend = make_backend("gpu");
  for (bool streamed : {false, true}) {
    KnnParams p = params(8);
    // Streamed: rows for about a tenth of the data on the device.
    if (streamed) p.gpu_memory = lists_bytes(n, 8) + n * 4 + n * (d + 1) * 4 / 10 + (200 << 20);
    {
      Progress warm;
      backend->build(random_dataset(3000, d, 1), p, warm);  // contexts and pinned buffers exist already
    }
    PeakAnon sink;
    Progress progress(&sink, nullptr, 0.0);
    const long before = rss_anon_kb();
    KnnGraph g = backend->build(mapped, p, progress);
    const long after = rss_anon_kb();
    sink.peak = std::max(sink.peak, after);
    const long data_kb = n * d * 4 / 1024;
    std::cout << "[ info ] " << (streamed ? "streamed" : "in memory") << ": anonymous memory " << before
              << " kB before, peak " << sink.peak << " kB, data " << data_kb << " kB, resident " << g.extra["resident"]
              << "\n";
    EXPECT_EQ(g.extra["resident"].get<bool>(), !streamed);
    // The result (n k 12 bytes) and the host-side lists of the streamed
    // final step (n (k+16) 8) are expected; a copy of the rows is not.
    EXPECT_LT(sink.peak - before, data_kb / 4) << (streamed ? "streamed" : "in memory");
  }
}

}  // namespace

// The result's way home (final_step.h download_to_host): through two small
// pinned buffers, several threads, sizes that are not a multiple of the
// chunk -- the buffers' size, or a quarter of a copy under four of them --
// and fresh random bytes: equal to the source byte for byte, and the same as
// the plain copy it replaces for small results.
TEST(GpuDownload, StagedCopyIsExact) {
  REQUIRE_GPU();
  std::mt19937_64 rng(20261122);
  for (size_t bytes : {size_t{5} << 20, (size_t{37} << 20) + 12345, (size_t{3} << 20) - 3, size_t{1000}}) {
    std::vector<unsigned char> host(bytes);
    for (auto& b : host) b = static_cast<unsigned char>(rng());  // fresh random bytes, never zeros
    void* dev = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, bytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    void* pinned[2] = {nullptr, nullptr};
    const size_t most = size_t{8} << 20;
    for (auto& p : pinned) ASSERT_EQ(cudaMallocHost(&p, most), cudaSuccess);
    unsigned char* staging[2] = {static_cast<unsigned char*>(pinned[0]), static_cast<unsigned char*>(pinned[1])};
    for (size_t chunk : {(size_t{1} << 20) + 4096, most})
      for (int threads : {1, 3, 8}) {
        std::vector<unsigned char> out(bytes, 0xAB);
        gpu::download_to_host(out.data(), dev, bytes, s, staging, chunk, threads);
        EXPECT_TRUE(out == host) << bytes << " bytes, buffers of " << chunk << ", " << threads << " threads";
      }
    std::vector<unsigned char> plain(bytes, 0xCD);
    gpu::download_to_host(plain.data(), dev, bytes, s, nullptr, 0, 4);
    EXPECT_TRUE(plain == host) << bytes << " bytes, plain copy";
    for (auto& p : pinned) cudaFreeHost(p);
    cudaStreamDestroy(s);
    cudaFree(dev);
  }
}

// A result large enough to come home through the staging buffers in full
// 32 MB chunks (n k x 12 bytes, 246 MB): the engine's graph equals the exact
// reference.
TEST(GpuDownload, LargeResultThroughStaging) {
  REQUIRE_GPU();
  const int64_t n = 20000;
  const int k = 1024;
  Dataset ds = random_dataset(n, 24, 77);
  KnnGraph g = build("gpu", ds, params(k));
  EXPECT_EQ(first_difference(g, exact_reference(ds, k, Metric::Euclidean, false)), "");
}
