// k-means with k-means++ seeding, the eigengap rule, graph components and
// the manifold cluster command on well-separated synthetic mixes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "manifold/clustering.h"
#include "manifold/error.h"
#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using testing_support::run_cli;
using testing_support::TempDir;

namespace {

/// `per` points around each of `centres` (rows of m values), spread `sigma`,
/// interleaved (point i belongs to blob i % blobs); classes returned.
std::vector<double> blobs(const std::vector<std::vector<double>>& centres, int per, double sigma, uint64_t seed,
                          std::vector<int32_t>* classes) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, sigma);
  const size_t m = centres[0].size();
  std::vector<double> x;
  for (int i = 0; i < per * static_cast<int>(centres.size()); ++i) {
    const size_t b = static_cast<size_t>(i) % centres.size();
    for (size_t j = 0; j < m; ++j) x.push_back(centres[b][j] + g(rng));
    classes->push_back(static_cast<int32_t>(b));
  }
  return x;
}

}  // namespace

TEST(Clustering, KMeansRecoversSeparatedBlobsExactly) {
  std::vector<int32_t> classes;
  const auto x = blobs({{0, 0}, {10, 0}, {0, 10}, {10, 10}}, 50, 1.0, 3, &classes);
  KMeansParams p;
  p.clusters = 4;
  const KMeansResult r = kmeans(x.data(), 200, 2, p);
  const Agreement a = cluster_agreement(classes, r.labels);
  EXPECT_EQ(a.accuracy, 1.0);
  // Numbered by first point: point i is in blob i % 4.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.labels[static_cast<size_t>(i)], i % 4) << i;
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{50, 50, 50, 50}));
  // Centres near the blob centres; the same seed gives the same answer.
  EXPECT_NEAR(r.centres[2], 10, 0.5);
  EXPECT_NEAR(r.centres[5], 10, 0.5);
  EXPECT_EQ(kmeans(x.data(), 200, 2, p).labels, r.labels);
  // One cluster: everything in it, inertia the total scatter.
  p.clusters = 1;
  const KMeansResult one = kmeans(x.data(), 200, 2, p);
  EXPECT_EQ(one.sizes, (std::vector<int64_t>{200}));
  EXPECT_GT(one.inertia, 10 * r.inertia);
}

