#pragma once
// One translation of the prepared rows for every rank
// (manifold/exact/translation.h): every rank's tiles must multiply the very
// rows the CPU backend multiplies, so all ranks move their rows by the same
// offsets, of the same kind. The decision is the CPU backend's, taken where
// the rows are:
// * rank 0 reads the rows choose_translation samples (at most 1024, spread
//   evenly over the data; it reads the whole input for the fingerprint
//   anyway), prepares them for the metric and runs core's choose_translation
//   on them: the same means, ratios and decision as on the whole data, except
//   that its exact kind was checked on the sample's values only;
// * the exact kind must subtract exactly in every row: each rank checks the
//   rows it owns (every row has one owner), an all-reduce ORs the columns
//   that would round, and rank 0 drops them and decides again by
//   choose_translation's rule (exact if what is left still gains enough,
//   else the rounded kind about the sample's means);
// * rank 0 broadcasts the result, so no rank relies on reproducing it.
//
// Core decides from the sample and the rows in one call; rows spread over
// ranks need its steps apart. Until core offers them, sample_row_indices()
// and settle_exact_translation() repeat its sampling and its two sums (the
// column means and the norm ratio) in its order of operations, so the result
// is the CPU backend's bit for bit (tests/mpi compare translation_norm_ratio).
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "manifold/exact/translation.h"

namespace manifold::mpi {

/// The rows of n that choose_translation samples: min(n, 1024), row
/// s * n / samples for s = 0, 1, ... Its first decision (on 256 rows) reads
/// rows s * n / 256, which are among these (row 4s of a 1024-row sample).
std::vector<int64_t> sample_row_indices(int64_t n);

/// Rank 0's decision from the sample alone (`samples` prepared rows, in the
/// order of sample_row_indices): core's choose_translation, rounded kind
/// allowed (the certificate takes its keys from the unmoved rows).
exact::Translation translation_of_sample(const float* sample, int64_t samples, int64_t d, int threads);

/// Sets inexact[c] where some value of the rows row(0 .. n) in column c
/// would round when moved by offset[c] (exact::subtracts_exactly).
void mark_inexact_columns(const std::function<const float*(int64_t)>& row, int64_t n, int64_t d,
                          const std::vector<float>& offset, std::vector<unsigned char>& inexact, int threads);

/// The exact kind `on_sample` once the columns `inexact` (over every row of
/// the data) are known to round: choose_translation's rule applied to what
/// is left. Exact with those columns dropped if their norm ratio on the
/// sample is still at least max(kMinNormRatio, every column's / 2), else
/// the rounded kind about the sample's means.
exact::Translation settle_exact_translation(const exact::Translation& on_sample,
                                            const std::vector<unsigned char>& inexact, const float* sample,
                                            int64_t samples, int64_t d, int threads);

/// Rank `root`'s translation to every rank of `comm` (a collective).
void broadcast_translation(exact::Translation& t, int64_t d, int root, MPI_Comm comm);

}  // namespace manifold::mpi
