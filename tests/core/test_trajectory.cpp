// Trajectories: orders (coordinate, phase, path), bins of equal count, mean
// images against a brute-force mean, a simulated one-axis rotation played in
// order of its true angle, and the movie writers read back (PNG through
// core's libpng reader, GIF and MP4 through libavformat).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "manifold/dataset.h"
#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/movie.h"
#include "manifold/pdb.h"
#include "manifold/simulate.h"
#include "manifold/trajectory.h"
#include "test_support.h"

using namespace manifold;
using testing_support::TempDir;
namespace fs = std::filesystem;

namespace {

EmbeddedPoints points_of(const std::vector<double>& coords, int m, const std::vector<int64_t>* index = nullptr) {
  EmbeddedPoints p;
  p.n = static_cast<int64_t>(coords.size()) / m;
  p.m = m;
  p.coordinates = coords.data();
  p.point_index = index ? index->data() : nullptr;
  return p;
}

std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size(); ++i) r[order[i]] = static_cast<double>(i);
  return r;
}

/// Spearman's rank correlation of frame order (0, 1, 2, ...) with `values`.
double spearman_with_order(const std::vector<double>& values) {
  const std::vector<double> r = ranks(values);
  const double n = static_cast<double>(r.size()), mean = (n - 1) / 2;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    sxy += (static_cast<double>(i) - mean) * (r[i] - mean);
    sxx += (static_cast<double>(i) - mean) * (static_cast<double>(i) - mean);
  }
  return sxy / sxx;
}

double circular_mean(const std::vector<double>& angles) {
  double s = 0, c = 0;
  for (double a : angles) {
    s += std::sin(a);
    c += std::cos(a);
  }
  return std::atan2(s, c);
}

/// Bin angles unwrapped along the frame order (each step taken the short
/// way round), so a full turn read in order is a monotone sequence.
std::vector<double> unwrapped(const std::vector<double>& a) {
  std::vector<double> u = {a.at(0)};
  for (size_t i = 1; i < a.size(); ++i) u.push_back(u.back() + std::remainder(a[i] - a[i - 1], 2 * M_PI));
  return u;
}

/// Simulated diffraction of ubiquitin turning about x, its Anscombe-
/// transformed k-NN graph and diffusion map: the raw images and true angles.
struct Rotation {
  Dataset images;
  std::vector<double> angles;
  DiffusionResult embedding;
};

Rotation simulate_rotation(int64_t count, double max_angle) {
  DiffractionParams sp;
  sp.count = count;
  sp.size = 24;
  sp.axis = "x";
  sp.photons = 1e5;
  sp.seed = 3;
  Progress quiet;
  DiffractionImages d = simulate_diffraction(read_pdb(find_packaged_pdb("1ubq")), sp, quiet);
  // Keep the patterns whose angle lies below max_angle (an arc, not a loop).
  Rotation r;
  std::vector<float> raw;
  const size_t pixels = static_cast<size_t>(d.size) * d.size;
  for (int64_t i = 0; i < d.count; ++i)
    if (d.angles[static_cast<size_t>(i)] < max_angle) {
      r.angles.push_back(d.angles[static_cast<size_t>(i)]);
      raw.insert(raw.end(), d.images.begin() + static_cast<std::ptrdiff_t>(i * pixels),
                 d.images.begin() + static_cast<std::ptrdiff_t>((i + 1) * pixels));
    }
  const int64_t n = static_cast<int64_t>(r.angles.size());
  std::vector<double> stabilised(raw.begin(), raw.end());
  for (double& v : stabilised) v = 2 * std::sqrt(v + 0.375);
  KnnGraph g = testing_support::knn_graph(stabilised, n, static_cast<int64_t>(pixels), 20);
  DiffusionParams dp;
  dp.components = 4;
  r.embedding = diffusion_map(g, dp, quiet);
  r.images = Dataset(n, static_cast<int64_t>(pixels), std::move(raw));
  r.images.item_shape = {d.size, d.size};
  return r;
}

std::vector<double> bin_mean_angles(const std::vector<TrajectoryBin>& bins, const std::vector<double>& angles,
                                    bool circular) {
  std::vector<double> out;
  for (const TrajectoryBin& b : bins) {
    std::vector<double> a;
    for (int64_t row : b.rows) a.push_back(angles[static_cast<size_t>(row)]);
    out.push_back(circular ? circular_mean(a)
                           : std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size()));
  }
  return out;
}

