// Output folders as one unit (issue 24, defects 6 to 9): a result replaces a
// previous result whole or not at all, a folder of other files is refused
// unless --overwrite, two writers of one folder cannot both run, a crash at
// any step of the commit leaves the old or the new result (never a mix or a
// lone hidden temporary), a failed write leaves no parent folders it made,
// and messages name OUT, not its hidden temporaries. Files written at the
// same time (ParallelWrites): every write ends before the caller goes on,
// the first failure in the order started is the one reported, and the
// steps add up to the wait; `run` writes the graph during the embedding and
// still leaves nothing (or the previous result) when a write or the
// embedding fails.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/output.h"
#include "manifold/session.h"
#include "test_support.h"

using namespace manifold;
using testing_support::message_of;
using testing_support::random_dataset;
using testing_support::run_cli;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : fs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

void save(const Dataset& ds, const std::string& path) { npy::write(path, ds.data(), {ds.rows(), ds.cols()}); }

// A graph-folder transaction: indices with value `tag`, graph.json saying k.
void write_graph_files(const std::string& dir, int64_t tag, int k, OutputOptions options = {}) {
  OutputTransaction tx(dir, options);
  const std::vector<int64_t> idx(static_cast<size_t>(4 * k), tag);
  const std::vector<float> dist(static_cast<size_t>(4 * k), 1.f);
  npy::write(tx.path("indices.npy"), idx.data(), {4, k});
  npy::write(tx.path("distances.npy"), dist.data(), {4, k});
  write_text_file(tx.path("graph.json"), "{\"k\": " + std::to_string(k) + "}\n");
  tx.commit();
}

int64_t first_index(const std::string& dir) {
  std::vector<int64_t> shape;
  return npy::read<int64_t>(dir + "/indices.npy", &shape).at(0);
}

// ---- the folder as one unit -------------------------------------------------

