// Times the diffusion matrix's construction (core's diffusion_matrix: the
// kernel graph, epsilon, components, normalisation) on a k-NN graph of
// random rows: each row's k neighbours drawn at random (distinct, not the
// row), distances ascending. A graph of high-dimensional random data is
// much like it: no locality to help the transpose's scatter.
//   g++ -O2 -std=c++20 -Icore/include bench/diffusion/matrix_build.cpp build/core/libmanifold_core.a \
//     -lopenblas -lxxhash -lz -lpng -ltiff -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lminizip \
//     -lpthread -o matrix_build
//   matrix_build [N (1000000)] [THREADS (0: every core)] [REPEATS (2)]
// Prints one line a repeat: the total and core's stage timings, seconds.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "manifold/diffusion_map.h"
#include "manifold/knn.h"
#include "manifold/progress.h"

using namespace manifold;

namespace {

KnnGraph random_graph(int64_t n, int k) {
  KnnGraph g;
  g.n = n, g.k = k, g.d = 128;
  g.allocate_result();
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> first(0.5f, 1.5f);
  for (int64_t i = 0; i < n; ++i) {
    const float base = first(rng);
    for (int e = 0; e < k; ++e) {
      int64_t j;
      bool taken;
      do {
        j = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
        taken = j == i;
        for (int f = 0; f < e; ++f) taken |= g.indices[i * k + f] == j;
      } while (taken);
      g.indices[i * k + e] = j;
      g.distances[i * k + e] = base + 0.01f * static_cast<float>(e);
    }
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 0;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 2;
  const KnnGraph g = random_graph(n, 20);
  for (int r = 0; r < repeats; ++r) {
    Progress progress;
    DiffusionParams p;
    p.threads = threads;
    const auto t0 = std::chrono::steady_clock::now();
    const DiffusionMatrix a = diffusion_matrix(g, p, progress);
    std::printf("n %lld threads %d total %.3f s, nnz %zu:", static_cast<long long>(n), threads,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), a.col.size());
    for (const auto& [stage, s] : a.timings) std::printf(" %s %.3f", stage.c_str(), s);
    std::printf("\n");
  }
}
