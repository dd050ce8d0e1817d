// k up to 16384 in one call (issue 26): lists of more than 16384 entries (k
// over 14336 plus the certificate's room) are sorted in two runs
// (gpu/impl/two_run_sort.cuh) by the certification and by the list sort of
// heap and quick. Checked four ways:
//  - the long list sort against std::sort, and the long certification
//    against its host twin (core's exact::certify_rows) on the same lists,
//    a few rows each (these also run under compute-sanitizer);
//  - whole graphs at k = 14337 and 16384 against the CPU backend, indices
//    and distances byte for byte, on random rows with clusters of
//    near-duplicates (a fresh seed per run, MANIFOLD_TEST_SEED repeats one),
//    both precisions, every strategy that takes the k;
//  - the one-line refusals: bitonic at k = 16384, everyone at k = 16385;
//  - the block merge of the tile loop on its own against a host merge.
// Beside them, fast-exact's list slack, which grows with d, the prior
// bound of large-k lists and the lists' pending room (whole graphs against
// the CPU backend).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "device_engine.h"
#include "final_step.h"
#include "gpu_test_util.h"
#include "impl/kernels.h"
#include "impl/sizes.h"
#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/exact/error_bound.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "manifold/knn.h"
#include "select/paper_strategies.h"
#include "select/select_kernels.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace gpu_tests;

