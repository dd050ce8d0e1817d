// `manifold knn --backend mpi` under `mpirun -np P` (P from MANIFOLD_TEST_NP;
// CTest runs 1, 3 and 4): the arrays written must equal the single-process
// CPU backend's exactly, for every metric, on random data and Fashion-MNIST;
// a failing rank ends the job with one line naming it and no output; rows
// that share a large common part are moved about their mean as the CPU
// backend moves them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "manifold/graph_io.h"
#include "mpi_test_support.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace mpi_testing;
namespace fs = std::filesystem;

namespace {

class MpiKnn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    // 2100 rows span five 512-row tiles (the last one partial); 60 rows are
    // exact copies of others, so ties must be broken the same way.
    random_ = new Dataset(random_dataset(2100, 48, 17, 60));
    write_npy(*dir_ / "random.npy", *random_);
    write_npy(*dir_ / "random64.npy", random_dataset(1300, 20, 23), true);
    // One tile only: with several ranks most row blocks are empty.
    write_npy(*dir_ / "tiny.npy", random_dataset(300, 6, 29, 10));
    // 1100 rows over 4 distinct points: every row has hundreds of exact
    // copies, no list can be certified and every row goes to the exact scan.
    {
      Dataset few = random_dataset(4, 8, 31);
      std::vector<float> v;
      for (int64_t i = 0; i < 1100; ++i) v.insert(v.end(), few.row(i % 4), few.row(i % 4) + 8);
      write_npy(*dir_ / "copies.npy", Dataset(1100, 8, std::move(v)));
    }
    // Under the sanitizers 1100 images: still three tiles, one partial.
    Dataset fm = fashion_mnist(scaled(3000, 1100));
    if (!fm.empty()) write_npy(*dir_ / "fashion.npy", fm);
    // Rows sharing a large common part, as diffraction patterns do (tests/
    // support): without a translation nearly every row goes to the exact scan.
    pattern_ = new Dataset(common_pattern_rows(kMovedRows, 64, 23));
    write_npy(*dir_ / "pattern.npy", *pattern_);
    spot_ = new Dataset(bright_spot_rows(kMovedRows, 48, 31));
    write_npy(*dir_ / "spot.npy", *spot_);
    // The same patterns with one row of tiny values, from which no offset
    // subtracts exactly: the last row, which choose_translation's sample
    // (1024 rows, row s * n / 1024) leaves out and the last rank owns, so
    // only the ranks' check of every value finds it.
    std::vector<float> v(pattern_->data(), pattern_->data() + kMovedRows * 64);
    for (int64_t c = 0; c < 64; ++c)
      v[static_cast<size_t>((kMovedRows - 1) * 64 + c)] = 1e-7f * static_cast<float>(c + 1);
    odd_pattern_ = new Dataset(kMovedRows, 64, std::move(v));
    write_npy(*dir_ / "odd-pattern.npy", *odd_pattern_);
  }
  static void TearDownTestSuite() {
    delete odd_pattern_;
    delete spot_;
    delete pattern_;
    delete random_;
    delete dir_;
  }

  static std::string q(const std::string& s) { return "'" + s + "'"; }

  // The single-process CPU result, computed once per input and options.
  static std::string cpu_reference(const std::string& input, const std::string& options) {
    const std::string key = input + "|" + options;
    auto it = references_.find(key);
    if (it != references_.end()) return it->second;
    const std::string out = *dir_ / ("cpu-" + std::to_string(references_.size()));
    RunResult r = run_manifold("knn " + q(input) + " " + options + " --backend cpu -q -o " + q(out));
    EXPECT_EQ(r.status, 0) << r.err;
    references_[key] = out;
    return out;
  }

  // Runs the MPI backend and checks its arrays equal the CPU backend's.
  static void expect_equal_to_cpu(const std::string& input, const std::string& options, const std::string& tag) {
    const int np = test_ranks();
    const std::string ref = cpu_reference(input, options);
    const std::string out = *dir_ / ("mpi-" + tag);
    RunResult r = run_mpi(np, "knn " + q(input) + " " + options + " --backend mpi -q -o " + q(out));
    ASSERT_EQ(r.status, 0) << "mpirun -np " << np << " " << options << ":\n" << r.err;
    GraphArrays want = read_arrays(ref), got = read_arrays(out);
    EXPECT_EQ(got.index_shape, want.index_shape) << tag;
    EXPECT_EQ(got.distance_shape, want.distance_shape) << tag;
    EXPECT_TRUE(got.indices == want.indices) << tag << ": indices differ from the CPU backend";
    EXPECT_TRUE(got.distances == want.distances) << tag << ": distances differ from the CPU backend";
    KnnGraph g = read_graph(out);
    EXPECT_EQ(g.backend, "mpi");
    EXPECT_EQ(g.extra.value("ranks", 0), np) << tag;
  }

  // Runs the MPI backend on rows it must move about their mean: the graph
  // equals the CPU backend's and the exact ranking byte for byte, the
  // translation is the CPU backend's (kind, columns and norm ratio, which
  // every rank must share), and nearly every row certifies from its list.
  static void expect_moved_as_cpu(const std::string& name, const Dataset& ds, Metric metric, bool exact_kind) {
    const int k = 10;
    const std::string tag = name + "-" + to_string(metric);
    SCOPED_TRACE(tag);
    const std::string input = *dir_ / (name + ".npy"), options = "-k 10 --metric " + to_string(metric);
    expect_equal_to_cpu(input, options, tag);
    const KnnGraph got = read_graph(*dir_ / ("mpi-" + tag)), cpu = read_graph(cpu_reference(input, options));
    EXPECT_EQ(first_difference(got, exact_reference(ds, k, metric, false)), "");
    const auto &x = got.extra, &want = cpu.extra;
    EXPECT_LT(x["fallback_rows"].get<int64_t>(), ds.rows() / 100);
    ASSERT_TRUE(x.contains("translation_exact")) << "rows not moved";
    EXPECT_EQ(x["translation_exact"].get<bool>(), exact_kind);
    EXPECT_EQ(want["translation_exact"].get<bool>(), exact_kind);
    EXPECT_EQ(x["translated_columns"], want["translated_columns"]);
    EXPECT_EQ(x["translation_norm_ratio"].get<double>(), want["translation_norm_ratio"].get<double>());
    EXPECT_EQ(x["fallback_rows"], want["fallback_rows"]);
    EXPECT_LT(x["error_bound_max_use"].get<double>(), 1.0);
    // Every rank's rows' largest moved norm, the CPU backend's bound.
    EXPECT_EQ(x["error_bound_largest_norm"].get<double>(), want["error_bound_largest_norm"].get<double>());
  }

  // Under the sanitizers three tiles (one partial), else five.
  static constexpr int64_t kMovedRows = scaled(2100, 1100);

  static TempDir* dir_;
  static Dataset* random_;
  static Dataset *pattern_, *spot_, *odd_pattern_;
  static std::map<std::string, std::string> references_;
};
TempDir* MpiKnn::dir_ = nullptr;
Dataset* MpiKnn::random_ = nullptr;
Dataset* MpiKnn::pattern_ = nullptr;
Dataset* MpiKnn::spot_ = nullptr;
Dataset* MpiKnn::odd_pattern_ = nullptr;
std::map<std::string, std::string> MpiKnn::references_;

