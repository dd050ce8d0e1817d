#pragma once
// A translation of the prepared rows that leaves every difference between
// two rows, and so every distance and exact key, bit for bit as it was:
// an offset per column whose subtraction is exact in float32 for every
// value of the column (the offset is zero where one value would round).
// What it changes is the stored norms: the error bound of a ranking
// distance grows with |x|^2 + |y|^2 (error_bound.h), so rows that share a
// large common part -- diffraction patterns and their bright centre, most
// detector images -- get bounds far wider than the gaps between their
// neighbours, and no row certifies from its list (every one is rescanned).
// About their mean the norms are those of what tells the rows apart.
//
// Exactness: the real x - o is a float32 value, so fl32(x - o) is x - o on
// any IEEE device (no flushing of subnormals: the GPU is built with
// --ftz=false); two translated rows then differ by the same real numbers as
// before, and the float64 differences of the exact key round the same.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "manifold/knn.h"

namespace manifold::exact {

/// Translate only where it narrows the bound by this much: the mean stored
/// norm over that about the offsets, on a sample of rows. Below it the pass
/// over every value costs more than the certificate gains (Fashion-MNIST,
/// 2.4: every row certified in place, and the pass took 9 ms of 15 on an
/// H200 host; simulated diffraction 21-54, bench/gpu/RESULTS.md).
constexpr double kMinNormRatio = 4.0;

struct Translation {
  std::vector<float> offset;  ///< per column; empty: no translation
  double norm_ratio = 1.0;    ///< mean |x|^2 over mean |x - offset|^2 on the sample
  int64_t columns = 0;        ///< columns with a nonzero offset
  bool any() const { return !offset.empty(); }
};

/// Moves the prepared rows by `offset` (an exact_translation's): into their
/// own storage (copied from the data they pointed to, when they had none).
void translate_rows(PreparedRows& rows, const std::vector<float>& offset, int threads);

/// The translation of `n` rows of `d` floats (row-major): offsets from the
/// column means of a sample of rows, kept where every value of the column
/// subtracts exactly, and only when the norms shrink by kMinNormRatio.
Translation exact_translation(const float* rows, int64_t n, int64_t d, int threads);

/// Whether x - offset is exactly a float32 value (so fl32(x - offset) loses
/// nothing); a zero offset always is. Not for NaN or infinite x (their
/// columns stay in place). Knuth's TwoSum in float32, IEEE arithmetic as
/// written (no -ffast-math): x + (-offset) = s + err exactly, so nothing was
/// lost when err is zero and s finite (NaN or infinite x give a NaN err).
inline bool subtracts_exactly(float x, float offset) {
  const float b = -offset, s = x + b, bv = s - x, av = s - bv;
  const float err = (x - av) + (b - bv);
  return offset == 0.f || (err == 0.f && std::fabs(s) <= FLT_MAX);
}

}  // namespace manifold::exact