namespace {

// A device copy of a host vector, freed with the scope.
template <class T>
struct Device {
  T* p = nullptr;
  size_t n = 0;
  explicit Device(size_t count) : n(count) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess);
  }
  explicit Device(const std::vector<T>& v) : Device(v.size()) {
    EXPECT_EQ(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Device() { cudaFree(p); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  std::vector<T> get() const {
    std::vector<T> v(n);
    EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

bool key_less(float da, int ia, float db, int ib) { return da < db || (da == db && ia < ib); }

// The largest capacity the GPU keeps: k = 16384 plus the float32 room.
constexpr int kCap = gpu::kMaxK;
static_assert(kCap > gpu::kSharedSortEntries, "the long path needs lists over one block's sort");

// Graphs over 16384 neighbours: N just over the largest capacity, so no
// list holds every point and the certificate decides.
constexpr int64_t kRows = kCap + 1200;
constexpr int64_t kDim = 32;

Dataset large_k_data(uint64_t seed) { return near_duplicates(kRows, kDim, seed, 60, 12, 1e-6f); }

KnnParams with(Select s, int k, Precision p = Precision::Exact) {
  KnnParams q = params(k);
  q.select = s;
  q.precision = p;
  // One device: the prior bound is taken where one device runs every strip
  // (the tests of two devices ask for both).
  q.devices = {0};
  return q;
}

std::string where(const std::string& what, const KnnParams& p) {
  return what + " " + to_string(p.select) + " " + to_string(p.precision) + " k=" + std::to_string(p.k);
}

// The GPU graph g of p against the CPU's, entry for entry.
void check_same_as_cpu(const KnnGraph& g, const KnnParams& p, const KnnGraph& cpu, const std::string& what) {
  ASSERT_EQ(g.indices.size(), cpu.indices.size()) << where(what, p);
  EXPECT_EQ(first_difference(g, cpu), "") << where(what, p);
  ASSERT_TRUE(g.extra.contains("list_capacity")) << where(what, p);
  const int cap = g.extra["list_capacity"].get<int>();
  std::printf("[ compared ] %s: capacity %d, uncertified %lld, rescanned %lld, exact scan %lld\n",
              where(what, p).c_str(), cap, static_cast<long long>(g.extra.value("uncertified_rows", int64_t{0})),
              static_cast<long long>(g.extra.value("rescanned_rows", int64_t{0})),
              static_cast<long long>(g.extra.value("fallback_rows", int64_t{0})));
  EXPECT_LT(g.extra["error_bound_max_use"].get<double>(), 1.0) << where(what, p);
}

// Builds on the GPU and compares with the CPU graph entry for entry.
KnnGraph expect_same_as_cpu(const Dataset& ds, const KnnParams& p, const KnnGraph& cpu, const std::string& what) {
  KnnGraph g = build("gpu", ds, p);
  check_same_as_cpu(g, p, cpu, what);
  return g;
}

// The prior bound's rank in g's build (gpu/device_engine.h), 0 without one.
int prior_rank_of(const KnnGraph& g) {
  if (!g.extra.contains("per_device")) return 0;  // a paper strategy's build
  const nlohmann::json& dev = g.extra["per_device"][0];
  return dev.contains("prior_bound") ? dev["prior_bound"]["rank"].get<int>() : 0;
}

}  // namespace

// The list sort of heap and quick (select/sort_lists.cu) at the largest
// capacity: rows filled to 18432, 16385 (just over one shared-memory run),
// 16384 (exactly one), 17000, 2 and 1, with repeated distances (the index
// breaks ties), sorted in place like std::sort by (distance, index).
TEST(GpuLargeK, LongListSortMatchesStdSort) {
  REQUIRE_GPU();
  std::mt19937_64 rng(fresh_seed("LongListSortMatchesStdSort"));
  const std::vector<int> fills = {kCap, 16385, 16384, 17000, 2, 1};
  const int64_t n = static_cast<int64_t>(fills.size());
  std::vector<float> dist(static_cast<size_t>(n) * kCap, std::numeric_limits<float>::quiet_NaN());
  std::vector<int> index(dist.size(), -7);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int> ids(200000);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::uniform_int_distribution<int> level(0, 3000);  // many equal distances
    for (int e = 0; e < fills[r]; ++e) {
      dist[r * kCap + e] = 0.25f * static_cast<float>(level(rng));
      index[r * kCap + e] = ids[e];
    }
  }
  Device<float> d_dist(dist);
  Device<int> d_index(index);
  Device<int> d_fill(fills);
  Device<float> d_thr(static_cast<size_t>(n));
  gpu::ListsView lists{d_dist.p, d_index.p, d_fill.p, d_thr.p, n, kCap};
  gpu::select::launch_sort_lists(lists, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got_d = d_dist.get();
  const std::vector<int> got_i = d_index.get();
  for (int64_t r = 0; r < n; ++r) {
    std::vector<std::pair<float, int>> want(static_cast<size_t>(fills[r]));
    for (int e = 0; e < fills[r]; ++e) want[e] = {dist[r * kCap + e], index[r * kCap + e]};
    std::sort(want.begin(), want.end(),
              [](const auto& a, const auto& b) { return key_less(a.first, a.second, b.first, b.second); });
    for (int e = 0; e < fills[r]; ++e) {
      ASSERT_EQ(got_d[r * kCap + e], want[e].first) << "row " << r << " (fill " << fills[r] << ") entry " << e;
      ASSERT_EQ(got_i[r * kCap + e], want[e].second) << "row " << r << " (fill " << fills[r] << ") entry " << e;
    }
    if (fills[r] < kCap) {  // entries past the fill are left alone
      EXPECT_TRUE(std::isnan(got_d[r * kCap + fills[r]])) << "row " << r;
      EXPECT_EQ(got_i[r * kCap + fills[r]], -7) << "row " << r;
    }
  }
}

// The certification of lists longer than one block's sort
// (impl/certify.cu, certify_long_kernel) against core's host twin on the
// same lists: a few rows of near-duplicate data, each row's list its
// kCap nearest by a float32 distance, k = 16384, both error models; then
// the same lists with a largest norm so large that no row can be
// certified (every row -1, the k-th upper bound kept for the rescan).
TEST(GpuLargeK, LongCertifyMatchesHostTwin) {
  REQUIRE_GPU();
  const Dataset ds = large_k_data(fresh_seed("LongCertifyMatchesHostTwin"));
  const int64_t n = ds.rows(), d = ds.cols();
  const int k = gpu::kMaxNeighbours;
  constexpr int kListRows = 5;
  std::vector<float> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += static_cast<double>(ds.row(j)[c]) * ds.row(j)[c];
    norms[j] = static_cast<float>(s);
  }
  // Each row's list: its kCap nearest others by a float32 distance (the
  // exact one rounded, well inside any GEMM's bound), ascending.
  std::vector<float> ldist(static_cast<size_t>(kListRows) * kCap);
  std::vector<int> lindex(ldist.size());
  std::vector<int> fill(kListRows, kCap);
  for (int g = 0; g < kListRows; ++g) {
    std::vector<std::pair<float, int>> all;
    for (int64_t j = 0; j < n; ++j)
      if (j != g) all.emplace_back(static_cast<float>(exact::exact_sum_sq_diff(ds.row(g), ds.row(j), d)), int(j));
    std::partial_sort(all.begin(), all.begin() + kCap, all.end(),
                      [](const auto& a, const auto& b) { return key_less(a.first, a.second, b.first, b.second); });
    for (int e = 0; e < kCap; ++e) ldist[g * kCap + e] = all[e].first, lindex[g * kCap + e] = all[e].second;
  }
  const double ymax = *std::max_element(norms.begin(), norms.end());
  // The same lists with every entry past the k-th at the k-th's distance:
  // a neighbourhood denser than the list is long, which no row certifies.
  std::vector<float> ldense = ldist;
  for (int g = 0; g < kListRows; ++g)
    for (int e = k; e < kCap; ++e) ldense[g * kCap + e] = ldist[g * kCap + k - 1];
  Device<float> d_rows(std::vector<float>(ds.data(), ds.data() + n * d));
  Device<float> d_norms(norms);
  Device<float> d_ldist(ldist), d_ldense(ldense);
  Device<int> d_lindex(lindex);
  Device<int> d_fill(fill);
  for (bool tensor : {false, true}) {
    for (bool dense : {false, true}) {
      const std::string what = std::string(tensor ? "tf32" : "float32") + (dense ? ", no row certified" : "");
      Device<int64_t> out_i(static_cast<size_t>(kListRows) * k);
      Device<float> out_d(static_cast<size_t>(kListRows) * k);
      Device<int> status(kListRows);
      Device<float> use(1);
      Device<float> ukey(kListRows);
      ASSERT_EQ(cudaMemset(use.p, 0, sizeof(float)), cudaSuccess);
      gpu::CertifyArgs a;
      a.rows = d_rows.p, a.d = d, a.norms = d_norms.p;
      a.lists = gpu::ListsView{dense ? d_ldense.p : d_ldist.p, d_lindex.p, d_fill.p, nullptr, kListRows, kCap};
      a.k = k, a.euclidean = true, a.complete = false, a.ymax = ymax;
      a.model = exact::make_error_model(d, tensor ? exact::DotArithmetic::Tf32 : exact::DotArithmetic::Float32);
      a.out_index = out_i.p, a.out_dist = out_d.p, a.status = status.p, a.max_use = use.p, a.ukey = ukey.p;
      gpu::launch_certify(a, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;

      std::vector<int64_t> want_i(static_cast<size_t>(kListRows) * k, -1);
      std::vector<float> want_d(want_i.size(), -1.f);
      std::vector<int> want_status(kListRows);
      exact::CertifyRequest req;
      req.rows = ds.data(), req.d = d;
      req.lists = exact::CandidateLists{(dense ? ldense : ldist).data(), lindex.data(), fill.data(), kListRows, kCap};
      req.k = k, req.norms = norms.data(), req.ymax = ymax, req.model = a.model;
      req.metric = Metric::Euclidean, req.complete = false;
      exact::certify_rows(req, {want_i.data(), want_d.data(), want_status.data()});

      const std::vector<int> got_status = status.get();
      EXPECT_EQ(got_status, want_status) << what;
      const std::vector<int64_t> got_i = out_i.get();
      const std::vector<float> got_d = out_d.get();
      for (int g = 0; g < kListRows; ++g) {
        if (dense) {
          EXPECT_EQ(got_status[g], -1) << what << ", row " << g;
          continue;
        }
        EXPECT_GE(got_status[g], k) << what << ", row " << g << ": certified with every re-evaluation";
        if (got_status[g] < 0) continue;
        for (int j = 0; j < k; ++j) {
          ASSERT_EQ(got_i[g * k + j], want_i[g * k + j]) << what << ", row " << g << " entry " << j;
          ASSERT_EQ(std::memcmp(&got_d[g * k + j], &want_d[g * k + j], sizeof(float)), 0)
              << what << ", row " << g << " entry " << j;
        }
      }
    }
  }
}

// Whole graphs against the CPU backend, byte for byte. k = 14337 (just over
// the old limit: the float32 lists, 16129 entries, still sort in one run;
// fast-exact's, 17921, in two) and k = 16384 (18432 entries, two runs),
// every strategy that takes the k; bitonic's network does not fit one
// block there and is refused in one line naming its largest k.
TEST(GpuLargeK, MatchesCpuByteForByte) {
  REQUIRE_GPU();
  const Dataset ds = large_k_data(fresh_seed("MatchesCpuByteForByte"));
  {
    const KnnGraph cpu = build("cpu", ds, params(14337));
    expect_same_as_cpu(ds, with(Select::Merge, 14337), cpu, "near-duplicates");
    expect_same_as_cpu(ds, with(Select::Merge, 14337, Precision::FastExact), cpu, "near-duplicates");
  }
  const int k = gpu::kMaxNeighbours;
  const KnnGraph cpu = build("cpu", ds, params(k));
  for (Select s : {Select::Auto, Select::Merge, Select::Sort, Select::Heap, Select::Quick})
    expect_same_as_cpu(ds, with(s, k), cpu, "near-duplicates");
  {
    // quick's other kernel (the block variant is the default at this k).
    WithSettings warp([](gpu::Settings& s) { s.quick = gpu::QuickChoice::Warp; });
    expect_same_as_cpu(ds, with(Select::Quick, k), cpu, "near-duplicates, quick's warp kernel");
  }
  for (Select s : {Select::Auto, Select::Merge})
    expect_same_as_cpu(ds, with(s, k, Precision::FastExact), cpu, "near-duplicates");
  {
    // The prior bound at the largest k (the rule takes none where the
    // capacity is most of the rows): a sample forced, its rank by the rule.
    WithSettings prior([](gpu::Settings& s) { s.prior_sample = 4096; });
    const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, k), cpu, "near-duplicates, prior bound");
    EXPECT_GT(prior_rank_of(g), 0);
  }
  const std::string e = gpu_usage_error(ds, with(Select::Bitonic, k));
  EXPECT_NE(e.find("--select bitonic"), std::string::npos) << e;
  EXPECT_NE(e.find("shared memory"), std::string::npos) << e;
  const size_t at = e.find("supports k up to ");
  ASSERT_NE(at, std::string::npos) << e;
  EXPECT_LT(std::atoi(e.c_str() + at + 17), k) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

// One past the largest k: the engine and every paper strategy refuse in one
// line naming 16384 (bitonic its own, smaller limit).
TEST(GpuLargeK, OnePastTheLargestIsRefused) {
  REQUIRE_GPU();
  const Dataset ds = random_dataset(kRows, 2, 5);
  const int k = gpu::kMaxNeighbours + 1;
  for (Select s :
       {Select::Auto, Select::Warp, Select::Merge, Select::Sort, Select::Heap, Select::Quick, Select::Bitonic}) {
    const std::string e = gpu_usage_error(ds, with(s, k));
    EXPECT_NE(e.find("-k 16385"), std::string::npos) << to_string(s) << ": " << e;
    const size_t at = e.find("up to ");
    ASSERT_NE(at, std::string::npos) << to_string(s) << ": " << e;
    if (s == Select::Bitonic) {
      EXPECT_LT(std::atoi(e.c_str() + at + 6), 8192) << e;
    } else {
      EXPECT_EQ(std::atoi(e.c_str() + at + 6), 16384) << to_string(s) << ": " << e;
    }
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// fast-exact's list slack grows with d (gpu/final_step.cpp list_slack,
// docs/PRECISION.md "How much slack"): max(96, k/4) up to d = 1024, then
// with the square of TF32's c_dot(d) / c_dot(1024); float32's is the CPU's
// (exact::exact_slack: max(16, k/8) up to d = 512, in proportion to d
// beyond); never beyond the lists' limit.
TEST(FastExactSlack, GrowsWithTheSquareOfTheBoundsWindow) {
  const auto c = [](int64_t d) { return exact::make_error_model(d, exact::DotArithmetic::Tf32).c_dot; };
  for (int64_t d : {1, 32, 256, 1024}) {
    EXPECT_EQ(gpu::list_slack(20, true, d), 96) << d;
    EXPECT_EQ(gpu::list_slack(4000, true, d), 1000) << d;
    EXPECT_EQ(gpu::list_slack(4000, false, d), d <= 512 ? 500 : 1000) << d;
  }
  int last = 96;
  for (int64_t d : {2048, 4096, 8192, 16384, 65536}) {
    const double grow = c(d) / c(1024);
    const int s = gpu::list_slack(20, true, d);
    EXPECT_EQ(s, static_cast<int>(std::ceil(96 * (grow * grow)))) << d;
    EXPECT_GT(s, last) << d;
    last = s;
    EXPECT_EQ(gpu::list_slack(20, false, d), exact::exact_slack(20, d)) << d;
  }
  EXPECT_EQ(gpu::list_slack(20, true, 4096), 171);
  EXPECT_EQ(gpu::list_slack(20, true, 16384), 688);
  EXPECT_EQ(gpu::list_slack(16384, true, 16384), gpu::kMaxK);
  EXPECT_EQ(gpu::list_capacity(16384, 1 << 20, false, true, 16384), gpu::kMaxK);
  EXPECT_EQ(gpu::list_capacity(20, 500, false, true, 16384), 499);  // every other point
}

// The block merge (impl/merge.cu) on its own, against a host merge: each
// dirty slot's candidates folded into its row's sorted list, keeping the
// lower k by (distance, index). Rows cover an empty list filled past k, a
// partial list, full lists whose candidates mostly rank past the last
// entry (dropped before the sort), none of which rank, one that goes
// first, ties in distance broken by the index, and counts just over a
// chunk; the chunk (candidates sorted at a time) is made small, so one
// slot's candidates cross several chunk boundaries, each merged into the
// list the previous chunks left. Row and column slots both.
TEST(GpuLargeK, BlockMergeMatchesHostMerge) {
  REQUIRE_GPU();
  std::mt19937_64 rng(fresh_seed("BlockMergeMatchesHostMerge"));
  constexpr int k = 1100, T = 1500, W = 1500, kSlots = 10;
  constexpr int64_t n = T + W;  // row slots: rows 0..T-1 (r0 = 0); column slots: rows T.. (c0 = T)
  struct Case {
    int fill, count;
    int bound = -1;  // a prior bound's level (device_engine.h): the list short of k, the candidates above it dropped
  };
  const Case cases[kSlots] = {{0, 1300}, {500, 700}, {k, 1200}, {k, 3},          {k, 40},
                              {10, 5},   {k, 1},     {k, 257},  {200, 600, 200}, {0, 1300, 120}};
  const int slots[kSlots] = {0, 3, 7, T + 0, T + 2, T + 5, 11, T + 9, 13, T + 12};
  for (int max_candidates : {256, 1500}) {
    SCOPED_TRACE("max_candidates " + std::to_string(max_candidates));
    std::vector<float> ldist(static_cast<size_t>(n) * k, std::numeric_limits<float>::quiet_NaN());
    std::vector<int> lindex(ldist.size(), -7), fill(n, 0);
    std::vector<float> thr(n, std::numeric_limits<float>::infinity());
    std::vector<float> cdist(2 * static_cast<size_t>(T) * W, -1.f);
    std::vector<int> cindex(cdist.size(), -1), count(T + W, 0), dirty(T + W, -1);
    std::vector<int> n_dirty = {kSlots, 0, 0, 0, 77, 0, 0, 0};
    std::vector<std::vector<std::pair<float, int>>> want(kSlots);
    std::vector<int> rows(kSlots);
    for (int s = 0; s < kSlots; ++s) {
      const int slot = slots[s];
      const int row = slot;  // r0 = 0 and c0 = T: slot s feeds row s
      rows[s] = row;
      const size_t base = slot < T ? static_cast<size_t>(slot) * W : static_cast<size_t>(T) * W + (slot - T) * T;
      std::vector<int> ids(50000);
      std::iota(ids.begin(), ids.end(), 0);
      std::shuffle(ids.begin(), ids.end(), rng);
      // Many equal distances: the index decides. Under a bound, the list's
      // entries passed it.
      std::uniform_int_distribution<int> level(0, cases[s].bound >= 0 ? cases[s].bound : 400);
      std::vector<std::pair<float, int>> list(cases[s].fill), cand(cases[s].count);
      int next = 0;
      for (auto& e : list) e = {0.25f * static_cast<float>(level(rng)), ids[next++]};
      // 1200 candidates: half rank past the list's last entry; 40: all do
      // (levels above every list entry's).
      const int lo = cases[s].count == 40 ? 401 : 0, hi = cases[s].count == 1200 || cases[s].count == 40 ? 800 : 400;
      std::uniform_int_distribution<int> cand_level(lo, hi);
      for (auto& e : cand) e = {0.25f * static_cast<float>(cand_level(rng)), ids[next++]};
      if (cases[s].count == 1) cand[0].first = -1.f;  // ahead of every entry
      const auto less = [](const auto& a, const auto& b) { return key_less(a.first, a.second, b.first, b.second); };
      std::sort(list.begin(), list.end(), less);
      for (int e = 0; e < cases[s].fill; ++e) {
        ldist[static_cast<size_t>(row) * k + e] = list[e].first;
        lindex[static_cast<size_t>(row) * k + e] = list[e].second;
      }
      fill[row] = cases[s].fill;
      if (cases[s].fill == k) thr[row] = list[k - 1].first;
      const float bound = 0.25f * static_cast<float>(cases[s].bound);
      if (cases[s].bound >= 0) thr[row] = bound;
      for (int e = 0; e < cases[s].count; ++e) cdist[base + e] = cand[e].first, cindex[base + e] = cand[e].second;
      count[slot] = cases[s].count;
      dirty[s] = slot;
      want[s] = list;
      for (const auto& e : cand)
        if (cases[s].bound < 0 || e.first <= bound) want[s].push_back(e);
      std::sort(want[s].begin(), want[s].end(), less);
      if (want[s].size() > static_cast<size_t>(k)) want[s].resize(k);
    }
    Device<float> d_ldist(ldist), d_thr(thr), d_cdist(cdist);
    Device<int> d_lindex(lindex), d_fill(fill), d_cindex(cindex), d_count(count), d_dirty(dirty), d_n_dirty(n_dirty);
    Device<unsigned long long> d_total(1);
    gpu::ListsView lists{d_ldist.p, d_lindex.p, d_fill.p, d_thr.p, n, k};
    gpu::CandidatesView c;
    c.dist = d_cdist.p, c.index = d_cindex.p, c.count = d_count.p, c.dirty = d_dirty.p, c.n_dirty = d_n_dirty.p;
    c.total = d_total.p, c.T = T, c.W = W;
    gpu::launch_merge_tile(lists, c, 0, 4, 0, T, /*force_block=*/true, max_candidates, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got_d = d_ldist.get(), got_thr = d_thr.get();
    const std::vector<int> got_i = d_lindex.get(), got_fill = d_fill.get(), got_count = d_count.get();
    EXPECT_EQ(d_n_dirty.get()[4], 0) << "the later tile's dirty counter is cleared";
    for (int s = 0; s < kSlots; ++s) {
      const int row = rows[s], nf = static_cast<int>(want[s].size());
      SCOPED_TRACE("slot " + std::to_string(slots[s]) + ": fill " + std::to_string(cases[s].fill) + ", " +
                   std::to_string(cases[s].count) + " candidates");
      ASSERT_EQ(got_fill[row], nf);
      EXPECT_EQ(got_count[slots[s]], 0) << "the slot is emptied for a later tile";
      for (int e = 0; e < nf; ++e) {
        ASSERT_EQ(got_d[static_cast<size_t>(row) * k + e], want[s][e].first) << "entry " << e;
        ASSERT_EQ(got_i[static_cast<size_t>(row) * k + e], want[s][e].second) << "entry " << e;
      }
      if (nf < k) {
        EXPECT_TRUE(std::isnan(got_d[static_cast<size_t>(row) * k + nf])) << "entries past the fill are left alone";
        if (cases[s].bound >= 0)
          EXPECT_EQ(got_thr[row], 0.25f * static_cast<float>(cases[s].bound)) << "a list short of k keeps its bound";
        else
          EXPECT_TRUE(std::isinf(got_thr[row])) << "a list short of k has no bound";
      } else {
        EXPECT_EQ(got_thr[row], want[s][k - 1].first) << "the bound is the k-th distance";
      }
    }
  }
}

// The prior bound of large-k lists (gpu/device_engine.h: each row's bound,
// before the seeds, from its distances to a sample of columns; the engine's
// filter and merge, `--select merge`) against the CPU backend, byte for byte: random rows with clusters of
// near-duplicates (a fresh seed per run), both dot-product kernels (fused, cuBLAS), both metrics, k from just past the
// warp merge to 2047, and d = 300 on cuBLAS by default. The build must have taken the bound (graph.json's per_device
// prior_bound).
TEST(GpuLargeKPrior, MatchesCpuOnNearDuplicates) {
  REQUIRE_GPU();
  const uint64_t seed = fresh_seed("GpuLargeKPrior.MatchesCpuOnNearDuplicates");
  const Dataset ds = near_duplicates(12000, 32, seed, 60, 12, 1e-6f);
  for (int k : {300, 1024, 2047}) {
    for (Metric m : {Metric::Euclidean, Metric::Cosine}) {
      if (m == Metric::Cosine && k != 1024) continue;
      KnnParams p = with(Select::Merge, k);
      p.metric = m;
      const KnnGraph cpu = build("cpu", ds, p);
      for (gpu::GemmPath path : {gpu::GemmPath::Fused, gpu::GemmPath::Cublas}) {
        WithSettings kernel([path](gpu::Settings& s) { s.gemm = path; });
        const std::string what = std::string("near-duplicates, ") + (m == Metric::Cosine ? "cosine, " : "") +
                                 (path == gpu::GemmPath::Fused ? "fused" : "cuBLAS");
        const KnnGraph g = expect_same_as_cpu(ds, p, cpu, what);
        EXPECT_GT(prior_rank_of(g), 0) << where(what, p);
      }
    }
  }
  const Dataset wide = near_duplicates(8000, 300, seed + 1, 40, 10, 1e-5f);
  const KnnGraph cpu = build("cpu", wide, params(1024));
  const KnnGraph g = expect_same_as_cpu(wide, with(Select::Merge, 1024), cpu, "near-duplicates, d = 300");
  EXPECT_GT(prior_rank_of(g), 0);
}

// The prior bound's rank selection (impl/prior_bound.cu) on its own, both
// of its kernels (a 256-thread block a row up to 8192 sample columns, 512
// threads above, up to the device's shared memory): against the sorted
// distances on the host (the same fmaf), each row's bound is one of its
// sample distances with at least `rank` at or below it, within a few ranks
// of the rank-th (two histogram levels), and only lowers thr; a row with
// fewer finite distances than the rank (NaN dots) keeps its thr. Random
// values with repeats, fresh per run.
TEST(GpuLargeKPrior, RankSelectionMatchesSortedDistances) {
  REQUIRE_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const int widest = gpu::prior_bound_max_sample(prop.sharedMemPerBlockOptin);
  ASSERT_GE(widest, 32768) << "a Hopper block holds 32768 sample distances";
  std::mt19937_64 rng(fresh_seed("GpuLargeKPrior.RankSelectionMatchesSortedDistances"));
  for (int m : {64, 1500, 8192, 8196, 32768, widest}) {
    const int count = 40;
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> dots(static_cast<size_t>(m) * count), norms(m), row_norms(count + 3), thr(count + 3);
    for (float& x : dots) x = (rng() % 7 == 0) ? 0.25f : u(rng);  // repeats among the distances
    for (float& x : norms) x = 2.f + u(rng);
    for (float& x : row_norms) x = 2.f + u(rng);
    for (int i = 0; i < count; ++i) {
      thr[i + 3] = (i % 5 == 1) ? 0.5f : std::numeric_limits<float>::infinity();  // bounds already lower
      if (i % 9 == 4)
        for (int j = 0; j < m; j += 2) dots[static_cast<size_t>(i) * m + j] = std::numeric_limits<float>::quiet_NaN();
    }
    for (int rank : {1, 23, m / 2, m}) {
      Device<float> d_dots(dots), d_norms(norms), d_row_norms(row_norms), d_thr(thr);
      gpu::PriorBoundArgs a;
      a.dots = d_dots.p, a.m = m, a.count = count, a.r0 = 3;
      a.row_norms = d_row_norms.p, a.sample_norms = d_norms.p, a.rank = rank, a.thr = d_thr.p;
      gpu::launch_prior_bound(a, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = d_thr.get();
      for (int i = 0; i < count; ++i) {
        const std::string what = "m " + std::to_string(m) + ", rank " + std::to_string(rank) + ", row " +
                                 std::to_string(i);
        std::vector<float> v;
        for (int j = 0; j < m; ++j) {
          const float x = std::fmaf(-2.f, dots[static_cast<size_t>(i) * m + j], row_norms[i + 3] + norms[j]);
          if (x < std::numeric_limits<float>::infinity()) v.push_back(x);
        }
        std::sort(v.begin(), v.end());
        const float before = thr[i + 3], bound = got[i + 3];
        if (static_cast<int>(v.size()) < rank) {
          EXPECT_EQ(bound, before) << what << ": fewer finite distances than the rank";
          continue;
        }
        // The selected distance hi: one of the row's, at or above the
        // rank-th, with fewer than rank + 8 strictly below it; thr becomes
        // min(thr, hi).
        const auto below = [&v](float x) { return std::lower_bound(v.begin(), v.end(), x) - v.begin(); };
        EXPECT_LE(bound, before) << what;
        if (bound < before) {
          EXPECT_TRUE(std::binary_search(v.begin(), v.end(), bound)) << what << ": " << bound;
          EXPECT_GE(bound, v[rank - 1]) << what;
          EXPECT_LT(below(bound), rank + 8) << what << ": bound " << bound << " against the rank-th " << v[rank - 1];
        } else {
          // hi at or above the bound already there.
          EXPECT_LT(before, std::numeric_limits<float>::infinity()) << what;
          EXPECT_LT(below(before), rank + 8) << what;
        }
      }
    }
  }
  gpu::PriorBoundArgs odd;
  odd.m = 1502;
  EXPECT_THROW(gpu::launch_prior_bound(odd, nullptr), Error);
}

// The prior bound's rule (device_engine.h): at Li-Amenta's case enough
// sample columns that kPriorSampleMean are expected within the capacity-th
// distance, and the rank four standard deviations above that; never more
// than the shared memory, a quarter of the rows or a candidate set holds;
// none for small capacities or lists of nearly every row.
TEST(GpuLargeKPrior, PlanFollowsTheRule) {
  gpu::TilePlan plan;
  plan.n = 1000000, plan.d = 64, plan.k = 1125, plan.T = 2048, plan.W = 32768;
  const size_t hopper = 232448;
  const int widest = gpu::prior_bound_max_sample(hopper);
  const gpu::PriorBoundPlan la = gpu::prior_bound_plan(plan, hopper);
  const double p = 1126.0 / 1e6;
  const int64_t wanted = std::clamp<int64_t>(std::ceil(gpu::kPriorSampleMean / p), gpu::kPriorMinSample,
                                             gpu::kPriorMaxSample);
  EXPECT_EQ(la.sample, std::min<int64_t>(widest, wanted) / 4 * 4);
  EXPECT_GT(la.sample, gpu::kPriorMinSample) << "Li-Amenta's case samples more than the least";
  EXPECT_EQ(la.sample % 4, 0);
  const double mean = la.sample * p, sd = std::sqrt(la.sample * p * (1 - p));
  EXPECT_EQ(la.rank, static_cast<int>(std::ceil(mean + 4 * sd)) + 1);
  // A smaller capacity wants more columns than the most taken.
  plan.k = 337;
  EXPECT_EQ(gpu::prior_bound_plan(plan, hopper).sample, gpu::kPriorMaxSample);
  plan.k = 1125;
  // A device of little shared memory: what it holds.
  ASSERT_LT(gpu::prior_bound_max_sample(16384), gpu::kPriorMinSample);
  EXPECT_EQ(gpu::prior_bound_plan(plan, 16384).sample, gpu::prior_bound_max_sample(16384));
  // 100k rows at k = 1024: the least sample already expects more than the mean.
  plan.n = 100000, plan.d = 256, plan.k = 1152, plan.W = 8192;
  EXPECT_EQ(gpu::prior_bound_plan(plan, hopper).sample, gpu::kPriorMinSample);
  // A quarter of the rows at most.
  plan.n = 20000;
  EXPECT_EQ(gpu::prior_bound_plan(plan, hopper).sample, 5000);
  // No bound: lists of the warp merge, or of nearly every row.
  plan.n = 100000, plan.k = 100;
  EXPECT_EQ(gpu::prior_bound_plan(plan, hopper).sample, 0);
  plan.n = 1200, plan.k = 1199;
  EXPECT_EQ(gpu::prior_bound_plan(plan, hopper).sample, 0);
}

// A sample past 8192 columns (the 512-thread kernel) on a whole graph.
TEST(GpuLargeKPrior, WideSampleMatchesCpu) {
  REQUIRE_GPU();
  const Dataset ds = near_duplicates(20000, 16, fresh_seed("GpuLargeKPrior.WideSampleMatchesCpu"), 40, 12, 1e-6f);
  const KnnGraph cpu = build("cpu", ds, params(1024));
  WithSettings wide([](gpu::Settings& s) { s.prior_sample = 16384; });
  const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, 1024), cpu, "near-duplicates, 16384 sampled");
  EXPECT_EQ(g.extra["per_device"][0]["prior_bound"]["sample"].get<int>(), 16384);
}

// A prior bound too tight (Settings::prior_rank forces a small rank) leaves
// lists short of their capacity, some short of k: such rows are not refused
// as NaN rows are, but judged by their bound -- certified where it still
// proves the list holds the k nearest, else rescanned (6000 rows: every
// point survives a +inf k-th bound and fits the rescan) or, past the
// rescan's room (10000 rows), ranked by the exact scan. Same graph as the
// CPU backend's either way.
TEST(GpuLargeKPrior, TooTightBoundGoesToTheRescan) {
  REQUIRE_GPU();
  const uint64_t seed = fresh_seed("GpuLargeKPrior.TooTightBoundGoesToTheRescan");
  {
    const Dataset ds = near_duplicates(6000, 16, seed, 30, 20, 1e-6f);
    const int k = 600;
    const KnnGraph cpu = build("cpu", ds, params(k));
    // Rank 1: the bound is the least sample distance (lists nearly empty);
    // 160 of the 1500 sampled: about k + 40 points below it, so lists end
    // between k and the capacity (675) or just short of k.
    for (int rank : {1, 160}) {
      WithSettings tight([rank](gpu::Settings& s) { s.prior_rank = rank; });
      for (bool beside : {true, false}) {
        // The final step beside the loop (certifying each strip's rows as
        // they become final) and after it.
        WithSettings where([beside](gpu::Settings& s) { s.final_beside_loop = beside; });
        const std::string what = "prior rank " + std::to_string(rank) + (beside ? "" : ", final step after the loop");
        const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, k), cpu, what);
        EXPECT_EQ(prior_rank_of(g), rank) << what;
        EXPECT_GT(g.extra["uncertified_rows"].get<int64_t>(), 0) << what;
        if (rank == 1) {
          EXPECT_GT(g.extra["rescanned_rows"].get<int64_t>(), 0) << what;
        }
      }
    }
  }
  const Dataset ds = near_duplicates(10000, 16, seed + 1, 30, 20, 1e-6f);
  const KnnGraph cpu = build("cpu", ds, params(1024));
  WithSettings tight([](gpu::Settings& s) { s.prior_rank = 1; });
  const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, 1024), cpu, "prior rank 1, 10000 rows");
  EXPECT_GT(g.extra["fallback_rows"].get<int64_t>(), 0);
}

