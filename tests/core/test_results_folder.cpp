// Results folders (results_folder.h): the session a folder `run` or `knn`
// wrote stands for, with its data and mask found where they were recorded
// or, moved with the results, by name beside the folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/results_folder.h"
#include "manifold/session.h"
#include "test_support.h"

using namespace manifold;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

/// A graph folder as `knn` writes it: 3 points, k = 2, with `extra`.
void write_knn_folder(const std::string& dir, const nlohmann::json& extra) {
  KnnGraph g;
  g.n = 3, g.k = 2, g.d = 4;
  g.metric = Metric::Cosine;
  g.keep_self = true;
  g.indices = {0, 1, 1, 2, 2, 0};
  g.distances = {0, 1, 0, 1, 0, 1};
  g.extra = extra;
  write_graph(dir, g);
}

void touch(const std::string& path) { std::ofstream(path) << "x"; }

}  // namespace

TEST(ResultsFolder, AKnnFolderStandsForTheSessionItsGraphRecords) {
  TempDir t;
  touch(t / "frames.h5");
  touch(t / "det.mask.npy");
  write_knn_folder(t / "g", {{"data", t / "frames.h5"},
                             {"dataset", "/entry/data"},
                             {"mask", {{"file", t / "det.mask.npy"}, {"pixels", 7}}}});
  EXPECT_TRUE(is_results_folder(t / "g"));
  const ResultsFolder r = read_results_folder(t / "g");
  EXPECT_EQ(r.session.data, t / "frames.h5");
  EXPECT_EQ(r.session.dataset, "/entry/data");
  EXPECT_EQ(r.session.mask, t / "det.mask.npy");
  EXPECT_EQ(r.session.knn.k, 2);
  EXPECT_EQ(r.session.knn.metric, Metric::Cosine);
  EXPECT_TRUE(r.session.knn.keep_self);
  EXPECT_EQ(r.session.diffusion.k, 2);
  EXPECT_TRUE(r.moved.empty());
  EXPECT_TRUE(r.missing.empty());

  // No mask recorded: none applied; the mask inside the data ("mask": true
  // or an object without a file): found again with the data ("").
  write_knn_folder(t / "g2", {{"data", t / "frames.h5"}});
  EXPECT_EQ(read_results_folder(t / "g2").session.mask, "none");
  write_knn_folder(t / "g3", {{"data", t / "frames.h5"}, {"mask", {{"pixels", 7}}}});
  EXPECT_EQ(read_results_folder(t / "g3").session.mask, "");
}

TEST(ResultsFolder, MovedResultsFindTheirFilesBesideTheFolderOrAboveIt) {
  TempDir t;
  // Recorded on another machine: paths that are not here.
  const std::string gone = t / "the/other/machine";
  fs::create_directories(t / "moved/g");
  write_knn_folder(t / "moved/g", {{"data", gone + "/frames.npy"}, {"mask", {{"file", gone + "/det.mask.npy"}}}});
  touch(t / "moved/frames.npy");      // the folder above
  touch(t / "moved/g/det.mask.npy");  // the folder itself
  const ResultsFolder r = read_results_folder(t / "moved/g");
  EXPECT_EQ(r.session.data, t / "moved/frames.npy");
  EXPECT_EQ(r.session.mask, t / "moved/g/det.mask.npy");
  EXPECT_EQ(r.moved, (std::vector<std::string>{t / "moved/frames.npy", t / "moved/g/det.mask.npy"}));
  EXPECT_TRUE(r.missing.empty());

  // Found nowhere: listed, the session keeps the recorded path.
  fs::remove(t / "moved/frames.npy");
  const ResultsFolder lost = read_results_folder(t / "moved/g");
  EXPECT_EQ(lost.session.data, gone + "/frames.npy");
  EXPECT_EQ(lost.missing, std::vector<std::string>{gone + "/frames.npy"});
}

TEST(ResultsFolder, ARunFolderIsItsSessionJson) {
  TempDir t;
  fs::create_directories(t / "r");
  Session s;
  s.data = "../stack.npy";  // relative to the session's folder
  s.knn.k = 9;
  s.diffusion.k = 5;
  write_session(t / "r/session.json", s);
  EXPECT_TRUE(is_results_folder(t / "r"));
  touch(t / "stack.npy");
  const ResultsFolder r = read_results_folder(t / "r");
  EXPECT_EQ(fs::path(r.session.data).lexically_normal(), fs::path(t / "stack.npy").lexically_normal());
  EXPECT_EQ(r.session.knn.k, 9);
  EXPECT_EQ(r.session.diffusion.k, 5);
  EXPECT_TRUE(r.moved.empty());
  EXPECT_TRUE(r.missing.empty());
}

TEST(ResultsFolder, WhatIsNotOneOrCannotBeReadIsSaid) {
  TempDir t;
  EXPECT_FALSE(is_results_folder(t / "nowhere"));
  touch(t / "file");
  EXPECT_FALSE(is_results_folder(t / "file"));
  fs::create_directories(t / "plain");
  EXPECT_FALSE(is_results_folder(t / "plain"));
  // graph.json without indices.npy: not a graph folder.
  fs::create_directories(t / "half");
  std::ofstream(t / "half/graph.json") << "{}";
  EXPECT_FALSE(is_results_folder(t / "half"));

  // A graph that names no data: no data, nothing missing (embed then names no rows).
  write_knn_folder(t / "g", nlohmann::json::object());
  const ResultsFolder r = read_results_folder(t / "g");
  EXPECT_EQ(r.session.data, "");
  EXPECT_TRUE(r.missing.empty());

  // A broken graph.json or session.json: one Error naming the file.
  std::ofstream(t / "g/graph.json", std::ios::trunc) << "{ not json";
  try {
    read_results_folder(t / "g");
    ADD_FAILURE() << "a broken graph.json was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(t / "g/graph.json"), std::string::npos) << e.what();
  }
  std::ofstream(t / "g/session.json") << "{\"format\": \"manifold-session\"}";
  try {
    read_results_folder(t / "g");
    ADD_FAILURE() << "a broken session.json was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("session.json"), std::string::npos) << e.what();
  }
}
