// The papers' selection strategies of the GPU backend (issue 7): quick
// (Komarov et al.; its warp and its block variant each, forced through
// Settings::quick), sort (Dashti et al.), heap (Kato & Hosino),
// bitonic (Sismanis et al.), and `--select auto`. Every strategy ends with the
// engine's certified final step, so its graph must equal the CPU backend's
// (certified exact too) element for element -- indices and distances -- on
// fresh random data with clusters of near-duplicates (ties and the error
// bound matter; a new seed every run, printed, MANIFOLD_TEST_SEED repeats
// one), on Fashion-MNIST, for every metric, k = 1, 20, 100, 1000 (and 4096
// where the strategy supports it). What a strategy cannot do is refused with
// one line naming the largest k it supports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "final_step.h"
#include "gpu_test_util.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "select/auto_table.h"
#include "select/paper_strategies.h"
#include "select/select_kernels.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace gpu_tests;

namespace {

const std::vector<std::string> kStrategies = {"quick", "sort", "heap", "bitonic"};

KnnParams with(const std::string& strategy, int k, Metric m = Metric::Euclidean, bool keep_self = false) {
  KnnParams p = params(k, m, keep_self);
  p.select = parse_select(strategy);
  return p;
}

// WithSettings (gpu_test_util.h): select_tile = "TxW", small tiles give many
// strips, so the column role and the tightening bounds are exercised on
// small data; slack: the list's room; quick: quick's kernel.
struct TileShape : WithSettings {
  explicit TileShape(const char* v) : WithSettings([v](gpu::Settings& s) { s.select_tile = v; }) {}
};
struct NoSlack : WithSettings {
  NoSlack() : WithSettings([](gpu::Settings& s) { s.slack = 0; }) {}
};
struct QuickKernel : WithSettings {
  explicit QuickKernel(const char* v)
      : WithSettings([v](gpu::Settings& s) {
          s.quick = std::string(v) == "block" ? gpu::QuickChoice::Block : gpu::QuickChoice::Warp;
        }) {}
};

std::string where(const std::string& s, Metric m, int k) { return s + " " + to_string(m) + " k=" + std::to_string(k); }

// quick's two kernels (gpu/select/quick.cu), each checked on its own.
const char* const kQuickVariants[] = {"warp", "block"};

// Calls f(strategy, variant) for every strategy: quick once per variant,
// with Settings::quick set to it for that call (and restored after it), the
// others once with variant nullptr.
template <class F>
void for_each_strategy(F&& f) {
  for (const auto& s : kStrategies) {
    if (s != "quick") {
      f(s, static_cast<const char*>(nullptr));
      continue;
    }
    for (const char* v : kQuickVariants) {
      QuickKernel kernel(v);
      f(s, v);
    }
  }
}

std::string label(const std::string& s, const char* variant) { return variant ? s + "/" + variant : s; }

// Random rows with clusters of near-duplicates: neighbours closer together
// than float32 GEMM rounding, and exact ties after rounding to float.
Dataset tricky(int64_t n, int64_t d, uint64_t seed) {
  return near_duplicates(n, d, seed, static_cast<int>(n / 100), 12, 1e-6f);
}

// Builds `s` and checks it against the CPU graph element for element.
// Returns false when the strategy refused (allowed only when `may_refuse`,
// and then with one line naming a largest k below the one asked).
// variant: quick's kernel forced by the caller, which graph.extra must name.
bool check_one(const std::string& strategy, const Dataset& ds, const KnnParams& p, const KnnGraph& cpu, bool may_refuse,
               const char* variant = nullptr) {
  const std::string s = label(strategy, variant);
  KnnGraph g;
  try {
    g = build("gpu", ds, p);
  } catch (const gpu::select::StrategyRefusal& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(may_refuse) << s << " refused " << where(s, p.metric, p.k) << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    const size_t at = msg.find("supports k up to ");
    EXPECT_NE(at, std::string::npos) << msg;
    if (at != std::string::npos) {
      EXPECT_LT(std::atoi(msg.c_str() + at + 17), p.k) << msg;
    }
    std::printf("[ refused  ] %s: %s\n", where(s, p.metric, p.k).c_str(), msg.c_str());
    return false;
  }
  EXPECT_EQ(g.backend, "gpu");
  if (strategy != "auto") {
    EXPECT_EQ(g.strategy, strategy);
  }
  if (variant) {
    EXPECT_EQ(g.extra.value("quick_variant", std::string()), variant) << where(s, p.metric, p.k);
  }
  EXPECT_EQ(first_difference(g, cpu), "") << where(s, p.metric, p.k) << (p.keep_self ? " keep-self" : "");
  EXPECT_EQ(g.indices.size(), cpu.indices.size());
  if (g.extra.contains("error_bound_max_use")) {
    EXPECT_LT(g.extra["error_bound_max_use"].get<double>(), 1.0) << where(s, p.metric, p.k);
  } else {
    ADD_FAILURE() << where(s, p.metric, p.k) << ": no certificate statistics in graph.extra";
  }
  return true;
}

// Every strategy (quick in both variants) and auto against the CPU backend.
// k <= must_run: no refusal allowed.
void check_all(const Dataset& ds, int k, Metric m, int must_run = 1000, bool keep_self = false) {
  const KnnGraph cpu = build("cpu", ds, params(k, m, keep_self));
  for_each_strategy([&](const std::string& s, const char* variant) {
    check_one(s, ds, with(s, k, m, keep_self), cpu, k > must_run, variant);
  });
  check_one("auto", ds, with("auto", k, m, keep_self), cpu, false);
}

}  // namespace