TEST(OutputFolder, ReplacesAPreviousResultWhole) {
  TempDir t;
  write_graph_files(t / "g", 1, 5);
  write_graph_files(t / "g", 2, 9);
  EXPECT_EQ(first_index(t / "g"), 2);
  EXPECT_EQ(slurp(t / "g/graph.json"), "{\"k\": 9}\n");
  EXPECT_EQ(entries(t / "g"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
  EXPECT_EQ(entries(t.path), (std::set<std::string>{"g"})) << "no lock file or staging folder left beside it";
}

TEST(OutputFolder, ALinkToAFolderIsWrittenThrough) {
  TempDir t;
  write_graph_files(t / "real", 1, 5);
  fs::create_directory_symlink(t / "real", t / "link");
  write_graph_files(t / "link", 2, 9);
  EXPECT_TRUE(fs::is_symlink(t / "link"));
  EXPECT_EQ(first_index(t / "real"), 2);
  EXPECT_EQ(entries(t.path), (std::set<std::string>{"link", "real"}));
}

TEST(OutputFolder, FolderOfOtherFilesIsRefusedUnlessOverwrite) {
  TempDir t;
  fs::create_directories(t / "mine");
  std::ofstream(t / "mine/notes.txt") << "keep";
  try {
    write_graph_files(t / "mine", 1, 5);
    ADD_FAILURE() << "wrote a graph among the user's files";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(t / "mine" + ": ", 0), 0u) << m;
    EXPECT_NE(m.find("notes.txt"), std::string::npos) << m;
    EXPECT_NE(m.find("--overwrite"), std::string::npos) << m;
  }
  EXPECT_EQ(entries(t / "mine"), (std::set<std::string>{"notes.txt"}));
  EXPECT_THROW(check_output_dir(t / "mine", {"indices.npy", "distances.npy", "graph.json"}, {}), UsageError);
  write_graph_files(t / "mine", 1, 5, {.overwrite = true});
  EXPECT_EQ(entries(t / "mine"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
}

TEST(OutputFolder, AnEmbeddingKeepsTheGraphBesideIt) {
  TempDir t;
  write_graph_files(t / "g", 7, 5);
  {
    OutputTransaction tx(t / "g");
    write_text_file(tx.path("embedding.json"), "{}\n");
    write_text_file(tx.path("embedding.csv"), "x\n");
    tx.commit();
  }
  EXPECT_EQ(entries(t / "g"),
            (std::set<std::string>{"indices.npy", "distances.npy", "graph.json", "embedding.json", "embedding.csv"}));
  EXPECT_EQ(first_index(t / "g"), 7);
  // A k-NN graph over that folder would leave the embedding beside a graph
  // it was not computed from.
  EXPECT_THROW(write_graph_files(t / "g", 8, 3), UsageError);
  EXPECT_EQ(first_index(t / "g"), 7);
}

// A graph.json as knn writes it, with only the fields that tell graphs apart
// and a timing that differs between two runs of the same graph.
void write_graph_json(const std::string& dir, const std::string& fingerprint, int k, double seconds) {
  fs::create_directories(dir);
  std::ofstream(dir + "/graph.json") << "{\"fingerprint\": \"" << fingerprint << "\", \"n\": 4, \"d\": 3, \"k\": " << k
                                     << ", \"metric\": \"euclidean\", \"keep_self\": false, \"timings_s\": {\"total\": "
                                     << seconds << "}}\n";
}

TEST(OutputFolder, SameGraphIsTheSameDataAndParametersNotTheSameTimings) {
  TempDir t;
  write_graph_json(t / "a", "0123", 5, 0.5);
  write_graph_json(t / "b", "0123", 5, 0.7);  // the same graph computed again
  write_graph_json(t / "c", "0123", 6, 0.5);
  write_graph_json(t / "d", "4567", 5, 0.5);
  EXPECT_TRUE(same_graph(t / "a", t / "a"));
  EXPECT_TRUE(same_graph(t / "a", t / "b"));
  EXPECT_FALSE(same_graph(t / "a", t / "c"));
  EXPECT_FALSE(same_graph(t / "a", t / "d"));
  EXPECT_FALSE(same_graph(t / "a", t / "nowhere"));
}

// One rule for every caller: the six keys that determine an exact graph;
// Complete (a graph kept beside an embedding) wants every key and a
// fingerprint, Partial (cluster, on embedding.json's record) lets a key the
// record lacks pass but not one it contradicts.
TEST(GraphIdentity, SixKeysCompleteOrPartial) {
  const nlohmann::json graph = {{"fingerprint", "0123"},
                                {"n", 50},
                                {"d", 4},
                                {"k", 5},
                                {"metric", "euclidean"},
                                {"keep_self", false},
                                {"backend", "cpu"},
                                {"timings_s", {{"knn", 0.5}}}};
  for (GraphRecord rule : {GraphRecord::Complete, GraphRecord::Partial}) {
    EXPECT_TRUE(same_graph_json(graph, graph, rule));
    nlohmann::json again = graph;
    again["backend"] = "gpu";
    again["timings_s"]["knn"] = 0.1;
    EXPECT_TRUE(same_graph_json(again, graph, rule)) << "timings and backend do not tell graphs apart";
    for (const char* key : {"fingerprint", "n", "d", "k", "metric", "keep_self"}) {
      nlohmann::json other = graph;
      other[key] = key == std::string("metric")        ? nlohmann::json("cosine")
                   : key == std::string("fingerprint") ? nlohmann::json("4567")
                   : key == std::string("keep_self")   ? nlohmann::json(true)
                                                       : nlohmann::json(other[key].get<int>() + 1);
      EXPECT_FALSE(same_graph_json(other, graph, rule)) << key;
    }
  }
  nlohmann::json older = graph;
  older.erase("keep_self");
  EXPECT_FALSE(same_graph_json(older, graph, GraphRecord::Complete));
  EXPECT_TRUE(same_graph_json(older, graph, GraphRecord::Partial));
  nlohmann::json unfingerprinted = graph;
  unfingerprinted["fingerprint"] = "";
  EXPECT_FALSE(same_graph_json(unfingerprinted, unfingerprinted, GraphRecord::Complete));
  EXPECT_FALSE(same_graph_json(unfingerprinted, graph, GraphRecord::Partial))
      << "a recorded \"\" contradicts a fingerprint";
  unfingerprinted.erase("fingerprint");
  EXPECT_TRUE(same_graph_json(unfingerprinted, graph, GraphRecord::Partial));
  EXPECT_FALSE(same_graph_json(nullptr, graph, GraphRecord::Complete));
  EXPECT_TRUE(same_graph_json(nullptr, graph, GraphRecord::Partial)) << "no record: taken at its word";
}

// An embedding beside another graph would be read (cluster, trajectory, the
// explorer) as the embedding of that graph.
TEST(OutputFolder, AnEmbeddingKeepsOnlyTheGraphItWasComputedFrom) {
  TempDir t;
  write_graph_files(t / "mine", 7, 5);
  write_graph_files(t / "other", 8, 9);
  fs::copy(t / "mine", t / "copy");
  const std::vector<std::string> embedding = {"embedding.json", "embedding.csv"};
  auto write_embedding_into = [&](const std::string& dir, OutputOptions options) {
    OutputTransaction tx(dir, options, t / "mine");
    write_text_file(tx.path("embedding.json"), "{}\n");
    write_text_file(tx.path("embedding.csv"), "x\n");
    tx.commit();
  };
  const std::string refused = message_of([&] { check_output_dir(t / "other", embedding, {}, t / "mine"); });
  EXPECT_EQ(refused.rfind(t / "other" + ": holds another k-NN graph", 0), 0u) << refused;
  EXPECT_NE(refused.find("--overwrite"), std::string::npos) << refused;
  EXPECT_EQ(lines(refused), 0) << refused;
  EXPECT_THROW(write_embedding_into(t / "other", {}), UsageError);
  EXPECT_EQ(entries(t / "other"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
  EXPECT_EQ(first_index(t / "other"), 8);
  // Its own folder and a copy of its graph keep the graph.
  for (const std::string& dir : {t / "mine", t / "copy"}) {
    EXPECT_NO_THROW(check_output_dir(dir, embedding, {}, t / "mine"));
    write_embedding_into(dir, {});
    EXPECT_EQ(entries(dir),
              (std::set<std::string>{"indices.npy", "distances.npy", "graph.json", "embedding.json", "embedding.csv"}));
    EXPECT_EQ(first_index(dir), 7);
  }
  // Replacing the other folder drops its graph rather than keeping it.
  EXPECT_NO_THROW(check_output_dir(t / "other", embedding, {.overwrite = true}, t / "mine"));
  write_embedding_into(t / "other", {.overwrite = true});
  EXPECT_EQ(entries(t / "other"), (std::set<std::string>{"embedding.json", "embedding.csv"}));
}

// The explorer's graph is in memory: its graph.json names it. A folder
// holding that graph (same data, n, d, k, metric, keep_self) keeps it beside
// the embedding; another graph there is refused, naming both, and replaced
// with overwrite; a graph.json without a fingerprint is never taken for it.
TEST(OutputFolder, AnEmbeddingOfAGraphInMemoryKeepsOnlyThatGraph) {
  TempDir t;
  const nlohmann::json mine = {{"fingerprint", "00ab"}, {"n", 4}, {"d", 3}, {"k", 5}, {"metric", "cosine"},
                               {"keep_self", false}};
  auto graph_folder = [&](const std::string& dir, const nlohmann::json& meta) {
    OutputTransaction tx(dir, {.overwrite = true});
    const std::vector<int64_t> idx(20, 1);
    const std::vector<float> dist(20, 1.f);
    npy::write(tx.path("indices.npy"), idx.data(), {4, 5});
    npy::write(tx.path("distances.npy"), dist.data(), {4, 5});
    write_text_file(tx.path("graph.json"), meta.dump(2) + "\n");
    tx.commit();
  };
  nlohmann::json other = mine, unnamed = mine, timed = mine;
  other["k"] = 6;
  unnamed.erase("fingerprint");
  timed["timings_s"] = {{"total", 1.5}};  // another build of the same graph
  graph_folder(t / "mine", timed);
  graph_folder(t / "other", other);
  graph_folder(t / "unnamed", unnamed);
  const SourceGraph source = SourceGraph::in_memory(mine);
  EXPECT_TRUE(source.is_in(t / "mine"));
  EXPECT_FALSE(source.is_in(t / "other"));
  EXPECT_FALSE(source.is_in(t / "unnamed"));
  EXPECT_FALSE(source.is_in(t / "nowhere"));
  const std::vector<std::string> embedding = {"embedding.json", "embedding.csv"};
  auto write_embedding_into = [&](const std::string& dir, OutputOptions options) {
    OutputTransaction tx(dir, options, source);
    write_text_file(tx.path("embedding.json"), "{}\n");
    write_text_file(tx.path("embedding.csv"), "x\n");
    tx.commit();
  };
  EXPECT_NO_THROW(check_output_dir(t / "mine", embedding, {}, source));
  write_embedding_into(t / "mine", {});
  EXPECT_EQ(entries(t / "mine"),
            (std::set<std::string>{"indices.npy", "distances.npy", "graph.json", "embedding.json", "embedding.csv"}));
  for (const char* name : {"other", "unnamed"}) {
    const std::string dir = t / name;
    const std::string refused = message_of([&] { check_output_dir(dir, embedding, {}, source); });
    EXPECT_EQ(refused.rfind(dir + ": holds another k-NN graph", 0), 0u) << refused;
    EXPECT_NE(refused.find("than the embedding's own (4 points, k=5, cosine)"), std::string::npos) << refused;
    EXPECT_THROW(write_embedding_into(dir, {}), UsageError);
    EXPECT_EQ(entries(dir), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
    write_embedding_into(dir, {.overwrite = true});
    EXPECT_EQ(entries(dir), (std::set<std::string>{"embedding.json", "embedding.csv"}));
  }
}

// The staging folder becomes the result by rename: it must be made like any
// folder (mode 0777 less the umask), not private (mkdtemp's 0700).
TEST(OutputFolder, AResultFolderHonoursTheUmask) {
  TempDir t;
  for (const mode_t mask : {mode_t{022}, mode_t{002}, mode_t{077}}) {
    const mode_t before = ::umask(mask);
    const std::string dir = t / ("g" + std::to_string(mask));
    write_graph_files(dir, 1, 2);
    write_graph_files(dir, 2, 3);  // swapped over a previous result
    ::umask(before);
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0777 & ~mask) << dir;
  }
}

TEST(OutputFolder, AnEmptyPathIsABadArgument) {
  const std::string m = message_of([] { check_output_dir(""); });
  EXPECT_NE(m.find("-o: the output path is empty"), std::string::npos) << m;
  EXPECT_THROW(check_output_dir("", {"graph.json"}, {}), UsageError);
  EXPECT_THROW(OutputTransaction tx(""), UsageError);
}

// The early checks make a file where the output goes and remove it again:
// the folders they accept take one, and they leave nothing behind.
TEST(OutputFolder, EarlyChecksTryToMakeAFile) {
  TempDir t;
  EXPECT_NO_THROW(check_output_dir(t / "new/deeper"));
  EXPECT_NO_THROW(check_output_dir(t.path));
  EXPECT_NO_THROW(check_output_file(t / "new/x.npy", {".npy"}));
  EXPECT_TRUE(fs::is_empty(t.path));
  EXPECT_EQ(message_of([] {
              check_output_file("/proc/manifold-x.npy", {".npy"});
            }).rfind("/proc/manifold-x.npy: cannot write a file in /proc (", 0),
            0u);
  EXPECT_NE(message_of([] { check_output_dir("/proc/manifold-out"); }).find("/proc is not writable"),
            std::string::npos);
  EXPECT_NE(message_of([] { check_output_dir("/proc/self"); }).find("output directory is not writable"),
            std::string::npos);
  // What the path itself says is a bad argument, before any folder is tried.
  EXPECT_EQ(message_of([] {
              check_output_file("", {".npy", ".cxi"});
            }),
            "-o: the output path is empty; name a FILE.npy or FILE.cxi");
  EXPECT_EQ(message_of([] { check_output_file("/proc/x.txt", {".npy"}); }),
            "-o /proc/x.txt: the output must end in .npy");
  fs::create_directory(t / "d.npy");
  EXPECT_THROW(check_output_file(t / "d.npy", {".npy"}), UsageError);
}

TEST(OutputFolder, SecondWriterOfTheSameFolderFails) {
  TempDir t;
  auto first = std::make_unique<OutputTransaction>(t / "o");
  try {
    OutputTransaction second(t / "o");
    ADD_FAILURE() << "two writers of one folder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another manifold process is writing this folder"), std::string::npos)
        << e.what();
  }
  first.reset();
  EXPECT_NO_THROW(write_graph_files(t / "o", 1, 2));
}

TEST(OutputFolder, FailureLeavesNoParentFoldersItMade) {
  TempDir t;
  {
    OutputTransaction tx(t / "a/b/c");
    write_text_file(tx.path("graph.json"), "{}\n");
    // destroyed uncommitted, as when an exception unwinds
  }
  EXPECT_FALSE(fs::exists(t / "a"));
  EXPECT_TRUE(entries(t.path).empty());
}

TEST(OutputFolder, ExistingFileIsABadArgument) {
  TempDir t;
  std::ofstream(t / "file") << "x";
  EXPECT_THROW(OutputTransaction tx(t / "file"), UsageError);
  EXPECT_THROW(check_output_dir(t / "file"), UsageError);
  EXPECT_EQ(slurp(t / "file"), "x");
}

TEST(OutputFolder, MessagesNameTheOutputNotItsTemporary) {
  TempDir t;
  OutputTransaction tx(t / "out");
  const std::string staged = tx.path("indices.npy");
  EXPECT_NE(staged, t / "out/indices.npy");
  EXPECT_EQ(output_display_path(staged), t / "out/indices.npy");
  EXPECT_EQ(output_display_path(t / "other"), t / "other");
}

// ---- files written at the same time ------------------------------------------

TEST(ParallelWrites, StepsAddUpToTheWaitAndEachFileHasItsOwnTime) {
  TempDir t;
  std::promise<void> b_written;
  std::shared_future<void> b_done = b_written.get_future().share();
  ParallelWrites writes;
  // "a" ends only after "b" has: b's step then took none of the wait.
  writes.start("step a", "a.txt", [&] {
    b_done.wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    write_text_file(t / "a.txt", "a\n");
  });
  writes.start("step b", "b.txt", [&] {
    write_text_file(t / "b.txt", "b\n");
    b_written.set_value();
  });
  writes.start("step a", "c.txt", [&] { write_text_file(t / "c.txt", "c\n"); });
  const auto begin = std::chrono::steady_clock::now();
  const ParallelWrites::Seconds s = writes.wait();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_EQ(slurp(t / "a.txt") + slurp(t / "b.txt") + slurp(t / "c.txt"), "a\nb\nc\n");
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].first, "step a");
  EXPECT_EQ(s.steps[1].first, "step b");
  EXPECT_GE(s.steps[0].second, 0.03);
  EXPECT_EQ(s.steps[1].second, 0.0);
  EXPECT_LE(s.steps[0].second + s.steps[1].second, waited);
  ASSERT_EQ(s.files.size(), 3u);
  EXPECT_EQ(s.files[0].first, "a.txt");
  EXPECT_EQ(s.files[1].first, "b.txt");
  EXPECT_EQ(s.files[2].first, "c.txt");
  EXPECT_GE(s.files[0].second, 0.03);
}

TEST(ParallelWrites, TheFirstFailureInStartOrderAfterEveryWriteEnded) {
  std::promise<void> second_failed;
  std::shared_future<void> second_done = second_failed.get_future().share();
  std::atomic<bool> third_ended{false};
  ParallelWrites writes;
  writes.start("s", "first", [&] {
    second_done.wait();  // fails after the second has
    throw Error("first failed");
  });
  writes.start("s", "second", [&] {
    second_failed.set_value();
    throw Error("second failed");
  });
  writes.start("s", "third", [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    third_ended = true;
  });
  try {
    writes.wait();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "first failed");
  }
  EXPECT_TRUE(third_ended) << "every write ends before the failure is reported";
}

