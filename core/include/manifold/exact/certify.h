#pragma once
// Certified exact ranking: the final step every backend shares. A tile loop
// keeps `capacity = k + slack` candidates per row ranked by its fast GEMM
// distance a; certify_rows() proves from the error bound (error_bound.h) that
// no point outside a row's list can be among its k nearest, re-evaluates the
// candidates the bound cannot rule out exactly (exact_sum_sq_diff) and ranks
// them by (key, index). Rows it cannot certify go to exact_scan_rows(). The
// result is the float64 brute force, up to the float32 rounding of the
// written distance, whatever GEMM (CPU BLAS, cuBLAS, tensor cores) produced a.
// The GPU's kernels (gpu/impl/certify.cu) follow the same rules with these
// names. The derivation is in docs/PRECISION.md.
#include <algorithm>
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

/// List slack beyond k for the float32 bound (CPU, MPI, the GPU's exact
/// precision): the room the certificate needs between the k-th upper bound
/// and the last list entry, which holds the points whose distance lies in
/// the bound's window past the k-th. That window grows in proportion to d
/// (float32's c_dot is d 2^-23) and the points in it in proportion to k
/// (docs/PRECISION.md, "How much slack"): max(16, k/8) up to d = 512,
/// growing with d beyond it (k at d = 4096, where photon-counted diffraction
/// patterns needed 0.6-1 k), and at most max(64, k), so that lists stay
/// within twice the result: rows that still fail go to the rescan.
inline int exact_slack(int k, int64_t d) {
  const int64_t grown = std::min<int64_t>(int64_t{k / 8} * std::max<int64_t>(d, 512) / 512, std::max(64, k));
  return static_cast<int>(std::max<int64_t>(grown, 16));
}

/// One certification: the candidate lists of rows [0, lists.n) and what the
/// bound needs to judge them.
struct CertifyRequest {
  const float* rows = nullptr;  ///< list row g at rows + g*d, candidate j at rows + j*d (j may be negative)
  int64_t d = 0;
  CandidateLists lists;
  int k = 0;
  const float* norms = nullptr;  ///< stored squared norms, indexed as rows
  double ymax = 0;               ///< largest stored squared norm of any point (for those no list holds)
  ErrorModel model;
  Metric metric = Metric::Euclidean;
  bool complete = false;  ///< the lists hold every other point
  int threads = 0;
};

/// Where certify_rows writes: the k nearest of each certified row (lists.n*k
/// entries each) and each row's status: candidates re-evaluated, or -1 where
/// the exact scan must decide.
struct CertifiedRows {
  int64_t* index = nullptr;
  float* dist = nullptr;
  int* status = nullptr;
};

/// Certifies every row of the request and ranks the certified ones. Returns
/// the largest |a - s64| / bound seen (evidence for the model: below 1).
float certify_rows(const CertifyRequest& request, const CertifiedRows& out);

/// The exact scan: every point's exact key against a row, the k smallest by
/// (key, index). For rows the certificate could not decide.
struct ExactScanRequest {
  const float* rows = nullptr;  ///< all n prepared rows
  int64_t n = 0;
  int64_t d = 0;
  int k = 0;
  Metric metric = Metric::Euclidean;
  bool keep_self = false;
  int threads = 0;
};

/// The k smallest (key, index) of keys[0, n): the exact ranking of one row.
void select_k_from_keys(const float* keys, int64_t n, int k, int64_t* out_index, float* out_dist);

/// The exact scan of row g (`keys` is scratch), its k nearest written to
/// out_index/out_dist (k entries).
void exact_scan_row(const ExactScanRequest& request, int64_t g, std::vector<float>& keys, int64_t* out_index,
                    float* out_dist);

/// The exact scan of each row of `rows_to_scan`; out_index/out_dist are the
/// full n*k arrays.
void exact_scan_rows(const ExactScanRequest& request, const std::vector<int64_t>& rows_to_scan, int64_t* out_index,
                     float* out_dist);

/// Rounds a double up to a float.
float to_float_up(double v);

}  // namespace manifold::exact
