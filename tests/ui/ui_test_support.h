#pragma once
// Helpers shared by the GUI tests: the set-up every test starts with, a main
// window opened, run and driven as a user would, generated datasets (never
// all zeros) and pixel statistics of rendered frames.
#include <QColor>
#include <QImage>
#include <QRect>
#include <QSize>
#include <QString>

#include <cstdint>
#include <vector>

#include "manifold/diffusion_map.h"
#include "manifold/simulate.h"

class QPushButton;
class QWidget;

namespace manifold::ui {
class EmbeddingView;
class MainWindow;
}  // namespace manifold::ui

/// Runs one phase of a test, a function that checks with QVERIFY and
/// QCOMPARE (which return from that function on failure), and ends the test
/// where the phase failed.
#define TEST_PHASE(call)                    \
  do {                                      \
    call;                                   \
    if (QTest::currentTestFailed()) return; \
  } while (false)

namespace manifold::ui::test {

/// What every GUI test starts with (its initTestCase): settings in Qt's test
/// location under one organisation name, so recent files and remembered
/// folders never touch the user's, and the backends the explorer's main
/// registers.
void start_gui_tests();

/// Shows `w` at `size` and waits until it is on screen (the view draws only
/// then). False when it never is.
bool show_window(QWidget& w, QSize size = QSize(1300, 850));

/// Pins what a test compares against: the CPU backend (the same graph on
/// every machine), and k and the number of components where they are > 0.
void use_cpu(MainWindow& w, int k = 0, int components = 0);

/// Opens `path` in `w` and waits for it; false, with the window's error as a
/// warning, when it does not open within `ms`.
bool open_file(MainWindow& w, const QString& path, int ms = 60000);
/// Presses Run and waits for the embedding; false, with the error and the
/// progress line as a warning, when none is shown within `ms`.
bool run_now(MainWindow& w, int ms = 120000);
/// Opens the session at `path` in `w` and waits for its embedding; false,
/// with the error as a warning, when none is shown within `ms`.
bool open_session(MainWindow& w, const QString& path, int ms = 120000);
/// open_file, then run_now.
bool open_and_run(MainWindow& w, const QString& path);

/// Draws a lasso through the corners of `r` in `view` with the mouse, then
/// returns the view to navigating.
void lasso(EmbeddingView* view, const QRect& r);

/// The push button in `w` that reads `text`, or nullptr.
QPushButton* button(const QWidget& w, const QString& text);

/// n images of h x w pixels: a bright elongated spot whose orientation turns
/// with the image index (one full turn over the stack) plus seeded noise, so
/// the stack lies on a circle. Written as float32 .npy to `path`, which is
/// returned.
QString write_rotating_spot_npy(const QString& path, int n, int h, int w, uint32_t seed = 7);
std::vector<float> rotating_spot_images(int n, int h, int w, uint32_t seed = 7);

struct PixelStats {
  int64_t total = 0;
  int64_t black = 0;  ///< r, g, b all below 16
  int64_t near_background = 0;
  int64_t distinct_colours = 0;
};
PixelStats pixel_stats(const QImage& image, QColor background, int tolerance = 12);

/// A rotation of ubiquitin about x (`count` photon-counted 24 x 24 patterns,
/// seeded) embedded as `manifold run --demo` embeds it: the Anscombe-
/// transformed patterns' k = 20 graph on the CPU, 4 diffusion coordinates.
/// No images (count 0) when freesasa's 1ubq.pdb is not installed.
struct EmbeddedRotation {
  DiffractionImages images;  ///< raw photon counts and true angles
  DiffusionResult embedding;
};
EmbeddedRotation embedded_rotation(int64_t count, uint64_t seed);

/// Directory where tests leave their artefacts (screenshots), from
/// MANIFOLD_TEST_OUTPUT or the temp directory.
QString output_dir();

/// The Fashion-MNIST test images (t10k-images-idx3-ubyte.gz) in the folder
/// MANIFOLD_FASHION_MNIST_DIR names (CMake sets it for CTest), or "" when
/// they are not there.
QString fashion_mnist_images();

}  // namespace manifold::ui::test
