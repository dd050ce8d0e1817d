// The CLI end to end: embed, run (data, session, demo), simulate, bench
// embed; exit codes, one-line errors, no partial output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <sys/wait.h>

#include <png.h>

#include "manifold/embedding_io.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::count_lines;
using testing_support::run_cli;
using testing_support::TempDir;
namespace fs = std::filesystem;

/// Skips the test where ubiquitin's PDB file (Debian's freesasa ships it),
/// which the demo and the diffraction simulations need, is not installed.
#define REQUIRE_UBIQUITIN()                                   \
  do {                                                        \
    try {                                                     \
      find_packaged_pdb("1ubq");                              \
    } catch (const Error&) {                                  \
      GTEST_SKIP() << "freesasa (1ubq.pdb) is not installed"; \
    }                                                         \
  } while (false)

namespace {

/// A noisy circle in 5-D (two informative dimensions), written as .npy.
std::string write_circle(const TempDir& t, int64_t n, std::vector<double>* angle = nullptr) {
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> u(0, 2 * M_PI);
  std::normal_distribution<double> g(0, 0.02);
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) {
    const double a = u(rng);
    if (angle) angle->push_back(a);
    v.insert(v.end(), {static_cast<float>(std::cos(a) + g(rng)), static_cast<float>(std::sin(a) + g(rng)),
                       static_cast<float>(g(rng)), static_cast<float>(g(rng)), static_cast<float>(g(rng))});
  }
  const std::string path = t / "circle.npy";
  npy::write(path, v.data(), {n, 5});
  return path;
}

TEST(CliEmbed, KnnThenEmbedWritesEveryFile) {
  REQUIRE_CLI();
  TempDir t;
  std::vector<double> angle;
  const std::string data = write_circle(t, 600, &angle);
  std::string err, out;
  ASSERT_EQ(run_cli("knn " + data + " -k 15 -q -o " + (t / "g"), &err), 0) << err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 3", &err, &out), 0) << err;
  EXPECT_NE(out.find("diffusion map: N=600 k=15"), std::string::npos) << out;
  for (auto f :
       {"eigenvalues.npy", "embedding.npy", "point_index.npy", "embedding.csv", "embedding.vtp", "embedding.json"})
    EXPECT_TRUE(fs::exists(t / (std::string("g/") + f))) << f;
  Embedding e = read_embedding(t / "g");
  ASSERT_EQ(e.n, 600);
  ASSERT_EQ(e.m, 3);
  // The circle is recovered: atan2(dc2, dc1) follows the angle.
  std::vector<double> phi;
  for (int64_t i = 0; i < e.n; ++i) phi.push_back(std::atan2(e.coordinates[i * 3 + 1], e.coordinates[i * 3]));
  EXPECT_GT(std::abs(circular_correlation(phi, angle)), 0.99);

  // Another output folder and other parameters, recorded in embedding.json.
  ASSERT_EQ(run_cli("embed " + (t / "g") +
                        " --k 8 --epsilon auto --alpha 0.5 --t 2 --symmetrize and --components 2 "
                        "--local-scaling 4 -q -o " +
                        (t / "e2"),
                    &err),
            0)
      << err;
  Embedding e2 = read_embedding(t / "e2");
  EXPECT_EQ(e2.m, 2);
  const auto& p = e2.metadata["parameters"];
  EXPECT_EQ(p["k"], 8);
  EXPECT_EQ(p["epsilon"], "auto");
  EXPECT_EQ(p["alpha"], 0.5);
  EXPECT_EQ(p["t"], 2.0);
  EXPECT_EQ(p["symmetrize"], "and");
  EXPECT_EQ(p["local_scaling"], 4);
  EXPECT_EQ(e2.metadata["local_scaling_neighbour"], 4);
  EXPECT_TRUE(e2.metadata.contains("bgh"));
  // The defaults: local scaling auto (the 7th neighbour), the eigensolve
  // budget, and the diagnostics of a clean circle (nothing to warn about).
  const auto& d = e.metadata["parameters"];
  EXPECT_EQ(d["local_scaling"], "auto");
  EXPECT_EQ(e.metadata["local_scaling_neighbour"], 7);
  EXPECT_EQ(d["max_matvecs"], 20000);
  EXPECT_EQ(e.metadata["diagnostics"]["participation"].size(), 3u);
  EXPECT_TRUE(e.metadata["diagnostics"]["warnings"].empty());
  EXPECT_EQ(e.metadata["weakly_joined_points"], 0);
  EXPECT_EQ(e2.metadata["graph"]["k"], 15);
}

TEST(CliEmbed, DegenerateEmbeddingWarnsAndRecordsWhy) {
  // A kernel far too narrow for the circle's spacing: most points are left
  // out and what is left is carried by single points. The result is
  // written, one warning line per finding, the same lines in embedding.json.
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 600);
  ASSERT_EQ(run_cli("knn " + data + " -k 15 -q -o " + (t / "g")), 0);
  std::string err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 3 --local-scaling 0 --epsilon 3e-4 -q", &err), 0) << err;
  Embedding e = read_embedding(t / "g");
  const auto& diag = e.metadata["diagnostics"];
  EXPECT_GT(e.metadata["weakly_joined_points"].get<int64_t>(), 100);
  EXPECT_EQ(e.metadata["weakly_joined_points"].get<int64_t>() + e.n, 600);
  ASSERT_GE(diag["warnings"].size(), 1u);
  EXPECT_EQ(count_lines(err), static_cast<int>(diag["warnings"].size())) << err;
  for (const auto& w : diag["warnings"])
    EXPECT_NE(err.find("manifold: warning: " + w.get<std::string>()), std::string::npos);
  EXPECT_NE(err.find("left out"), std::string::npos) << err;
  // The default kernel on the same graph: nothing to say.
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 3 -q -o " + (t / "ok"), &err), 0) << err;
  EXPECT_EQ(err, "");
}