TEST_F(MpiKnn, RandomDataEqualsCpuForAllMetrics) {
  for (const char* metric : {"euclidean", "cosine", "pearson"})
    expect_equal_to_cpu(*dir_ / "random.npy", std::string("-k 10 --metric ") + metric, std::string("random-") + metric);
  expect_equal_to_cpu(*dir_ / "random.npy", "-k 37 --keep-self", "random-keep-self");
  expect_equal_to_cpu(*dir_ / "random.npy", "-k 1 --metric cosine", "random-k1");
}

TEST_F(MpiKnn, MoreRanksThanTilesAndKUpToNMinusOne) {
  expect_equal_to_cpu(*dir_ / "tiny.npy", "-k 299 --metric pearson", "tiny-all");
  expect_equal_to_cpu(*dir_ / "tiny.npy", "-k 300 --keep-self", "tiny-keep-self");
  expect_equal_to_cpu(*dir_ / "random.npy", "-k 2099", "random-all");
}

TEST_F(MpiKnn, UncertifiedRowsTakeTheExactScanAsInTheCpu) {
  for (const char* metric : {"euclidean", "cosine"})
    expect_equal_to_cpu(*dir_ / "copies.npy", std::string("-k 9 --metric ") + metric, std::string("copies-") + metric);
  KnnGraph g = read_graph(*dir_ / "mpi-copies-euclidean");
  EXPECT_EQ(g.extra.value("fallback_rows", int64_t{-1}), 1100);
}

