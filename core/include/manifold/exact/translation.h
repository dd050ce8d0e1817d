#pragma once
// A translation of the prepared rows that narrows the certificate's bound:
// an offset per column (about the column's mean) subtracted from every row
// the distance loop multiplies. The error bound of a ranking distance grows
// with |x|^2 + |y|^2 (error_bound.h), so rows that share a large common
// part -- diffraction patterns and their bright centre, most detector
// images -- get bounds far wider than the gaps between their neighbours,
// and no row certifies from its list (every one is rescanned). About their
// mean the norms are those of what tells the rows apart.
//
// Two kinds, both leaving the graph bit for bit as it was:
// * exact (`Translation::exact`): the offset is zero in every column where
//   one value would round, so fl32(x - o) = x - o for every value (on any
//   IEEE device: the GPU is built with --ftz=false); two moved rows differ by
//   the same real numbers as before, so the exact keys can be taken from the
//   moved rows, and nothing else need be kept.
// * rounded: every column moves, and fl32(x - o) rounds (relative error at
//   most 2^-24 of the moved value). The loop's distances are then those of
//   slightly different rows; error_bound.h's `moved_rows_rounded` widens the
//   bound by what that can change (|x~ - y~| and |x - y| differ by at most
//   2^-24 (|x~| + |y~|)/(1 - 2^-24)), and the exact keys are taken from the
//   rows as they were, which the backend keeps beside the moved ones.
//   Needed where the rows' values are not on a common grid: cosine and
//   Pearson rows (divided by each row's own norm), real-valued images.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
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
  bool exact = true;          ///< every value subtracts exactly (else the moved rows round)
  bool any() const { return !offset.empty(); }
};

/// Moves the prepared rows by `offset` (choose_translation's): into their
/// own storage (copied from the data they pointed to, when they had none).
void translate_rows(PreparedRows& rows, const std::vector<float>& offset, int threads);

/// fl32(x - offset) of `n` rows of `d` floats into `to` (n * d floats).
void moved_rows(const float* rows, int64_t n, int64_t d, const std::vector<float>& offset, float* to, int threads);

/// The translation of `n` rows of `d` floats (row-major), or none where the
/// norms would not shrink by kMinNormRatio: offsets from the column means of
/// a sample of rows. The exact kind (offsets kept only in columns where every
/// value subtracts exactly) wherever it keeps at least half of what moving
/// every column gains, or where `rounded_allowed` is false (the backend
/// cannot keep the rows as they were); else the rounded kind.
Translation choose_translation(const float* rows, int64_t n, int64_t d, int threads, bool rounded_allowed);

// choose_translation's steps apart, for rows spread over several owners
// (the MPI ranks): decide on its sample alone, mark the columns whose values
// round in every owner's rows, then settle. The result is choose_translation's
// on all the rows, bit for bit.

/// The rows of n that choose_translation samples, in order: min(n, 1024),
/// row s * n / samples. Its first decision (on 256 rows) reads rows
/// s * n / 256, which are among these; choose_translation on these rows alone
/// decides as on all n, except that its exact kind is checked on them only.
std::vector<int64_t> translation_sample_rows(int64_t n);

/// Sets rounding[c] (d flags) where some value of the rows row_at(0 ..
/// count) would round when moved by offset[c] (subtracts_exactly).
void mark_rounding_columns(const std::function<const float*(int64_t)>& row_at, int64_t count, int64_t d,
                           const std::vector<float>& offset, std::vector<unsigned char>& rounding, int threads);

/// An exact kind chosen on `rows` (n rows) once the columns `rounding` are
/// known to round elsewhere: choose_translation's rule on what is left --
/// exact with those columns dropped while it keeps half of what moving every
/// column gains (only kMinNormRatio where `rounded_allowed` is false), else
/// the rounded kind (or none).
Translation settle_translation(const Translation& exact_kind, const std::vector<unsigned char>& rounding,
                               const float* rows, int64_t n, int64_t d, int threads, bool rounded_allowed = true);

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
