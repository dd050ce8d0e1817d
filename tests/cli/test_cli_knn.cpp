// `manifold knn` end to end: output files and their contents, exit statuses
// and one-line errors, and Ctrl-C leaving nothing behind.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "manifold/graph_io.h"
#include "manifold/knn.h"
#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
namespace fs = std::filesystem;

namespace {

void save(const Dataset& ds, const std::string& path) { npy::write(path, ds.data(), {ds.rows(), ds.cols()}); }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(CliKnn, WritesTheGraphItPromises) {
  TempDir t;
  Dataset ds = random_dataset(700, 12, 99);
  save(ds, t / "x.npy");
  std::string err;
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 7 --metric cosine --backend cpu -o " + (t / "g") + " --quiet", &err),
            0)
      << err;
  std::vector<int64_t> ishape, dshape;
  auto idx = npy::read<int64_t>(t / "g/indices.npy", &ishape);
  auto dist = npy::read<float>(t / "g/distances.npy", &dshape);
  EXPECT_EQ(ishape, (std::vector<int64_t>{700, 7}));
  EXPECT_EQ(dshape, (std::vector<int64_t>{700, 7}));
  EXPECT_EQ(npy::read_header(t / "g/indices.npy").descr, "<i8");
  EXPECT_EQ(npy::read_header(t / "g/distances.npy").descr, "<f4");

  KnnGraph g = read_graph(t / "g");
  EXPECT_EQ(g.metric, Metric::Cosine);
  EXPECT_EQ(g.backend, "cpu");
  EXPECT_EQ(g.fingerprint, ds.fingerprint());
  EXPECT_EQ(std::vector<int64_t>(g.indices.begin(), g.indices.end()), idx);
  Reference ref = brute_force(ds, 7, Metric::Cosine, false);
  EXPECT_EQ(check_graph(g, ds, ref), "");
  // No temporaries left beside the results.
  for (auto& e : fs::directory_iterator(t / "g")) EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
}

// The summary names the last neighbour in English: the 2nd, 3rd, 11th, 21st;
// a graph of one neighbour has no "last" beside the first.
TEST(CliKnn, SummaryNamesTheLastNeighbourInEnglish) {
  TempDir t;
  save(random_dataset(60, 4, 5), t / "x.npy");
  for (const auto& [k, words] : std::vector<std::pair<int, std::string>>{{1, "mean distance to the neighbour "},
                                                                         {2, ", to the 2nd "},
                                                                         {3, ", to the 3rd "},
                                                                         {11, ", to the 11th "},
                                                                         {21, ", to the 21st "},
                                                                         {22, ", to the 22nd "},
                                                                         {40, ", to the 40th "}}) {
    std::string err, out;
    const std::string dir = t / ("g" + std::to_string(k));
    ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k " + std::to_string(k) + " --backend cpu -o " + dir, &err, &out), 0)
        << err;
    EXPECT_NE(out.find(words), std::string::npos) << "k = " << k << ": " << out;
    EXPECT_EQ(out.find("-th"), std::string::npos) << out;
  }
}

TEST(CliKnn, BadArgumentsExitTwoWithOneLine) {
  TempDir t;
  save(random_dataset(50, 4, 1), t / "x.npy");
  const std::string x = t / "x.npy", o = t / "o";
  for (const std::string& args :
       {"knn " + x + " -k 0 -o " + o, "knn " + x + " -k 50 -o " + o, "knn " + x + " -k 5 --metric manhattan -o " + o,
        "knn " + x + " -k 5", "knn " + x + " -k five -o " + o, "knn " + x + " -k 5 --bogus -o " + o,
        "knn " + x + " -k 5 --select nope -o " + o, "knn -k 5 -o " + o, "knn " + x + " -k 5 --gpu-memory 1e30 -o " + o,
        "knn " + x + " -k 5 --gpu-memory inf -o " + o}) {
    std::string err;
    EXPECT_EQ(run_cli(args, &err), 2) << args << "\n" << err;
    EXPECT_EQ(lines(err), 1) << args << "\n" << err;
    EXPECT_EQ(err.rfind("manifold: ", 0), 0u) << err;
    EXPECT_FALSE(fs::exists(o)) << args;
  }
}

TEST(CliKnn, FailuresExitOneNamingTheFile) {
  TempDir t;
  std::string err;
  EXPECT_EQ(run_cli("knn " + (t / "missing.npy") + " -k 3 -o " + (t / "o"), &err), 1);
  EXPECT_NE(err.find(t / "missing.npy"), std::string::npos) << err;
  EXPECT_EQ(lines(err), 1) << err;
  { std::ofstream(t / "bad.npy") << "this is not numpy"; }
  EXPECT_EQ(run_cli("knn " + (t / "bad.npy") + " -k 3 -o " + (t / "o"), &err), 1);
  EXPECT_NE(err.find("bad.npy"), std::string::npos) << err;
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_FALSE(fs::exists(t / "o"));
  // The output path exists as a file: a bad argument (exit 2), file untouched.
  save(random_dataset(20, 3, 2), t / "x.npy");
  { std::ofstream(t / "file") << "keep"; }
  EXPECT_EQ(run_cli("knn " + (t / "x.npy") + " -k 3 -o " + (t / "file"), &err), 2);
  EXPECT_NE(err.find(t / "file"), std::string::npos) << err;
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_EQ(fs::file_size(t / "file"), 4u);
}

