// Putting embedded points in trajectory order and splitting the order into
// bins of equal count (see trajectory.h for the rules).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "manifold/error.h"
#include "manifold/trajectory.h"

namespace manifold {

namespace {

void require_points(const EmbeddedPoints& p) {
  if (p.n <= 0 || p.m <= 0 || !p.coordinates) throw UsageError("trajectory: the embedding holds no points");
}

/// Sorts positions 0..n-1 by key, ties by position (a stable order).
TrajectoryOrder sorted_by(const std::vector<double>& key, std::string description) {
  TrajectoryOrder o;
  o.points.resize(key.size());
  std::iota(o.points.begin(), o.points.end(), int64_t{0});
  std::stable_sort(o.points.begin(), o.points.end(),
                   [&](int64_t a, int64_t b) { return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)]; });
  o.position.reserve(key.size());
  for (int64_t i : o.points) o.position.push_back(key[static_cast<size_t>(i)]);
  o.description = std::move(description);
  return o;
}

std::string dc(int c) { return "dc" + std::to_string(c); }

std::string axes_text(const std::vector<int>& axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + dc(axes[i]);
  return s;
}

/// Distance from x to the segment [a, b] (q dimensions) and the parameter
/// t in [0, 1] of its nearest point.
std::pair<double, double> segment_distance(const double* x, const double* a, const double* b, int q) {
  double ab2 = 0, axab = 0;
  for (int j = 0; j < q; ++j) {
    ab2 += (b[j] - a[j]) * (b[j] - a[j]);
    axab += (x[j] - a[j]) * (b[j] - a[j]);
  }
  const double t = ab2 > 0 ? std::clamp(axab / ab2, 0.0, 1.0) : 0.0;
  double d2 = 0;
  for (int j = 0; j < q; ++j) {
    const double nearest = a[j] + t * (b[j] - a[j]);
    d2 += (x[j] - nearest) * (x[j] - nearest);
  }
  return {std::sqrt(d2), t};
}

}  // namespace

TrajectoryOrder order_by_coordinate(const EmbeddedPoints& p, int coordinate) {
  require_points(p);
  if (coordinate < 1 || coordinate > p.m)
    throw UsageError("--coordinate " + std::to_string(coordinate) + ": the embedding has dc1..dc" +
                     std::to_string(p.m));
  std::vector<double> key(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.n; ++i) key[static_cast<size_t>(i)] = p.at(i, coordinate - 1);
  return sorted_by(key, dc(coordinate));
}

TrajectoryOrder order_by_phase(const EmbeddedPoints& p, int a, int b) {
  require_points(p);
  for (int c : {a, b})
    if (c < 1 || c > p.m)
      throw UsageError("--phase " + std::to_string(a) + "," + std::to_string(b) + ": the embedding has dc1..dc" +
                       std::to_string(p.m));
  if (a == b)
    throw UsageError("--phase " + std::to_string(a) + "," + std::to_string(b) + ": needs two different coordinates");
  std::vector<double> key(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.n; ++i) key[static_cast<size_t>(i)] = std::atan2(p.at(i, b - 1), p.at(i, a - 1));
  return sorted_by(key, "phase of " + dc(a) + ", " + dc(b));
}

double automatic_tube(const EmbeddedPoints& p, const std::vector<int>& axes) {
  double extent = 0;
  for (int c : axes) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t i = 0; i < p.n; ++i) {
      lo = std::min(lo, p.at(i, c - 1));
      hi = std::max(hi, p.at(i, c - 1));
    }
    extent = std::max(extent, hi - lo);
  }
  return 0.1 * extent;
}

