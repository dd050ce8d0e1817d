// Measurements for docs/ui.md and the report: frame time of the view with a
// million points, picking and lasso cost, the hover image from a
// memory-mapped stack of as many images, and re-embedding latency (parameter
// change to the view updated) for 100,000 points, and the gallery's
// selection and sort at 70,000 images. Run under xvfb-run like the tests:
//   measure_ui [VIEW_POINTS=1000000] [EMBED_POINTS=100000] [HOVER_IMAGES=VIEW_POINTS] [GALLERY_IMAGES=70000]
// Prints one line per figure; asserts nothing (speed is measured, not tested).
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include <QTemporaryDir>

#include "manifold/npy.h"
#include "manifold/ui/embedding_view.h"
#include "manifold/ui/image_panel.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// A free-hand-like outline around the view's centre: 120 vertices on a wavy circle.
QPolygonF lasso_outline(QPointF centre, double radius) {
  QPolygonF outline;
  for (int i = 0; i < 120; ++i) {
    const double a = 2 * M_PI * i / 120, r = radius * (1 + 0.15 * std::sin(5 * a));
    outline << centre + QPointF(r * std::cos(a), r * std::sin(a));
  }
  return outline;
}

struct LassoTimes {
  int repeats = 7;
  double after_rotation_ms = 0, warm_ms = 0, mouse_ms = 0;
  size_t selected = 0;
};

LassoTimes measure_lasso(EmbeddingView& view) {
  LassoTimes out;
  const QPolygonF outline = lasso_outline(QPointF(600, 400), 220);
  std::vector<double> cold, warm;
  QElapsedTimer timer;
  for (int i = 0; i < out.repeats; ++i) {
    view.rotateCamera(3, 0);  // every point must be projected again
    timer.start();
    view.pointsInPolygon(outline);
    cold.push_back(timer.nsecsElapsed() / 1e6);
    timer.restart();
    out.selected = view.pointsInPolygon(outline).size();
    warm.push_back(timer.nsecsElapsed() / 1e6);
  }
  out.after_rotation_ms = median(cold);
  out.warm_ms = median(warm);
  // The whole gesture as the user makes it; the release selects.
  view.setTool(EmbeddingView::Tool::LassoSelect);
  view.rotateCamera(3, 0);
  QTest::mousePress(&view, Qt::LeftButton, {}, outline.first().toPoint());
  for (const QPointF& p : outline) QTest::mouseMove(&view, p.toPoint());
  timer.restart();
  QTest::mouseRelease(&view, Qt::LeftButton, {}, outline.first().toPoint());
  out.mouse_ms = timer.nsecsElapsed() / 1e6;
  view.setTool(EmbeddingView::Tool::Navigate);
  return out;
}

/// The image panel showing the image under the cursor, for images of a
/// memory-mapped .npy stack (n images of 16 x 16 float32).
void measure_hover_image(int64_t n) {
  QTemporaryDir dir;
  const QString path = dir.filePath("stack.npy");
  {
    std::vector<float> images(static_cast<size_t>(n) * 256);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (auto& v : images) v = u(rng);
    npy::write(path.toStdString(), images.data(), {n, 16, 16});
  }
  QElapsedTimer timer;
  timer.start();
  auto ds = loadDataset(path);
  const double open_ms = timer.nsecsElapsed() / 1e6;
  ImagePanel panel;
  panel.resize(300, 360);
  panel.show();
  if (!QTest::qWaitForWindowExposed(&panel)) std::printf("the image panel was never exposed\n");
  panel.setDataset(ds);
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int64_t> row(0, n - 1);
  std::vector<double> hover;
  for (int i = 0; i < 50; ++i) {
    const int64_t r = row(rng);
    timer.restart();
    panel.setHovered(r, QStringLiteral("\u03c81 = 0.1, \u03c82 = 0.2, \u03c83 = 0.3"));
    panel.repaint();
    hover.push_back(timer.nsecsElapsed() / 1e6);
  }
  std::printf("hover image: %lld images of 16x16 float32 in a memory-mapped .npy (%s), opened in %.0f ms\n",
              static_cast<long long>(n), ds->data.memory_mapped() ? "mapped" : "NOT mapped", open_ms);
  std::printf("  image panel showing a random image (render + paint), median of %zu: %.2f ms (max %.2f ms)\n",
              hover.size(), median(hover), *std::max_element(hover.begin(), hover.end()));
}

