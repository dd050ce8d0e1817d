// Each bin's mean image, streamed from the dataset's rows.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "manifold/error.h"
#include "manifold/parallel.h"
#include "manifold/trajectory.h"

namespace manifold {

std::pair<int, int> image_shape(const Dataset& data) {
  const auto& s = data.item_shape;
  if (s.size() >= 2 && s[s.size() - 1] * s[s.size() - 2] == data.cols())
    return {static_cast<int>(s[s.size() - 2]), static_cast<int>(s[s.size() - 1])};
  const int64_t d = std::max<int64_t>(1, data.cols());
  auto h = static_cast<int64_t>(std::sqrt(static_cast<double>(d)));
  while (h * h > d) --h;  // sqrt's rounding
  while (d % h != 0) --h;
  return {static_cast<int>(h), static_cast<int>(d / h)};
}

TrajectoryFrames compute_frames(const Dataset& data, std::vector<TrajectoryBin> bins, const std::string& description,
                                Progress& progress, int threads) {
  if (data.empty()) throw Error("trajectory: the dataset holds no images");
  uint64_t total = 0;
  for (const TrajectoryBin& bin : bins) {
    if (bin.rows.empty()) throw UsageError("trajectory: a bin holds no points");
    for (int64_t r : bin.rows)
      if (r < 0 || r >= data.rows())
        throw Error((data.source.empty() ? std::string("dataset") : data.source) + ": the embedding names row " +
                    std::to_string(r) + " but the dataset has " + std::to_string(data.rows()) +
                    " rows (is it the data the embedding was made from?)");
    total += bin.rows.size();
  }
  TrajectoryFrames f;
  std::tie(f.height, f.width) = image_shape(data);
  f.description = description;
  const size_t d = static_cast<size_t>(data.cols());
  f.images.assign(bins.size() * d, 0.f);
  progress.stage("frames", total, "images");

  // One bin per task: its rows are read in ascending order (sequential
  // reads of a memory-mapped stack) and summed in float64, so a mean over
  // thousands of photon-count images keeps float32's precision.
  parallel_for(
      0, static_cast<int64_t>(bins.size()), threads,
      [&](int64_t b) {
    std::vector<int64_t> rows = bins[static_cast<size_t>(b)].rows;
    std::sort(rows.begin(), rows.end());
    std::vector<double> sum(d, 0.0);
    for (int64_t r : rows) {
      const float* x = data.row(r);
      for (size_t j = 0; j < d; ++j) sum[j] += x[j];
      progress.advance();
    }
    float* out = f.images.data() + static_cast<size_t>(b) * d;
    const double inv = 1.0 / static_cast<double>(rows.size());
    for (size_t j = 0; j < d; ++j) out[j] = static_cast<float>(sum[j] * inv);
      },
      1);
  progress.finish();
  f.bins = std::move(bins);
  return f;
}

}  // namespace manifold
