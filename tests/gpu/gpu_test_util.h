#pragma once
// Shared by the GPU tests: skipping without a device, building graphs with a
// backend, Fashion-MNIST from $MANIFOLD_FASHION_MNIST_DIR, and comparing two
// graphs honestly (rows that differ must be explained by float32 near-ties).
#include <gtest/gtest.h>

#include <cstdlib>
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

// The exact reference, near-duplicate data and the entry-for-entry
// comparison live in tests/support (the core tests use them too).
using testing_support::exact_reference;
using testing_support::first_difference;
using testing_support::near_duplicates;

/// Sets (v == nullptr: unsets) an environment variable for one scope and
/// restores what it was, also when the scope is left by a failure.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* v) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (v) setenv(name, v, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace gpu_tests