TEST(ParallelWrites, DestroyedUnwaitedItWaitsForItsWrites) {
  std::atomic<bool> ended{false};
  {
    ParallelWrites writes;
    writes.start("s", "slow", [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ended = true;
    });
  }  // as when the caller's work throws: the transaction goes only after
  EXPECT_TRUE(ended);
}

TEST(ParallelWrites, AGraphIsWrittenByteForByteAsBefore) {
  // write_graph writes its files at the same time: the same bytes as one
  // npy::write after another.
  TempDir t;
  KnnGraph g;
  g.n = 5000;
  g.k = 7;
  for (int64_t i = 0; i < g.n * g.k; ++i) {
    g.indices.push_back((i * 31) % g.n);
    g.distances.push_back(static_cast<float>(i) * 0.25f);
  }
  write_graph(t / "g", g);
  npy::write(t / "indices.npy", g.indices.data(), {g.n, g.k});
  npy::write(t / "distances.npy", g.distances.data(), {g.n, g.k});
  EXPECT_EQ(slurp(t / "g/indices.npy"), slurp(t / "indices.npy"));
  EXPECT_EQ(slurp(t / "g/distances.npy"), slurp(t / "distances.npy"));
  EXPECT_EQ(read_graph(t / "g").indices, g.indices);
}