// QA 15: a disconnected graph's line names the file that lists the points
// embedded, which embed writes beside it (the explorer's banner says
// otherwise: core's test_diffusion, the GUI's test_reported_fixes).
TEST(CliEmbed, ADisconnectedGraphNamesPointIndex) {
  REQUIRE_CLI();
  TempDir t;
  std::vector<float> v;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g(0, 0.05f);
  for (int i = 0; i < 300; ++i) {
    const double a = 2 * M_PI * i / 240, far = i < 240 ? 0 : 100;  // 240 on a circle, 60 in a blob far away
    v.insert(v.end(), {static_cast<float>(i < 240 ? std::cos(a) : 0) + g(rng) + static_cast<float>(far),
                       static_cast<float>(i < 240 ? std::sin(a) : 0) + g(rng), g(rng)});
  }
  npy::write(t / "two.npy", v.data(), {300, 3});
  ASSERT_EQ(run_cli("knn " + (t / "two.npy") + " -k 8 -q -o " + (t / "g")), 0);
  std::string err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 2 -q", &err), 0) << err;
  EXPECT_NE(err.find("manifold: warning: the k-NN graph has 2 connected components (240 and 60 points); embedded "
                     "the largest piece (240 of 300 points; point_index.npy lists them); a larger k joins them"),
            std::string::npos)
      << err;
  EXPECT_EQ(read_embedding(t / "g").point_index.size(), 240u);
}

// An embedding written beside another graph than its own would be read by
// cluster, trajectory and the explorer as that graph's; a folder that cannot
// take the result is refused before the eigensolve (a solve that cannot
// converge in the budget shows it: the folder's message comes, not its).
TEST(CliEmbed, AFolderHoldingAnotherGraphIsRefusedBeforeTheEigensolveUnlessOverwrite) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 200);
  std::string err;
  ASSERT_EQ(run_cli("knn " + data + " -k 10 -q -o " + (t / "g10"), &err), 0) << err;
  ASSERT_EQ(run_cli("knn " + data + " -k 6 -q -o " + (t / "g6"), &err), 0) << err;
  fs::create_directories(t / "mine");
  { std::ofstream(t / "mine/notes.txt") << "the user's own file\n"; }
  const std::string g10 = testing_support::slurp(t / "g10/graph.json");
  struct Case {
    std::string out, says;
  };
  for (const Case& c : {Case{t / "g10", "holds another k-NN graph"}, Case{t / "mine", "notes.txt"}}) {
    for (const std::string budget : {"", " --max-matvecs 5"}) {
      EXPECT_EQ(run_cli("embed " + (t / "g6") + " --components 2" + budget + " -q -o " + c.out, &err), 2) << budget;
      EXPECT_EQ(count_lines(err), 1) << err;
      EXPECT_NE(err.find(c.says), std::string::npos) << err;
      EXPECT_NE(err.find("--overwrite"), std::string::npos) << err;
      EXPECT_FALSE(fs::exists(c.out + "/embedding.json")) << c.out;
    }
  }
  EXPECT_EQ(testing_support::slurp(t / "g10/graph.json"), g10);
  // Its own graph, or a copy of it, stays beside the embedding.
  fs::copy(t / "g6", t / "copy");
  ASSERT_EQ(run_cli("embed " + (t / "g6") + " --components 2 -q -o " + (t / "copy"), &err), 0) << err;
  EXPECT_TRUE(fs::exists(t / "copy/graph.json") && fs::exists(t / "copy/embedding.json"));
  // --overwrite replaces the other graph: the folder then holds the embedding
  // alone, which cluster reads without a graph that does not fit.
  ASSERT_EQ(run_cli("embed " + (t / "g6") + " --components 2 -q --overwrite -o " + (t / "g10"), &err), 0) << err;
  EXPECT_FALSE(fs::exists(t / "g10/graph.json"));
  EXPECT_EQ(read_embedding(t / "g10").n, 200);
  EXPECT_EQ(run_cli("cluster " + (t / "g10") + " --clusters 2 -q -o " + (t / "c.npy"), &err), 0) << err;
  ASSERT_EQ(run_cli("embed " + (t / "g6") + " --components 2 -q --overwrite -o " + (t / "mine"), &err), 0) << err;
  EXPECT_FALSE(fs::exists(t / "mine/notes.txt"));
}

