// The table behind `--select auto`. Each cell is the strategy with the
// smallest median total time in bench/gpu/select/results.json (H200, d = 256,
// random normal data); regenerate with bench/gpu/select/make_table.py after a
// new benchmark run. Cells are looked up by the nearest measured N and k on a
// log scale.
#include "select/auto_table.h"

#include <cmath>
#include <cstddef>

namespace manifold::gpu::select {

namespace {

constexpr int64_t kNs[] = {10000, 100000, 1000000};
constexpr int kKs[] = {1, 16, 128, 1024, 4096};

// kBest[n bucket][k bucket]. PROVISIONAL until the first measurement.
const char* const kBest[3][5] = {
    {"warp", "warp", "warp", "warp", "warp"},
    {"warp", "warp", "warp", "warp", "warp"},
    {"warp", "warp", "warp", "warp", "warp"},
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

std::string best_strategy(int64_t n, int k) {
  std::string s = kBest[nearest_log(kNs, static_cast<double>(n < 1 ? 1 : n))][nearest_log(kKs, k < 1 ? 1 : k)];
  // Beyond the measured k, a strategy must still support k: bitonic holds a
  // row in one block's shared memory (k <= 8192).
  if (s == "bitonic" && k > 8192) s = "merge";
  return s;
}

}  // namespace manifold::gpu::select
