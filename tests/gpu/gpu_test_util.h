#pragma once
// Shared by the GPU tests: skipping without a device, building graphs with a
// backend, Fashion-MNIST from $MANIFOLD_FASHION_MNIST_DIR, and comparing two
// graphs honestly (rows that differ must be explained by float32 near-ties).
#include <gtest/gtest.h>

#include <string>

#include "manifold/dataset.h"
#include "manifold/knn.h"
#include "test_support.h"

namespace gpu_tests {

bool have_gpu();

#define REQUIRE_GPU()                                                                  \
  do {                                                                                 \
    if (!::gpu_tests::have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU test skipped"; \
  } while (0)

manifold::KnnParams params(int k, manifold::Metric m = manifold::Metric::Euclidean, bool keep_self = false);
manifold::KnnGraph build(const std::string& backend, const manifold::Dataset& ds, const manifold::KnnParams& p);

/// The first n Fashion-MNIST test images from $MANIFOLD_FASHION_MNIST_DIR (or
/// the Debian package's folder); empty when absent.
manifold::Dataset fashion(int64_t n);

/// Rows whose indices are identical in a and b.
int64_t same_rows(const manifold::KnnGraph& a, const manifold::KnnGraph& b);

/// The graph the GPU backend promises, computed on the CPU: for every row the
/// k smallest (key, index), key = the metric's distance from the float64 sum
/// of squared differences of the prepared rows, in the device's summation
/// order, rounded to float. O(n^2 d): keep n d small.
manifold::KnnGraph exact_reference(const manifold::Dataset& ds, int k, manifold::Metric m, bool keep_self);

/// Random normal rows in which `clusters` groups of `per_cluster` rows are
/// copies of one row perturbed by eps * N(0,1) (a few ulps to a few hundred):
/// neighbours closer together than any GEMM can tell apart.
manifold::Dataset near_duplicates(int64_t n, int64_t d, uint64_t seed, int clusters, int per_cluster, float eps);

/// First row (and column) where a and b differ, as a message; "" when the
/// indices and the distances are identical.
std::string first_difference(const manifold::KnnGraph& a, const manifold::KnnGraph& b);

}  // namespace gpu_tests
