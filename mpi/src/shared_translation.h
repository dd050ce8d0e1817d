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
// The steps are core's (translation_sample_rows, choose_translation on the
// sample, mark_rounding_columns, settle_translation): the result is the CPU
// backend's bit for bit (tests/mpi compare translation_norm_ratio).
#include <mpi.h>

#include <cstdint>

#include "manifold/exact/translation.h"

namespace manifold::mpi {

/// Rank `root`'s translation to every rank of `comm` (a collective).
void broadcast_translation(exact::Translation& t, int64_t d, int root, MPI_Comm comm);

}  // namespace manifold::mpi
