// manifold trajectory end to end on the demo (simulated diffraction of a
// molecule turning about one axis): frames follow the true angle; GIF, MP4
// and PNG series read back; bad options and missing data give one line and
// exit 2, leaving nothing behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "manifold/dataset.h"
#include "manifold/movie.h"
#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using testing_support::run_cli;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

/// The demo's output folder, made once for every test (600 patterns).
const std::string& demo_dir() {
  static TempDir dir;
  static const bool made = [] {
    std::string err;
    return run_cli("run --demo --count 600 --quiet -o " + dir.path + "/demo", &err) == 0;
  }();
  static const std::string path = made ? dir.path + "/demo" : "";
  return path;
}

/// Spearman's rank correlation of frame order with `values`.
double spearman_with_order(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<double>(i);
  const double mean = (static_cast<double>(values.size()) - 1) / 2;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < rank.size(); ++i) {
    sxy += (static_cast<double>(i) - mean) * (rank[i] - mean);
    sxx += (static_cast<double>(i) - mean) * (static_cast<double>(i) - mean);
  }
  return sxy / sxx;
}

}  // namespace

TEST(CliTrajectory, DemoFramesFollowTheTrueAngle) {
  REQUIRE_CLI();
  ASSERT_FALSE(demo_dir().empty()) << "manifold run --demo failed";
  TempDir t;
  const std::string frames = t / "frames";
  std::string err, out;
  ASSERT_EQ(run_cli("trajectory " + demo_dir() + " --phase 1,2 --bins 30 -o " + frames, &err, &out), 0) << err;
  EXPECT_NE(out.find("30 frames of 256 x 256"), std::string::npos) << out;

  // The series reads back (libpng): 30 frames of the demo's 32 x 32, x 8.
  const Dataset back = load_dataset(frames);
  EXPECT_EQ(back.rows(), 30);
  EXPECT_EQ(back.item_shape, (std::vector<int64_t>{256, 256}));

  // Each bin's circular mean true angle, unwrapped along the frames.
  std::ifstream in(frames + "/trajectory.json");
  const auto meta = nlohmann::json::parse(in);
  const std::vector<double> angles = npy::read<double>(demo_dir() + "/patterns.angles.npy");
  std::vector<double> unwrapped;
  size_t members = 0;
  for (const auto& bin : meta["bins"]) {
    double s = 0, c = 0;
    for (int64_t row : bin["rows"].get<std::vector<int64_t>>()) {
      s += std::sin(angles.at(static_cast<size_t>(row)));
      c += std::cos(angles.at(static_cast<size_t>(row)));
      ++members;
    }
    const double a = std::atan2(s, c);
    unwrapped.push_back(unwrapped.empty() ? a : unwrapped.back() + std::remainder(a - unwrapped.back(), 2 * M_PI));
  }
  EXPECT_EQ(members, 600u);
  const double rho = spearman_with_order(unwrapped);
  std::printf(
      "manifold trajectory DEMO --phase 1,2 --bins 30: Spearman of frame order with the bin's true angle %.4f\n", rho);
  EXPECT_GE(std::abs(rho), 0.95);
}

TEST(CliTrajectory, GifAndMp4ReadBack) {
  REQUIRE_CLI();
  if (!have_video_encoding()) GTEST_SKIP() << "built without FFmpeg";
  ASSERT_FALSE(demo_dir().empty());
  TempDir t;
  std::string err, out;
  ASSERT_EQ(run_cli("trajectory " + demo_dir() + " --coordinate 2 --bins 20 --fps 5 --scale 4 -o " + (t / "m.gif"),
                    &err, &out),
            0)
      << err;
  EXPECT_TRUE(err.empty() || err.find("manifold:") == std::string::npos) << err;
  MovieInfo gif = read_movie(t / "m.gif");
  EXPECT_EQ(gif.frames, 20);
  EXPECT_EQ(gif.width, 128);
  EXPECT_EQ(gif.height, 128);
  EXPECT_NEAR(gif.seconds_per_frame, 0.2, 1e-9);

  ASSERT_EQ(run_cli("trajectory " + demo_dir() + " --bins 15 --quiet -o " + (t / "m.mp4"), &err, &out), 0) << err;
  EXPECT_TRUE(out.empty()) << out;
  MovieInfo mp4 = read_movie(t / "m.mp4");
  EXPECT_EQ(mp4.frames, 15);
  EXPECT_EQ(mp4.width, 256);
  EXPECT_EQ(mp4.height, 256);
}

