// The table behind `--select auto`, from bench/gpu/select/results.json (one
// NVIDIA H200, d = 256, random normal data, one GPU for every strategy;
// bench/gpu/select/README.md). A cell holds the strategy with the smallest
// median total time, or -- where the totals are set by the host faulting in
// the result's pages (k >= 1024: seconds, the same for every strategy) --
// the one with the fastest GPU pipeline; make_table.py writes these rows
// from the JSON. Cells are looked up by the nearest measured N and k on a
// log scale.
#include "select/auto_table.h"

#include <cmath>
#include <cstddef>

namespace manifold::gpu::select {

namespace {

constexpr int64_t kNs[] = {10000, 100000, 1000000};
constexpr int kKs[] = {1, 16, 128, 1024, 4096};

// kBest[n bucket][k bucket]; k = 1, 16, 128, 1024, 4096. The rows between
// the markers are written by `bench/gpu/select/make_table.py
// --write-auto-table` from bench/gpu/select/results.json.
const char* const kBest[3][5] = {
    // BEGIN kBest
    {"heap", "warp", "merge", "heap", "sort"},  // N = 10000
    {"warp", "warp", "warp", "heap", "sort"},  // N = 100000
    {"warp", "warp", "warp", "warp", "merge"},  // N = 1000000
    // END kBest
};

template <class T, size_t N>
size_t nearest_log(const T (&grid)[N], double v) {
  size_t best = 0;
  for (size_t i = 1; i < N; ++i)
    if (std::fabs(std::log(v / static_cast<double>(grid[i]))) < std::fabs(std::log(v / static_cast<double>(grid[best]))))
      best = i;
  return best;
}

}  // namespace

std::string best_strategy(int64_t n, int k, int devices) {
  // The papers' strategies run on one GPU.
  if (devices > 1) return "warp";
  std::string s = kBest[nearest_log(kNs, static_cast<double>(n < 1 ? 1 : n))][nearest_log(kKs, k < 1 ? 1 : k)];
  // Beyond the measured k, a strategy must still support k: bitonic holds a
  // row's k + slack candidates in one block's shared memory (up to ~7000 on
  // an H200). The backend also takes the engine when a pick refuses.
  if (s == "bitonic" && k > 4096) s = "warp";
  return s;
}

}  // namespace manifold::gpu::select