/// Small frames with known content: a gradient and a block moving right.
TrajectoryFrames synthetic_frames(int count, int height, int width) {
  TrajectoryFrames f;
  f.height = height;
  f.width = width;
  f.description = "synthetic";
  for (int k = 0; k < count; ++k) {
    TrajectoryBin b;
    b.rows = {k};
    b.points = {k};
    b.mean_coordinate = {static_cast<double>(k)};
    f.bins.push_back(b);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) f.images.push_back(static_cast<float>(y) + (x >= k && x < k + 3 ? 100.f : 0.f));
  }
  return f;
}

}  // namespace

// Frames of images keep their shape; feature vectors become the most
// square exact h x w (784: Fashion-MNIST's 28 x 28), a prime length a row.
TEST(Trajectory, FrameShapeOfImagesAndVectors) {
  auto shape_of = [](int64_t d, std::vector<int64_t> item) {
    Dataset ds(2, d, std::vector<float>(static_cast<size_t>(2 * d), 1.f));
    ds.item_shape = std::move(item);
    return image_shape(ds);
  };
  EXPECT_EQ(shape_of(20, {4, 5}), std::make_pair(4, 5));
  EXPECT_EQ(shape_of(20, {5, 4}), std::make_pair(5, 4));
  EXPECT_EQ(shape_of(784, {784}), std::make_pair(28, 28));
  EXPECT_EQ(shape_of(12, {12}), std::make_pair(3, 4));
  EXPECT_EQ(shape_of(1000, {1000}), std::make_pair(25, 40));
  EXPECT_EQ(shape_of(7, {7}), std::make_pair(1, 7));
  EXPECT_EQ(shape_of(1, {1}), std::make_pair(1, 1));
  EXPECT_EQ(shape_of(1 << 20, {}), std::make_pair(1024, 1024));
}

