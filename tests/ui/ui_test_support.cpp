#include "ui_test_support.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include <cmath>
#include <random>

#include "backends/backends.h"
#include "manifold/error.h"
#include "manifold/knn.h"
#include "manifold/npy.h"
#include "manifold/pdb.h"
#include "manifold/ui/main_window.h"

namespace manifold::ui::test {

namespace {

/// True once `spy` has caught its signal, counting one sent before the wait
/// began (some steps finish inside the call that starts them).
bool arrived(QSignalSpy& spy, int ms) { return !spy.isEmpty() || spy.wait(ms); }

}  // namespace

void start_gui_tests() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName("ManifoldExplorerTests");
  register_all_backends();
}

bool show_window(QWidget& w, QSize size) {
  w.resize(size);
  w.show();
  return QTest::qWaitForWindowExposed(&w);
}

void use_cpu(MainWindow& w, int k, int components) {
  ParameterPanel* params = w.parameterPanel();
  if (k > 0) params->kEditor()->setValue(k);
  if (components > 0) params->componentsEditor()->setValue(components);
  params->backendEditor()->setCurrentIndex(params->backendEditor()->findData("cpu"));
}

bool open_file(MainWindow& w, const QString& path, int ms) {
  QSignalSpy opened(&w, &MainWindow::datasetOpened);
  w.openFile(path);
  if (arrived(opened, ms)) return true;
  qWarning("%s did not open: %s", qPrintable(path), qPrintable(w.lastError()));
  return false;
}

bool run_now(MainWindow& w, int ms) {
  QSignalSpy shown(&w, &MainWindow::embeddingShown);
  w.runNow();
  if (arrived(shown, ms)) return true;
  qWarning("no embedding: %s | %s", qPrintable(w.lastError()), qPrintable(w.progressText()));
  return false;
}

bool open_session(MainWindow& w, const QString& path, int ms) {
  QSignalSpy shown(&w, &MainWindow::embeddingShown);
  w.openSession(path);
  if (arrived(shown, ms)) return true;
  qWarning("no embedding from %s: %s | %s", qPrintable(path), qPrintable(w.lastError()), qPrintable(w.progressText()));
  return false;
}

bool open_and_run(MainWindow& w, const QString& path) { return open_file(w, path) && run_now(w); }

void lasso(EmbeddingView* view, const QRect& r) {
  view->setTool(EmbeddingView::Tool::LassoSelect);
  QTest::mousePress(view, Qt::LeftButton, {}, r.topLeft());
  QTest::mouseMove(view, r.topRight());
  QTest::mouseMove(view, r.bottomRight());
  QTest::mouseMove(view, r.bottomLeft());
  QTest::mouseRelease(view, Qt::LeftButton, {}, r.bottomLeft());
  view->setTool(EmbeddingView::Tool::Navigate);
}

QPushButton* button(const QWidget& w, const QString& text) {
  for (auto* b : w.findChildren<QPushButton*>())
    if (b->text() == text) return b;
  return nullptr;
}

std::vector<float> rotating_spot_images(int n, int h, int w, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n) * h * w);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 0.02f);
  const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
  const double sa = w / 4.0, sb = w / 12.0;
  for (int i = 0; i < n; ++i) {
    // The spot has a 180-degree symmetry, so one turn of the index is half a
    // turn of the spot: images i and n-1 are neighbours, closing the circle.
    const double angle = M_PI * i / n;
    const double c = std::cos(angle), s = std::sin(angle);
    float* img = v.data() + static_cast<size_t>(i) * h * w;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const double dx = x - cx, dy = y - cy;
        const double u = c * dx + s * dy, t = -s * dx + c * dy;
        img[y * w + x] = static_cast<float>(std::exp(-0.5 * (u * u / (sa * sa) + t * t / (sb * sb)))) + noise(rng);
      }
  }
  return v;
}

QString write_rotating_spot_npy(const QString& path, int n, int h, int w, uint32_t seed) {
  const auto v = rotating_spot_images(n, h, w, seed);
  npy::write(path.toStdString(), v.data(), {n, h, w});
  return path;
}

PixelStats pixel_stats(const QImage& image, QColor background, int tolerance) {
  PixelStats s;
  const QImage img = image.convertToFormat(QImage::Format_RGB32);
  QSet<QRgb> colours;
  for (int y = 0; y < img.height(); ++y) {
    const QRgb* line = reinterpret_cast<const QRgb*>(img.constScanLine(y));
    for (int x = 0; x < img.width(); ++x) {
      const QRgb p = line[x];
      ++s.total;
      if (qRed(p) < 16 && qGreen(p) < 16 && qBlue(p) < 16) ++s.black;
      if (std::abs(qRed(p) - background.red()) <= tolerance && std::abs(qGreen(p) - background.green()) <= tolerance &&
          std::abs(qBlue(p) - background.blue()) <= tolerance)
        ++s.near_background;
      if (colours.size() < 100000) colours.insert(p & 0xffffff);
    }
  }
  s.distinct_colours = colours.size();
  return s;
}

EmbeddedRotation embedded_rotation(int64_t count, uint64_t seed) {
  std::string pdb;
  try {
    pdb = find_packaged_pdb("1ubq");
  } catch (const Error&) {
    return {};
  }
  DiffractionParams p;
  p.count = count;
  p.size = 24;
  p.axis = "x";
  p.seed = seed;
  Progress quiet;
  EmbeddedRotation r;
  r.images = simulate_diffraction(read_pdb(pdb), p, quiet);
  std::vector<float> v = r.images.images;
  anscombe_transform(v.data(), static_cast<int64_t>(v.size()));
  const Dataset stabilised(count, static_cast<int64_t>(p.size) * p.size, std::move(v));
  register_cpu_backend();
  KnnParams kp;
  kp.k = 20;
  DiffusionParams dp;
  dp.components = 4;
  r.embedding = diffusion_map(make_backend("cpu")->build(stabilised, kp, quiet), dp, quiet);
  return r;
}

QString output_dir() {
  const QByteArray env = qgetenv("MANIFOLD_TEST_OUTPUT");
  QString dir = env.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(env);
  QDir().mkpath(dir);
  return dir;
}

QString fashion_mnist_images() {
  const QByteArray env = qgetenv("MANIFOLD_FASHION_MNIST_DIR");
  if (env.isEmpty()) return {};
  const QString path = QDir(QString::fromLocal8Bit(env)).filePath(QStringLiteral("t10k-images-idx3-ubyte.gz"));
  return QFileInfo::exists(path) ? path : QString();
}

}  // namespace manifold::ui::test