TrajectoryOrder order_along_path(const EmbeddedPoints& p, const std::vector<double>& path, int q,
                                 const PathOptions& options) {
  require_points(p);
  if (q < 1 || path.size() % static_cast<size_t>(q) != 0 || path.size() / static_cast<size_t>(q) < 2)
    throw UsageError("--path: a path needs at least 2 vertices of 1 or more coordinates (P x q)");
  for (double v : path)
    if (!std::isfinite(v)) throw UsageError("--path: a vertex is not finite");
  std::vector<int> axes = options.axes;
  if (axes.empty())
    for (int c = 1; c <= q; ++c) axes.push_back(c);
  if (static_cast<int>(axes.size()) != q)
    throw UsageError("--axes: " + std::to_string(axes.size()) + " coordinates for a path of " + std::to_string(q) +
                     " columns");
  for (int c : axes)
    if (c < 1 || c > p.m)
      throw UsageError("--axes: " + dc(c) + " is not in the embedding (dc1..dc" + std::to_string(p.m) + ")");
  if (!(options.tube >= 0)) throw UsageError("--tube: must be a number >= 0");
  const double tube = options.tube > 0 ? options.tube : automatic_tube(p, axes);

  // Arc length at each vertex.
  const size_t vertices = path.size() / static_cast<size_t>(q);
  std::vector<double> arc(vertices, 0.0);
  for (size_t v = 1; v < vertices; ++v) {
    double s2 = 0;
    for (int j = 0; j < q; ++j) {
      const double d = path[v * q + j] - path[(v - 1) * q + j];
      s2 += d * d;
    }
    arc[v] = arc[v - 1] + std::sqrt(s2);
  }

  // Each point's nearest point on the path (the first segment wins a tie)
  // and its arc length; points outside the tube are left out.
  std::vector<int64_t> kept;
  std::vector<double> key;
  std::vector<double> x(static_cast<size_t>(q));
  for (int64_t i = 0; i < p.n; ++i) {
    for (int j = 0; j < q; ++j) x[static_cast<size_t>(j)] = p.at(i, axes[static_cast<size_t>(j)] - 1);
    double best = std::numeric_limits<double>::infinity(), best_arc = 0;
    for (size_t v = 0; v + 1 < vertices; ++v) {
      auto [d, t] = segment_distance(x.data(), &path[v * q], &path[(v + 1) * q], q);
      if (d < best) {
        best = d;
        best_arc = arc[v] + t * (arc[v + 1] - arc[v]);
      }
    }
    if (best <= tube) {
      kept.push_back(i);
      key.push_back(best_arc);
    }
  }
  if (kept.empty()) {
    char within[32];
    std::snprintf(within, sizeof within, "%.6g", tube);  // 1e-9, not to_string's 0.000000
    throw UsageError("--path: no point lies within " + std::string(within) + " of the path (--tube)");
  }
  TrajectoryOrder o = sorted_by(key, "path of " + std::to_string(vertices) + " vertices in " + axes_text(axes));
  for (int64_t& i : o.points) i = kept[static_cast<size_t>(i)];
  return o;
}

std::vector<TrajectoryBin> split_into_bins(const EmbeddedPoints& p, const TrajectoryOrder& order, int bins) {
  const int64_t n = static_cast<int64_t>(order.points.size());
  if (bins < 1 || bins > n)
    throw UsageError("--bins " + std::to_string(bins) + ": must be between 1 and the " + std::to_string(n) +
                     " points of the trajectory");
  std::vector<TrajectoryBin> out(static_cast<size_t>(bins));
  for (int b = 0; b < bins; ++b) {
    TrajectoryBin& bin = out[static_cast<size_t>(b)];
    const int64_t begin = b * n / bins, end = (b + 1) * n / bins;
    bin.mean_coordinate.assign(static_cast<size_t>(p.m), 0.0);
    for (int64_t k = begin; k < end; ++k) {
      const int64_t point = order.points[static_cast<size_t>(k)];
      bin.points.push_back(point);
      bin.rows.push_back(p.row_of(point));
      for (int c = 0; c < p.m; ++c) bin.mean_coordinate[static_cast<size_t>(c)] += p.at(point, c);
      bin.mean_position += order.position[static_cast<size_t>(k)];
    }
    const double count = static_cast<double>(end - begin);
    for (double& v : bin.mean_coordinate) v /= count;
    bin.mean_position /= count;
  }
  return out;
}

}  // namespace manifold