// K' is --k in embed and --embed-k in run (where --k is the graph's k): the
// message names the option given, and 0 (all neighbours) is in its range.
TEST(CliRun, AnEmbedKAboveTheGraphsKNamesEmbedK) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 100);
  std::string err;
  EXPECT_EQ(run_cli("run " + data + " -k 15 --embed-k 20 -q -o " + (t / "r"), &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("--embed-k 20: must be between 0"), std::string::npos) << err;
  EXPECT_NE(err.find("graph's k = 15"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "r"));
  ASSERT_EQ(run_cli("run " + data + " -k 15 --embed-k 0 --components 2 -q -o " + (t / "r"), &err), 0) << err;
  EXPECT_EQ(run_cli("embed " + (t / "r") + " --k 20 -q -o " + (t / "e"), &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("--k 20: must be between 0"), std::string::npos) << err;
  // The demo's graph k is its default (20): --embed-k is still the name.
  EXPECT_EQ(run_cli("run --demo --count 60 --size 8 --embed-k 30 -q -o " + (t / "d"), &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("--embed-k 30: must be between 0"), std::string::npos) << err;
  EXPECT_NE(err.find("graph's k = 20"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "d"));
}

TEST(CliEmbed, BadInputGivesOneLineAndNoOutput) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 200);
  ASSERT_EQ(run_cli("knn " + data + " -k 10 -q -o " + (t / "g")), 0);
  struct Case {
    std::string args;
    int status;
    std::string says;
  };
  const std::string g = t / "g";
  const std::vector<Case> cases = {
      {"embed " + g + " --epsilon 0", 2, "--epsilon"},
      {"embed " + g + " --epsilon -3", 2, "must be positive"},
      {"embed " + g + " --epsilon wide", 2, "not a number"},
      {"embed " + g + " --k 11", 2, "graph's k = 10"},
      {"embed " + g + " --components 200", 2, "--components"},
      {"embed " + g + " --components 199", 2, "--components"},
      {"embed " + g + " --symmetrize xor", 2, "--symmetrize"},
      {"embed " + g + " --alpha 3", 2, "--alpha"},
      {"embed " + g + " --eigensolver fast", 2, "--eigensolver"},
      {"embed " + g + " --bogus 1", 2, "unknown option"},
      {"embed " + g + " --local-scaling wide", 2, "--local-scaling"},
      {"embed " + g + " --local-scaling 11", 2, "--local-scaling"},
      {"embed " + g + " --max-matvecs -1", 2, "--max-matvecs"},
      {"embed " + g + " --time-limit -1", 2, "--time-limit"},
      // A budget no solve fits in: the reason in one line, nothing written.
      {"embed " + g + " --max-matvecs 5", 1, "no convergence within the budget (--max-matvecs 5"},
      {"embed", 2, "missing GRAPHDIR"},
      {"embed " + (t / "nowhere"), 1, "nowhere"},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_EQ(run_cli(c.args + " -q -o " + (t / "out"), &err), c.status) << c.args << ": " << err;
    EXPECT_EQ(count_lines(err), 1) << c.args << ": " << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << ": " << err;
    EXPECT_FALSE(fs::exists(t / "out")) << c.args;
  }
  {
    // --eigensolver gpu: runs where there is a GPU, else one line saying why.
    std::string err;
    const int status = run_cli("embed " + g + " --eigensolver gpu --components 3 -q -o " + (t / "gpu"), &err);
    if (status == 0) {
      std::ifstream in(t / "gpu/embedding.json");
      const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_NE(json.find("\"eigensolver\": \"gpu\""), std::string::npos);
    } else {
      EXPECT_EQ(status, 2) << err;
      EXPECT_EQ(count_lines(err), 1) << err;
      EXPECT_NE(err.find("--eigensolver gpu"), std::string::npos) << err;
      EXPECT_FALSE(fs::exists(t / "gpu"));
    }
  }
  // Inconsistent graph files: out-of-range index, shapes that disagree.
  KnnGraph graph = read_graph(g);
  auto bad_case = [&](const std::string& what) {
    std::string err;
    EXPECT_EQ(run_cli("embed " + (t / "bad") + " -q -o " + (t / "out"), &err), 1) << what << ": " << err;
    EXPECT_EQ(count_lines(err), 1) << err;
    EXPECT_NE(err.find(what), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(t / "out"));
    EXPECT_FALSE(fs::exists(t / "bad/embedding.npy"));
  };
  fs::copy(g, t / "bad");
  std::vector<int64_t> idx(graph.indices.begin(), graph.indices.end());
  idx[77] = 9999;
  npy::write(t / "bad/indices.npy", idx.data(), {graph.n, graph.k});
  bad_case("indices.npy");
  std::vector<float> d(graph.distances.begin(), graph.distances.end() - graph.k);
  npy::write(t / "bad/indices.npy", graph.indices.data(), {graph.n, graph.k});
  npy::write(t / "bad/distances.npy", d.data(), {graph.n - 1, graph.k});
  bad_case("distances.npy");
}

TEST(CliRun, DataSessionAndReproduction) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 500);
  std::string err, out;
  ASSERT_EQ(run_cli("run " + data + " -k 12 --backend cpu --components 3 --embed-k 10 -o " + (t / "r"), &err, &out), 0)
      << err;
  EXPECT_NE(out.find("k-NN graph: N=500"), std::string::npos) << out;
  for (auto f : {"indices.npy", "distances.npy", "graph.json", "embedding.npy", "embedding.vtp", "session.json"})
    EXPECT_TRUE(fs::exists(t / (std::string("r/") + f))) << f;
  EXPECT_EQ(read_graph(t / "r").k, 12);
  Embedding a = read_embedding(t / "r");
  EXPECT_EQ(a.metadata["parameters"]["k"], 10);
  // The session written by run reproduces it exactly.
  ASSERT_EQ(run_cli("run --session " + (t / "r/session.json") + " -q -o " + (t / "again"), &err), 0) << err;
  Embedding b = read_embedding(t / "again");
  EXPECT_EQ(a.coordinates, b.coordinates);
  // A hand-written session with a relative data path and output folder.
  fs::create_directories(t / "s");
  fs::copy(data, t / "s/points.npy");
  std::ofstream(t / "s/mine.json") << R"({"format": "manifold-session", "version": 1, "data": "points.npy",
    "knn": {"k": 9}, "diffusion": {"components": 2, "epsilon": 0.05}, "output": "result"})";
  ASSERT_EQ(run_cli("run --session " + (t / "s/mine.json") + " -q", &err), 0) << err;
  Embedding c = read_embedding(t / "s/result");
  EXPECT_EQ(c.m, 2);
  EXPECT_EQ(c.metadata["epsilon"], 0.05);
  // Bad run arguments.
  EXPECT_EQ(run_cli("run " + data + " -o " + (t / "x"), &err), 2);
  EXPECT_NE(err.find("missing -k"), std::string::npos);
  EXPECT_EQ(run_cli("run " + data + " -k 10", &err), 2);
  EXPECT_EQ(run_cli("run " + data + " -k 600 -q -o " + (t / "x"), &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_EQ(run_cli("run " + data + " -k 10 --components 600 -q -o " + (t / "x"), &err), 2) << err;
  EXPECT_NE(err.find("--components"), std::string::npos);
  EXPECT_EQ(run_cli("run --session " + (t / "nowhere.json") + " -o " + (t / "x"), &err), 1);
  EXPECT_NE(err.find("nowhere.json"), std::string::npos);
  EXPECT_EQ(run_cli("run --demo --session " + (t / "s/mine.json") + " -o " + (t / "x"), &err), 2);
  EXPECT_FALSE(fs::exists(t / "x"));
}

// A handful of images: without --components the coordinates fit the
// points (at most N - 2, the eigensolver's limit) in run and embed, and
// the session records the number taken; asked for by name, too many is
// still a one-line error.
TEST(CliRun, DefaultComponentsFitAFewPoints) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 8);
  std::string err;
  ASSERT_EQ(run_cli("run " + data + " -k 3 --backend cpu -q -o " + (t / "r"), &err), 0) << err;
  EXPECT_EQ(read_embedding(t / "r").m, 6);
  std::ifstream session(t / "r/session.json");
  const nlohmann::json s = nlohmann::json::parse(session);
  EXPECT_EQ(s["diffusion"]["components"], 6);
  ASSERT_EQ(run_cli("embed " + (t / "r") + " -q -o " + (t / "e"), &err), 0) << err;
  EXPECT_EQ(read_embedding(t / "e").m, 6);
  EXPECT_EQ(run_cli("run " + data + " -k 3 --backend cpu --components 10 -q -o " + (t / "x"), &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("--components 10: must be between 1 and N - 2 = 6 for 8 points"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "x"));
}

