#pragma once
// The exact GPU k-NN backend (CUDA + cuBLAS) behind a CUDA-free header: the
// CLI, the GUI and the tests include this without the CUDA toolkit.
#include <cstdint>
#include <string>

namespace manifold::gpu {

/// Registers the backend "gpu" with manifold::register_backend. It reports
/// itself available only when a CUDA device is present, so `--backend auto`
/// takes the GPU when there is one and the CPU otherwise.
void register_gpu_backend();

/// CUDA devices this process can use; 0 when there is no driver or device.
int device_count();

/// The device's marketing name ("NVIDIA H100 80GB HBM3"); throws Error for a bad ordinal.
std::string device_name(int ordinal);

/// A cuBLAS float32 GEMM rate measured on this device in the engine's own
/// layout and math mode (plain FFMA, never TF32).
struct SgemmRate {
  int device = 0;
  int64_t m = 0, n = 0, k = 0;
  double median_s = 0;    ///< median of the timed repeats
  double tflops = 0;      ///< 2 m n k / median_s / 1e12
  std::string math_mode;  ///< cuBLAS math mode used
};

/// Times C = A^T B (m x n, inner dimension k) on random operands (never
/// zeros): `repeats` runs after one warm-up, CUDA events, median.
SgemmRate measure_sgemm(int device, int64_t m, int64_t n, int64_t k, int repeats = 10);

/// The `--select auto` table in use (built in, or MANIFOLD_SELECT_TABLE's
/// file), as text: a `k ...` line and a line per N bucket.
std::string select_table_text();
/// MANIFOLD_SELECT_TABLE's file (Settings::select_table), or "" for the
/// built-in table.
std::string select_table_file();

}  // namespace manifold::gpu
