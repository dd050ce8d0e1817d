// The table behind `--select auto`, from bench/gpu/select/results.json (one
// NVIDIA H200, d = 256, random normal data, one GPU for every strategy;
// bench/gpu/select/README.md). A cell holds the strategy with the smallest
// median total time, or -- where the totals are set by the host faulting in
// the result's pages (k >= 1024: seconds, the same for every strategy) --
// the one with the fastest GPU pipeline; make_table.py prints these rows
// from the JSON. Cells are looked up by the nearest measured N and k on a
// log scale.
#include "select/auto_table.h"

#include <cmath>
#include <cstddef>

namespace manifold::gpu::select {

namespace {

constexpr int64_t kNs[] = {10000, 100000, 1000000};
constexpr int kKs[] = {1, 16, 128, 1024, 4096};

// kBest[n bucket][k bucket]; k = 1, 16, 128, 1024, 4096.
const char* const kBest[3][5] = {
    {"heap", "heap", "quick", "quick", "quick"},  // N = 10k
    {"heap", "heap", "warp", "quick", "warp"},    // N = 100k
    // N = 1M: only k = 16 was measured (the device budget); the other cells
    // repeat the 100k picks.
    {"heap", "heap", "warp", "quick", "warp"},
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
  // row in one block's shared memory (k <= 8192).
  if (s == "bitonic" && k > 8192) s = "merge";
  return s;
}

}  // namespace manifold::gpu::select