// The demo's default of 4 coordinates fits 5 simulated images too.
TEST(CliRun, DemoDefaultComponentsFitAFewImages) {
  REQUIRE_CLI();
  REQUIRE_UBIQUITIN();
  TempDir t;
  std::string err;
  ASSERT_EQ(run_cli("run --demo --count 5 --size 8 -k 3 --backend cpu -q -o " + (t / "d"), &err), 0) << err;
  EXPECT_EQ(read_embedding(t / "d").m, 3);
}

// The run's breakdown: the steps line adds up to its total, and
// embedding.json has each step known when it is written and each output
// file's own write time.
TEST(CliRun, ReportsItsBreakdownInTheStepsLineAndTheJson) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 3000);
  std::string err, out;
  ASSERT_EQ(run_cli("run " + data + " -k 10 --backend cpu --components 3 -o " + (t / "r"), &err, &out), 0) << err;
  const size_t at = out.find("steps: ");
  ASSERT_NE(at, std::string::npos) << out;
  std::istringstream line(out.substr(at + 7, out.find('\n', at) - at - 7));
  std::string item;
  double sum = 0, total = -1;
  while (std::getline(line, item, ',')) {
    const size_t s = item.rfind(" s");
    const size_t value = item.rfind(' ', s - 1);
    const double seconds = std::stod(item.substr(value + 1, s - value - 1));
    if (item.find("total") != std::string::npos) total = seconds;
    else
      sum += seconds;
  }
  EXPECT_GE(total, 0) << out;
  EXPECT_LE(sum, total + 0.01) << "the steps follow one another: " << out;  // each printed to 1 ms
  Embedding e = read_embedding(t / "r");
  const auto& steps = e.metadata["command_timings_s"];
  for (auto step : {"load", "graph", "embedding", "write graph", "write embedding .npy", "write CSV", "write VTP"})
    EXPECT_GE(steps.at(step).get<double>(), 0) << step;
  const auto& files = e.metadata["output_files_s"];
  EXPECT_EQ(files.size(), 9u) << files;
  for (auto f : {"indices.npy", "distances.npy", "graph.json", "session.json", "eigenvalues.npy", "embedding.npy",
                 "point_index.npy", "embedding.csv", "embedding.vtp"})
    EXPECT_GE(files.at(f).get<double>(), 0) << f;
}

TEST(CliRun, DemoRecoversTheRotationAngle) {
  REQUIRE_CLI();
  REQUIRE_UBIQUITIN();
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("run --demo --count 1000 -o " + (t / "demo"), &err, &out), 0) << err;
  const auto pos = out.find("circular correlation of atan2(psi2, psi1) with the rotation angle: ");
  ASSERT_NE(pos, std::string::npos) << out;
  const double corr = std::strtod(out.c_str() + pos + 67, nullptr);
  EXPECT_GE(corr, 0.99) << out;
  for (auto f :
       {"patterns.npy", "patterns.angles.npy", "indices.npy", "embedding.npy", "embedding.vtp", "session.json"})
    EXPECT_TRUE(fs::exists(t / (std::string("demo/") + f))) << f;
  Embedding e = read_embedding(t / "demo");
  EXPECT_EQ(e.n, 1000);
  // The patterns and the graph, written during the embedding, are timed too.
  for (auto f :
       {"patterns.npy", "patterns.angles.npy", "patterns.json", "indices.npy", "session.json", "embedding.vtp"})
    EXPECT_TRUE(e.metadata["output_files_s"].contains(f)) << f;
  EXPECT_NEAR(e.metadata["demo"]["circular_correlation_angle"].get<double>(), corr, 1e-4);
  // The session reproduces the demo's embedding from its patterns.
  ASSERT_EQ(run_cli("run --session " + (t / "demo/session.json") + " -q -o " + (t / "again"), &err), 0) << err;
  EXPECT_EQ(read_embedding(t / "again").coordinates, e.coordinates);
}

// Diffraction runs with blank frames (no hit, no background: all zero, so
// exact duplicates of each other). The default run embeds the hits and says
// what it did with the blanks; cosine, undefined on a zero frame, refuses in
// one line that counts them.
TEST(CliRun, BlankFramesEmbedTheHitsAndCosineCountsThem) {
  REQUIRE_CLI();
  REQUIRE_UBIQUITIN();
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("simulate diffraction --pdb 1ubq --count 300 --size 16 --mix blank=0.2,single=0.8 --seed 3 -q -o " +
                        (t / "p.npy"),
                    &err),
            0)
      << err;
  std::vector<int64_t> shape;
  const auto img = npy::read<float>(t / "p.npy", &shape);
  std::vector<int64_t> blanks;
  for (int64_t i = 0; i < shape[0]; ++i)
    if (std::all_of(img.begin() + i * 256, img.begin() + (i + 1) * 256, [](float v) { return v == 0; }))
      blanks.push_back(i);
  ASSERT_GT(blanks.size(), 20u);
  ASSERT_EQ(run_cli("run " + (t / "p.npy") + " -k 10 --components 3 -o " + (t / "e"), &err, &out), 0) << err;
  EXPECT_NE(err.find(std::to_string(blanks.size()) + " points of 300 are at distance 0 from their 7-th neighbour"),
            std::string::npos)
      << err;
  // The blanks are a piece of their own, which the warning names as such:
  // the hits are embedded.
  EXPECT_NE(err.find("the other is " + std::to_string(blanks.size()) +
                     " identical images (duplicates, such as blank frames), which no k joins"),
            std::string::npos)
      << err;
  const Embedding e = read_embedding(t / "e");
  EXPECT_EQ(e.n, 300 - static_cast<int64_t>(blanks.size()));
  EXPECT_EQ(e.metadata["identical_image_points"].get<int64_t>(), static_cast<int64_t>(blanks.size()));
  for (int64_t b : blanks) EXPECT_EQ(std::count(e.point_index.begin(), e.point_index.end(), b), 0) << b;
  EXPECT_EQ(run_cli("run " + (t / "p.npy") + " -k 10 --metric cosine -q -o " + (t / "c"), &err), 1);
  EXPECT_NE(err.find("row " + std::to_string(blanks[0]) + " and " + std::to_string(blanks.size() - 1) +
                     " more are all zero"),
            std::string::npos)
      << err;
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_FALSE(fs::exists(t / "c"));
}

