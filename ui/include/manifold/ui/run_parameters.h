#pragma once
// Everything a run depends on, as the parameter panel edits it. Sessions
// (manifold/session.h in core) record it so the CLI can reproduce a run.
#include <QString>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/diffusion_map.h"
#include "manifold/knn.h"

namespace manifold::ui {

struct RunParameters {
  KnnParams knn;                 ///< the graph: k, metric, devices
  std::string backend = "auto";  ///< auto | cpu | gpu | cluster
  std::string cluster_profile;   ///< backend "cluster": the profile file (manifold/cluster.h)
  DiffusionParams diffusion;     ///< the embedding; diffusion.k <= knn.k slices the graph

  /// True when `other` needs a different graph (metric, self, or more neighbours).
  bool sameGraphFamily(const RunParameters& other) const;
  /// True when only the diffusion time differs: the eigenvectors stay valid.
  bool differsOnlyInTime(const RunParameters& other) const;
};

/// The parameters that change what is computed, where `shown` and `now`
/// differ: ("k = 4", "k = 40"), ("ε = median", "ε = 2.5"), ... in the
/// panel's words. The eigensolve's budget is left out (it changes whether a
/// solve finishes, not its result); the backend is in (a graph built
/// elsewhere, a cluster above all, is a new graph).
using ParameterChanges = std::vector<std::pair<QString, QString>>;
ParameterChanges describeChanges(const RunParameters& shown, const RunParameters& now);

/// A copy of `result` at diffusion time `t`: coordinates = lambda_i^t psi_i,
/// computed exactly as diffusion_map() does, without a new eigensolve.
std::shared_ptr<const DiffusionResult> withDiffusionTime(const DiffusionResult& result, double t);

}  // namespace manifold::ui
