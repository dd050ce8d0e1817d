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

/// The graph the embedding's kernel was built on (core's embedded_graph),
/// by embedding.json's parameters.k and --symmetrize rule.
KnnGraph embedded_graph(KnnGraph g, const Embedding& e) {
  const nlohmann::json parameters = e.metadata.value("parameters", nlohmann::json::object());
  return embedded_graph(std::move(g), parameters.value("k", 0), parameters.value("symmetrize", std::string("or")));
}

/// Whether `g` is the graph embedding.json's "graph" describes, by core's
/// rule (same_graph_json, Partial: an older record's missing keys pass).
bool is_graph_of(const KnnGraph& g, const Embedding& e) {
  return same_graph_json(e.metadata.value("graph", nlohmann::json()), graph_metadata(g), GraphRecord::Partial);
}

/// The components, as the embedding used them, of the graph it was computed
/// from: the graph kept beside it, else the folder embedding.json names
/// (graph_dir: embed -o elsewhere); empty when neither holds it. A graph
/// beside it that is not its graph is an inconsistent folder (Error); a
/// graph_dir that no longer holds it is a warning, and the points outside
/// the embedding are then left out.
std::vector<int32_t> embedded_components(const std::string& dir, const Embedding& e, int64_t n) {
  std::string graph_dir = dir;
  const bool beside = fs::exists(fs::path(dir) / "graph.json");
  if (!beside) {
    graph_dir = e.metadata.value("graph_dir", std::string());
    if (graph_dir.empty() || !fs::exists(fs::path(graph_dir) / "graph.json")) return {};
  }
  const KnnGraph g = read_graph(graph_dir);
  if (!is_graph_of(g, e)) {
    const std::string why = graph_dir + " holds another graph (" + std::to_string(g.n) +
                            " points, k=" + std::to_string(g.k) + ") than the embedding was computed from";
    if (beside) throw Error(why + " (the folder mixes two results; embed it again)");
    std::fprintf(stderr, "manifold: warning: %s; points outside the embedding are left out (-1)\n", why.c_str());
    return {};
  }
  const std::vector<int32_t> components = graph_components(embedded_graph(g, e));
  const int count = 1 + *std::max_element(components.begin(), components.end());
  bool inside = static_cast<int64_t>(components.size()) == n && count == e.metadata.value("graph_components", count);
  for (int64_t i : e.point_index) inside = inside && i < n && components[static_cast<size_t>(i)] == 0;
  if (!inside)
    throw Error(dir + ": the components of " + graph_dir + " (" + std::to_string(count) +
                ") are not those the embedding was computed on");
  return components;
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
  check_output_file(out, {".npy"});  // before the work: a folder that takes no file fails now
  // The options first: a bad one fails before the embedding is read.
  EmbeddingClusteringParams cp;
  const int max_clusters = static_cast<int>(a.integer("--max-clusters", 10, 2, 1000));
  cp.max_clusters = max_clusters;
  if (a.has("--clusters")) cp.clusters = static_cast<int>(a.integer("--clusters", 0, 1, 1000000));
  if (a.has("--coordinates")) cp.coordinates = static_cast<int>(a.integer("--coordinates", 1, 1, 1000000));
  cp.restarts = static_cast<int>(a.integer("--restarts", cp.restarts, 1, 100000));
  cp.seed = static_cast<uint64_t>(a.integer("--seed", 1, 0, INT64_MAX));
  const Embedding e = read_embedding(dir);

  // The graph kept beside the embedding: its connected components, as the
  // kernel saw them, are clusters already (the diffusion map embeds only
  // the largest).
  const int64_t n = total_points(e);
  const std::vector<int32_t> components = embedded_components(dir, e, n);
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
  const int64_t left_out = std::count(labels.begin(), labels.end(), -1);
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
                               {"points_embedded", e.n},
                               {"points_clustered", n - left_out},
                               {"points_left_out", left_out},
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
    // Points with no cluster (-1) are named: the sizes alone do not add up to N.
    if (left_out > 0)
      std::printf("; %lld left out (-1: %s)", static_cast<long long>(left_out),
                  components.empty() ? "not embedded, and the graph it was computed from is not at hand"
                                     : "in the embedded component, but not joined by the kernel");
    std::printf(" -> %s\n", out.c_str());
  }
  return 0;
}

}  // namespace manifold::cli
