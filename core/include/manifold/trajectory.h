#pragma once
// Trajectories through an embedding: the points put in order (along one
// diffusion coordinate, around the phase of two, or along a polyline drawn in
// embedding space), split into bins of equal count, and each bin shown as
// the mean image of its points, so noise averages out frame by frame.
//
//   order_by_coordinate  points sorted by dc_c (ties by embedding position)
//   order_by_phase       points sorted by atan2(dc_b, dc_a) in [-pi, pi):
//                        a closed loop (a rotation) read once around
//   order_along_path     points within `tube` of a polyline P x q (its
//                        columns the coordinates `axes`), sorted by the arc
//                        length of their nearest point on the path
//   split_into_bins      B bins of equal count: bin b holds the points
//                        [floor(b n / B), floor((b+1) n / B)) of the order
//   compute_frames       each bin's mean image (float32, from the dataset's
//                        rows), streamed row by row; progress and cancel
#include <cstdint>
#include <string>
#include <vector>

#include "manifold/dataset.h"
#include "manifold/progress.h"

namespace manifold {

/// The embedded points a trajectory is taken from (not owned).
struct EmbeddedPoints {
  int64_t n = 0;                         ///< points
  int m = 0;                             ///< coordinates per point
  const double* coordinates = nullptr;   ///< n x m, row-major (dc1..dcm)
  const int64_t* point_index = nullptr;  ///< dataset row of each point; null = row i is point i
  int64_t row_of(int64_t point) const { return point_index ? point_index[point] : point; }
  double at(int64_t point, int c) const { return coordinates[point * m + c]; }
};

/// Points in trajectory order.
struct TrajectoryOrder {
  std::vector<int64_t> points;   ///< positions in the embedding (0..n-1), in order
  std::vector<double> position;  ///< per ordered point: dc value, phase (radians) or arc length
  std::string description;       ///< "dc1", "phase of dc1, dc2", "path of 5 vertices in dc1, dc2"
};

/// `coordinate` is 1-based (dc1 = 1). UsageError naming --coordinate when out of range.
TrajectoryOrder order_by_coordinate(const EmbeddedPoints& points, int coordinate);

/// Orders by atan2(dc_b, dc_a) (both 1-based, different). UsageError naming --phase.
TrajectoryOrder order_by_phase(const EmbeddedPoints& points, int a, int b);

struct PathOptions {
  /// 1-based coordinates of the path's columns; empty = 1..q (q = its columns).
  std::vector<int> axes;
  /// Points farther than this from the path are left out; 0 = automatic:
  /// 0.1 x the largest extent (max - min) of the points along the axes (the
  /// explorer's); infinity = every point (the CLI's --tube 0).
  double tube = 0;
};

/// `path` is P x q row-major (P >= 2 vertices). Points at equal arc length
/// keep their embedding order. UsageError naming --path/--axes/--tube for a
/// bad path, or when no point lies within the tube.
TrajectoryOrder order_along_path(const EmbeddedPoints& points, const std::vector<double>& path, int q,
                                 const PathOptions& options = {});

/// The tube order_along_path uses for `options.tube` = 0.
double automatic_tube(const EmbeddedPoints& points, const std::vector<int>& axes);

struct TrajectoryBin {
  std::vector<int64_t> points;          ///< embedding positions, in trajectory order
  std::vector<int64_t> rows;            ///< dataset rows of the same points
  std::vector<double> mean_coordinate;  ///< m values: the mean of dc1..dcm over the bin
  double mean_position = 0;             ///< the mean of the order's position over the bin
};

/// `bins` in [1, n]: UsageError naming --bins otherwise.
std::vector<TrajectoryBin> split_into_bins(const EmbeddedPoints& points, const TrajectoryOrder& order, int bins);

struct TrajectoryFrames {
  int height = 0, width = 0;  ///< image shape (height x width = the dataset's columns)
  std::vector<TrajectoryBin> bins;
  std::vector<float> images;  ///< bins x height x width: the mean image of each bin
  std::string description;    ///< the order's description
  const float* frame(size_t b) const { return images.data() + b * static_cast<size_t>(height) * width; }
  size_t count() const { return bins.size(); }
};

/// The image shape of a dataset row: item_shape's last two dimensions; for
/// vectors the most square h x w with h * w = d (784: 28 x 28; 1 x d for a
/// prime d), so a movie of feature vectors that are images is watchable.
std::pair<int, int> image_shape(const Dataset& data);

/// Mean image of every bin, summed in float64 over its rows (read in
/// ascending row order, for a memory-mapped stack). Progress stage "frames"
/// counts images; cancellable. Error when a bin names a row the dataset lacks.
TrajectoryFrames compute_frames(const Dataset& data, std::vector<TrajectoryBin> bins, const std::string& description,
                                Progress& progress, int threads = 0);

}  // namespace manifold