TEST(CliRun, CtrlCCancelsWithoutOutput) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 30000);
  // One SIGINT after a moment, while the graph is being built (--foreground:
  // without it timeout signals the whole group too, and a second Ctrl-C exits at once).
  const std::string cmd = "timeout --foreground --preserve-status -s INT 0.5 '" +
                          std::string(std::getenv("MANIFOLD_CLI")) + "' run " + data + " -k 30 --backend cpu -o " +
                          (t / "out") + " >/dev/null 2>" + (t / "err");
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(t / "err");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("cancelled"), std::string::npos) << ss.str();
  EXPECT_FALSE(fs::exists(t / "out"));
}

TEST(CliSimulate, WritesNpyAndCxiAndRejectsBadInput) {
  REQUIRE_CLI();
  std::string pdb;
  try {
    pdb = find_packaged_pdb("1ubq");
  } catch (const Error&) {
    GTEST_SKIP() << "freesasa (1ubq.pdb) is not installed";
  }
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("simulate diffraction --pdb " + pdb + " --count 30 --size 16 --axis y --photons 5000 --seed 4 -o " +
                        (t / "p.npy"),
                    &err, &out),
            0)
      << err;
  EXPECT_NE(out.find("simulated 30 patterns 16x16 of 1UBQ"), std::string::npos) << out;
  std::vector<int64_t> shape;
  auto img = npy::read<float>(t / "p.npy", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{30, 16, 16}));
  double total = 0;
  for (float v : img) total += v;
  EXPECT_NEAR(total / 30, 5000, 300);
  EXPECT_EQ(npy::read<double>(t / "p.angles.npy", &shape).size(), 30u);
  // Bare PDB ids resolve to the packaged structure; CXI holds data and truth.
  ASSERT_EQ(run_cli("simulate diffraction --pdb 1ubq --count 20 --size 12 --axis random -q -o " + (t / "r.cxi"), &err),
            0)
      << err;
  ASSERT_EQ(run_cli("info " + (t / "r.cxi"), &err, &out), 0) << err;
  EXPECT_NE(out.find("N:       20"), std::string::npos) << out;
  EXPECT_NE(out.find("d:       144"), std::string::npos) << out;

  std::ofstream(t / "junk.pdb") << "nothing here\n";
  struct Case {
    std::string args;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"simulate diffraction --pdb " + pdb + " --count 5 --axis w -o " + (t / "x.npy"), 2, "--axis"},
      {"simulate diffraction --count 5 -o " + (t / "x.npy"), 2, "--pdb"},
      {"simulate diffraction --pdb " + pdb + " -o " + (t / "x.npy"), 2, "--count"},
      {"simulate diffraction --pdb " + pdb + " --count 5 -o " + (t / "x.txt"), 2, ".npy or .cxi"},
      {"simulate diffraction --pdb " + pdb + " --count 0 -o " + (t / "x.npy"), 2, "--count"},
      {"simulate diffraction --pdb " + pdb + " --count 5 --photons -1 -o " + (t / "x.npy"), 2, "--photons"},
      {"simulate diffraction --pdb " + (t / "missing.pdb") + " --count 5 -o " + (t / "x.npy"), 1, "missing.pdb"},
      {"simulate diffraction --pdb " + (t / "junk.pdb") + " --count 5 -o " + (t / "x.npy"), 1, "no ATOM/HETATM"},
      {"simulate noise --count 5", 2, "unknown kind"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(run_cli(c.args, &err), c.status) << c.args << ": " << err;
    EXPECT_EQ(count_lines(err), 1) << c.args << ": " << err;
    EXPECT_NE(err.find(c.says), std::string::npos) << c.args << ": " << err;
  }
  EXPECT_FALSE(fs::exists(t / "x.npy"));
  EXPECT_FALSE(fs::exists(t / "x.txt"));
}