TEST(CliKnn, InterruptCancelsAndLeavesNoOutput) {
  TempDir t;
  // Large enough that no machine finishes it in the time before the signal.
  save(random_dataset(200000, 16, 5), t / "x.npy");
  const std::string out = t / "o";
  const std::string cli = std::getenv("MANIFOLD_CLI");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen((t / "err").c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execl(cli.c_str(), cli.c_str(), "knn", (t / "x.npy").c_str(), "-k", "10", "--backend", "cpu", "-o", out.c_str(),
          nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_LT(took, 2.0) << "cancel must take effect quickly";
  std::ifstream in(t / "err");
  std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(err.find("cancelled"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out)) << "a cancelled run must leave no output";
}

// GPU-only options on the cpu backend: one note on stderr, the same graph as
// without them (it has one selection and is exact), and the bench runs one
// case per cell instead of the same run under several strategy names.
TEST(CliKnn, GpuOptionsOnTheCpuBackendAreNoted) {
  TempDir t;
  save(random_dataset(400, 10, 5), t / "x.npy");
  std::string err, plain_err;
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 6 --backend cpu --select heap --precision fast-exact -o " +
                        (t / "a") + " --quiet",
                    &err),
            0)
      << err;
  EXPECT_EQ(err,
            "note: --select heap and --precision fast-exact apply to the gpu backend; the cpu backend has one "
            "selection and computes exact\n");
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 6 --backend cpu -o " + (t / "b") + " --quiet", &plain_err), 0);
  EXPECT_EQ(plain_err, "");
  EXPECT_EQ(read_graph(t / "a").indices, read_graph(t / "b").indices);

  err.clear();
  ASSERT_EQ(run_cli("bench --backend cpu -n 300 -d 8 -k 2,3 --select warp,heap --repeats 1 --warmup 0 --json " +
                        (t / "b.json"),
                    &err),
            0)
      << err;
  EXPECT_NE(err.find("note: --select warp,heap applies to the gpu backend"), std::string::npos) << err;
  std::ifstream in(t / "b.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // One case per k, run as the backend's own selection.
  size_t cases = 0;
  for (size_t at = json.find("\"select\": \"auto\""); at != std::string::npos;
       at = json.find("\"select\": \"auto\"", at + 1))
    ++cases;
  EXPECT_EQ(cases, 2u) << json;
  EXPECT_EQ(json.find("\"select\": \"heap\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"select\": \"warp\""), std::string::npos) << json;
}

// bench --data without -n times every row of the file, however few (the
// random data's default of 20000 rows is no request); -n beyond the file is
// a one-line usage error.
TEST(CliKnn, BenchOnDataTakesEveryRowUnlessTold) {
  TempDir t;
  save(random_dataset(300, 6, 8), t / "x.npy");
  std::string err;
  ASSERT_EQ(run_cli("bench --backend cpu --data " + (t / "x.npy") + " -k 4 --repeats 1 --warmup 0 -q --json " +
                        (t / "b.json"),
                    &err),
            0)
      << err;
  std::ifstream in(t / "b.json");
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"n\": 300"), std::string::npos) << json;
  err.clear();
  EXPECT_EQ(run_cli("bench --backend cpu --data " + (t / "x.npy") + " -n 301 -k 4 --repeats 1 -q", &err), 2);
  EXPECT_EQ(err, "manifold: -n 301: " + (t / "x.npy") + " has only 300 rows\n");
}

// A case's `extra` is its last run's; each measured run's certificate
// counts are kept beside it (runs of one case can differ).
TEST(CliKnn, BenchKeepsEachRunsCertificateCounts) {
  TempDir t;
  save(near_duplicates(400, 6, 9, 20, 10, 1e-7f), t / "x.npy");
  std::string err;
  ASSERT_EQ(run_cli("bench --backend cpu --data " + (t / "x.npy") + " -k 4 --repeats 3 --warmup 1 -q --json " +
                        (t / "b.json"),
                    &err),
            0)
      << err;
  const nlohmann::json j = nlohmann::json::parse(slurp(t / "b.json"));
  const nlohmann::json& c = j["cases"][0];
  ASSERT_TRUE(c.contains("per_run")) << c.dump();
  const auto runs = c["per_run"]["fallback_rows"].get<std::vector<int64_t>>();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs.back(), c["extra"]["fallback_rows"].get<int64_t>());
  for (int64_t r : runs) EXPECT_EQ(r, runs.front());
}

}  // namespace