TEST(GpuSelect, RandomDataEveryMetric) {
  REQUIRE_GPU();
  // 2600 rows: one full 2048-row block and a partial one, one strip tile.
  const uint64_t seed = fresh_seed("RandomDataEveryMetric");
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
    Dataset ds = tricky(2600, 48, seed + static_cast<uint64_t>(m));
    for (int k : {1, 20, 100}) check_all(ds, k, m);
  }
}

TEST(GpuSelect, ManySmallTiles) {
  REQUIRE_GPU();
  // 128 x 256 tiles: 21 row blocks, ~100 tiles, every list fed by rows and
  // columns of many tiles while its bound tightens.
  TileShape shape("128x256");
  Dataset ds = tricky(2600, 20, fresh_seed("ManySmallTiles"));
  for (int k : {1, 20, 100, 300}) check_all(ds, k, Metric::Euclidean);
}

TEST(GpuSelect, ExactTiesBrokenBySmallerIndex) {
  REQUIRE_GPU();
  // 800 exact duplicates: many neighbours at equal distances (0 and others),
  // which every strategy must order by index, as the CPU backend does.
  TileShape shape("256x512");
  Dataset ds = random_dataset(3000, 8, fresh_seed("ExactTies"), 800);
  for (int k : {1, 15, 100}) check_all(ds, k, Metric::Euclidean);
}

TEST(GpuSelect, RescanAndFallbackPaths) {
  REQUIRE_GPU();
  // No slack: lists hold exactly k, so rows in clusters of near-duplicates
  // cannot be certified and go through the shared rescan and exact fallback.
  NoSlack slack;
  Dataset ds = near_duplicates(3000, 32, fresh_seed("RescanAndFallback"), 30, 40, 1e-6f);
  for (int k : {5, 20}) {
    const KnnGraph cpu = build("cpu", ds, params(k));
    for_each_strategy([&](const std::string& s, const char* variant) {
      KnnGraph g = build("gpu", ds, with(s, k));
      EXPECT_EQ(first_difference(g, cpu), "") << label(s, variant) << " k=" << k;
      EXPECT_GT(g.extra.value("uncertified_rows", int64_t{0}), 0)
          << label(s, variant) << " k=" << k << ": nothing to rescan";
    });
  }
}

TEST(GpuSelect, ThousandsOfNeighbours) {
  REQUIRE_GPU();
  const uint64_t seed = fresh_seed("ThousandsOfNeighbours");
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson}) {
    Dataset ds = tricky(6000, 24, seed + static_cast<uint64_t>(m));
    check_all(ds, 1000, m);
  }
  // k = 4096: strategies whose list (k + slack) does not fit may refuse.
  Dataset ds = tricky(6000, 24, seed + 7);
  check_all(ds, 4096, Metric::Euclidean, 1000);
}

TEST(GpuSelect, FashionMnist) {
  REQUIRE_GPU();
  Dataset ds = fashion(3000);
  if (ds.empty()) GTEST_SKIP() << "Fashion-MNIST not found (set MANIFOLD_FASHION_MNIST_DIR)";
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson})
    for (int k : {1, 20, 100, 1000}) check_all(ds, k, m);
}

TEST(GpuSelect, KeepSelfWithDuplicates) {
  REQUIRE_GPU();
  Dataset ds = random_dataset(2200, 16, fresh_seed("KeepSelf"), 300);
  check_all(ds, 10, Metric::Euclidean, 1000, true);
}

