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

/// The graph a diffusion map used of `g`: its first `k` neighbours (0: all)
/// and, under the `symmetrize` rule "and", only the pairs that list each
/// other (a one-sided entry becomes -1, which joins nothing). Its
/// components are the ones the embedding counted and embedded the largest
/// of; the full k-NN graph may join pieces the embedding kept apart.
KnnGraph embedded_graph(KnnGraph g, int k, const std::string& symmetrize);

/// The number of clusters the eigengap suggests: the K in [2, max_clusters]
/// with the largest lambda_{K-1} - lambda_K (eigenvalues descending,
/// lambda_0 = 1 first). Needs at least 3 eigenvalues.
int eigengap_clusters(const std::vector<double>& eigenvalues, int max_clusters);

/// Clustering of an embedding as `manifold cluster` does it. K is given, or
/// the number of graph components when the k-NN graph falls into several,
/// or the eigengap's. Components other than the embedded one (the largest)
/// are a cluster each; k-means splits the embedded one into the rest, on its
/// first `coordinates` diffusion coordinates (K pieces are told apart by the
/// first K - 1 nontrivial ones, the default).
struct EmbeddingClusteringParams {
  int clusters = 0;       ///< K; 0 = estimated
  int coordinates = 0;    ///< m; 0 = K - 1 of the embedded component (at least 1)
  int max_clusters = 10;  ///< the eigengap looks at K in [2, max_clusters]
  int restarts = 10;
  uint64_t seed = 1;
};
struct EmbeddingClustering {
  /// One per data point: 0..K-1 (k-means clusters of the embedded component,
  /// then one per other graph component); -1 for a point of the embedded
  /// component left out of the embedding.
  std::vector<int32_t> labels;
  int clusters = 0;
  std::string clusters_from;  ///< "given", "graph components" or "eigengap"
  int graph_components = 1;
  int kmeans_clusters = 1;     ///< clusters k-means made of the embedded component
  int coordinates = 0;         ///< m used by k-means
  std::vector<int64_t> sizes;  ///< K
  double inertia = 0;
};
/// `coordinates` are the n x m_all embedded points (row-major), point e being
/// data point point_index[e]; `eigenvalues` descend from lambda_0 = 1;
/// `components` labels every data point by graph_components() (empty: one
/// component). UsageError naming --clusters or --coordinates for a K below
/// the component count or an m beyond m_all.
EmbeddingClustering cluster_embedding(const double* coordinates, int64_t n, int m_all, const int64_t* point_index,
                                      const std::vector<double>& eigenvalues, const std::vector<int32_t>& components,
                                      int64_t points, const EmbeddingClusteringParams& params);

/// Agreement of cluster labels with true classes: the best one-to-one match
/// of clusters to classes (exhaustive over permutations, K <= 8), the fraction
/// of points it gets right, and the confusion matrix (rows = classes,
/// columns = clusters).
struct Agreement {
  double accuracy = 0;
  std::vector<int> class_of_cluster;  ///< -1 for a cluster left unmatched
  std::vector<std::vector<int64_t>> confusion;
};
Agreement cluster_agreement(const std::vector<int32_t>& classes, const std::vector<int32_t>& clusters);

}  // namespace manifold
