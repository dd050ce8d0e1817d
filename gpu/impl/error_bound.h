#pragma once
// The error bound lives in core (manifold/exact/error_bound.h), shared with
// the CPU backend; the device code uses it through these names.
#include "manifold/exact/error_bound.h"

namespace manifold::gpu {
using exact::entry_error;
using exact::ErrorModel;
using exact::key_of;
using exact::kMaxBoundDim;
using exact::lower64;
using exact::make_error_model;
using exact::upper64;
}  // namespace manifold::gpu