TEST(GraphFolder, ReadsBothArraysAtOnceAndNamesTheFirstBadFile) {
  TempDir t;
  KnnGraph g;
  g.n = 3000;
  g.k = 5;
  for (int64_t i = 0; i < g.n * g.k; ++i) {
    g.indices.push_back((i * 17) % g.n);
    g.distances.push_back(static_cast<float>(i % 101));
  }
  write_graph(t / "g", g);
  const KnnGraph back = read_graph(t / "g");
  EXPECT_EQ(back.indices, g.indices);
  EXPECT_EQ(back.distances, g.distances);
  auto message = [&] {
    try {
      read_graph(t / "g");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  fs::resize_file(t / "g/distances.npy", 1000);
  EXPECT_NE(message().find("distances.npy: truncated"), std::string::npos) << message();
  fs::resize_file(t / "g/indices.npy", 1000);  // both bad: indices.npy is named, as it is read first
  EXPECT_NE(message().find("indices.npy: truncated"), std::string::npos) << message();
}

// ---- a crash during the commit ------------------------------------------------

const char* g_die_at = nullptr;
void die_at_step(const char* step) {
  if (g_die_at && std::string(step) == g_die_at) raise(SIGKILL);
}

// Runs write_graph_files(dir, tag, k) in a child process killed with SIGKILL
// at commit step `step`.
void killed_while_writing(const std::string& dir, int64_t tag, int k, const char* step) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    g_die_at = step;
    set_output_fault_hook(die_at_step);
    try {
      write_graph_files(dir, tag, k);
    } catch (...) {
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child did not reach step " << step;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST(OutputCrash, KilledBeforeTheSwapLeavesNoFolderOrTheOldOne) {
  TempDir t;
  killed_while_writing(t / "new", 1, 5, "staged");
  EXPECT_FALSE(fs::exists(t / "new")) << "a new result folder appears whole or not at all";
  write_graph_files(t / "old", 1, 5);
  killed_while_writing(t / "old", 2, 9, "staged");
  EXPECT_EQ(entries(t / "old"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
  EXPECT_EQ(first_index(t / "old"), 1);
  EXPECT_EQ(slurp(t / "old/graph.json"), "{\"k\": 5}\n");
  // The next writer clears what the dead one left beside the folders.
  write_graph_files(t / "new", 3, 2);
  write_graph_files(t / "old", 3, 2);
  EXPECT_EQ(entries(t.path), (std::set<std::string>{"new", "old"}));
}

TEST(OutputCrash, KilledJustAfterTheSwapLeavesTheNewResultWhole) {
  TempDir t;
  write_graph_files(t / "o", 1, 5);
  killed_while_writing(t / "o", 2, 9, "swapped");
  EXPECT_EQ(entries(t / "o"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
  EXPECT_EQ(first_index(t / "o"), 2);
  EXPECT_EQ(slurp(t / "o/graph.json"), "{\"k\": 9}\n");
}

// ---- the command line ----------------------------------------------------------

TEST(CliOutput, KnnIntoAnotherCommandsFolderIsRefusedUnlessOverwrite) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(60, 4, 1), t / "a.npy");
  save(random_dataset(50, 4, 2), t / "b.npy");
  std::string err;
  ASSERT_EQ(run_cli("run " + (t / "a.npy") + " -k 5 --components 2 -q -o " + (t / "r"), &err), 0) << err;
  const auto run_files = entries(t / "r");
  ASSERT_TRUE(run_files.count("embedding.npy") && run_files.count("session.json"));
  EXPECT_EQ(run_cli("knn " + (t / "b.npy") + " -k 3 -q -o " + (t / "r"), &err), 2);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(t / "r"), std::string::npos) << err;
  EXPECT_NE(err.find("--overwrite"), std::string::npos) << err;
  EXPECT_EQ(entries(t / "r"), run_files);
  EXPECT_EQ(read_graph(t / "r").n, 60);
  ASSERT_EQ(run_cli("knn " + (t / "b.npy") + " -k 3 -q --overwrite -o " + (t / "r"), &err), 0) << err;
  EXPECT_EQ(entries(t / "r"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
  EXPECT_EQ(read_graph(t / "r").n, 50);
  // A previous k-NN graph is replaced without asking.
  ASSERT_EQ(run_cli("knn " + (t / "a.npy") + " -k 4 -q -o " + (t / "r"), &err), 0) << err;
  EXPECT_EQ(read_graph(t / "r").k, 4);
  // The output named as an existing file: a bad argument.
  std::ofstream(t / "file") << "x";
  EXPECT_EQ(run_cli("knn " + (t / "a.npy") + " -k 4 -q -o " + (t / "file"), &err), 2);
  EXPECT_EQ(lines(err), 1) << err;
}

// Colleagues on shared storage read the results: each command's folder gets
// the umask's mode, as mkdir would make it.
TEST(CliOutput, ResultFoldersHonourTheUmask) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(40, 4, 1), t / "a.npy");
  const mode_t before = ::umask(022);  // the child inherits it
  std::string err;
  const int knn = run_cli("knn " + (t / "a.npy") + " -k 5 -q -o " + (t / "g"), &err);
  const int embed = run_cli("embed " + (t / "g") + " --components 2 -q -o " + (t / "e"), &err);
  const int run = run_cli("run " + (t / "a.npy") + " -k 5 --components 2 -q -o " + (t / "r"), &err);
  ::umask(before);
  ASSERT_EQ(knn, 0);
  ASSERT_EQ(embed, 0);
  ASSERT_EQ(run, 0) << err;
  for (const std::string& dir : {t / "g", t / "e", t / "r"}) {
    struct stat st {};
    ASSERT_EQ(::stat(dir.c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_mode & 0777, 0755u) << dir;
  }
}

// The command `args` exits with `status` and says why in one line holding `message`.
void expect_one_line_error(const std::string& args, int status, const std::string& message) {
  std::string err;
  EXPECT_EQ(run_cli(args, &err), status) << args;
  EXPECT_EQ(lines(err), 1) << args << ": " << err;
  EXPECT_NE(err.find(message), std::string::npos) << args << ": " << err;
}

TEST(CliOutput, AnEmptyOutputIsAUsageError) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(20, 4, 1), t / "a.npy");
  std::string err;
  ASSERT_EQ(run_cli("knn " + (t / "a.npy") + " -k 3 -q -o " + (t / "g"), &err), 0) << err;
  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 2 -q", &err), 0) << err;
  // Every command with -o (QA 17): cluster and simulate named "-o : the
  // output must end in .npy", trajectory "missing the output".
  for (const std::string& args :
       {"knn " + (t / "a.npy") + " -k 3", "run " + (t / "a.npy") + " -k 3", "embed " + (t / "g") + " --components 2",
        "cluster " + (t / "g"), std::string("simulate diffraction --pdb 1ubq --count 2"), "trajectory " + (t / "g")})
    expect_one_line_error(args + " -q -o ''", 2, "-o: the output path is empty");
}

// A folder that takes no new file is found before the work, by making one
// there: access() says yes to root for /proc, where the result then could
// not be moved into place after the work (QA 17). Each command's output
// check comes before anything it reads, so its message is the output's.
TEST(CliOutput, AFolderThatTakesNoFileIsRefusedBeforeTheWork) {
  REQUIRE_CLI();
  TempDir t;
  const std::string missing = t / "nothing-here";
  const std::pair<std::string, std::string> cases[] = {
      {"cluster " + missing + " -o /proc/manifold-x.npy", "/proc/manifold-x.npy: cannot write a file in /proc ("},
      {"simulate diffraction --pdb " + missing + ".pdb --count 2 -o /proc/manifold-x.npy",
       "/proc/manifold-x.npy: cannot write a file in /proc ("},
      {"knn " + missing + ".npy -k 3 -o /proc/manifold-g",
       "/proc/manifold-g: cannot create output directory here (/proc is not writable: "},
  };
  for (const auto& [args, message] : cases) expect_one_line_error(args + " -q", 1, message);
}

// Runs the CLI from the folder `cwd` (the child inherits the working directory).
int run_cli_in(const std::string& cwd, const std::string& args, std::string* err) {
  const fs::path before = fs::current_path();
  fs::current_path(cwd);
  const int status = run_cli(args, err);
  fs::current_path(before);
  return status;
}

// `-o .`: the folder the user's shell is in must stay that folder (swapping a
// new one into its place left the shell in the swapped-away, deleted one).
TEST(CliOutput, KnnIntoTheCurrentFolderWritesItInPlace) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(30, 4, 1), t / "x.npy");
  std::string err;
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 4 -q -o " + (t / "o"), &err), 0) << err;
  struct stat before {};
  ASSERT_EQ(::stat((t / "o").c_str(), &before), 0);
  ASSERT_EQ(run_cli_in(t / "o", "knn ../x.npy -k 3 -q -o .", &err), 0) << err;
  struct stat after {};
  ASSERT_EQ(::stat((t / "o").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the current folder was replaced by another";
  EXPECT_EQ(read_graph(t / "o").k, 3);
  EXPECT_EQ(entries(t / "o"), (std::set<std::string>{"indices.npy", "distances.npy", "graph.json"}));
  // An embedding written into the current folder keeps the graph beside it.
  ASSERT_EQ(run_cli_in(t / "o", "embed . --components 2 -q -o .", &err), 0) << err;
  ASSERT_EQ(::stat((t / "o").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_TRUE(entries(t / "o").count("embedding.npy") && entries(t / "o").count("graph.json"));
}

// A folder above the current one: any result there would replace or remove
// the folder the user is in, with or without --overwrite.
TEST(CliOutput, AFolderAboveTheCurrentOneIsRefused) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(30, 4, 1), t / "x.npy");
  std::string err;
  ASSERT_EQ(run_cli("knn " + (t / "x.npy") + " -k 4 -q -o " + (t / "o"), &err), 0) << err;
  fs::create_directories(t / "o/sub");
  const auto before = entries(t / "o");
  for (const std::string extra : {"", " --overwrite"}) {
    EXPECT_EQ(run_cli_in(t / "o/sub", "knn ../../x.npy -k 3 -q -o .." + extra, &err), 2) << extra;
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_NE(err.find("current folder"), std::string::npos) << err;
    EXPECT_EQ(entries(t / "o"), before);
    EXPECT_EQ(read_graph(t / "o").k, 4);
  }
  EXPECT_TRUE(fs::is_directory(t / "o/sub"));
}

// simulate writes a file: an existing folder named like one is a bad
// argument, refused before the simulation.
TEST(CliOutput, SimulateIntoAFolderIsABadArgument) {
  REQUIRE_CLI();
  TempDir t;
  std::ofstream(t / "two.pdb") << "ATOM      1  N   MET A   1      27.340  24.430   2.614  1.00  9.67           N  \n"
                                  "ATOM      2  CA  MET A   1      26.266  25.413   2.842  1.00 10.38           C  \n";
  std::string err;
  ASSERT_EQ(run_cli("simulate diffraction --pdb " + (t / "two.pdb") + " --count 2 --size 8 -q -o " + (t / "ok.npy"),
                    &err),
            0)
      << err;
  for (const std::string name : {"f.npy", "f.cxi"}) {
    fs::create_directories(t / name);
    EXPECT_EQ(run_cli("simulate diffraction --pdb " + (t / "two.pdb") + " --count 2 --size 8 -q -o " + (t / name),
                      &err),
              2);
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_NE(err.find(t / name), std::string::npos) << err;
    EXPECT_TRUE(fs::is_empty(t / name));
  }
}

TEST(CliOutput, SubmitRefusesAFolderOfOtherFilesBeforeQueueing) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(20, 4, 1), t / "a.npy");
  std::ofstream(t / "profile.json") << R"({"kind": "mpirun", "ranks": 1, "work_dir": ")" << (t / "jobs") << R"("})";
  fs::create_directories(t / "mine");
  std::ofstream(t / "mine/notes.txt") << "keep";
  std::string err;
  EXPECT_EQ(run_cli("submit --profile " + (t / "profile.json") + " " + (t / "a.npy") + " -k 3 -q -o " + (t / "mine"),
                    &err),
            2);
  EXPECT_NE(err.find("notes.txt"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "jobs")) << "nothing queued";
}