// Rows with NaN still refuse the build with the prior bound on: a NaN row's
// sample distances are all +inf, so it gets no bound, and its list of +inf
// seed entries is the short list of step 1.
TEST(GpuLargeKPrior, NanRowIsStillRefused) {
  REQUIRE_GPU();
  const Dataset clean = random_dataset(6000, 16, 11);
  std::vector<float> v(clean.data(), clean.data() + clean.rows() * clean.cols());
  v[1234 * 16 + 3] = std::numeric_limits<float>::quiet_NaN();
  const Dataset ds(6000, 16, std::move(v));
  try {
    const KnnGraph g = build("gpu", ds, with(Select::Merge, 600));
    ADD_FAILURE() << "built a graph of data with NaN";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1234 has fewer than k=600"), std::string::npos) << e.what();
  }
}

// Fashion-MNIST (10000 images, d = 784: cuBLAS) at k = 1024 and 2047 with
// the prior bound, against the CPU backend.
TEST(GpuLargeKPrior, FashionMnist) {
  REQUIRE_GPU();
  const Dataset ds = fashion(10000);
  if (ds.rows() == 0) GTEST_SKIP() << "Fashion-MNIST not found";
  for (int k : {1024, 2047}) {
    const KnnGraph cpu = build("cpu", ds, params(k));
    const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, k), cpu, "Fashion-MNIST");
    EXPECT_GT(prior_rank_of(g), 0);
  }
}

