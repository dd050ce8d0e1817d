#pragma once
// The refinement on the host, for data streamed from host memory (the device
// does not hold every row). It reproduces the device's float64 summation order
// exactly (see warp_sum_sq_diff in utils/keys.cuh), so a streamed run returns
// the same distances, bit for bit, as an in-memory run.
#include <cstdint>

#include "manifold/knn.h"

namespace manifold::gpu {

/// The device's float64 sum of squared differences (warp_sum_sq_diff), in
/// its exact order of operations: the same double, bit for bit.
double sum_sq_diff_like_device(const float* x, const float* y, int64_t d);

/// rows: n x d prepared rows; index: n*k selected neighbours (int32);
/// writes out_index / out_dist (n*k), each row ascending by (distance, index).
void refine_on_host(const float* rows, int64_t n, int64_t d, int k, const int* index, Metric metric, int threads,
                    int64_t* out_index, float* out_dist);

}  // namespace manifold::gpu
