#pragma once
// Shared by the GPU tests: skipping without a device, building graphs with a
// backend, Fashion-MNIST from $MANIFOLD_FASHION_MNIST_DIR, the GPU settings
// for one scope, and comparing two graphs honestly (rows that differ must be explained by float32 near-ties).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "settings.h"
#include "test_support.h"

namespace gpu_tests {

bool have_gpu();

#define REQUIRE_GPU()                                                                                 \
  do {                                                                                                \
    if (!::gpu_tests::have_gpu()) GTEST_SKIP() << "no CUDA device on this machine: GPU test skipped"; \
  } while (0)

manifold::KnnParams params(int k, manifold::Metric m = manifold::Metric::Euclidean, bool keep_self = false);
manifold::KnnGraph build(const std::string& backend, const manifold::Dataset& ds, const manifold::KnnParams& p);

/// The first n Fashion-MNIST test images from $MANIFOLD_FASHION_MNIST_DIR (or
/// the Debian package's folder); empty when absent.
manifold::Dataset fashion(int64_t n);

/// Rows whose indices are identical in a and b.
int64_t same_rows(const manifold::KnnGraph& a, const manifold::KnnGraph& b);

/// A fresh seed per run, printed and recorded as the test's "seed" property,
/// or $MANIFOLD_TEST_SEED to repeat a run.
uint64_t fresh_seed(const char* test);

/// What the GPU backend refuses `p` with: the E's one line, "wrong exception
/// type: ..." for any other exception, "no error" when it builds.
template <class E>
std::string gpu_error_of(const manifold::Dataset& ds, const manifold::KnnParams& p) {
  try {
    build("gpu", ds, p);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no error";
}

/// The same for the refusals of bad parameters (UsageError).
inline std::string gpu_usage_error(const manifold::Dataset& ds, const manifold::KnnParams& p) {
  return gpu_error_of<manifold::UsageError>(ds, p);
}

// The exact reference, near-duplicate data and the entry-for-entry
// comparison live in tests/support (the core tests use them too).
using testing_support::exact_reference;
using testing_support::first_difference;
using testing_support::near_duplicates;

/// The GPU library's settings (gpu/settings.h) as they are, with `change`
/// applied, for one scope; restored also when the scope is left by a failure.
/// Scopes nest: WithSettings tile([](auto& s) { s.tile = "128x256"; });
struct WithSettings : manifold::gpu::ScopedSettings {
  template <class Change>
  explicit WithSettings(Change change) : ScopedSettings(changed(change)) {}
  template <class Change>
  static manifold::gpu::Settings changed(Change change) {
    manifold::gpu::Settings s = manifold::gpu::settings();
    change(s);
    return s;
  }
};

}  // namespace gpu_tests