TEST(CliOutput, TooFewPointsNamesTheFile) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(1, 4, 1), t / "one.npy");
  std::string err;
  EXPECT_EQ(run_cli("knn " + (t / "one.npy") + " -k 1 -q -o " + (t / "o"), &err), 2);
  EXPECT_NE(err.find(t / "one.npy" + " has 1 points"), std::string::npos) << err;
}

// Runs the CLI with `args` under a 64 KB file-size limit, so that a write
// past it fails as on a full disk would (SIGXFSZ ignored: the write returns
// EFBIG); stderr goes to `err_file`. Returns the exit status, or -1 when the
// process did not exit.
static int run_cli_with_file_size_limit(const std::vector<std::string>& args, const std::string& err_file) {
  const std::string cli = std::getenv("MANIFOLD_CLI");
  std::vector<char*> argv{const_cast<char*>(cli.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit r{};
    r.rlim_cur = r.rlim_max = 64 * 1024;
    setrlimit(RLIMIT_FSIZE, &r);
    freopen(err_file.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    execv(cli.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `manifold COMMAND x.npy ARGS -o deep/er/o` under the file-size limit: the
// write of indices.npy fails (when both graph files fail, the first started
// is named), one line names it, and no folder is left, not even the parents
// made for it.
static void expect_failed_write_leaves_nothing(const std::string& command, const std::vector<std::string>& args) {
  TempDir t;
  save(random_dataset(3000, 4, 3), t / "x.npy");
  const std::string out = t / "deep/er/o";
  std::vector<std::string> argv{command, t / "x.npy"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--backend", "cpu", "-q", "-o", out});
  EXPECT_EQ(run_cli_with_file_size_limit(argv, t / "err"), 1);
  const std::string err = slurp(t / "err");
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find(out + "/indices.npy: write failed"), std::string::npos) << err;
  EXPECT_EQ(err.find(".manifold-"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "deep")) << "the folders made for the output are removed again";
}

TEST(CliOutput, FailedWriteNamesTheOutputAndLeavesNothing) {
  REQUIRE_CLI();
  expect_failed_write_leaves_nothing("knn", {"-k", "10"});
}

// `run` writes the graph's files while it computes the embedding: a write
// that fails there is reported when the embedding is done, naming the file,
// and nothing is left.
TEST(CliOutput, RunsFailedGraphWriteNamesTheFileAndLeavesNothing) {
  REQUIRE_CLI();
  expect_failed_write_leaves_nothing("run", {"-k", "10", "--components", "2"});
}

// An embedding that fails after the graph's files were written leaves no
// folder, or the previous result whole.
TEST(CliOutput, RunsFailedEmbeddingLeavesNothingOrThePreviousResult) {
  REQUIRE_CLI();
  TempDir t;
  save(random_dataset(2000, 6, 5), t / "x.npy");
  const std::string run = "run " + (t / "x.npy") + " --components 3 --backend cpu -q ";
  std::string err;
  // A budget of 5 products cannot converge: the eigensolve fails with one line.
  EXPECT_EQ(run_cli(run + "-k 10 --max-matvecs 5 -o " + (t / "o"), &err), 1);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("eigensolve"), std::string::npos) << err;
  EXPECT_EQ(entries(t.path), (std::set<std::string>{"x.npy"}));
  ASSERT_EQ(run_cli(run + "-k 10 -o " + (t / "o"), &err), 0) << err;
  const std::set<std::string> files = entries(t / "o");
  const std::string embedding = slurp(t / "o/embedding.npy"), indices = slurp(t / "o/indices.npy");
  EXPECT_EQ(run_cli(run + "-k 12 --max-matvecs 5 --overwrite -o " + (t / "o"), &err), 1);
  EXPECT_EQ(entries(t / "o"), files);
  EXPECT_EQ(slurp(t / "o/embedding.npy"), embedding);
  EXPECT_EQ(slurp(t / "o/indices.npy"), indices);
  EXPECT_EQ(entries(t.path), (std::set<std::string>{"o", "x.npy"}));
}

// ---- sessions ----------------------------------------------------------------

TEST(SessionOutput, OnlyBelowTheSessionsFolder) {
  TempDir t;
  auto session = [](const std::string& output) {
    return nlohmann::json{{"format", "manifold-session"}, {"version", 1}, {"data", "x.npy"}, {"output", output}};
  };
  EXPECT_EQ(session_from_json(session("run1"), t / "s", "s.json").output, t / "s/run1");
  EXPECT_EQ(session_from_json(session("a/./b"), t / "s", "s.json").output, t / "s/a/b");
  for (const std::string bad : {"../victim", "a/../../victim", "/etc/elsewhere", "."}) {
    try {
      session_from_json(session(bad), t / "s", "s.json");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("s.json: \"output\"", 0), 0u) << m;
      EXPECT_NE(m.find("give -o"), std::string::npos) << m;
    }
  }
}

// Found by fuzz_session: a "format" that is not a string threw a JSON
// exception past the session reader (no file named, exit 1 as an internal error).
TEST(SessionOutput, AFormatOfAnotherTypeIsRefusedNamingTheFile) {
  TempDir t;
  std::ofstream(t / "s.json") << R"({"format": 1, "data": "x.npy"})";
  try {
    read_session(t / "s.json");
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(t / "s.json: not a manifold session", 0), 0u) << e.what();
  }
}

}  // namespace
