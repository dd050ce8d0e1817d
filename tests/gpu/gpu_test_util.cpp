#include "gpu_test_util.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "impl/certify_host.h"
#include "impl/error_bound.h"
#include "impl/refine_host.h"
#include "manifold/gpu/gpu_knn_backend.h"
#include "manifold/parallel.h"

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

int64_t same_rows(const KnnGraph& a, const KnnGraph& b) {
  if (a.n != b.n || a.k != b.k) return -1;
  int64_t same = 0;
  for (int64_t i = 0; i < a.n; ++i)
    same += std::equal(a.indices.begin() + i * a.k, a.indices.begin() + (i + 1) * a.k, b.indices.begin() + i * b.k);
  return same;
}

KnnGraph exact_reference(const Dataset& ds, int k, Metric m, bool keep_self) {
  const PreparedRows rows = prepare_rows(ds, m);
  const int64_t n = rows.rows, d = rows.cols;
  KnnGraph g;
  g.n = n, g.d = d, g.k = k, g.metric = m, g.keep_self = keep_self;
  g.indices.resize(static_cast<size_t>(n * k));
  g.distances.resize(static_cast<size_t>(n * k));
  parallel_for(0, n, 0, [&](int64_t i) {
    std::vector<float> keys(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      keys[static_cast<size_t>(j)] =
          (j == i && !keep_self)
              ? INFINITY
              : gpu::key_of(gpu::sum_sq_diff_like_device(rows.data + i * d, rows.data + j * d, d),
                            m == Metric::Euclidean);
    gpu::select_k_from_keys(keys.data(), n, k, g.indices.data() + i * k, g.distances.data() + i * k);
  }, 1);
  return g;
}

Dataset near_duplicates(int64_t n, int64_t d, uint64_t seed, int clusters, int per_cluster, float eps) {
  Dataset base = testing_support::random_dataset(n, d, seed);
  std::vector<float> v(base.data(), base.data() + n * d);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<float> normal(0.f, 1.f);
  int64_t next = 0;
  for (int c = 0; c < clusters && next < n; ++c) {
    const int64_t src = next++;
    for (int p = 1; p < per_cluster && next < n; ++p, ++next)
      for (int64_t q = 0; q < d; ++q) v[next * d + q] = v[src * d + q] + (p % 7 == 0 ? 0.f : eps * normal(rng));
  }
  // Scatter the clusters over the index range (and so over tiles and devices).
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<float> w(v.size());
  for (int64_t i = 0; i < n; ++i) std::copy_n(v.begin() + perm[static_cast<size_t>(i)] * d, d, w.begin() + i * d);
  Dataset ds(n, d, std::move(w));
  ds.source = "near-duplicates";
  return ds;
}

std::string first_difference(const KnnGraph& a, const KnnGraph& b) {
  if (a.n != b.n || a.k != b.k) return "shapes differ";
  for (int64_t i = 0; i < a.n; ++i)
    for (int j = 0; j < a.k; ++j) {
      const size_t at = static_cast<size_t>(i * a.k + j);
      if (a.indices[at] != b.indices[at] || a.distances[at] != b.distances[at])
        return "row " + std::to_string(i) + " position " + std::to_string(j) + ": (" +
               std::to_string(a.indices[at]) + ", " + std::to_string(a.distances[at]) + ") vs (" +
               std::to_string(b.indices[at]) + ", " + std::to_string(b.distances[at]) + ")";
    }
  return "";
}

}  // namespace gpu_tests