TEST(CliBench, EmbedBenchWritesJsonAndMatrix) {
  REQUIRE_CLI();
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("bench embed -n 3000 -k 10 --repeats 1 --json " + (t / "b.json") + " --matrix " + (t / "m"), &err,
                    &out),
            0)
      << err;
  std::ifstream in(t / "b.json");
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["data"]["n"], 3000);
  EXPECT_EQ(j["eigensolve"]["eigenpairs"], 10);
  EXPECT_GT(j["eigensolve"]["median_s"].get<double>(), 0);
  EXPECT_LE(j["eigensolve"]["max_residual"].get<double>(), 1e-9);
  for (auto change : {"k_change", "epsilon_change"}) {
    EXPECT_GT(j["reembed"][change]["full"]["median_s"].get<double>(), 0) << change;
    EXPECT_GT(j["reembed"][change]["warm"]["median_s"].get<double>(), 0) << change;
    EXPECT_GT(j["reembed"][change]["warm"]["worst_abs_cos_to_full"].get<double>(), 0.9) << change;
  }
  // The matrix written for SciPy is the symmetric operator that was solved.
  std::vector<int64_t> s1, s2, s3;
  auto ptr = npy::read<int64_t>(t / "m/indptr.npy", &s1);
  auto col = npy::read<int64_t>(t / "m/indices.npy", &s2);
  auto val = npy::read<double>(t / "m/data.npy", &s3);
  ASSERT_EQ(ptr.size(), 3001u);
  ASSERT_EQ(col.size(), val.size());
  EXPECT_EQ(ptr.back(), static_cast<int64_t>(val.size()));
  EXPECT_EQ(j["matrix"]["nnz"], static_cast<int64_t>(val.size()));
  // Symmetric, and rows of D^-1/2 K D^-1/2 times sqrt(d) give sqrt(d) back: check symmetry on a sample.
  std::map<std::pair<int64_t, int64_t>, double> entries;
  for (int64_t i = 0; i < 3000; ++i)
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) entries[{i, col[e]}] = val[e];
  int checked = 0;
  for (auto& [ij, v] : entries) {
    if (ij.first % 97) continue;
    ASSERT_TRUE(entries.count({ij.second, ij.first}));
    const double mirror = entries[std::make_pair(ij.second, ij.first)];
    EXPECT_NEAR(mirror, v, 1e-15);
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

// ---- metadata columns (issue 23) ----------------------------------------------------

/// The bytes of an inline binary VTK DataArray/Array named `name` (base64
/// after a UInt64 byte count, each encoded on its own); empty when absent.
std::string vtp_array(const std::string& xml, const std::string& name, std::string* type = nullptr) {
  const auto at = xml.find("Name=\"" + name + "\"");
  if (at == std::string::npos) return {};
  const auto open = xml.rfind('<', at);
  if (type) {
    const auto t0 = xml.find("type=\"", open) + 6;
    *type = xml.substr(t0, xml.find('"', t0) - t0);
  }
  const auto start = xml.find('>', at) + 1;
  const auto end = xml.find("</", start);
  std::string text;
  for (char c : xml.substr(start, end - start))
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  auto decode = [](const std::string& b64) {
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i + 4 <= b64.size(); i += 4) {
      uint32_t v = 0;
      int pad = 0;
      for (int k = 0; k < 4; ++k) {
        const char c = b64[i + k];
        v <<= 6;
        if (c == '=') ++pad;
        else
          v |= static_cast<uint32_t>(alphabet.find(c));
      }
      out += static_cast<char>(v >> 16);
      if (pad < 2) out += static_cast<char>((v >> 8) & 255);
      if (pad < 1) out += static_cast<char>(v & 255);
    }
    return out;
  };
  // The count's 8 bytes are 12 base64 characters (padded on their own).
  const std::string count = decode(text.substr(0, 12));
  uint64_t bytes = 0;
  std::memcpy(&bytes, count.data(), 8);
  std::string data = decode(text.substr(12));
  EXPECT_EQ(data.size(), bytes) << name;
  return data;
}

template <class T>
std::vector<T> values_of(const std::string& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CliRun, AFolderOfOtherFilesIsRefusedBeforeTheWorkUnlessOverwrite) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 300);
  fs::create_directories(t / "mine");
  { std::ofstream(t / "mine/notes.txt") << "the user's own file\n"; }
  std::string err;
  EXPECT_EQ(run_cli("run " + data + " -k 10 -q -o " + (t / "mine"), &err), 2);
  EXPECT_NE(err.find("notes.txt"), std::string::npos) << err;
  EXPECT_NE(err.find("--overwrite"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "mine/graph.json"));
  EXPECT_TRUE(fs::exists(t / "mine/notes.txt"));
  EXPECT_EQ(run_cli("run --demo --count 60 --size 8 -k 8 --components 2 -q -o " + (t / "mine"), &err), 2) << err;
  // A previous run's folder is replaced by the new result without the flag;
  // the user's folder only with it.
  ASSERT_EQ(run_cli("run " + data + " -k 10 -q -o " + (t / "r"), &err), 0) << err;
  ASSERT_EQ(run_cli("run " + data + " -k 12 -q -o " + (t / "r"), &err), 0) << err;
  ASSERT_EQ(run_cli("run " + data + " -k 10 -q --overwrite -o " + (t / "mine"), &err), 0) << err;
  EXPECT_TRUE(fs::exists(t / "mine/embedding.json"));
}

TEST(CliMetadata, DemoColumnsInEveryOutput) {
  REQUIRE_CLI();
  REQUIRE_UBIQUITIN();
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("run --demo --count 600 -o " + (t / "demo"), &err, &out), 0) << err;
  EXPECT_NE(out.find("metadata: angle ~ atan2(psi2, psi1) circular "), std::string::npos) << out;
  const Embedding e = read_embedding(t / "demo");
  const std::vector<double> angles = npy::read<double>(t / "demo/patterns.angles.npy");
  ASSERT_EQ(angles.size(), 600u);
  // embedding.csv: the angle after dc1..dc4, row `index` of the angles.
  std::ifstream csv(t / "demo/embedding.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "index,dc1,dc2,dc3,dc4,angle");
  int64_t rows = 0;
  while (std::getline(csv, line)) {
    const int64_t index = std::stoll(line);
    const double angle = std::stod(line.substr(line.rfind(',') + 1));
    ASSERT_EQ(angle, angles[static_cast<size_t>(index)]) << line;
    ++rows;
  }
  EXPECT_EQ(rows, e.n);
  // embedding.vtp: a Float64 point-data array "angle" in point order.
  const std::string xml = read_text(t / "demo/embedding.vtp");
  std::string type;
  const auto vtp = values_of<double>(vtp_array(xml, "angle", &type));
  EXPECT_EQ(type, "Float64");
  ASSERT_EQ(static_cast<int64_t>(vtp.size()), e.n);
  for (int64_t i = 0; i < e.n; ++i) ASSERT_EQ(vtp[i], angles[e.point_index[i]]);
  // embedding.json: the correlation block.
  const auto& block = e.metadata["metadata_correlation"];
  ASSERT_EQ(block["columns"].size(), 1u);
  const auto& angle = block["columns"][0];
  EXPECT_EQ(angle["name"], "angle");
  EXPECT_EQ(angle["kind"], "angle");
  EXPECT_EQ(angle["pair"]["coordinates"], nlohmann::json({1, 2}));
  EXPECT_GE(std::abs(angle["pair"]["fisher_lee"].get<double>()), 0.99);
  EXPECT_EQ(angle["per_coordinate"].size(), 4u);
  // The embedding files themselves are unchanged by metadata.
  EXPECT_EQ(e.m, 4);

  // Re-embedding the demo's folder finds patterns.angles.npy beside the
  // patterns its session.json names.
  ASSERT_EQ(run_cli("embed " + (t / "demo") + " --components 3 -o " + (t / "again"), &err, &out), 0) << err;
  EXPECT_NE(out.find("metadata: angle ~ "), std::string::npos) << out;
  EXPECT_EQ(read_embedding(t / "again").metadata["metadata_correlation"]["columns"][0]["source"],
            (fs::absolute(t / "demo") / "patterns.angles.npy").lexically_normal().string());
}

