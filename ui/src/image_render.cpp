#include "manifold/ui/image_render.h"

#include <algorithm>
#include <utility>
#include <cmath>
#include <vector>

namespace manifold::ui {

QImage renderRow(const LoadedDataset& ds, int64_t row, int max_side, bool log_scale) {
  return renderRow(ds, row, max_side, log_scale, Contrast{});
}

namespace {

/// The values at the clip_percent and 100 - clip_percent percentiles of the valid pixels.
std::pair<float, float> stretch_range(const std::vector<float>& out, const std::vector<uint8_t>& valid,
                                      double clip_percent) {
  std::vector<float> values;
  values.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (valid[i]) values.push_back(out[i]);
  if (values.empty()) return {0.f, 1.f};
  const double clip = std::clamp(clip_percent, 0.0, 49.0) / 100.0;
  const auto at = [&values](double q) {
    const size_t k = std::min(values.size() - 1, static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5));
    std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(k), values.end());
    return values[k];
  };
  const float lo = clip > 0 ? at(clip) : *std::min_element(values.begin(), values.end());
  const float hi = clip > 0 ? at(1.0 - clip) : *std::max_element(values.begin(), values.end());
  return {lo, hi};
}

}  // namespace

QImage renderRow(const LoadedDataset& ds, int64_t row, int max_side, bool log_scale, const Contrast& contrast) {
  if (row < 0 || row >= ds.rows()) return {};
  const int h = ds.image_height, w = ds.image_width;
  const int64_t cols = ds.data.cols();
  const float* v = ds.data.row(row);
  // Pixels the detector mask leaves out (hot pixels, gaps) are drawn black
  // and set no contrast: one hot pixel would otherwise stretch every frame
  // to black.
  const uint8_t* usable = ds.mask.pixels() == cols ? ds.mask.valid.data() : nullptr;
  const int longest = std::max(h, w);
  const int step = max_side > 0 ? std::max(1, (longest + max_side - 1) / max_side) : 1;
  const int oh = (h + step - 1) / step, ow = (w + step - 1) / step;
  // At most 3 x 3 samples per output pixel: enough to keep noise from aliasing.
  const int sub = std::min(step, 3);
  std::vector<float> out(static_cast<size_t>(oh) * ow);
  std::vector<uint8_t> valid(out.size(), 0);
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox) {
      double sum = 0;
      int count = 0;
      for (int sy = 0; sy < sub; ++sy)
        for (int sx = 0; sx < sub; ++sx) {
          const int y = oy * step + (sy * step) / sub, x = ox * step + (sx * step) / sub;
          if (y >= h || x >= w) continue;
          const int64_t idx = static_cast<int64_t>(y) * w + x;
          if (idx >= cols) continue;  // padding of a feature vector drawn as an image
          if (usable && !usable[idx]) continue;
          sum += v[idx];
          ++count;
        }
      if (count) {
        out[static_cast<size_t>(oy) * ow + ox] = static_cast<float>(sum / count);
        valid[static_cast<size_t>(oy) * ow + ox] = 1;
      }
    }
  auto [lo, hi] = stretch_range(out, valid, contrast.clip_percent);
  if (!(lo < hi)) hi = lo + 1;
  const double inverse_gamma = contrast.gamma > 0 ? 1.0 / contrast.gamma : 1.0;
  const double span = hi - lo;
  const double log_norm = std::log1p(1000.0);
  QImage image(ow, oh, QImage::Format_Grayscale8);
  for (int y = 0; y < oh; ++y) {
    uchar* line = image.scanLine(y);
    for (int x = 0; x < ow; ++x) {
      const size_t i = static_cast<size_t>(y) * ow + x;
      double f = valid[i] ? (out[i] - lo) / span : 0.0;
      f = std::clamp(f, 0.0, 1.0);
      if (log_scale) f = std::log1p(1000.0 * f) / log_norm;
      if (inverse_gamma != 1.0) f = std::pow(f, inverse_gamma);
      line[x] = static_cast<uchar>(std::clamp(f, 0.0, 1.0) * 255.0 + 0.5);
    }
  }
  return image;
}

}  // namespace manifold::ui
