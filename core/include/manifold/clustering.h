#pragma once
// Clustering of diffusion coordinates (hit classification of diffraction
// snapshots: blanks, single and multiple hits). Spectral clustering in the
// diffusion-map form: K clusters are K nearly disconnected pieces of the
// graph, so the Markov matrix has K eigenvalues near 1 (lambda_0 = 1 and
// K - 1 more) and the first K - 1 nontrivial coordinates are nearly constant
// on each piece; k-means on them separates the pieces.
#include <cstdint>
#include <string>
#include <vector>

#include "manifold/knn.h"

namespace manifold {

struct KMeansParams {
  int clusters = 2;          ///< K >= 1
  int restarts = 10;         ///< independent k-means++ starts; the lowest inertia wins
  int max_iterations = 300;  ///< Lloyd iterations per start
  uint64_t seed = 1;
};

struct KMeansResult {
  std::vector<int32_t> labels;  ///< n, in [0, K); clusters numbered by their first point
  std::vector<double> centres;  ///< K x m
  std::vector<int64_t> sizes;   ///< K
  double inertia = 0;           ///< sum of squared distances to the centres
  int iterations = 0;           ///< of the winning start
};

/// Rejects bad parameters for n points (UsageError naming --clusters etc.).
void validate(const KMeansParams& params, int64_t n);

/// k-means (Lloyd) with k-means++ seeding on n x m row-major points.
/// Deterministic for a seed; an emptied cluster is re-seeded at the point
/// farthest from its centre.
KMeansResult kmeans(const double* points, int64_t n, int m, const KMeansParams& params);

/// Connected components of the symmetrised k-NN graph (an edge either way
/// joins): a label per point, components numbered by size, largest first
/// (ties: by first point). Several components are spectral clustering's
/// clearest answer (the eigenvalue 1 repeated); the diffusion map embeds
/// only the largest, so clustering starts from them.
std::vector<int32_t> graph_components(const KnnGraph& graph);

/// The number of clusters the eigengap suggests: the K in [2, max_clusters]
/// with the largest lambda_{K-1} - lambda_K (eigenvalues descending,
/// lambda_0 = 1 first). Needs at least 3 eigenvalues.
int eigengap_clusters(const std::vector<double>& eigenvalues, int max_clusters);

/// Agreement of cluster labels with true classes: the best one-to-one match
/// of clusters to classes (exhaustive over permutations, K <= 8), the fraction
/// of points it gets right, and the confusion matrix (rows = classes,
/// columns = clusters).
struct Agreement {
  double accuracy = 0;
  std::vector<int> class_of_cluster;          ///< -1 for a cluster left unmatched
  std::vector<std::vector<int64_t>> confusion;
};
Agreement cluster_agreement(const std::vector<int32_t>& classes, const std::vector<int32_t>& clusters);

}  // namespace manifold