TEST(CliTrajectory, PathFromAFile) {
  REQUIRE_CLI();
  ASSERT_FALSE(demo_dir().empty());
  TempDir t;
  // A square around the loop in dc1, dc2, large enough to hold every point.
  const std::vector<double> path = {-1, -1, 1, -1, 1, 1, -1, 1, -1, -1};
  npy::write(t / "path.npy", path.data(), {5, 2});
  std::string err, out;
  ASSERT_EQ(run_cli("trajectory " + demo_dir() + " --path " + (t / "path.npy") + " --tube 100 --bins 10 -o " +
                        (t / "frames"),
                    &err, &out),
            0)
      << err;
  std::ifstream in(t / "frames/trajectory.json");
  const auto meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["order"], "path of 5 vertices in dc1, dc2");
  EXPECT_EQ(meta["frames"], 10);
}

// --tube 0 is every point, as the help says; a tube that leaves points out
// (auto: the explorer's, 0.1 of the points' extent) says how many it kept.
// -q is --quiet, as in every other subcommand.
TEST(CliTrajectory, TubeZeroKeepsEveryPointAndATubeThatDropsSomeSaysSo) {
  REQUIRE_CLI();
  ASSERT_FALSE(demo_dir().empty());
  TempDir t;
  // A line across the loop in dc1, dc2 (its radius is about 1.4): most of
  // the loop lies far from it.
  const std::vector<double> path = {-3, 0, 3, 0};
  npy::write(t / "line.npy", path.data(), {2, 2});
  std::ifstream embedding_json(demo_dir() + "/embedding.json");
  const int64_t embedded = nlohmann::json::parse(embedding_json)["points_embedded"];
  auto points_in = [&](const std::string& frames) {
    std::ifstream in(frames + "/trajectory.json");
    const auto meta = nlohmann::json::parse(in);
    int64_t sum = 0;
    for (const auto& b : meta["bins"]) sum += b["count"].get<int64_t>();
    return sum;
  };
  std::string err, out;
  for (const std::string tube : {"", " --tube 0"}) {
    const std::string frames = t / ("all" + std::to_string(tube.size()));
    ASSERT_EQ(run_cli("trajectory " + demo_dir() + " --path " + (t / "line.npy") + tube + " --bins 10 -q -o " + frames,
                      &err, &out),
              0)
        << tube << ": " << err;
    EXPECT_TRUE(out.empty()) << out;
    EXPECT_EQ(points_in(frames), embedded) << tube;
  }
  ASSERT_EQ(run_cli("trajectory " + demo_dir() + " --path " + (t / "line.npy") + " --tube auto --bins 10 -o " +
                        (t / "auto"),
                    &err, &out),
            0)
      << err;
  const int64_t kept = points_in(t / "auto");
  EXPECT_LT(kept, embedded);
  EXPECT_NE(out.find(std::to_string(kept) + " of " + std::to_string(embedded) + " points lie within the --tube"),
            std::string::npos)
      << out;
}

TEST(CliTrajectory, BadInputGivesOneLineAndExitTwo) {
  REQUIRE_CLI();
  ASSERT_FALSE(demo_dir().empty());
  TempDir t;
  const std::string movie = t / "frames";  // PNG frames: the same errors in a build without FFmpeg
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--coordinate 9 -o " + movie, "--coordinate 9"},
      {"--coordinate 0 -o " + movie, "--coordinate 0"},
      {"--bins 601 -o " + movie, "--bins 601"},
      {"--bins 0 -o " + movie, "--bins 0"},
      {"--phase 1 -o " + movie, "--phase"},
      {"--phase 1,2 --coordinate 1 -o " + movie, "one of"},
      {"--tube 1 -o " + movie, "--tube"},
      {"--path " + (t / "none.npy") + " -o " + movie, "--path"},
      {"--fps 0 -o " + movie, "--fps"},
      {"-o " + (t / "m.avi"), "m.avi"},
      {"-o " + (t / "missing/m.gif"), "does not exist"},
      {"", "-o"},
      {"--data " + (t / "none.npy") + " -o " + movie, "--data"},
  };
  for (const Case& c : cases) {
    std::string err;
    EXPECT_EQ(run_cli("trajectory " + demo_dir() + " " + c.args, &err), 2) << c.args << ": " << err;
    EXPECT_EQ(lines(err), 1) << c.args << ": " << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.args << ": " << err;
    EXPECT_FALSE(fs::exists(movie)) << c.args;
  }
  std::string err;
  EXPECT_EQ(run_cli("trajectory " + (t / "nothing") + " -o " + movie, &err), 2);
  EXPECT_EQ(lines(err), 1) << err;

  // The recorded data missing: the embedding folder without patterns.npy.
  const std::string copy = t / "copy";
  fs::create_directory(copy);
  for (const auto& f : fs::directory_iterator(demo_dir()))
    if (f.path().filename() != "patterns.npy") fs::copy(f.path(), copy / f.path().filename());
  EXPECT_EQ(run_cli("trajectory " + copy + " -o " + movie, &err), 2);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("patterns.npy"), std::string::npos) << err;
  EXPECT_NE(err.find("--data"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(movie));

  // Data of another size than the embedding's.
  Dataset other = testing_support::random_dataset(50, 1024, 1);
  npy::write(t / "other.npy", other.data(), {50, 32, 32});
  EXPECT_EQ(run_cli("trajectory " + demo_dir() + " --data " + (t / "other.npy") + " -o " + movie, &err), 2);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("50 rows"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(movie));
}