// A left drag as the user makes it, painted event by event (the level of
// detail): each frame's milliseconds, the full-detail frame after the
// release last.
std::vector<double> drag_frames(EmbeddingView& view) {
  std::vector<double> frames;
  const auto c = QObject::connect(&view, &EmbeddingView::frameRendered, &view,
                                  [&frames](double ms) { frames.push_back(ms); });
  QTest::mousePress(&view, Qt::LeftButton, {}, QPoint(600, 400));
  for (int x = 600; x < 800; x += 10) {
    QTest::mouseMove(&view, QPoint(x, 400));
    view.repaint();
  }
  QTest::mouseRelease(&view, Qt::LeftButton, {}, QPoint(800, 400));
  view.repaint();
  QObject::disconnect(c);
  return frames;
}

void measure_view(int64_t n) {
  // A noisy trefoil knot: a 1-D manifold in 3-D that fills the view.
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.f, 0.08f);
  std::vector<float> xyz(static_cast<size_t>(n) * 3);
  PointColours colours;
  colours.values.resize(static_cast<size_t>(n));
  colours.title = "t";
  for (int64_t i = 0; i < n; ++i) {
    const double t = 2 * M_PI * static_cast<double>(i) / n;
    xyz[3 * i] = static_cast<float>(std::sin(t) + 2 * std::sin(2 * t)) + g(rng);
    xyz[3 * i + 1] = static_cast<float>(std::cos(t) - 2 * std::cos(2 * t)) + g(rng);
    xyz[3 * i + 2] = static_cast<float>(-std::sin(3 * t)) + g(rng);
    colours.values[static_cast<size_t>(i)] = static_cast<float>(t);
  }
  EmbeddingView view;
  view.resize(1200, 800);
  view.show();
  if (!QTest::qWaitForWindowExposed(&view)) std::printf("the view was never exposed\n");
  view.setPointSize(2);
  QElapsedTimer timer;
  timer.start();
  view.setPoints(xyz, false, {"x", "y", "z"}, true);
  const double points_ms = timer.nsecsElapsed() / 1e6;
  timer.restart();
  view.setColours(colours);
  const double colours_ms = timer.nsecsElapsed() / 1e6;
  timer.restart();
  view.renderFrame();
  const double first_ms = timer.nsecsElapsed() / 1e6;
  // A new embedding of the same size, as a re-embedding delivers it.
  for (auto& c : xyz) c *= 1.01f;
  timer.restart();
  view.setPoints(xyz, false, {"x", "y", "z"}, false);
  view.setColours(colours);
  view.renderFrame();
  const double update_ms = timer.nsecsElapsed() / 1e6;

  std::vector<double> full;
  for (int i = 0; i < 10; ++i) {
    view.rotateCamera(4, 1);
    view.renderFrame();
    full.push_back(view.lastFrameMs());
  }
  // Interaction as the user does it: a left drag, painted event by event,
  // which draws the level-of-detail subset.
  std::vector<double> drag = drag_frames(view);
  const double settle = drag.empty() ? 0 : drag.back();
  if (!drag.empty()) drag.pop_back();
  timer.restart();
  const int64_t hit = view.pointAt(QPointF(600, 400), 8);
  const double pick_cold = timer.nsecsElapsed() / 1e6;
  timer.restart();
  for (int i = 0; i < 10; ++i) view.pointAt(QPointF(500 + 10 * i, 400), 8);
  const double pick_warm = timer.nsecsElapsed() / 1e6 / 10;
  timer.restart();
  const auto inside = view.pointsInPolygon(QPolygonF(QRectF(300, 200, 600, 400)));
  const double select_ms = timer.nsecsElapsed() / 1e6;
  const LassoTimes lasso = measure_lasso(view);
  // A drag with the lasso's selection (~824,000 points) drawn over the cloud.
  const size_t selected_count = view.selection().size();
  std::vector<double> selected_drag = drag_frames(view);
  if (!selected_drag.empty()) selected_drag.pop_back();
  // The subset's size against the drag frame: the level of detail's budget.
  std::vector<std::pair<int64_t, double>> subsets;
  view.setSelection({});
  for (int64_t lod : {150000, 125000, 100000, 80000, 60000}) {
    view.setLodThreshold(lod);
    view.setPoints(xyz, false, {"x", "y", "z"}, false);  // draws a new subset
    view.setColours(colours);
    view.renderFrame();
    std::vector<double> frames = drag_frames(view);
    if (!frames.empty()) frames.pop_back();
    subsets.emplace_back(lod, median(frames));
  }

  std::printf("view: %lld points, 1200x800 window, point size 2 (Xvfb + Mesa llvmpipe, software OpenGL)\n",
              static_cast<long long>(n));
  std::printf("  first frame: points %.0f ms, colours %.0f ms, first render (upload + draw + read-back) %.0f ms\n",
              points_ms, colours_ms, first_ms);
  std::printf("  new coordinates for the same points (a re-embedding), drawn: %.0f ms\n", update_ms);
  std::printf("  full-detail frame, median of 10: %.0f ms (%.1f frames/s)\n", median(full), 1000 / median(full));
  std::printf("  frame while dragging (level of detail), median of %zu: %.0f ms (%.1f frames/s)\n", drag.size(),
              median(drag), drag.empty() ? 0 : 1000 / median(drag));
  std::printf("  full-detail frame after release: %.0f ms\n", settle);
  std::printf("  frame while dragging with %zu points selected, median of %zu: %.0f ms\n", selected_count,
              selected_drag.size(), median(selected_drag));
  std::printf("  frame while dragging, median of 20, by subset size:");
  for (const auto& [lod, ms] : subsets) std::printf(" %lld: %.0f ms;", static_cast<long long>(lod), ms);
  std::printf("\n");
  std::printf("  hover pick: %.1f ms after a camera change (projection), %.2f ms otherwise (hit %lld)\n", pick_cold,
              pick_warm, static_cast<long long>(hit));
  std::printf("  rectangle selection: %.1f ms (%zu points)\n", select_ms, inside.size());
  std::printf(
      "  lasso selection (a 120-vertex outline), median of %d: %.1f ms after a camera change, %.1f ms "
      "otherwise; drawn with the mouse, release to selection: %.1f ms (%zu points)\n",
      lasso.repeats, lasso.after_rotation_ms, lasso.warm_ms, lasso.mouse_ms, lasso.selected);
}

