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
  Args a("cluster",
         {{"--clusters"}, {"--coordinates"}, {"--max-clusters"}, {"--restarts"}, {"--seed"}, {"-o", true, "--output"},
          {"--quiet", false, "-q"}},
         argc, argv, 2);
  const std::string dir = a.one_positional("EMBEDDINGDIR");
  if (!a.has("-o")) throw UsageError("cluster: missing -o FILE.npy");
  const std::string out = a.str("-o");
  if (!(out.size() > 4 && out.ends_with(".npy"))) throw UsageError("-o " + out + ": the output must end in .npy");
  if (fs::is_directory(out)) throw UsageError("-o " + out + ": is a directory");
  const Embedding e = read_embedding(dir);

  // The graph kept beside the embedding: its connected components are
  // clusters already (the diffusion map embeds only the largest).
  const int64_t n = total_points(e);
  std::vector<int32_t> components(static_cast<size_t>(n), 0);
  int separate = 1;
  if (fs::exists(fs::path(dir) / "graph.json")) {
    components = graph_components(read_graph(dir));
    if (static_cast<int64_t>(components.size()) != n)
      throw Error(dir + ": the graph holds " + std::to_string(components.size()) + " points, the embedding " +
                  std::to_string(n));
    separate = 1 + *std::max_element(components.begin(), components.end());
  }

  // K: given, or the components (when several), or the eigengap among the
  // first --max-clusters eigenvalues of the one embedded.
  const int max_clusters = static_cast<int>(a.integer("--max-clusters", 10, 2, 1000));
  const bool estimated = !a.has("--clusters");
  const int total = estimated ? (separate > 1 ? separate : eigengap_clusters(e.eigenvalues, max_clusters))
                              : static_cast<int>(a.integer("--clusters", 0, 1, 1000000));
  if (total < separate)
    throw UsageError("--clusters " + std::to_string(total) + ": the k-NN graph in " + dir + " already falls into " +
                     std::to_string(separate) + " separate components");
  KMeansParams kp;
  kp.clusters = total - separate + 1;  // clusters of the embedded component
  // K pieces are told apart by the first K - 1 nontrivial coordinates.
  const int m = static_cast<int>(a.integer("--coordinates", std::max(1, kp.clusters - 1), 1, 1000000));
  if (m > e.m)
    throw UsageError("--coordinates " + std::to_string(m) + ": " + dir + " holds " + std::to_string(e.m) +
                     " coordinates");
  kp.restarts = static_cast<int>(a.integer("--restarts", kp.restarts, 1, 100000));
  kp.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  validate(kp, e.n);

  std::vector<double> x(static_cast<size_t>(e.n) * m);
  for (int64_t i = 0; i < e.n; ++i)
    for (int j = 0; j < m; ++j) x[static_cast<size_t>(i * m + j)] = e.coordinates[static_cast<size_t>(i * e.m + j)];
  const KMeansResult r = kmeans(x.data(), e.n, m, kp);

  // One label per data point: k-means clusters of the embedded points first,
  // then one per other component; -1 for points of the embedded component
  // left out (joined only by negligible weights).
  std::vector<int32_t> labels(static_cast<size_t>(n), -1);
  for (size_t i = 0; i < components.size(); ++i)
    if (components[i] > 0) labels[i] = kp.clusters + components[i] - 1;
  for (int64_t i = 0; i < e.n; ++i) labels[static_cast<size_t>(e.point_index[static_cast<size_t>(i)])] = r.labels[static_cast<size_t>(i)];
  std::vector<int64_t> sizes(static_cast<size_t>(total), 0);
  for (int32_t l : labels)
    if (l >= 0) ++sizes[static_cast<size_t>(l)];
  nlohmann::json gaps = nlohmann::json::array();
  for (int k = 2; k <= std::min<int>(max_clusters, static_cast<int>(e.eigenvalues.size()) - 1); ++k)
    gaps.push_back({{"clusters", k}, {"gap", e.eigenvalues[static_cast<size_t>(k - 1)] - e.eigenvalues[static_cast<size_t>(k)]}});
  const nlohmann::json meta = {{"format", "manifold-clusters"},
                               {"version", 1},
                               {"embedding", fs::absolute(dir).lexically_normal().string()},
                               {"method", "k-means, k-means++ seeding, best of restarts by inertia"},
                               {"clusters", total},
                               {"clusters_from", !estimated ? "--clusters" : separate > 1 ? "graph components" : "eigengap"},
                               {"graph_components", separate},
                               {"kmeans_clusters", kp.clusters},
                               {"eigengaps", gaps},
                               {"coordinates", m},
                               {"restarts", kp.restarts},
                               {"seed", kp.seed},
                               {"sizes", sizes},
                               {"inertia", r.inertia},
                               {"points", n},
                               {"points_clustered", e.n},
                               {"labels", "FILE.npy: int32 per data point; 0..K-1 (k-means clusters of the embedded "
                                          "component, then one per other graph component), -1 = left out"}};
  const fs::path p(out);
  OutputTransaction tx(p.has_parent_path() ? p.parent_path().string() : ".");
  const std::string base = p.filename().string();
  npy::write(tx.path(base), labels.data(), {n});
  write_text_file(tx.path(base.substr(0, base.size() - 4) + ".json"), meta.dump(2) + "\n");
  tx.commit();
  if (!a.has("--quiet")) {
    std::printf("%d clusters (%s) of %lld points, sizes", total,
                !estimated ? "given" : separate > 1 ? "graph components" : "eigengap", static_cast<long long>(n));
    for (int64_t s : sizes) std::printf(" %lld", static_cast<long long>(s));
    if (kp.clusters > 1) std::printf("; k-means on dc1..dc%d", m);
    std::printf(" -> %s\n", out.c_str());
  }
  return 0;
}

}  // namespace manifold::cli
