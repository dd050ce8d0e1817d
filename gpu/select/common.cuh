#pragma once
// Device helpers shared by the papers' selection kernels.
#include <cuda_runtime.h>

#include <cstdint>

#include "select/select_kernels.h"
#include "utils/keys.cuh"

namespace manifold::gpu::select {

/// The squared distance |x|^2 + |y|^2 - 2 x.y, rounded exactly as the
/// engine's filter and the CPU backend round it, so every strategy sees the
/// same float32 keys for the same dot product.
__device__ __forceinline__ float squared_distance(float ni, float nj, float dot) { return fmaf(-2.f, dot, ni + nj); }

__device__ __forceinline__ unsigned lanes_below(int lane) { return (1u << lane) - 1u; }

/// A dirty slot of the current tile: whose list it feeds and where its entries are.
struct SlotItem {
  int slot = 0;
  int row = 0;  ///< global row of the list
  const float* dist = nullptr;
  const int* index = nullptr;
  int count = 0;
};

__device__ __forceinline__ SlotItem slot_item(const Slots& s, int it) {
  SlotItem x;
  x.slot = s.dirty[it];
  size_t base;
  if (x.slot < s.T) {
    x.row = s.r0 + x.slot;
    base = static_cast<size_t>(x.slot) * s.W;
  } else {
    x.row = s.c0 + (x.slot - s.T);
    base = static_cast<size_t>(s.T) * s.W + static_cast<size_t>(x.slot - s.T) * s.T;
  }
  x.dist = s.dist + base;
  x.index = s.index + base;
  x.count = s.count[x.slot];
  return x;
}

/// Unsigned image of a float whose integer order is the float order
/// (negative values flipped whole, positive ones with the sign bit set), so
/// a radix sort on it sorts the distances.
__device__ __forceinline__ uint32_t ordered_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float from_ordered_bits(uint32_t u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

}  // namespace manifold::gpu::select