TEST(CliMetadata, EmbedMetadataFollowsPointIndex) {
  // A kernel narrow enough to leave points out: the metadata rows must still
  // be those of point_index, not the first N'.
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 600);
  ASSERT_EQ(run_cli("knn " + data + " -k 15 -q -o " + (t / "g")), 0);
  std::vector<double> row(600);
  for (int i = 0; i < 600; ++i) row[i] = i;
  npy::write(t / "row.npy", row.data(), {600});
  std::ofstream csv(t / "meta.csv");
  csv << "half,\"odd, even\"\n";
  for (int i = 0; i < 600; ++i) csv << (i < 300 ? 0 : 1) << "," << (i % 2 ? "\"odd, yes\"" : "even") << "\n";
  csv.close();
  std::string err, out;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 3 --local-scaling 0 --epsilon 3e-4 --metadata " +
                        (t / "row.npy") + " --metadata=" + (t / "meta.csv") + " -o " + (t / "e"),
                    &err, &out),
            0)
      << err;
  const Embedding e = read_embedding(t / "e");
  ASSERT_LT(e.n, 600);
  std::ifstream in(t / "e/embedding.csv");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "index,dc1,dc2,dc3,row,half,\"odd, even\"");
  int64_t i = 0;
  while (std::getline(in, line)) {
    const int64_t index = std::stoll(line);
    ASSERT_EQ(index, e.point_index[i]);
    // row, half, then the quoted category.
    std::vector<std::string> f;
    std::string rest = line;
    for (int k = 0; k < 4; ++k) rest = rest.substr(rest.find(',') + 1);
    const auto c1 = rest.find(','), c2 = rest.find(',', c1 + 1);
    EXPECT_EQ(std::stoll(rest.substr(0, c1)), index) << line;
    EXPECT_EQ(std::stoll(rest.substr(c1 + 1, c2 - c1 - 1)), index < 300 ? 0 : 1) << line;
    EXPECT_EQ(rest.substr(c2 + 1), index % 2 ? "\"odd, yes\"" : "even") << line;
    ++i;
  }
  EXPECT_EQ(i, e.n);
  // The .vtp: the category as Int32 codes and its names as field data.
  const std::string xml = read_text(t / "e/embedding.vtp");
  std::string type;
  const auto codes = values_of<int32_t>(vtp_array(xml, "odd, even", &type));
  EXPECT_EQ(type, "Int32");
  ASSERT_EQ(static_cast<int64_t>(codes.size()), e.n);
  for (int64_t p = 0; p < e.n; ++p) ASSERT_EQ(codes[p], e.point_index[p] % 2 ? 1 : 0);
  EXPECT_EQ(vtp_array(xml, "odd, even_categories", &type), std::string("even\0odd, yes\0", 14));
  EXPECT_EQ(type, "String");
  // embedding.json: one entry per column, rows used = points embedded.
  const auto& cols = e.metadata["metadata_correlation"]["columns"];
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0]["statistic"], "pearson");
  EXPECT_EQ(cols[1]["statistic"], "pearson");
  EXPECT_EQ(cols[2]["statistic"], "correlation_ratio");
  EXPECT_EQ(cols[2]["categories"], nlohmann::json({"even", "odd, yes"}));
  EXPECT_EQ(cols[0]["rows_used"].get<int64_t>(), e.n);
  EXPECT_NE(out.find("metadata: row ~ psi"), std::string::npos) << out;
  // embedding.npy is what it was without metadata.
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 3 --local-scaling 0 --epsilon 3e-4 -q -o " + (t / "plain")),
            0);
  EXPECT_EQ(read_embedding(t / "plain").coordinates, e.coordinates);
  EXPECT_FALSE(read_embedding(t / "plain").metadata.contains("metadata_correlation"));
}

namespace {

/// An 8-bit grey PNG of w x h `pixels`, through libpng.
void write_grey_png(const std::string& path, int w, int h, const std::vector<uint8_t>& pixels) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_GRAY,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < h; ++y) png_write_row(png, const_cast<png_bytep>(pixels.data() + static_cast<size_t>(y) * w));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

/// n PNGs of a bright bar turning through half a turn (a closed curve), named
/// with commas, quotes and outer spaces; returns the names in folder order.
std::vector<std::string> write_bar_folder(const std::string& dir, int n) {
  fs::create_directories(dir);
  const std::vector<std::string> kinds = {"bar %02d.png", "bar, %02d.png", "bar \"%02d\".png", " bar %02d .png"};
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    const double a = M_PI * i / n, c = std::cos(a), s = std::sin(a);
    std::vector<uint8_t> px(16 * 16);
    for (int y = 0; y < 16; ++y)
      for (int x = 0; x < 16; ++x) {
        const double u = c * (x - 7.5) + s * (y - 7.5), v = -s * (x - 7.5) + c * (y - 7.5);
        px[static_cast<size_t>(y * 16 + x)] = static_cast<uint8_t>(20 + 200 * std::exp(-u * u / 32 - v * v / 3));
      }
    char name[64];
    std::snprintf(name, sizeof name, kinds[static_cast<size_t>(i) % kinds.size()].c_str(), i);
    names.push_back(name);
    write_grey_png(dir + "/" + name, 16, 16, px);
  }
  // The folder's order: by name, byte by byte here (the numbers are zero-padded).
  std::sort(names.begin(), names.end());
  return names;
}