// A small build with the prior bound, for compute-sanitizer (memcheck and
// racecheck of the sample gather, the bound's rank selection, the merge
// that drops seed entries above it and the certificate that reads it):
// the bound by the rule and one forced too tight, both kernels.
TEST(GpuLargeKPrior, TinyMatchesCpu) {
  REQUIRE_GPU();
  const Dataset ds = near_duplicates(1500, 8, fresh_seed("GpuLargeKPrior.TinyMatchesCpu"), 10, 8, 1e-6f);
  const int k = 300;
  const KnnGraph cpu = build("cpu", ds, params(k));
  for (int rank : {-1, 1}) {
    for (gpu::GemmPath path : {gpu::GemmPath::Fused, gpu::GemmPath::Cublas}) {
      WithSettings s([rank, path](gpu::Settings& x) { x.prior_rank = rank, x.gemm = path; });
      const std::string what = "rank " + std::to_string(rank) + (path == gpu::GemmPath::Fused ? ", fused" : ", cuBLAS");
      const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, k), cpu, what);
      EXPECT_GT(prior_rank_of(g), 0) << what;
    }
  }
}

// Two GPUs at large k: the prior bound is off (each device runs only its
// strips), and the lists merged across devices go through the block merge,
// which drops entries above the receiving row's bound -- the same graph as
// the CPU backend's, with the final step's bound taken from the merged
// lists.
TEST(GpuLargeKPrior, TwoDevicesAtLargeK) {
  REQUIRE_GPU();
  if (gpu::device_count() < 2) GTEST_SKIP() << "fewer than 2 CUDA devices: multi-GPU test skipped";
  const Dataset ds = near_duplicates(12000, 32, fresh_seed("GpuLargeKPrior.TwoDevicesAtLargeK"), 60, 12, 1e-6f);
  for (int k : {300, 1024}) {
    const KnnGraph cpu = build("cpu", ds, params(k));
    KnnParams p = with(Select::Merge, k);
    p.devices = {0, 1};
    const KnnGraph g = expect_same_as_cpu(ds, p, cpu, "two devices");
    EXPECT_EQ(g.extra["devices"].size(), 2u);
    EXPECT_EQ(prior_rank_of(g), 0) << "no prior bound with two devices";
  }
}

