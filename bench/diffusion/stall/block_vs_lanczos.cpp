// Lanczos (top_eigenpairs: Spectra with the lock check) against the
// Chebyshev-filtered block solver on the CPU back end (CsrBlockOperator), on
// one matrix of a graph folder: which should the CPU default be?
//   g++ -O2 -std=c++20 bench/diffusion/stall/block_vs_lanczos.cpp -Icore/include -I/usr/include/eigen3 \
//       build/core/libmanifold_core.a -lopenblas -lxxhash -lz -lpng -ltiff -lhdf5_serial \
//       -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lpthread -o block_vs_lanczos
//   ./block_vs_lanczos GRAPHDIR K EPSILON
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "manifold/block_eigensolver.h"
#include "manifold/diffusion_map.h"
#include "manifold/graph_io.h"

using namespace manifold;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: block_vs_lanczos GRAPHDIR K EPSILON\n");
    return 2;
  }
  const KnnGraph g = read_graph(argv[1]);
  DiffusionParams p;
  p.k = std::stoi(argv[2]);
  p.epsilon = argv[3];
  Progress progress;
  const DiffusionMatrix a = diffusion_matrix(g, p, progress);
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  EigenOptions eo;
  eo.max_matvecs = 0;  // no budget: how long each takes
  const Eigenpairs lanczos = top_eigenpairs(a, p.components + 1, eo, progress);
  const double t_lanczos = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  CsrBlockOperator op(a, chebyshev_block(p.components + 1, a.n));
  ChebyshevStats st;
  const Eigenpairs block = chebyshev_eigenpairs(op, p.components + 1, {}, progress, &st);
  const double t_block = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "{\"n\": %lld, \"lanczos_s\": %.3f, \"lanczos_matvecs\": %lld, \"block_s\": %.3f, "
      "\"block_products\": %lld, \"block\": %d, \"last_eigenvalue_difference\": %.2e}\n",
      static_cast<long long>(a.n), t_lanczos, static_cast<long long>(lanczos.matvecs), t_block,
      static_cast<long long>(st.products), op.block(), std::abs(lanczos.values.back() - block.values.back()));
}