// Patterns about a common part move exactly (every value of the moved
// columns subtracts exactly), in every metric the CPU backend moves them so.
TEST_F(MpiKnn, CommonPatternRowsMoveExactlyAsInTheCpu) {
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson})
    expect_moved_as_cpu("pattern", *pattern_, m, true);
}

// One row no offset subtracts exactly from, outside rank 0's sample: the
// ranks' all-reduce of the columns that would round finds it, and every
// rank falls back to the rounded kind, as the CPU backend's pass over every
// row does.
TEST_F(MpiKnn, ARowOutsideTheSampleTurnsTheMoveRoundedOnEveryRank) {
  ASSERT_NE(1023 * kMovedRows / 1024, kMovedRows - 1) << "the odd row must lie outside the sample";
  expect_moved_as_cpu("odd-pattern", *odd_pattern_, Metric::Euclidean, false);
}

// A bright spot over dim noise: Euclidean and cosine rows are moved with
// rounding (their keys taken from the rows as they were), Pearson's exactly.
TEST_F(MpiKnn, BrightSpotRowsMoveAsInTheCpuInEveryMetric) {
  for (Metric m : {Metric::Euclidean, Metric::Cosine, Metric::Pearson})
    expect_moved_as_cpu("spot", *spot_, m, m == Metric::Pearson);
}

TEST_F(MpiKnn, LoadedPerRankFormatEqualsCpu) {
  // float64 .npy is converted in memory by every rank, not memory-mapped.
  for (const char* metric : {"euclidean", "pearson"})
    expect_equal_to_cpu(*dir_ / "random64.npy", std::string("-k 12 --metric ") + metric,
                        std::string("random64-") + metric);
}