// The lists' pending room (gpu/impl/kernels.h ListsView): a full row keeps
// a tile's candidates aside until its room would overflow or it is final.
// Against the CPU backend, byte for byte, on random rows with clusters of
// near-duplicates (a fresh seed per run): rooms of 1 and 7 entries (a merge
// nearly every tile, appends between) and 64, the default, and none; small
// tiles (256 x 512: ~50 tiles a row, so rows append, overflow and are
// flushed many times); the final step beside the loop (each strip's rows
// flushed before they are reported) and after it (one flush at the end);
// k = 20 through the block merge (select=merge) and k = 1024; both kernels.
// The build must report the room it planned (graph.json's pending_room).
TEST(GpuPendingRoom, MatchesCpuAtEveryRoom) {
  REQUIRE_GPU();
  const Dataset ds = near_duplicates(12000, 32, fresh_seed("GpuPendingRoom.MatchesCpuAtEveryRoom"), 60, 12, 1e-6f);
  for (int k : {20, 1024}) {
    const KnnGraph cpu = build("cpu", ds, params(k));
    for (int room : {1, 7, 64, -1, 0}) {
      for (gpu::GemmPath path : {gpu::GemmPath::Fused, gpu::GemmPath::Cublas}) {
        for (bool beside : {true, false}) {
          if (path == gpu::GemmPath::Cublas && !beside) continue;
          WithSettings s([=](gpu::Settings& x) {
            x.pending_room = room, x.gemm = path, x.final_beside_loop = beside, x.tile = "256x512";
          });
          const std::string what = "room " + std::to_string(room) +
                                   (path == gpu::GemmPath::Fused ? ", fused" : ", cuBLAS") +
                                   (beside ? "" : ", final step after the loop");
          const KnnGraph g = expect_same_as_cpu(ds, with(Select::Merge, k), cpu, what);
          EXPECT_EQ(g.extra["pending_room"].get<int>(), room < 0 ? gpu::kPendingRoom : room)
              << where(what, with(Select::Merge, k));
        }
      }
    }
  }
}

