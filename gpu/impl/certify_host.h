#pragma once
// The final step on the host, for rows streamed from host memory (the device
// does not hold every row), and the fallback scan of uncertified rows. Both
// follow the device kernels (impl/certify.cu) rule for rule and evaluate
// distances in the device's exact float64 order, so a streamed run and an
// in-memory run return the same graph bit for bit.
#include <cstdint>
#include <vector>

#include "impl/error_bound.h"
#include "manifold/knn.h"

namespace manifold::gpu {

/// Candidate lists as the device leaves them: row g holds fill[g] entries of
/// (GEMM distance, index) at g*capacity, ascending.
struct HostLists {
  const float* dist = nullptr;
  const int* index = nullptr;
  const int* fill = nullptr;
  int64_t n = 0;
  int capacity = 0;
};

/// Certifies every row and writes the k nearest of the certified ones;
/// status[g] = candidates re-evaluated, or -1 where the fallback must scan.
/// Returns the largest |a - s64| / bound seen.
float certify_on_host(const float* rows, int64_t d, const HostLists& lists, int k, const float* norms, double ymax,
                      const ErrorModel& model, Metric metric, bool complete, int threads, int64_t* out_index,
                      float* out_dist, int* status);

/// The k smallest (key, index) of keys[0, n): the exact ranking of one row.
void select_k_from_keys(const float* keys, int64_t n, int k, int64_t* out_index, float* out_dist);

/// The fallback scan on the host: for each row of `fb`, exact keys against
/// all n rows and the k smallest; out_index/out_dist are the full n*k arrays.
void fallback_on_host(const float* rows, int64_t n, int64_t d, const std::vector<int64_t>& fb, int k, Metric metric,
                      bool keep_self, int threads, int64_t* out_index, float* out_dist);

/// Rounds a double up to a float (as __double2float_ru).
float to_float_up(double v);

}  // namespace manifold::gpu