TEST(GpuSelect, RefusesWhatItCannotDo) {
  REQUIRE_GPU();
  // bitonic holds a row (k + slack rounded up to a power of two, plus a
  // tile's entries) in one block's shared memory.
  {
    Dataset ds = random_dataset(9000, 2, 1);
    const std::string e = gpu_usage_error(ds, with("bitonic", 8192));
    EXPECT_NE(e.find("--select bitonic"), std::string::npos) << e;
    EXPECT_NE(e.find("shared memory"), std::string::npos) << e;
    EXPECT_NE(e.find("supports k up to "), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Every strategy: k up to the engine's largest (k + slack within the lists' limit).
  {
    Dataset ds = random_dataset(18500, 2, 2);
    for (const auto& s : kStrategies) {
      const std::string e = gpu_usage_error(ds, with(s, 16385));
      const size_t at = e.find("supports k up to ");
      ASSERT_NE(at, std::string::npos) << s << ": " << e;
      const int largest = std::atoi(e.c_str() + at + 17);
      if (s == "bitonic") EXPECT_LT(largest, 8192) << e;
      else
        EXPECT_EQ(largest, 16384) << e;
      EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
  }
  // Exact only.
  {
    Dataset ds = random_dataset(100, 4, 3);
    KnnParams p = with("heap", 5);
    p.precision = Precision::FastExact;
    const std::string e = gpu_usage_error(ds, p);
    EXPECT_NE(e.find("supports exact only"), std::string::npos) << e;
  }
  // A bad tile override is refused, not guessed.
  {
    TileShape shape("512x64");
    Dataset ds = random_dataset(1000, 4, 4);
    const std::string e = gpu_usage_error(ds, with("sort", 5));
    EXPECT_NE(e.find("select tile: '512x64'"), std::string::npos) << e;
  }
}

TEST(GpuSelect, NanRowsAreReported) {
  REQUIRE_GPU();
  std::vector<float> v(500 * 8);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.37f * static_cast<float>(i)) + 0.01f * static_cast<float>(i % 7);
  v[37 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
  Dataset ds(500, 8, std::move(v));
  for_each_strategy([&](const std::string& strategy, const char* variant) {
    const std::string s = label(strategy, variant);
    try {
      build("gpu", ds, with(strategy, 5));
      ADD_FAILURE() << s << ": a NaN row gave a graph";
    } catch (const UsageError& e) {
      ADD_FAILURE() << s << ": " << e.what();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fewer than k=5 neighbours"), std::string::npos) << s << ": " << e.what();
    }
  });
}

// quick's variant by the rule (graph.extra names the one that ran).
TEST(GpuSelect, QuickVariantChoice) {
  REQUIRE_GPU();
  using gpu::select::kQuickBlockMinK;
  Dataset ds = tricky(1500, 16, fresh_seed("QuickVariantChoice"));
  // The rule looks at the list's capacity (k + slack): short lists (k = 20)
  // take the warp, lists of kQuickBlockMinK or more entries the block.
  for (int k : {20, kQuickBlockMinK}) {
    const bool block = gpu::list_capacity(k, ds.rows(), false, false, ds.cols()) >= kQuickBlockMinK;
    EXPECT_EQ(block, k != 20) << k;
    const KnnGraph cpu = build("cpu", ds, params(k));
    check_one("quick", ds, with("quick", k), cpu, false, block ? "block" : "warp");
  }
}

// Small enough to run under compute-sanitizer (memcheck, racecheck): many
// tiles, every strategy (quick's warp and block kernels both), the quick
// kernels' stacks and the bitonic network on lists that are short and full.
TEST(GpuSelectSanitizer, TinyManyTiles) {
  REQUIRE_GPU();
  TileShape shape("64x128");
  Dataset ds = random_dataset(300, 16, 99, 20);
  for (int k : {5, 40}) check_all(ds, k, Metric::Euclidean);
  // The rescan and fallback kernels too.
  NoSlack slack;
  Dataset nd = near_duplicates(300, 16, 4, 3, 40, 1e-6f);
  check_all(nd, 6, Metric::Euclidean);
}

// quick's kernels on rows of several hundred entries (a list of 337 and up
// to 512 of a tile's): the block kernel's passes span several 256-entry
// chunks, so its shared staging, per-warp offsets and barriers are reused
// within a pass, between passes and between rows -- for memcheck and
// racecheck; the warp kernel alongside. Exact duplicates give equal distances.
TEST(GpuSelectSanitizer, QuickLongRows) {
  REQUIRE_GPU();
  TileShape shape("64x512");
  Dataset ds = random_dataset(900, 8, 17, 60);
  const int k = 300;
  const KnnGraph cpu = build("cpu", ds, params(k));
  for (const char* v : kQuickVariants) {
    QuickKernel kernel(v);
    check_one("quick", ds, with("quick", k), cpu, false, v);
  }
}

// The quick variant (no GPU needed): the rule at kQuickBlockMinK list
// entries, or the one Settings::quick forces.
TEST(GpuSelectQuick, VariantRuleAndOverride) {
  using gpu::select::kQuickBlockMinK;
  using gpu::select::quick_variant;
  using gpu::select::QuickVariant;
  EXPECT_EQ(quick_variant(1), QuickVariant::Warp);
  EXPECT_EQ(quick_variant(kQuickBlockMinK - 1), QuickVariant::Warp);
  EXPECT_EQ(quick_variant(kQuickBlockMinK), QuickVariant::Block);
  EXPECT_EQ(quick_variant(14336), QuickVariant::Block);
  {
    QuickKernel kernel("warp");
    EXPECT_EQ(quick_variant(14336), QuickVariant::Warp);
  }
  {
    QuickKernel kernel("block");
    EXPECT_EQ(quick_variant(1), QuickVariant::Block);
    EXPECT_STREQ(gpu::select::quick_variant_name(quick_variant(1)), "block");
  }
  EXPECT_EQ(quick_variant(1), QuickVariant::Warp);  // the rule again
}

// The `--select auto` table (no GPU needed): nearest measured bucket, a
// strategy that supports k, the engine with several GPUs.
TEST(GpuSelectAuto, TableLookup) {
  using manifold::gpu::select::best_strategy;
  EXPECT_EQ(best_strategy(100000, 16, 2), Select::Warp);          // several GPUs: the engine's
  EXPECT_EQ(best_strategy(10000, 16), best_strategy(12000, 20));  // same bucket
  EXPECT_EQ(best_strategy(100000, 1024), best_strategy(90000, 900));
  for (int64_t n : {2, 1000, 50000, 300000, 5000000})
    for (int k : {1, 7, 100, 2000, 8192, 14336}) {
      const Select s = best_strategy(n, k);
      EXPECT_NE(s, Select::Auto) << n << " " << k;
      if (s == Select::Bitonic) {
        EXPECT_LE(k, 4096);
      }
    }
}

// MANIFOLD_SELECT_TABLE (Settings::select_table): a table measured
// elsewhere replaces the built-in one (nearest bucket on a log scale); a bad
// file is one clear error.
struct SelectTable : WithSettings {
  explicit SelectTable(const std::string& path) : WithSettings([&path](gpu::Settings& s) { s.select_table = path; }) {}
};

TEST(GpuSelectAuto, TableFromFile) {
  using manifold::gpu::select::best_strategy;
  using manifold::gpu::select::table_text;
  const std::string builtin = table_text();
  const std::string path = testing::TempDir() + "select_table.txt";
  auto write = [&](const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  write("# measured on another GPU\nk 1 100\n1000 heap sort  # small N\n100000 quick bitonic\n");
  {
    SelectTable table(path);
    EXPECT_EQ(best_strategy(900, 2), Select::Heap);
    EXPECT_EQ(best_strategy(1200, 300), Select::Sort);
    EXPECT_EQ(best_strategy(200000, 1), Select::Quick);
    EXPECT_EQ(best_strategy(200000, 90), Select::Bitonic);
    EXPECT_EQ(best_strategy(200000, 9000), Select::Warp);  // bitonic cannot hold k = 9000
    EXPECT_EQ(best_strategy(200000, 16, 2), Select::Warp);
    EXPECT_EQ(table_text(), "k 1 100\n1000 heap sort\n100000 quick bitonic\n");
  }
  EXPECT_EQ(table_text(), builtin);  // unset: the built-in table again
  const std::pair<const char*, const char*> bad[] = {
      {"k 1 100\n1000 heap fastest\n", "line 2: unknown strategy 'fastest'"},
      {"k 1 100\n1000 heap\n", "line 2: 1 strategies for 2 k values"},
      {"1000 heap sort\n", "line 1: the 'k K1 K2 ...' line must come first"},
      {"k 100 1\n", "line 1: k values must be increasing"},
      {"k 1\n1000 heap\n10 warp\n", "line 3: N values must be increasing"},
      {"k 1\n", "no 'N S1 S2 ...' rows"},
  };
  for (auto& [text, why] : bad) {
    write(text);
    SelectTable table(path);
    try {
      best_strategy(1000, 1);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const manifold::Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  SelectTable missing(path + ".absent");
  EXPECT_THROW(best_strategy(1000, 1), manifold::Error);
}
