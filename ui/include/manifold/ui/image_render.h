#pragma once
// One dataset row drawn as a greyscale image, the same way in the gallery,
// the image panel and the selection strip.
#include <QImage>

#include <cstdint>

#include "manifold/ui/loaded_dataset.h"

namespace manifold::ui {

/// Renders row `row` at most `max_side` pixels on its longer side (0 = full
/// size). Larger images are box-filtered over a bounded number of samples per
/// output pixel, so a thumbnail costs about the same for any image size.
/// Contrast is stretched per image; `log_scale` compresses bright peaks
/// (diffraction patterns span several decades).
QImage renderRow(const LoadedDataset& ds, int64_t row, int max_side, bool log_scale);

/// How an image's values become grey levels in the image panel.
struct Contrast {
  /// Percent of the values clipped at each end (0 = the full range): a few
  /// hot pixels no longer squeeze the rest into black.
  double clip_percent = 0;
  /// Grey level = f^(1/gamma) of the stretched value f in [0, 1]: a gamma
  /// above 1 lifts faint detail, below 1 darkens it.
  double gamma = 1;
};

QImage renderRow(const LoadedDataset& ds, int64_t row, int max_side, bool log_scale, const Contrast& contrast);

}  // namespace manifold::ui
