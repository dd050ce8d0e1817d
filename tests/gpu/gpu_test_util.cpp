#include "gpu_test_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "manifold/error.h"
#include "manifold/gpu/gpu_knn_backend.h"

using namespace manifold;

namespace gpu_tests {

bool have_gpu() { return gpu::device_count() > 0; }

KnnParams params(int k, Metric m, bool keep_self) {
  KnnParams p;
  p.k = k;
  p.metric = m;
  p.keep_self = keep_self;
  return p;
}

KnnGraph build(const std::string& backend, const Dataset& ds, const KnnParams& p) {
  register_cpu_backend();
  gpu::register_gpu_backend();
  auto b = make_backend(backend);
  Progress progress;
  return b->build(ds, p, progress);
}

Dataset fashion(int64_t n) {
  const char* env = std::getenv("MANIFOLD_FASHION_MNIST_DIR");
  const std::string dir = env && *env ? env : testing_support::fashion_mnist_dir();
  const std::string path = dir + "/t10k-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(path)) return {};
  ReadOptions ro;
  ro.max_rows = n;
  return load_dataset(path, ro);
}

uint64_t fresh_seed(const char* test) {
  uint64_t seed = 0;
  if (const char* v = std::getenv("MANIFOLD_TEST_SEED")) seed = std::strtoull(v, nullptr, 10);
  else
    seed = (static_cast<uint64_t>(std::random_device{}()) << 20) ^ std::random_device{}();
  std::printf("[ seed     ] %s: MANIFOLD_TEST_SEED=%llu\n", test, static_cast<unsigned long long>(seed));
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

int64_t same_rows(const KnnGraph& a, const KnnGraph& b) {
  if (a.n != b.n || a.k != b.k) return -1;
  int64_t same = 0;
  for (int64_t i = 0; i < a.n; ++i)
    same += std::equal(a.indices.begin() + i * a.k, a.indices.begin() + (i + 1) * a.k, b.indices.begin() + i * b.k);
  return same;
}

}  // namespace gpu_tests
