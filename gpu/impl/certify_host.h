#pragma once
// The host twin of the device's final step is core's certified exact ranking
// (manifold/exact/certify.h): the CPU backend and the GPU's streamed and
// fallback paths share one implementation, rule for rule.
#include "impl/error_bound.h"
#include "manifold/exact/certify.h"

namespace manifold::gpu {

using HostLists = exact::CandidateLists;
using exact::select_k_from_keys;
using exact::to_float_up;

inline float certify_on_host(const float* rows, int64_t d, const HostLists& lists, int k, const float* norms,
                             double ymax, const ErrorModel& model, Metric metric, bool complete, int threads,
                             int64_t* out_index, float* out_dist, int* status) {
  return exact::certify_rows(rows, d, lists, k, norms, ymax, model, metric, complete, threads, out_index, out_dist,
                             status);
}

inline void fallback_on_host(const float* rows, int64_t n, int64_t d, const std::vector<int64_t>& fb, int k,
                             Metric metric, bool keep_self, int threads, int64_t* out_index, float* out_dist) {
  exact::exact_scan_rows(rows, n, d, fb, k, metric, keep_self, threads, out_index, out_dist);
}

}  // namespace manifold::gpu
