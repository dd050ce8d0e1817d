// Clustering of an embedding: graph components first, then k-means on the
// embedded component (see clustering.h).
#include <algorithm>

#include "manifold/clustering.h"
#include "manifold/error.h"

namespace manifold {

namespace {

/// K as asked, or from the components (when several), or from the eigengap.
int cluster_count(const EmbeddingClusteringParams& p, int separate, const std::vector<double>& eigenvalues,
                  std::string* from) {
  if (p.clusters > 0) {
    *from = "given";
    if (p.clusters < separate)
      throw UsageError("--clusters " + std::to_string(p.clusters) + ": the k-NN graph already falls into " +
                       std::to_string(separate) + " separate components");
    return p.clusters;
  }
  if (separate > 1) {
    *from = "graph components";
    return separate;
  }
  *from = "eigengap";
  return eigengap_clusters(eigenvalues, p.max_clusters);
}

}  // namespace

EmbeddingClustering cluster_embedding(const double* coordinates, int64_t n, int m_all, const int64_t* point_index,
                                      const std::vector<double>& eigenvalues, const std::vector<int32_t>& components,
                                      int64_t points, const EmbeddingClusteringParams& params) {
  EmbeddingClustering out;
  const bool have_components = !components.empty();
  if (have_components && static_cast<int64_t>(components.size()) != points)
    throw Error("the graph holds " + std::to_string(components.size()) + " points, the embedding " +
                std::to_string(points));
  if (have_components) out.graph_components = 1 + *std::max_element(components.begin(), components.end());
  out.clusters = cluster_count(params, out.graph_components, eigenvalues, &out.clusters_from);
  out.kmeans_clusters = out.clusters - out.graph_components + 1;
  out.coordinates = params.coordinates > 0 ? params.coordinates : std::max(1, out.kmeans_clusters - 1);
  // The default m follows K: a K too large for the embedding is K's fault,
  // named as such (the user gave no --coordinates).
  if (params.coordinates == 0 && out.coordinates > m_all)
    throw UsageError("--clusters " + std::to_string(out.clusters) + ": k-means would use dc1..dc" +
                     std::to_string(out.coordinates) + " (--coordinates defaults to K - 1" +
                     (out.graph_components > 1 ? " less the other graph components" : "") +
                     ") and the embedding holds " + std::to_string(m_all) + ": at most --clusters " +
                     std::to_string(m_all + out.graph_components) + ", or give --coordinates " + std::to_string(m_all) +
                     " or fewer");
  if (out.coordinates > m_all)
    throw UsageError("--coordinates " + std::to_string(out.coordinates) + ": the embedding holds " +
                     std::to_string(m_all) + " coordinates");
  KMeansParams kp;
  kp.clusters = out.kmeans_clusters;
  kp.restarts = params.restarts;
  kp.seed = params.seed;
  validate(kp, n);

  const int m = out.coordinates;
  std::vector<double> x(static_cast<size_t>(n) * m);
  for (int64_t i = 0; i < n; ++i) std::copy_n(coordinates + i * m_all, m, x.begin() + static_cast<ptrdiff_t>(i * m));
  const KMeansResult r = kmeans(x.data(), n, m, kp);
  out.inertia = r.inertia;

  // k-means clusters of the embedded points first, then one per other
  // component; points of the embedded component left out stay -1.
  out.labels.assign(static_cast<size_t>(points), -1);
  if (have_components)
    for (size_t i = 0; i < components.size(); ++i)
      if (components[i] > 0) out.labels[i] = kp.clusters + components[i] - 1;
  for (int64_t i = 0; i < n; ++i) out.labels[static_cast<size_t>(point_index[i])] = r.labels[static_cast<size_t>(i)];
  out.sizes.assign(static_cast<size_t>(out.clusters), 0);
  for (int32_t l : out.labels)
    if (l >= 0) ++out.sizes[static_cast<size_t>(l)];
  return out;
}

}  // namespace manifold
