#pragma once
// Diffusion maps (Coifman-Lafon) from a k-NN graph.
// (Interface fixed early so the GUI can code against it; see diffusion_map.cpp.)
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/knn.h"
#include "manifold/progress.h"

namespace manifold {

struct DiffusionParams {
  int k = 0;                        ///< neighbours used, 1..graph.k; 0 = all of the graph's
  std::string epsilon = "median";   ///< "median" | "auto" (Berry-Giannakis-Harlim) | a positive number
  double alpha = 1.0;               ///< alpha-normalisation: 0, 0.5, 1
  int components = 10;              ///< M diffusion coordinates (trivial one dropped)
  double t = 1.0;                   ///< diffusion time
  std::string symmetrize = "or";    ///< or (max) | and (min) | average
  int local_scaling = 0;            ///< 0 off; j > 0: sigma_i = distance to j-th neighbour
  int threads = 0;                  ///< 0 = all cores
};

/// Rejects bad parameters for `graph` with one line (UsageError).
void validate(const DiffusionParams& params, const KnnGraph& graph);

struct DiffusionResult {
  int64_t n = 0;                    ///< points embedded
  int m = 0;                        ///< diffusion coordinates
  std::vector<double> eigenvalues;  ///< m+1 values, descending, the trivial 1 first
  std::vector<double> psi;          ///< n*(m+1) Markov eigenvectors, row-major, psi_0 = 1
  std::vector<double> coordinates;  ///< n*m diffusion coordinates lambda_i^t psi_i, row-major
  double epsilon = 0;               ///< kernel width used
  int graph_components = 1;         ///< connected components of the symmetrised graph
  std::vector<int64_t> point_index; ///< rows of the input embedded (all unless disconnected)
  nlohmann::json bgh;               ///< {"epsilon":[...], "slope":[...], "dimension": d} when epsilon=auto
  Timings timings;
};

DiffusionResult diffusion_map(const KnnGraph& graph, const DiffusionParams& params,
                              Progress& progress);

}  // namespace manifold