/// The file column of an embedding folder's CSV and VTP, checked against
/// `names` in point_index order.
void expect_file_names(const std::string& dir, const std::vector<std::string>& names) {
  const Embedding e = read_embedding(dir);
  std::ifstream in(dir + "/embedding.csv");
  std::string line;
  std::getline(in, line);
  EXPECT_TRUE(line.ends_with(",file")) << line;
  std::string in_vtp;
  for (int64_t p = 0; p < e.n; ++p) {
    ASSERT_TRUE(std::getline(in, line));
    const std::string& name = names[static_cast<size_t>(e.point_index[p])];
    const bool quoted = name.find_first_of(",\"") != std::string::npos || name.front() == ' ' || name.back() == ' ';
    std::string field = name;
    for (size_t q = field.find('"'); q != std::string::npos; q = field.find('"', q + 2)) field.insert(q, 1, '"');
    if (quoted) field = '"' + field + '"';
    EXPECT_TRUE(line.ends_with("," + field)) << line << " should end with " << field;
    in_vtp += name + '\0';
  }
  std::string type;
  EXPECT_EQ(vtp_array(read_text(dir + "/embedding.vtp"), "file", &type), in_vtp);
  EXPECT_EQ(type, "String");
}

}  // namespace

// QA: an image folder's file names go into the CSV and the VTP, from run
// (the loaded rows) and from embed (the folder the graph records, listed
// again); a folder that has changed since the graph gives a warning and no
// names rather than names beside the wrong points.
TEST(CliRun, AnImageFoldersFileNamesNameEachPoint) {
  REQUIRE_CLI();
  TempDir t;
  const std::vector<std::string> names = write_bar_folder(t / "bars", 32);
  std::string err, out;
  ASSERT_EQ(run_cli("run " + (t / "bars") + " -k 6 --components 2 -q -o " + (t / "r"), &err), 0) << err;
  expect_file_names(t / "r", names);
  ASSERT_EQ(run_cli("knn " + (t / "bars") + " -k 6 -q -o " + (t / "g"), &err), 0) << err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 2 -q", &err), 0) << err;
  EXPECT_EQ(err, "");
  expect_file_names(t / "g", names);

  fs::copy_file(t / ("bars/" + names[0]), t / "bars/zz extra.png");
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 2 -q -o " + (t / "e"), &err), 0) << err;
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("bars holds 33 images now, the graph 32 points; embedding.csv and embedding.vtp get no file "
                     "names"),
            std::string::npos)
      << err;
  EXPECT_EQ(read_text(t / "e/embedding.csv").find("file"), std::string::npos);
}

// Results built on one machine and embedded on another: the data the graph
// records are not at their path any more, but beside the moved folder; embed
// finds them by name there (core's read_results_folder, as the explorer
// does), says so, and names each point.
TEST(CliEmbed, MovedResultsFindTheirDataBesideThem) {
  REQUIRE_CLI();
  TempDir t;
  const std::vector<std::string> names = write_bar_folder(t / "bars", 24);
  std::string err, out;
  ASSERT_EQ(run_cli("knn " + (t / "bars") + " -k 6 -q -o " + (t / "g"), &err), 0) << err;
  fs::create_directories(t / "elsewhere");
  fs::rename(t / "bars", t / "elsewhere/bars");
  fs::rename(t / "g", t / "elsewhere/g");
  ASSERT_EQ(run_cli("embed " + (t / "elsewhere/g") + " --components 2", &err, &out), 0) << err;
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("manifold: note: read " + (t / "elsewhere/bars") +
                     " beside the results: the recorded path is not there"),
            std::string::npos)
      << err;
  expect_file_names(t / "elsewhere/g", names);
  EXPECT_EQ(read_embedding(t / "elsewhere/g").metadata["data"], t / "elsewhere/bars");
}

TEST(CliMetadata, BadMetadataGivesOneLineAndNoOutput) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_circle(t, 200);
  ASSERT_EQ(run_cli("knn " + data + " -k 10 -q -o " + (t / "g")), 0);
  std::vector<double> short_column(199, 1.0);
  npy::write(t / "short.npy", short_column.data(), {199});
  std::ofstream(t / "bad.csv") << "a,b\n1,2\n3\n";
  struct Case {
    std::string args;
    int status;
    std::string message;
  } cases[] = {
      {"--metadata " + (t / "short.npy"), 1, t / "short.npy" + ": 199 values but the dataset has 200 rows"},
      {"--metadata " + (t / "bad.csv"), 1, t / "bad.csv" + ":3: 1 fields but the header has 2 (column 'b' missing)"},
      {"--metadata " + (t / "bad.csv:c"), 1, t / "bad.csv" + ": no column 'c' (columns: a, b)"},
      {"--metadata " + (t / "missing.npy"), 1, t / "missing.npy" + ": cannot open metadata file (no such file)"},
      {"--metadata", 2, "embed: option --metadata needs a value (FILE[:COLUMN])"},
  };
  for (const Case& c : cases) {
    std::string err;
    EXPECT_EQ(run_cli("embed " + (t / "g") + " -o " + (t / "out") + " " + c.args, &err), c.status) << c.args;
    EXPECT_EQ(err, "manifold: " + c.message + "\n") << c.args;
    EXPECT_FALSE(fs::exists(t / "out")) << c.args;
  }
  std::string err;
  EXPECT_EQ(run_cli("run " + data + " -k 10 -q -o " + (t / "run") + " --metadata " + (t / "short.npy"), &err), 1);
  EXPECT_EQ(err, "manifold: " + t / "short.npy" + ": 199 values but the dataset has 200 rows\n");
  EXPECT_FALSE(fs::exists(t / "run"));
}

}  // namespace
