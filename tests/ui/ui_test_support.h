#pragma once
// Helpers shared by the GUI tests: generated datasets (never all zeros) and
// pixel statistics of rendered frames.
#include <QColor>
#include <QImage>
#include <QString>

#include <cstdint>
#include <vector>

namespace manifold::ui::test {

/// n images of h x w pixels: a bright elongated spot whose orientation turns
/// with the image index (one full turn over the stack) plus seeded noise, so
/// the stack lies on a circle. Written as float32 .npy to `path`.
void write_rotating_spot_npy(const QString& path, int n, int h, int w, uint32_t seed = 7);
std::vector<float> rotating_spot_images(int n, int h, int w, uint32_t seed = 7);

struct PixelStats {
  int64_t total = 0;
  int64_t black = 0;          ///< r, g, b all below 16
  int64_t near_background = 0;
  int64_t distinct_colours = 0;
};
PixelStats pixel_stats(const QImage& image, QColor background, int tolerance = 12);

/// Directory where tests leave their artefacts (screenshots), from
/// MANIFOLD_TEST_OUTPUT or the temp directory.
QString output_dir();

/// The Fashion-MNIST test images (t10k-images-idx3-ubyte.gz) in the folder
/// MANIFOLD_FASHION_MNIST_DIR names (CMake sets it for CTest), or "" when
/// they are not there.
QString fashion_mnist_images();

}  // namespace manifold::ui::test
