#pragma once
// Certified exact ranking: the final step every backend shares. A tile loop
// keeps `capacity = k + slack` candidates per row ranked by its fast GEMM
// distance a; certify_rows() proves from the error bound (error_bound.h) that
// no point outside a row's list can be among its k nearest, re-evaluates the
// candidates the bound cannot rule out exactly (exact_sum_sq_diff) and ranks
// them by (key, index). Rows it cannot certify go to exact_scan_rows(). The
// result is the float64 brute force, up to the float32 rounding of the
// written distance, whatever GEMM (CPU BLAS, cuBLAS, tensor cores) produced a.
// The derivation is in gpu/PRECISION.md.
#include <cstdint>
#include <vector>

#include "manifold/exact/error_bound.h"
#include "manifold/knn.h"

namespace manifold::exact {

/// The exact float64 sum of squared differences in one fixed order of
/// operations (32 interleaved partial sums, then a halving tree), which the
/// GPU's warp reduction reproduces bit for bit. Every backend's exact key is
/// key_of(exact_sum_sq_diff(x, y, d)).
double exact_sum_sq_diff(const float* x, const float* y, int64_t d);

/// Candidate lists: row g holds fill[g] entries of (GEMM distance, index) at
/// g*capacity, ascending by (distance, index).
struct CandidateLists {
  const float* dist = nullptr;
  const int* index = nullptr;
  const int* fill = nullptr;
  int64_t n = 0;
  int capacity = 0;
};

/// List slack beyond k per precision (exact float32 GEMM / tensor-core GEMM).
inline int exact_slack(int k) { return k / 8 > 16 ? k / 8 : 16; }

/// Certifies every row and writes the k nearest of the certified ones;
/// status[g] = candidates re-evaluated, or -1 where exact_scan_rows must
/// scan. `ymax` is the largest stored squared norm of any row; `complete`
/// says the lists hold every other point. Returns the largest |a - s64| /
/// bound seen (must stay below 1).
float certify_rows(const float* rows, int64_t d, const CandidateLists& lists, int k, const float* norms, double ymax,
                   const ErrorModel& model, Metric metric, bool complete, int threads, int64_t* out_index,
                   float* out_dist, int* status);

/// The k smallest (key, index) of keys[0, n): the exact ranking of one row.
void select_k_from_keys(const float* keys, int64_t n, int k, int64_t* out_index, float* out_dist);

/// The exact scan of one row g: exact keys against all n rows (`keys` is
/// scratch), the k smallest written to out_index/out_dist (k entries).
void exact_scan_row(const float* rows, int64_t n, int64_t d, int64_t g, int k, Metric metric, bool keep_self,
                    int threads, std::vector<float>& keys, int64_t* out_index, float* out_dist);

/// The exact scan: for each row of `rows_to_scan`, exact keys against all n
/// rows and the k smallest; out_index/out_dist are the full n*k arrays.
void exact_scan_rows(const float* rows, int64_t n, int64_t d, const std::vector<int64_t>& rows_to_scan, int k,
                     Metric metric, bool keep_self, int threads, int64_t* out_index, float* out_dist);

/// Rounds a double up to a float.
float to_float_up(double v);

}  // namespace manifold::exact