TEST(Clustering, AgreementMatchesClustersToClassesAndCounts) {
  const std::vector<int32_t> classes = {0, 0, 0, 1, 1, 2, 2, 2, 2, 2};
  const std::vector<int32_t> clusters = {2, 2, 1, 0, 0, 1, 1, 1, 1, 1};
  const Agreement a = cluster_agreement(classes, clusters);
  EXPECT_DOUBLE_EQ(a.accuracy, 0.9);
  EXPECT_EQ(a.class_of_cluster, (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(a.confusion, (std::vector<std::vector<int64_t>>{{0, 1, 2}, {2, 0, 0}, {0, 5, 0}}));
  // A point left out (-1) counts as wrong.
  const Agreement b = cluster_agreement({0, 0, 1, 1}, {0, -1, 1, 1});
  EXPECT_DOUBLE_EQ(b.accuracy, 0.75);
}

TEST(Clustering, EigengapAndComponentsAndBadInput) {
  EXPECT_EQ(eigengap_clusters({1, 0.99, 0.98, 0.5, 0.45, 0.4}, 5), 3);
  EXPECT_EQ(eigengap_clusters({1, 0.5, 0.49, 0.48}, 3), 2);
  EXPECT_THROW(eigengap_clusters({1, 0.5}, 3), UsageError);
  KnnGraph g;
  g.n = 7;
  g.k = 1;
  // 0-1, 2-3-4 (3 points to 2, 4 to 3), 5-6, the larger piece first.
  g.indices = {1, 0, 3, 2, 3, 6, 5};
  EXPECT_EQ(graph_components(g), (std::vector<int32_t>{1, 1, 0, 0, 0, 2, 2}));
  // The embedding's graph: under "and" only mutual pairs join (4 -> 3 is
  // one-sided: 3 lists 2), so 4 stands alone; "or" keeps the graph.
  EXPECT_EQ(graph_components(embedded_graph(g, 0, "and")), (std::vector<int32_t>{0, 0, 1, 1, 3, 2, 2}));
  EXPECT_EQ(graph_components(embedded_graph(g, 0, "or")), graph_components(g));
  // Its first k neighbours: two neighbours each on a path 0-1-2-3, the
  // second neighbour of 0 and 3 reaching across; one neighbour keeps pairs.
  KnnGraph path;
  path.n = 4;
  path.k = 2;
  path.indices = {1, 3, 0, 2, 3, 1, 2, 0};
  path.distances.assign(8, 1.f);
  EXPECT_EQ(graph_components(embedded_graph(path, 2, "or")), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(graph_components(embedded_graph(path, 1, "or")), (std::vector<int32_t>{0, 0, 1, 1}));
  std::vector<double> x = {0, 1};
  KMeansParams p;
  p.clusters = 3;
  EXPECT_THROW(kmeans(x.data(), 2, 1, p), UsageError);
  p.clusters = 0;
  EXPECT_THROW(validate(p, 10), UsageError);
}

TEST(Clustering, CliClustersSeparatedPiecesAndSplitsOneByKMeans) {
  if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI not set (run through ctest)";
  TempDir t;
  // Three far-apart blobs in 5-D: the 10-NN graph falls into three pieces.
  std::vector<int32_t> classes;
  auto x = blobs({{0, 0, 0, 0, 0}, {30, 0, 0, 0, 0}, {0, 30, 0, 0, 0}}, 80, 1.0, 5, &classes);
  std::vector<float> xf(x.begin(), x.end());
  npy::write(t / "three.npy", xf.data(), {240, 5});
  std::string err, out;
  ASSERT_EQ(run_cli("run " + (t / "three.npy") + " -k 10 --components 4 -q -o " + (t / "e3"), &err), 0) << err;
  ASSERT_EQ(run_cli("cluster " + (t / "e3") + " -o " + (t / "c3.npy"), &err, &out), 0) << err;
  EXPECT_NE(out.find("3 clusters (graph components) of 240 points, sizes 80 80 80"), std::string::npos) << out;
  auto labels = npy::read<int32_t>(t / "c3.npy");
  EXPECT_EQ(cluster_agreement(classes, labels).accuracy, 1.0);
  std::ifstream in(t / "c3.json");
  EXPECT_EQ(nlohmann::json::parse(in)["clusters_from"], "graph components");
  // Written into the embedding's own folder, the embedding stays whole.
  ASSERT_EQ(run_cli("cluster " + (t / "e3") + " -q -o " + (t / "e3/clusters.npy"), &err), 0) << err;
  EXPECT_EQ(npy::read<int32_t>(t / "e3/clusters.npy"), labels);
  EXPECT_TRUE(std::filesystem::exists(t / "e3/embedding.npy"));
  EXPECT_TRUE(std::filesystem::exists(t / "e3/indices.npy"));
  EXPECT_EQ(run_cli("cluster " + (t / "e3") + " --clusters 2 -o " + (t / "bad.npy"), &err), 2);
  EXPECT_NE(err.find("already falls into 3 separate components"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(t / "bad.npy"));
  // The graph beside it is the embedding's by core's rule (same_graph_json,
  // Partial): a record without keep_self (an older embedding.json) still
  // names it; one that contradicts it (another k) names another graph.
  nlohmann::json record;
  {
    std::ifstream json(t / "e3/embedding.json");
    record = nlohmann::json::parse(json);
  }
  record["graph"].erase("keep_self");
  std::ofstream(t / "e3/embedding.json") << record.dump(2);
  ASSERT_EQ(run_cli("cluster " + (t / "e3") + " -o " + (t / "older.npy"), &err, &out), 0) << err;
  EXPECT_NE(out.find("3 clusters (graph components)"), std::string::npos) << out;
  record["graph"]["k"] = 11;
  std::ofstream(t / "e3/embedding.json") << record.dump(2);
  EXPECT_EQ(run_cli("cluster " + (t / "e3") + " -o " + (t / "mixed.npy"), &err), 1);
  EXPECT_NE(err.find("holds another graph (240 points, k=10) than the embedding was computed from (the folder mixes "
                     "two results; embed it again)"),
            std::string::npos)
      << err;

  // Two blobs close enough to share one graph: k-means on dc1 parts them.
  classes.clear();
  x = blobs({{0, 0, 0}, {6, 0, 0}}, 150, 1.0, 6, &classes);
  xf.assign(x.begin(), x.end());
  npy::write(t / "two.npy", xf.data(), {300, 3});
  ASSERT_EQ(run_cli("run " + (t / "two.npy") + " -k 15 --components 4 -q -o " + (t / "e2"), &err), 0) << err;
  ASSERT_EQ(run_cli("cluster " + (t / "e2") + " --clusters 2 -q -o " + (t / "c2.npy"), &err), 0) << err;
  labels = npy::read<int32_t>(t / "c2.npy");
  EXPECT_GE(cluster_agreement(classes, labels).accuracy, 0.98);
  EXPECT_EQ(run_cli("cluster " + (t / "e2") + " --coordinates 9 -o " + (t / "c9.npy"), &err), 2);
  EXPECT_NE(err.find("--coordinates 9"), std::string::npos) << err;
  // A K whose default coordinates (K - 1) the embedding lacks: K's fault,
  // with its limit (4 coordinates, one component: at most 5).
  EXPECT_EQ(run_cli("cluster " + (t / "e2") + " --clusters 200 -o " + (t / "c200.npy"), &err), 2);
  EXPECT_EQ(testing_support::count_lines(err), 1) << err;
  EXPECT_EQ(err.find("--coordinates 199"), std::string::npos) << err;
  EXPECT_NE(err.find("--clusters 200: k-means would use dc1..dc199"), std::string::npos) << err;
  EXPECT_NE(err.find("at most --clusters 5"), std::string::npos) << err;
  EXPECT_EQ(run_cli("cluster " + (t / "e2") + " --clusters 5 -q -o " + (t / "c5.npy"), &err), 0) << err;
}

TEST(Clustering, ATooLargeKNamesClustersAndItsLimit) {
  // Two components and a 3-coordinate embedding of the larger: K - 2
  // coordinates by default, so K = 5 fits and K = 6 does not.
  std::vector<int32_t> classes;
  const auto x = blobs({{0, 0, 0}, {10, 0, 0}, {0, 10, 0}, {0, 0, 10}}, 10, 0.5, 2, &classes);
  std::vector<int64_t> index(40);
  std::iota(index.begin(), index.end(), 0);
  const std::vector<int32_t> components(41, 0);  // 40 embedded points and one point alone
  std::vector<int32_t> two = components;
  two[40] = 1;
  EmbeddingClusteringParams p;
  p.clusters = 5;
  EXPECT_EQ(cluster_embedding(x.data(), 40, 3, index.data(), {1, 0.9, 0.8, 0.7}, two, 41, p).clusters, 5);
  p.clusters = 6;
  const std::string m = testing_support::message_of([&] {
    cluster_embedding(x.data(), 40, 3, index.data(), {1, 0.9, 0.8, 0.7}, two, 41, p);
  });
  EXPECT_EQ(m.rfind("--clusters 6: k-means would use dc1..dc4", 0), 0u) << m;
  EXPECT_NE(m.find("at most --clusters 5"), std::string::npos) << m;
  // A --coordinates given is named as given.
  p.coordinates = 4;
  const std::string given = testing_support::message_of([&] {
    cluster_embedding(x.data(), 40, 3, index.data(), {1, 0.9, 0.8, 0.7}, two, 41, p);
  });
  EXPECT_EQ(given.rfind("--coordinates 4", 0), 0u) << given;
}

// cluster counts the components of the graph the embedding was computed on
// (its K' and --symmetrize), as embed counted and warned about them, not of
// the whole k-NN graph; each other component is a cluster of its own, and
// the points with no cluster (-1) are counted in the summary.
TEST(Clustering, CliCountsTheComponentsOfTheGraphTheEmbeddingUsed) {
  if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI not set (run through ctest)";
  TempDir t;
  std::vector<int32_t> classes;
  const auto x = blobs({{0, 0, 0}, {6, 0, 0}}, 150, 1.0, 6, &classes);
  const std::vector<float> xf(x.begin(), x.end());
  npy::write(t / "two.npy", xf.data(), {300, 3});
  std::string err, out;
  ASSERT_EQ(run_cli("knn " + (t / "two.npy") + " -k 15 -q -o " + (t / "g"), &err), 0) << err;
  // Elsewhere (the graph found through embedding.json), and beside the graph.
  struct Case {
    std::string embed, dir;
  };
  for (const Case& c : {Case{"--k 2 -o " + (t / "e"), t / "e"}, Case{"--k 4 --symmetrize and", t / "g"}}) {
    ASSERT_EQ(run_cli("embed " + (t / "g") + " " + c.embed + " --components 2 -q", &err), 0) << err;
    std::ifstream ej(c.dir + "/embedding.json");
    const auto e = nlohmann::json::parse(ej);
    const int components = e["graph_components"];
    const int64_t weak = e["weakly_joined_points"];
    ASSERT_GT(components, 1) << c.embed << ": the test needs a graph in pieces";
    ASSERT_EQ(run_cli("cluster " + c.dir + " -o " + (t / "c.npy"), &err, &out), 0) << err;
    const auto labels = npy::read<int32_t>(t / "c.npy");
    ASSERT_EQ(labels.size(), 300u);
    std::ifstream cj(t / "c.json");
    const auto meta = nlohmann::json::parse(cj);
    EXPECT_EQ(meta["graph_components"], components) << c.embed;
    EXPECT_EQ(meta["clusters"], components) << c.embed;
    EXPECT_EQ(meta["clusters_from"], "graph components");
    // Only the embedded component's points the kernel did not join stay -1.
    const int64_t left_out = std::count(labels.begin(), labels.end(), -1);
    EXPECT_EQ(left_out, weak) << c.embed;
    EXPECT_EQ(meta["points_left_out"], left_out);
    EXPECT_EQ(meta["points_clustered"], 300 - left_out);
    EXPECT_EQ(*std::max_element(labels.begin(), labels.end()), components - 1);
    EXPECT_NE(out.find(std::to_string(components) + " clusters (graph components) of 300 points"), std::string::npos)
        << out;
    EXPECT_EQ(out.find("left out") != std::string::npos, left_out > 0) << out;
  }
}