void measure_reembed(int64_t n) {
  // A noisy Swiss roll in 3-D: the classic diffusion-map test manifold.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> g(0, 0.05);
  std::vector<float> v(static_cast<size_t>(n) * 3);
  for (int64_t i = 0; i < n; ++i) {
    const double t = 1.5 * M_PI * (1 + 2 * u(rng)), h = 21 * u(rng);
    v[3 * i] = static_cast<float>(t * std::cos(t) + g(rng));
    v[3 * i + 1] = static_cast<float>(h + g(rng));
    v[3 * i + 2] = static_cast<float>(t * std::sin(t) + g(rng));
  }
  Dataset data(n, 3, std::move(v));
  data.source = "swiss roll";
  data.format = "generated";
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) std::printf("the window was never exposed\n");
  QSignalSpy shown(&w, &MainWindow::embeddingShown), errors(&w, &MainWindow::errorShown);
  ParameterPanel* p = w.parameterPanel();
  p->backendEditor()->setCurrentIndex(p->backendEditor()->findData("cpu"));
  p->kEditor()->setValue(15);
  p->componentsEditor()->setValue(4);
  QElapsedTimer timer;
  timer.start();
  w.openDataset(adoptDataset(std::move(data), "swiss roll", "generated", false), true);
  if (!shown.wait(1800000)) {
    std::printf("re-embedding: the first run did not finish: %s\n",
                errors.isEmpty() ? "timeout" : qPrintable(errors.last().at(0).toString()));
    return;
  }
  const auto first = w.outcome();
  std::printf("re-embedding: %lld points (Swiss roll, d = 3), k = 15, 4 components, CPU\n", static_cast<long long>(n));
  std::printf("  first run: graph %.1f s, diffusion map %.2f s\n", first->knn_seconds, first->embed_seconds);

  // The warm-start preview: timed from the edit to the view redrawn with it.
  QElapsedTimer t;
  double preview_ms = -1, preview_residual = -1;
  QObject::connect(&w, &MainWindow::previewShown, &w, [&] {
    w.view()->repaint();
    preview_ms = t.nsecsElapsed() / 1e6;
    preview_residual = w.outcome()->residual;
  });
  auto change = [&](const char* what, auto&& edit) {
    shown.clear();
    preview_ms = -1;
    t.start();
    edit();
    if (!shown.wait(600000)) {
      std::printf("  %s: no result (%s)\n", what,
                  errors.isEmpty() ? "timeout" : qPrintable(errors.last().at(0).toString()));
      return;
    }
    w.view()->repaint();  // the view drawn with the new points
    const double total = t.nsecsElapsed() / 1e6;
    const auto o = w.outcome();
    std::printf("  %s: %.0f ms from the edit to the view redrawn (diffusion map %.0f ms, graph %s)\n", what, total,
                o->embed_seconds * 1000, o->graph_reused ? "reused" : "rebuilt");
    if (preview_ms >= 0)
      std::printf("    warm-start preview shown after %.0f ms (residual %.2g)\n", preview_ms, preview_residual);
  };
  change("k 15 -> 10", [&] { p->kEditor()->setValue(10); });
  change("epsilon median -> automatic (BGH)",
         [&] { p->epsilonModeEditor()->setCurrentIndex(p->epsilonModeEditor()->findData("auto")); });
  change("alpha 1 -> 0.5", [&] { p->alphaEditor()->setValue(0.5); });
  change("t 1 -> 3 (no eigensolve)", [&] { p->timeEditor()->setValue(3); });
}

