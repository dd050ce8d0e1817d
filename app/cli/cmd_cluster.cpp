// manifold cluster: k-means on the first diffusion coordinates of an
// embedding (hit classification), the number of clusters given or taken
// from the eigengap.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "manifold/clustering.h"
#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/output.h"

namespace fs = std::filesystem;

namespace manifold::cli {

namespace {

/// The points of the data set: the graph's n when the embedding names it,
/// else one past the largest embedded index.
int64_t total_points(const Embedding& e) {
  const auto& g = e.metadata.value("graph", nlohmann::json::object());
  int64_t n = g.is_object() ? g.value("n", int64_t{0}) : 0;
  for (int64_t i : e.point_index) n = std::max(n, i + 1);
  return n;
}

}  // namespace

int cmd_cluster(int argc, char** argv) {
  Args a("cluster", "Clusters of an embedding: the graph's separate components, then k-means on dc1..dcM.",
         {value("--clusters", "K", "clusters (default: the components, else the largest eigengap)"),
          value("--coordinates", "M", "diffusion coordinates k-means uses (default: K - 1)"),
          value("--max-clusters", "M", "the most clusters the eigengap may choose", "10"),
          value("--restarts", "R", "k-means++ restarts; the best by inertia is kept", "10"),
          value("--seed", "S", "random seed", "1"),
          value("-o,--output", "FILE.npy", "a cluster per data point (-1: left out), FILE.json the facts"),
          flag("--quiet,-q", "no summary")},
         argc, argv, 2, {{"EMBEDDINGDIR", "the embedding folder"}});
  const std::string dir = a.one_positional("EMBEDDINGDIR");
  if (!a.has("-o")) throw UsageError("cluster: missing -o FILE.npy");
  const std::string out = a.str("-o");
  if (!(out.size() > 4 && out.ends_with(".npy"))) throw UsageError("-o " + out + ": the output must end in .npy");
  if (fs::is_directory(out)) throw UsageError("-o " + out + ": is a directory");
  // The options first: a bad one fails before the embedding is read.
  EmbeddingClusteringParams cp;
  const int max_clusters = static_cast<int>(a.integer("--max-clusters", 10, 2, 1000));
  cp.max_clusters = max_clusters;
  if (a.has("--clusters")) cp.clusters = static_cast<int>(a.integer("--clusters", 0, 1, 1000000));
  if (a.has("--coordinates")) cp.coordinates = static_cast<int>(a.integer("--coordinates", 1, 1, 1000000));
  cp.restarts = static_cast<int>(a.integer("--restarts", cp.restarts, 1, 100000));
  cp.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  const Embedding e = read_embedding(dir);

  // The graph kept beside the embedding: its connected components are
  // clusters already (the diffusion map embeds only the largest).
  const int64_t n = total_points(e);
  std::vector<int32_t> components;
  if (fs::exists(fs::path(dir) / "graph.json")) {
    components = graph_components(read_graph(dir));
    if (static_cast<int64_t>(components.size()) != n)
      throw Error(dir + ": the graph holds " + std::to_string(components.size()) + " points, the embedding " +
                  std::to_string(n));
  }
  EmbeddingClustering c;
  try {
    c = cluster_embedding(e.coordinates.data(), e.n, e.m, e.point_index.data(), e.eigenvalues, components, n, cp);
  } catch (const UsageError& err) {
    throw UsageError(std::string(err.what()) + " (" + dir + ")");
  }
  const bool estimated = cp.clusters == 0;
  const std::vector<int32_t>& labels = c.labels;
  const std::vector<int64_t>& sizes = c.sizes;
  const int total = c.clusters, separate = c.graph_components, m = c.coordinates;
  nlohmann::json gaps = nlohmann::json::array();
  for (int k = 2; k <= std::min<int>(max_clusters, static_cast<int>(e.eigenvalues.size()) - 1); ++k)
    gaps.push_back({{"clusters", k},
                    {"gap", e.eigenvalues[static_cast<size_t>(k - 1)] - e.eigenvalues[static_cast<size_t>(k)]}});
  const nlohmann::json meta = {{"format", "manifold-clusters"},
                               {"version", 1},
                               {"embedding", fs::absolute(dir).lexically_normal().string()},
                               {"method", "k-means, k-means++ seeding, best of restarts by inertia"},
                               {"clusters", total},
                               {"clusters_from", !estimated     ? "--clusters"
                                                 : separate > 1 ? "graph components"
                                                                : "eigengap"},
                               {"graph_components", separate},
                               {"kmeans_clusters", c.kmeans_clusters},
                               {"eigengaps", gaps},
                               {"coordinates", m},
                               {"restarts", cp.restarts},
                               {"seed", cp.seed},
                               {"sizes", sizes},
                               {"inertia", c.inertia},
                               {"points", n},
                               {"points_clustered", e.n},
                               {"labels",
                                "FILE.npy: int32 per data point; 0..K-1 (k-means clusters of the embedded "
                                "component, then one per other graph component), -1 = left out"}};
  const fs::path p(out);
  OutputTransaction tx(p.has_parent_path() ? p.parent_path().string() : ".");
  const std::string base = p.filename().string();
  npy::write(tx.path(base), labels.data(), {n});
  write_text_file(tx.path(base.substr(0, base.size() - 4) + ".json"), meta.dump(2) + "\n");
  tx.commit();
  if (!a.has("--quiet")) {
    std::printf("%d clusters (%s) of %lld points, sizes", total,
                !estimated     ? "given"
                : separate > 1 ? "graph components"
                               : "eigengap",
                static_cast<long long>(n));
    for (int64_t s : sizes) std::printf(" %lld", static_cast<long long>(s));
    if (c.kmeans_clusters > 1) std::printf("; k-means on dc1..dc%d", m);
    std::printf(" -> %s\n", out.c_str());
  }
  return 0;
}

}  // namespace manifold::cli