TEST(CliTrajectory, KnnThenEmbedRecordTheDataAndAMissingOneAsksForData) {
  REQUIRE_CLI();
  TempDir t;
  // knn records the data in graph.json, embed passes it on to embedding.json.
  Dataset pts = testing_support::random_dataset(120, 6, 4);
  npy::write(t / "points.npy", pts.data(), {120, 2, 3});
  std::string err, out;
  ASSERT_EQ(run_cli("knn " + (t / "points.npy") + " -k 8 --quiet -o " + (t / "graph"), &err), 0) << err;
  ASSERT_EQ(run_cli("embed " + (t / "graph") + " --components 3 -o " + (t / "emb"), &err, &out), 0) << err;
  ASSERT_EQ(run_cli("trajectory " + (t / "emb") + " --bins 4 -o " + (t / "found"), &err), 0) << err;
  EXPECT_EQ(load_dataset(t / "found").rows(), 4);
  // Data that moved away: one line asking for --data, nothing written.
  fs::rename(t / "points.npy", t / "moved.npy");
  EXPECT_EQ(run_cli("trajectory " + (t / "emb") + " -o " + (t / "frames"), &err), 2);
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("give --data FILE"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t / "frames"));
  fs::rename(t / "moved.npy", t / "points.npy");
  // Results and data moved together (another machine): the data by name
  // beside the results, and a note saying so.
  fs::create_directories(t / "elsewhere");
  fs::copy_file(t / "points.npy", t / "elsewhere/points.npy");
  fs::copy(t / "emb", t / "elsewhere/emb");
  fs::rename(t / "points.npy", t / "away.npy");
  ASSERT_EQ(run_cli("trajectory " + (t / "elsewhere/emb") + " --bins 4 -o " + (t / "moved-frames"), &err), 0) << err;
  EXPECT_NE(err.find("manifold: note: read " + (t / "elsewhere/points.npy") + " beside the results"), std::string::npos)
      << err;
  EXPECT_EQ(load_dataset(t / "moved-frames").rows(), 4);
  fs::rename(t / "away.npy", t / "points.npy");
  // Data that changed since (two rows swapped, as a folder read in another
  // order would be): one line, nothing written.
  {
    std::vector<float> swapped(pts.data(), pts.data() + 120 * 6);
    std::swap_ranges(swapped.begin(), swapped.begin() + 6, swapped.begin() + 6);
    npy::write(t / "swapped.npy", swapped.data(), {120, 2, 3});
    EXPECT_EQ(run_cli("trajectory " + (t / "emb") + " --data " + (t / "swapped.npy") + " -o " + (t / "frames"), &err),
              2);
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_NE(err.find("holds other rows than the embedding was made from"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(t / "frames"));
  }

  // With --data: 2 x 3 images, 12 bins of 10, enlarged x 16 (longer side 3 -> 48).
  ASSERT_EQ(run_cli("trajectory " + (t / "emb") + " --data " + (t / "points.npy") + " --bins 12 --coordinate 3 -o " +
                        (t / "frames"),
                    &err, &out),
            0)
      << err;
  const Dataset back = load_dataset(t / "frames");
  EXPECT_EQ(back.rows(), 12);
  EXPECT_EQ(back.item_shape, (std::vector<int64_t>{32, 48}));
  // Frame 1 is the mean of its 10 rows, on the movie's contrast scale.
  std::ifstream in(t / "frames/trajectory.json");
  const auto meta = nlohmann::json::parse(in);
  const auto rows = meta["bins"][0]["rows"].get<std::vector<int64_t>>();
  ASSERT_EQ(rows.size(), 10u);
  const double low = meta["contrast"]["low"], high = meta["contrast"]["high"];
  for (int64_t j = 0; j < 6; ++j) {
    double mean = 0;
    for (int64_t r : rows) mean += pts.row(r)[j] / 10.0;
    const double grey = std::clamp((mean - low) / (high - low) * 255, 0.0, 255.0);
    const int64_t y = (j / 3) * 16, x = (j % 3) * 16;
    EXPECT_NEAR(back.row(0)[y * 48 + x], grey, 1.0) << "pixel " << j;
  }
}
