#include "manifold/ui/run_parameters.h"

#include <cmath>

namespace manifold::ui {

bool RunParameters::sameGraphFamily(const RunParameters& o) const {
  return knn.metric == o.knn.metric && knn.keep_self == o.knn.keep_self;
}

bool RunParameters::differsOnlyInTime(const RunParameters& o) const {
  const auto& a = diffusion;
  const auto& b = o.diffusion;
  return sameGraphFamily(o) && knn.k == o.knn.k && a.k == b.k && a.epsilon == b.epsilon && a.alpha == b.alpha &&
         a.components == b.components && a.symmetrize == b.symmetrize && a.local_scaling == b.local_scaling &&
         a.tolerance == b.tolerance && a.ncv == b.ncv;
}

std::shared_ptr<const DiffusionResult> withDiffusionTime(const DiffusionResult& result, double t) {
  auto out = std::make_shared<DiffusionResult>(result);
  const int m = result.m, nev = m + 1;
  std::vector<double> lt(static_cast<size_t>(nev));
  for (int c = 0; c < nev; ++c) {
    const double l = result.eigenvalues[static_cast<size_t>(c)];
    // Same rule as diffusion_map(): the odd extension keeps a negative
    // eigenvalue's power real for fractional t.
    lt[static_cast<size_t>(c)] = t == std::floor(t) ? std::pow(l, t) : std::copysign(std::pow(std::abs(l), t), l);
  }
  for (int64_t i = 0; i < result.n; ++i)
    for (int c = 1; c < nev; ++c)
      out->coordinates[static_cast<size_t>(i * m + c - 1)] =
          lt[static_cast<size_t>(c)] * result.psi[static_cast<size_t>(i * nev + c)];
  return out;
}

}  // namespace manifold::ui