// The warp merge (k up to kWarpMergeMaxK, `auto`) takes no pending room.
TEST(GpuPendingRoom, WarpPathTakesNone) {
  REQUIRE_GPU();
  const Dataset ds = near_duplicates(9000, 24, fresh_seed("GpuPendingRoom.WarpPathTakesNone"), 40, 10, 1e-6f);
  const KnnGraph cpu = build("cpu", ds, params(100));
  const KnnGraph g = expect_same_as_cpu(ds, params(100), cpu, "warp merge");
  EXPECT_EQ(g.extra["pending_room"].get<int>(), 0);
}

// Two GPUs flush every row's pending entries before their lists are merged
// on device 0: the same graph as the CPU backend's.
TEST(GpuPendingRoom, TwoDevicesFlushBeforeTheirListsMerge) {
  REQUIRE_GPU();
  if (gpu::device_count() < 2) GTEST_SKIP() << "fewer than 2 CUDA devices: multi-GPU test skipped";
  const Dataset ds = near_duplicates(9000, 24, fresh_seed("GpuPendingRoom.TwoDevicesFlushBeforeTheirListsMerge"), 40,
                                     10, 1e-6f);
  WithSettings s([](gpu::Settings& x) { x.pending_room = 7, x.tile = "256x512"; });
  const KnnGraph cpu = build("cpu", ds, params(600));
  KnnParams p = with(Select::Merge, 600);
  p.devices = {0, 1};
  const KnnGraph g = expect_same_as_cpu(ds, p, cpu, "two devices, room 7");
  EXPECT_EQ(g.extra["pending_room"].get<int>(), 7);
}

// A small build with pending rooms of 7 entries, for compute-sanitizer
// (memcheck and racecheck of the append kernel, the merges that take the
// pending entries and the flushes): both kernels.
TEST(GpuPendingRoom, TinyMatchesCpu) {
  REQUIRE_GPU();
  const Dataset ds = near_duplicates(1500, 8, fresh_seed("GpuPendingRoom.TinyMatchesCpu"), 10, 8, 1e-6f);
  const KnnGraph cpu = build("cpu", ds, params(300));
  for (gpu::GemmPath path : {gpu::GemmPath::Fused, gpu::GemmPath::Cublas}) {
    WithSettings s([path](gpu::Settings& x) { x.pending_room = 7, x.gemm = path, x.tile = "128x256"; });
    expect_same_as_cpu(ds, with(Select::Merge, 300), cpu,
                       path == gpu::GemmPath::Fused ? "room 7, fused" : "room 7, cuBLAS");
  }
}
