// main() of the GPU test programs: GoogleTest's flags, and
// --gemm=fused|ffma|cublas, which runs every test of the program with every
// tile's dot products on that kernel (gpu::Settings::gemm; tests that pick a
// kernel themselves still do; ffma: the fused kernel with exact's strips by
// FFMA, the path of GPUs before compute capability 8.0).
// bench/gpu/device_tests.sh runs the exactness suite and the sanitizer runs
// once per kernel this way.
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <string>

#include "settings.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  manifold::gpu::Settings s;
  try {
    s = manifold::gpu::settings();  // the environment's (a bad value: one line)
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gemm=fused") {
      s.gemm = manifold::gpu::GemmPath::Fused;
    } else if (a == "--gemm=ffma") {
      s.gemm = manifold::gpu::GemmPath::FusedFfma;
    } else if (a == "--gemm=cublas") {
      s.gemm = manifold::gpu::GemmPath::Cublas;
    } else {
      std::fprintf(stderr, "%s: unknown option '%s' (GoogleTest's, or --gemm=fused|ffma|cublas)\n", argv[0], argv[i]);
      return 2;
    }
  }
  const manifold::gpu::ScopedSettings settings(s);
  if (s.gemm != manifold::gpu::GemmPath::Auto)
    std::printf("[ settings ] every tile's dot products by the %s kernel\n",
                s.gemm == manifold::gpu::GemmPath::Fused       ? "fused"
                : s.gemm == manifold::gpu::GemmPath::FusedFfma ? "fused (exact's strips FFMA)"
                                                               : "cuBLAS");
  return RUN_ALL_TESTS();
}