TEST(Trajectory, CoordinateOrderAndBinsOfEqualCount) {
  const std::vector<double> c = {5, 0, 1, 1, 3, 2, 2, 3, 4, 4, 0, 5, 6, 6, 9, 9};  // 8 points, m = 2
  const std::vector<int64_t> index = {70, 71, 72, 73, 74, 75, 76, 77};
  const EmbeddedPoints p = points_of(c, 2, &index);
  const TrajectoryOrder o = order_by_coordinate(p, 1);
  EXPECT_EQ(o.points, (std::vector<int64_t>{5, 1, 3, 2, 4, 0, 6, 7}));
  EXPECT_EQ(o.description, "dc1");
  const auto bins = split_into_bins(p, o, 3);  // 8 points: 2, 3, 3
  ASSERT_EQ(bins.size(), 3u);
  EXPECT_EQ(bins[0].points, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(bins[0].rows, (std::vector<int64_t>{75, 71}));
  EXPECT_EQ(bins[1].points.size() + bins[2].points.size(), 6u);
  EXPECT_DOUBLE_EQ(bins[0].mean_coordinate[0], 0.5);
  EXPECT_DOUBLE_EQ(bins[0].mean_coordinate[1], 3.0);
  EXPECT_DOUBLE_EQ(bins[0].mean_position, 0.5);
  EXPECT_EQ(order_by_coordinate(p, 2).points.front(), 0);

  // Errors name the option.
  try {
    order_by_coordinate(p, 3);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--coordinate 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(order_by_coordinate(p, 0), UsageError);
  try {
    split_into_bins(p, o, 9);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--bins 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(split_into_bins(p, o, 0), UsageError);
  EXPECT_THROW(order_by_phase(p, 1, 1), UsageError);
  EXPECT_THROW(order_by_phase(p, 1, 3), UsageError);
}

TEST(Trajectory, BinMeansEqualTheBruteForceMean) {
  const int64_t rows = 300, n = 250;
  Dataset ds = testing_support::random_dataset(rows, 6 * 5, 11);
  ds.item_shape = {6, 5};
  // An embedding of some rows only (as after a disconnected graph), shuffled.
  std::vector<int64_t> index(rows);
  std::iota(index.begin(), index.end(), int64_t{0});
  std::mt19937_64 rng(2);
  std::shuffle(index.begin(), index.end(), rng);
  index.resize(n);
  std::vector<double> coords;
  std::normal_distribution<double> g;
  for (int64_t i = 0; i < n * 3; ++i) coords.push_back(g(rng));
  const EmbeddedPoints p = points_of(coords, 3, &index);
  const TrajectoryOrder o = order_by_coordinate(p, 2);
  Progress progress;
  const TrajectoryFrames f = compute_frames(ds, split_into_bins(p, o, 7), o.description, progress);
  ASSERT_EQ(f.count(), 7u);
  EXPECT_EQ(f.height, 6);
  EXPECT_EQ(f.width, 5);
  size_t members = 0;
  for (size_t b = 0; b < f.count(); ++b) {
    members += f.bins[b].rows.size();
    for (int64_t j = 0; j < ds.cols(); ++j) {
      double sum = 0;
      for (int64_t r : f.bins[b].rows) sum += ds.row(r)[j];
      EXPECT_NEAR(f.frame(b)[j], sum / static_cast<double>(f.bins[b].rows.size()), 1e-5)
          << "bin " << b << " pixel " << j;
    }
    // Members are the ordered points' dataset rows.
    for (size_t k = 0; k < f.bins[b].points.size(); ++k)
      EXPECT_EQ(f.bins[b].rows[k], index[static_cast<size_t>(f.bins[b].points[k])]);
  }
  EXPECT_EQ(members, static_cast<size_t>(n));

  // A row beyond the dataset is an error naming it, not a read past the end.
  auto bins = split_into_bins(p, o, 7);
  bins[0].rows[0] = rows;
  EXPECT_THROW(compute_frames(ds, bins, "", progress), Error);

  // Cancelled before the first image: Cancelled, not a partial result.
  std::atomic<bool> cancel{true};
  Progress cancelled(nullptr, &cancel, 0);
  EXPECT_THROW(compute_frames(ds, split_into_bins(p, o, 7), "", cancelled), Cancelled);
}

TEST(Trajectory, PathOrderFollowsArcLengthWithinTheTube) {
  // The path (0,0) -> (2,0) -> (2,2) in dc1, dc3; points beside it at known
  // arc lengths, and two points far from it.
  const std::vector<double> path = {0, 0, 2, 0, 2, 2};
  const std::vector<double> arc = {3.5, 0.2, 1.9, 2.6, 0.9, 1.2, 3.9};
  std::vector<double> c;  // m = 3: dc1, dc2 (ignored), dc3
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> off(-0.05, 0.05);
  for (double s : arc) {
    const double x = s <= 2 ? s : 2, y = s <= 2 ? 0 : s - 2;
    c.insert(c.end(), {x + (s > 2 ? off(rng) : 0), 100 * off(rng), y + (s <= 2 ? off(rng) : 0)});
  }
  c.insert(c.end(), {0.5, 0, 1.5});  // 7: 1.5 from the path
  c.insert(c.end(), {5, 0, 5});      // 8: far
  const EmbeddedPoints p = points_of(c, 3);
  PathOptions opt;
  opt.axes = {1, 3};
  opt.tube = 0.2;
  const TrajectoryOrder o = order_along_path(p, path, 2, opt);
  EXPECT_EQ(o.points, (std::vector<int64_t>{1, 4, 5, 2, 3, 0, 6}));
  for (size_t i = 0; i < o.points.size(); ++i)
    EXPECT_NEAR(o.position[i], arc[static_cast<size_t>(o.points[i])], 0.06) << "point " << o.points[i];
  EXPECT_EQ(o.description, "path of 3 vertices in dc1, dc3");
  // The automatic tube (0.1 x the largest extent, here 0.5 and a little
  // noise) leaves point 7 out too.
  opt.tube = 0;
  EXPECT_NEAR(automatic_tube(p, opt.axes), 0.5, 0.01);
  EXPECT_EQ(order_along_path(p, path, 2, opt).points.size(), 7u);
  // A tube that holds every point; an infinite one (the CLI's --tube 0)
  // holds every point however far.
  opt.tube = 10;
  EXPECT_EQ(order_along_path(p, path, 2, opt).points.size(), 9u);
  opt.tube = std::numeric_limits<double>::infinity();
  EXPECT_EQ(order_along_path(p, path, 2, opt).points.size(), 9u);
  opt.tube = -1;
  EXPECT_THROW(order_along_path(p, path, 2, opt), UsageError);
  opt.tube = std::nan("");
  EXPECT_THROW(order_along_path(p, path, 2, opt), UsageError);
  // A tiny tube is named as given, not rounded to 0.000000.
  opt.tube = 1e-9;
  const std::string none = testing_support::message_of([&] { order_along_path(p, {50, 50, 60, 60}, 2, opt); });
  EXPECT_NE(none.find("within 1e-09 of the path"), std::string::npos) << none;
  // Errors.
  opt.tube = 0.2;
  EXPECT_THROW(order_along_path(p, {0, 0}, 2, opt), UsageError);     // one vertex
  EXPECT_THROW(order_along_path(p, {0, 0, 1}, 2, opt), UsageError);  // not P x 2
  opt.axes = {1, 4};
  EXPECT_THROW(order_along_path(p, path, 2, opt), UsageError);  // dc4 missing
  opt.axes = {1, 3};
  EXPECT_THROW(order_along_path(p, {50, 50, 60, 60}, 2, opt), UsageError);  // nothing in the tube
}

TEST(Trajectory, SimulatedRotationPlaysInOrderOfTheTrueAngle) {
  // A full turn: the embedding is a loop, read once around by its phase.
  const Rotation r = simulate_rotation(800, 2 * M_PI);
  ASSERT_GE(r.embedding.m, 2);
  EmbeddedPoints p;
  p.n = r.embedding.n;
  p.m = r.embedding.m;
  p.coordinates = r.embedding.coordinates.data();
  p.point_index = r.embedding.point_index.data();
  const TrajectoryOrder o = order_by_phase(p, 1, 2);
  Progress progress;
  const TrajectoryFrames f = compute_frames(r.images, split_into_bins(p, o, 40), o.description, progress);
  const double rho = spearman_with_order(unwrapped(bin_mean_angles(f.bins, r.angles, true)));
  std::printf("phase of dc1, dc2, 40 bins over a full turn: Spearman %.4f\n", rho);
  EXPECT_GE(std::abs(rho), 0.95);

  // A drawn path once around the loop orders it the same way.
  std::vector<double> path;
  double radius = 0;
  for (int64_t i = 0; i < p.n; ++i) radius += std::hypot(p.at(i, 0), p.at(i, 1)) / static_cast<double>(p.n);
  for (int v = 0; v <= 24; ++v)
    path.insert(path.end(),
                {radius * std::cos(-M_PI + 2 * M_PI * v / 24.0), radius * std::sin(-M_PI + 2 * M_PI * v / 24.0)});
  const TrajectoryOrder along = order_along_path(p, path, 2);
  EXPECT_GE(static_cast<double>(along.points.size()), 0.9 * static_cast<double>(p.n));
  const double rho_path = spearman_with_order(unwrapped(bin_mean_angles(split_into_bins(p, along, 40), r.angles,
                                                                        true)));
  std::printf("path around the loop, 40 bins: Spearman %.4f\n", rho_path);
  EXPECT_GE(std::abs(rho_path), 0.95);
}

TEST(Trajectory, SimulatedArcPlaysInOrderOfTheTrueAngleAlongDc1) {
  // Part of a turn: an arc, along which dc1 is monotone.
  const Rotation r = simulate_rotation(900, 0.6 * M_PI);
  EmbeddedPoints p;
  p.n = r.embedding.n;
  p.m = r.embedding.m;
  p.coordinates = r.embedding.coordinates.data();
  p.point_index = r.embedding.point_index.data();
  const TrajectoryOrder o = order_by_coordinate(p, 1);
  const double rho = spearman_with_order(bin_mean_angles(split_into_bins(p, o, 20), r.angles, false));
  std::printf("dc1, 20 bins over %lld patterns of 0.6 pi: Spearman %.4f\n", static_cast<long long>(p.n), rho);
  EXPECT_GE(std::abs(rho), 0.95);
}

TEST(Movie, ContrastIsSharedPercentilesAndScaleEnlargesByBlocks) {
  TrajectoryFrames f = synthetic_frames(4, 10, 25);  // 1000 values
  // Replace the values by 0..999 spread over the frames.
  std::iota(f.images.begin(), f.images.end(), 0.f);
  MovieOptions o;
  o.scale = 2;
  const auto [lo, hi] = movie_contrast(f, o);
  EXPECT_NEAR(lo, 5, 1);
  EXPECT_NEAR(hi, 994, 1);
  const GreyFrames g = render_frames(f, o);
  EXPECT_EQ(g.width, 50);
  EXPECT_EQ(g.height, 20);
  EXPECT_EQ(g.count, 4u);
  EXPECT_EQ(g.frame(0)[0], 0);                         // value 0 < low
  EXPECT_EQ(g.frame(3)[g.width * g.height - 1], 255);  // 999 > high
  EXPECT_EQ(g.frame(1)[0], g.frame(1)[1]);             // a 2 x 2 block
  EXPECT_EQ(g.frame(1)[0], g.frame(1)[g.width]);
  EXPECT_EQ(movie_scale(28, 28, 0), 10);  // smallest factor to 256 or more
  EXPECT_EQ(movie_scale(512, 300, 0), 1);
  EXPECT_EQ(movie_scale(4, 4, 0), 16);  // at most 16
  o.fps = 0;
  EXPECT_THROW(render_frames(f, o), UsageError);
  o.fps = 10;
  o.scale = -1;
  EXPECT_THROW(render_frames(f, o), UsageError);
}

TEST(Movie, PngSeriesReadsBackFrameForFrame) {
  TempDir t;
  MovieOptions o;
  o.scale = 3;
  const TrajectoryFrames f = synthetic_frames(6, 7, 9);
  const GreyFrames g = render_frames(f, o);
  const std::string dir = t / "frames";
  EXPECT_EQ(write_movie(dir, movie_format_for(dir), g, 10, trajectory_metadata(f, g, 10)), "png");
  const Dataset back = load_dataset(dir);  // core's folder reader (libpng)
  ASSERT_EQ(back.rows(), 6);
  EXPECT_EQ(back.item_shape, (std::vector<int64_t>{21, 27}));
  for (size_t i = 0; i < g.count; ++i)
    for (int64_t j = 0; j < back.cols(); ++j) ASSERT_EQ(back.row(static_cast<int64_t>(i))[j], g.frame(i)[j]) << i;
  std::ifstream in(dir + "/trajectory.json");
  const auto meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["frames"], 6);
  EXPECT_EQ(meta["scale"], 3);
  EXPECT_EQ(meta["bins"].size(), 6u);
  EXPECT_EQ(meta["contrast"]["rule"], "0.5 and 99.5 percentiles of every pixel of every frame -> 0 and 255");
  // A folder that holds files is refused (frames of two movies would mix).
  EXPECT_THROW(write_movie(dir, MovieFormat::PngSeries, g, 10), UsageError);
  EXPECT_THROW(movie_format_for(t / "movie.avi"), UsageError);
  EXPECT_EQ(movie_format_for(t / "movie.GIF"), MovieFormat::Gif);
  EXPECT_EQ(movie_format_for(t / "movie.mp4"), MovieFormat::Mp4);
}

TEST(Movie, GifReadsBackThroughLibavformat) {
  if (!have_video_encoding()) GTEST_SKIP() << "built without FFmpeg";
  TempDir t;
  MovieOptions o;
  o.scale = 3;
  const TrajectoryFrames f = synthetic_frames(7, 10, 12);
  const GreyFrames g = render_frames(f, o);
  const std::string path = t / "movie.gif";
  EXPECT_EQ(write_movie(path, MovieFormat::Gif, g, 5), "gif");
  std::vector<std::vector<uint8_t>> grey;
  const MovieInfo info = read_movie(path, &grey);
  EXPECT_EQ(info.frames, 7);
  EXPECT_EQ(info.width, 36);
  EXPECT_EQ(info.height, 30);
  EXPECT_NEAR(info.seconds_per_frame, 0.2, 1e-9);
  ASSERT_EQ(grey.size(), 7u);
  // 256 grey levels are lossless in a GIF.
  for (size_t i = 0; i < grey.size(); ++i)
    for (size_t j = 0; j < grey[i].size(); ++j)
      ASSERT_NEAR(grey[i][j], g.frame(i)[j], 1) << "frame " << i << " pixel " << j;
  // Nothing is left behind where the movie cannot be written.
  EXPECT_THROW(write_movie(t / "missing/movie.gif", MovieFormat::Gif, g, 5), Error);
  EXPECT_FALSE(fs::exists(t / "missing"));
}

TEST(Movie, Mp4ReadsBackThroughLibavformat) {
  if (!have_video_encoding()) GTEST_SKIP() << "built without FFmpeg";
  TempDir t;
  MovieOptions o;
  o.scale = 1;
  const TrajectoryFrames f = synthetic_frames(12, 13, 11);  // odd: padded to 12 x 14
  const GreyFrames g = render_frames(f, o);
  const std::string path = t / "movie.mp4";
  const std::string codec = write_movie(path, MovieFormat::Mp4, g, 12);
  std::printf("MP4 codec: %s\n", codec.c_str());
  std::vector<std::vector<uint8_t>> grey;
  const MovieInfo info = read_movie(path, &grey);
  EXPECT_EQ(info.frames, 12);
  EXPECT_EQ(info.width, 12);
  EXPECT_EQ(info.height, 14);
  EXPECT_NEAR(info.seconds_per_frame, 1.0 / 12, 1e-6);
  // Lossy, but the bright block is where it was put (column k..k+2 of frame k).
  for (size_t k = 0; k + 3 <= 11 && k < grey.size(); ++k) {
    const uint8_t* row = grey[k].data() + 6 * 12;
    EXPECT_GT(row[k + 1], row[(k + 6) % 11] + 40) << "frame " << k;
  }
}