TEST_F(MpiKnn, FashionMnistEqualsCpuForAllMetrics) {
  if (!fs::exists(*dir_ / "fashion.npy"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist); skipped";
  for (const char* metric : {"euclidean", "cosine", "pearson"})
    expect_equal_to_cpu(*dir_ / "fashion.npy", std::string("-k 10 --metric ") + metric,
                        std::string("fashion-") + metric);
}

TEST_F(MpiKnn, FashionMnistIdxFileEqualsCpu) {
  const std::string idx = fashion_mnist_dir() + "/t10k-images-idx3-ubyte.gz";
  if (!fs::exists(idx)) GTEST_SKIP() << idx << " is not installed; skipped";
  expect_equal_to_cpu(idx, "-k 8 --metric cosine", "fashion-idx");
}

TEST_F(MpiKnn, GraphJsonReportsRanksRowsAndBytes) {
  const int np = test_ranks();
  const std::string out = *dir_ / "stats";
  RunResult r = run_mpi(np, "knn " + q(*dir_ / "random.npy") + " -k 10 --backend mpi -q -o " + q(out));
  ASSERT_EQ(r.status, 0) << r.err;
  KnnGraph g = read_graph(out);
  const auto& x = g.extra;
  EXPECT_EQ(x["engine"], "tiles");
  EXPECT_EQ(x["input_memory_mapped"], true);
  EXPECT_EQ(x["tiles"], 15);     // 5 tiles per side: 5 * 6 / 2
  EXPECT_EQ(x["capacity"], 26);  // k + exact_slack(k, d), as in the CPU backend
  EXPECT_EQ(x.value("fallback_rows", int64_t{-1}), 0);
  ASSERT_EQ(x["per_rank"].size(), static_cast<size_t>(np));
  int64_t owned = 0, tiles = 0;
  for (auto& rank : x["per_rank"]) {
    owned += rank["rows_owned"].get<int64_t>();
    tiles += rank["tiles"].get<int64_t>();
    EXPECT_LE(rank["rows_read"].get<int64_t>(), 2100);
    if (np >= 3) {
      // The point of the decomposition: no rank reads the whole data set.
      EXPECT_LT(rank["rows_read"].get<int64_t>(), 2100) << rank.dump();
    }
    if (np > 1 && rank["rows_read"].get<int64_t>() > rank["rows_owned"].get<int64_t>()) {
      EXPECT_GT(rank["bytes_sent_merge"].get<double>(), 0) << rank.dump();
    }
    EXPECT_TRUE(rank["timings_s"].contains("distances+select"));
  }
  EXPECT_EQ(owned, 2100);
  EXPECT_EQ(tiles, 15) << "every tile computed exactly once";
  if (np == 1) {
    EXPECT_EQ(x["bytes_sent_total"].get<double>(), x["per_rank"][0]["bytes_sent_control"].get<double>());
  }
}

TEST_F(MpiKnn, ProgressOfAllRanksGoesToOneFile) {
  const int np = test_ranks();
  const std::string out = *dir_ / "progress-run", file = *dir_ / "progress.jsonl";
  fs::remove(file);
  RunResult r = run_mpi(np, "knn " + q(*dir_ / "random.npy") + " -k 10 --backend mpi -q -o " + q(out),
                        "MANIFOLD_PROGRESS_FILE=" + q(file));
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(file);
  ASSERT_TRUE(in) << "no progress file written";
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_FALSE(lines.empty());
  uint64_t last_done = 0;
  bool knn_finished = false;
  for (auto& j : lines) {
    if (j.value("stage", "") != "knn") continue;
    EXPECT_EQ(j["total"], 15);
    EXPECT_GE(j["done"].get<uint64_t>(), last_done) << "progress went backwards";
    last_done = j["done"];
    if (j["finished"] == true) knn_finished = j["done"] == 15;
  }
  EXPECT_TRUE(knn_finished) << "the knn stage never reported all tiles of all ranks done";
  EXPECT_EQ(lines.back().value("event", ""), "computed");
}

TEST_F(MpiKnn, AFailedRankEndsTheJobWithOneLineAndNoOutput) {
  const int np = test_ranks();
  const int bad = np >= 3 ? 2 : 0;
  for (const char* stage : {"prepare", "knn", "merge"}) {
    const std::string out = *dir_ / (std::string("failed-") + stage), file = *dir_ / "failed.jsonl";
    fs::remove(file);
    RunResult r = run_mpi(np, "knn " + q(*dir_ / "random.npy") + " -k 10 --backend mpi -q -o " + q(out),
                          "MANIFOLD_MPI_FAIL_RANK=" + std::to_string(bad) + " MANIFOLD_MPI_FAIL_STAGE=" + stage +
                              " MANIFOLD_PROGRESS_FILE=" + q(file));
    EXPECT_EQ(r.status, 1) << stage << ": " << r.err;
    auto lines = nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << stage << ": expected one line, got:\n" << r.err;
    EXPECT_EQ(lines[0].rfind("manifold: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find("injected failure"), std::string::npos) << lines[0];
    if (np > 1) {
      EXPECT_NE(lines[0].find("rank " + std::to_string(bad) + " of " + std::to_string(np)), std::string::npos)
          << lines[0];
    }
    EXPECT_FALSE(fs::exists(out)) << stage << ": output left behind";
    std::ifstream in(file);
    std::string line, last;
    while (std::getline(in, line)) last = line;
    ASSERT_FALSE(last.empty());
    auto j = nlohmann::json::parse(last);
    EXPECT_EQ(j["event"], "failed");
    EXPECT_EQ(j["rank"], bad);
  }
}

TEST_F(MpiKnn, ACrashedRankLeavesNoOutput) {
  const int np = test_ranks();
  if (np < 2) GTEST_SKIP() << "needs two ranks";
  const std::string out = *dir_ / "crashed";
  RunResult r = run_mpi(np, "knn " + q(*dir_ / "random.npy") + " -k 10 --backend mpi -q -o " + q(out),
                        "MANIFOLD_MPI_FAIL_RANK=1 MANIFOLD_MPI_FAIL_MODE=crash");
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(MpiKnn, SubProblemEngineIsExactAgainstFloat64) {
  // The path a GPU rank takes (a backend on sub-problems), run with the CPU
  // backend: selection by refined distance, checked against float64.
  const int np = test_ranks();
  const std::string out = *dir_ / "sub";
  RunResult r = run_mpi(np, "knn " + q(*dir_ / "random.npy") + " -k 10 --metric cosine --backend mpi -q -o " + q(out),
                        "MANIFOLD_MPI_LOCAL=cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  KnnGraph g = read_graph(out);
  EXPECT_EQ(g.extra["engine"], "backend:cpu");
  Reference ref = brute_force(*random_, 10, Metric::Cosine, false);
  int64_t exact = 0;
  EXPECT_EQ(check_graph(g, *random_, ref, &exact), "");
  EXPECT_GE(exact, random_->rows() - 3);
}

TEST_F(MpiKnn, UnknownSubProblemBackendIsAUsageError) {
  RunResult r = run_mpi(test_ranks(),
                        "knn " + q(*dir_ / "random.npy") + " -k 5 --backend mpi -q -o " + q(*dir_ / "never"),
                        "MANIFOLD_MPI_LOCAL=warp-drive");
  EXPECT_EQ(r.status, 2) << r.err;
  auto lines = nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("MANIFOLD_MPI_LOCAL=warp-drive"), std::string::npos) << lines[0];
  EXPECT_FALSE(fs::exists(*dir_ / "never"));
}

TEST_F(MpiKnn, BadFaultSettingsAreOneUsageLineNamingTheVariable) {
  const std::pair<std::string, std::string> cases[] = {{"MANIFOLD_MPI_FAIL_RANK=0 MANIFOLD_MPI_FAIL_STAGE=gather",
                                                        "MANIFOLD_MPI_FAIL_STAGE"},
                                                       {"MANIFOLD_MPI_FAIL_RANK=0 MANIFOLD_MPI_FAIL_MODE=explode",
                                                        "MANIFOLD_MPI_FAIL_MODE"},
                                                       {"MANIFOLD_MPI_FAIL_RANK=first", "MANIFOLD_MPI_FAIL_RANK"}};
  for (const auto& [env, variable] : cases) {
    RunResult r = run_mpi(test_ranks(),
                          "knn " + q(*dir_ / "random.npy") + " -k 5 --backend mpi -q -o " + q(*dir_ / "never"), env);
    EXPECT_EQ(r.status, 2) << env << ": " << r.err;
    auto lines = nonempty_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << env << ":\n" << r.err;
    EXPECT_NE(lines[0].find(variable + ": '"), std::string::npos) << lines[0];
    EXPECT_FALSE(fs::exists(*dir_ / "never"));
  }
}

TEST_F(MpiKnn, RunsWithoutMpirunAsOneRank) {
  if (test_ranks() != 1) GTEST_SKIP() << "checked once, in the -np 1 run";
  const std::string ref = cpu_reference(*dir_ / "random.npy", "-k 10 --metric pearson");
  const std::string out = *dir_ / "singleton";
  RunResult r = run_manifold("knn " + q(*dir_ / "random.npy") + " -k 10 --metric pearson --backend mpi -q -o " +
                             q(out));
  ASSERT_EQ(r.status, 0) << r.err;
  GraphArrays want = read_arrays(ref), got = read_arrays(out);
  EXPECT_TRUE(got.indices == want.indices);
  EXPECT_TRUE(got.distances == want.distances);
}

}  // namespace