// The gallery at n images of 28x28 with ten labels: Ctrl+A, a scattered
// selection from the view (every other image: n/2 separate ranges), a sort
// that keeps it, a click that replaces it, and the mean image on the worker.
void measure_gallery(int64_t n) {
  std::vector<float> values(static_cast<size_t>(n) * 784);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (float& v : values) v = u(rng);
  Dataset d(n, 784, std::move(values));
  d.item_shape = {28, 28};
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<int32_t>((i * 7) % 10));
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) std::printf("the window was never exposed\n");
  w.openDataset(adoptDataset(std::move(d), "gallery", "measure_ui", false), false);
  QListView* gallery = w.datasetPanel()->gallery();
  QApplication::processEvents();
  auto timed = [](auto&& work) {
    QElapsedTimer clock;
    clock.start();
    work();
    QApplication::processEvents();  // the repaint of what changed
    return static_cast<double>(clock.nsecsElapsed()) / 1e6;
  };
  auto wait_mean = [&] {
    QElapsedTimer clock;
    clock.start();
    while (w.selectionMean().empty() && clock.elapsed() < 60000) QTest::qWait(1);
    return static_cast<double>(clock.elapsed());
  };
  gallery->setFocus();
  const double select_all = timed([&] { QTest::keyClick(gallery, Qt::Key_A, Qt::ControlModifier); });
  const double mean_all = wait_mean();
  std::vector<int64_t> every_other;
  for (int64_t i = 0; i < n; i += 2) every_other.push_back(i);
  const double scattered = timed([&] { w.setSelectedRows(every_other); });
  wait_mean();
  const QModelIndex second = gallery->model()->index(1, 0);
  const double ctrl_click = timed([&] {
    QTest::mouseClick(gallery->viewport(), Qt::LeftButton, Qt::ControlModifier, gallery->visualRect(second).center());
  });
  const size_t after_ctrl_click = w.selectedRows().size();
  wait_mean();
  const double sort = timed([&] { w.datasetPanel()->setSortKey(QStringLiteral("label")); });
  const double unsort = timed([&] { w.datasetPanel()->setSortKey(QString()); });
  const QModelIndex first = gallery->model()->index(0, 0);
  const double click = timed([&] {
    QTest::mouseClick(gallery->viewport(), Qt::LeftButton, {}, gallery->visualRect(first).center());
  });
  std::printf("gallery: %lld images of 28x28, ten labels (selection panel, breakdown and gallery updated)\n",
              static_cast<long long>(n));
  std::printf("  Ctrl+A in the gallery: %.0f ms; mean image of all on the worker: %.0f ms later\n", select_all,
              mean_all);
  std::printf("  a selection of every other image from the view (%zu ranges): %.0f ms\n", every_other.size(),
              scattered);
  std::printf("  a Ctrl-click adding one image to it: %.0f ms (%zu selected)\n", ctrl_click, after_ctrl_click);
  std::printf("  sort by label keeping that selection: %.0f ms; back to dataset order: %.0f ms\n", sort, unsort);
  std::printf("  a click replacing it with one image: %.0f ms\n", click);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  t::start_gui_tests();
  const int64_t view_points = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int64_t embed_points = argc > 2 ? std::atoll(argv[2]) : 100000;
  const int64_t hover_images = argc > 3 ? std::atoll(argv[3]) : view_points;
  const int64_t gallery_images = argc > 4 ? std::atoll(argv[4]) : 70000;
  if (gallery_images > 0) measure_gallery(gallery_images);
  std::fflush(stdout);
  if (view_points > 0) measure_view(view_points);
  std::fflush(stdout);
  if (hover_images > 0) measure_hover_image(hover_images);
  std::fflush(stdout);
  if (embed_points > 0) measure_reembed(embed_points);
  return 0;
}
