// The VTK view hosted in a Qt 6 widget: it draws, picks and selects.
#include <QSignalSpy>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "manifold/ui/embedding_view.h"
#include "ui_test_support.h"

using manifold::ui::EmbeddingView;
using manifold::ui::PointColours;
namespace t = manifold::ui::test;

namespace {
const QColor kBackground = EmbeddingView::backgroundColour();

// A helix: every point apart from the others, none at the origin.
std::vector<float> helix(int n) {
  std::vector<float> xyz(3 * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double a = 6 * M_PI * i / n;
    xyz[3 * i] = static_cast<float>(std::cos(a));
    xyz[3 * i + 1] = static_cast<float>(std::sin(a));
    xyz[3 * i + 2] = static_cast<float>(2.0 * i / n - 1.0);
  }
  return xyz;
}
}  // namespace

class TestEmbeddingView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void drawsPoints() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(640, 480)));
    const int n = 2000;
    view.setPoints(helix(n), false, {"x", "y", "z"}, true);
    PointColours c;
    for (int i = 0; i < n; ++i) c.values.push_back(static_cast<float>(i));
    c.title = "index";
    view.setColours(c);
    view.setPointSize(4);
    const QImage frame = view.renderFrame();
    QCOMPARE(frame.width(), 640);
    const t::PixelStats s = t::pixel_stats(frame, kBackground);
    qInfo("frame: %lld px, %lld background, %lld black, %lld colours, %.1f ms", (long long)s.total,
          (long long)s.near_background, (long long)s.black, (long long)s.distinct_colours, view.lastFrameMs());
    frame.save(t::output_dir() + "/embedding_view.png");
    QVERIFY2(s.black < s.total / 2, "the view is mostly black");
    QVERIFY2(s.near_background > s.total / 4, "the background is missing");
    QVERIFY2(s.total - s.near_background > 2000, "too few points drawn");
    QVERIFY2(s.distinct_colours > 50, "the colour map is not applied");
  }

  // Hover and click find the point drawn under the cursor, through the VTK
  // camera's projection; a drag with the rectangle tool selects exactly the
  // points drawn inside it.
  void picksAndSelects() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(600, 500)));
    const int n = 400;
    view.setPoints(helix(n), false, {}, true);
    view.renderFrame();
    QSignalSpy hovered(&view, &EmbeddingView::hovered);
    QSignalSpy picked(&view, &EmbeddingView::picked);
    int checked = 0;
    for (int i : {5, 100, 233, 390}) {
      const QPointF p = view.projectedPosition(i);
      QVERIFY(view.rect().contains(p.toPoint()));
      // Neighbours on the helix are a few pixels apart: the nearest wins.
      QCOMPARE(view.pointAt(p, 3), static_cast<int64_t>(i));
      hovered.clear();
      QTest::mouseMove(&view, p.toPoint());
      QTRY_VERIFY(!hovered.isEmpty());
      const int64_t got = hovered.last().at(0).toLongLong();
      QVERIFY2(std::abs(got - i) <= 1, qPrintable(QString("hovered %1 for %2").arg(got).arg(i)));
      ++checked;
    }
    QCOMPARE(checked, 4);
    QCOMPARE(view.pointAt(QPointF(2, 2), 6), int64_t(-1));

    const QPoint target = view.projectedPosition(77).toPoint();
    QTest::mouseClick(&view, Qt::LeftButton, {}, target);
    QCOMPARE(picked.size(), 1);
    QVERIFY(std::abs(picked.last().at(0).toLongLong() - 77) <= 1);
    QCOMPARE(view.pinned(), picked.last().at(0).toLongLong());

    view.setTool(EmbeddingView::Tool::RectangleSelect);
    QSignalSpy selected(&view, &EmbeddingView::selectionChanged);
    const QRect box(QPoint(150, 120), QPoint(400, 330));
    QTest::mousePress(&view, Qt::LeftButton, {}, box.topLeft());
    QTest::mouseMove(&view, box.center());
    QTest::mouseMove(&view, box.bottomRight());
    QTest::mouseRelease(&view, Qt::LeftButton, {}, box.bottomRight());
    QCOMPARE(selected.size(), 1);
    std::vector<int64_t> expected;
    for (int i = 0; i < n; ++i) {
      const QPointF p = view.projectedPosition(i);
      if (QRectF(box).contains(p)) expected.push_back(i);
    }
    QVERIFY(expected.size() > 10 && expected.size() < static_cast<size_t>(n));
    // Pixels on the rectangle's edge may fall either way; everything else must agree.
    const auto& got = view.selection();
    int disagree = 0;
    for (int i = 0; i < n; ++i) {
      const bool in_got = std::binary_search(got.begin(), got.end(), int64_t(i));
      const bool in_expected = std::binary_search(expected.begin(), expected.end(), int64_t(i));
      if (in_got != in_expected) {
        const QPointF p = view.projectedPosition(i);
        const double edge = std::min({std::abs(p.x() - box.left()), std::abs(p.x() - box.right()),
                                      std::abs(p.y() - box.top()), std::abs(p.y() - box.bottom())});
        QVERIFY2(edge < 1.5, qPrintable(QString("point %1 wrongly %2").arg(i).arg(in_got ? "selected" : "left out")));
        ++disagree;
      }
    }
    QVERIFY(disagree <= 2);

    // The selection is drawn: magenta pixels appear.
    const QImage frame = view.renderFrame();
    int magenta = 0;
    for (int y = 0; y < frame.height(); ++y)
      for (int x = 0; x < frame.width(); ++x) {
        const QColor c = frame.pixelColor(x, y);
        magenta += c.red() > 200 && c.green() < 60 && c.blue() > 200;
      }
    QVERIFY2(magenta > 50, "selected points are not highlighted");
  }

  // The trajectory's current bin is drawn as black discs in a light edge:
  // around a highlighted point the frame holds both black (it reads on
  // light points) and near-white (on the dark background: black alone did
  // not) pixels, and neither appears where nothing is highlighted.
  void highlightReadsOnTheBackground() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(500, 400)));
    const int n = 400;
    view.setPoints(helix(n), true, {"x", "y", "z"}, true);
    PointColours c;
    for (int i = 0; i < n; ++i) c.values.push_back(static_cast<float>(i % 7));
    c.title = "mod 7";
    view.setColours(c);
    view.setPointSize(3);
    const int row = 100;
    const QPointF p = view.projectedPosition(row);
    const QImage frame_dpr = view.renderFrame();
    const double scale = frame_dpr.width() / static_cast<double>(view.width());
    const QRect around(static_cast<int>(p.x() * scale) - 12, static_cast<int>(p.y() * scale) - 12, 25, 25);
    const auto count = [&](const QImage& frame, bool black) {
      int hits = 0;
      for (int y = around.top(); y <= around.bottom(); ++y)
        for (int x = around.left(); x <= around.right(); ++x) {
          if (!frame.rect().contains(x, y)) continue;
          const QColor q = frame.pixelColor(x, y);
          hits += black ? (q.red() < 20 && q.green() < 20 && q.blue() < 20)
                        : (q.red() > 235 && q.green() > 235 && q.blue() > 235);
        }
      return hits;
    };
    QCOMPARE(count(frame_dpr, true), 0);
    QCOMPARE(count(frame_dpr, false), 0);
    view.setHighlight({row});
    const QImage lit = view.renderFrame();
    lit.save(t::output_dir() + "/highlight_edge.png");
    QVERIFY2(count(lit, true) >= 9, qPrintable(QString("%1 black pixels").arg(count(lit, true))));
    QVERIFY2(count(lit, false) >= 9, qPrintable(QString("%1 near-white pixels").arg(count(lit, false))));
  }

  // A left drag rotates the camera (VTK's trackball style gets the events):
  // the drawn frame changes, and the projected positions move.
  void dragRotates() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(500, 400)));
    view.setPoints(helix(1000), false, {}, true);
    const QImage before = view.renderFrame();
    const QPointF p_before = view.projectedPosition(500);
    QTest::mousePress(&view, Qt::LeftButton, {}, QPoint(250, 200));
    for (int x = 250; x <= 330; x += 10) QTest::mouseMove(&view, QPoint(x, 200));
    QTest::mouseRelease(&view, Qt::LeftButton, {}, QPoint(330, 200));
    const QImage after = view.renderFrame();
    QVERIFY(before != after);
    QVERIFY((view.projectedPosition(500) - p_before).manhattanLength() > 2);

    // Planar mode: a parallel projection in which z does not move the points.
    std::vector<float> xyz = helix(1000);
    view.setPoints(xyz, true, {}, true);
    const QPointF a = view.projectedPosition(10);
    for (size_t i = 2; i < xyz.size(); i += 3) xyz[i] = 5.f;
    view.setPoints(xyz, true, {}, false);
    QCOMPARE(view.projectedPosition(10), a);
  }

  // While the mouse drags, a large point set is drawn as its level-of-detail
  // subset and so is its selection (else a large selection would cost a
  // drag as much as the full cloud); at rest, every selected point.
  void dragDrawsTheSelectionsSubset() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(500, 400)));
    view.setLodThreshold(1000);
    // A grid whose points lie apart, so the pixels drawn count the points.
    const int n = 4000;  // every 4th point while dragging
    std::vector<float> grid;
    for (int i = 0; i < n; ++i) grid.insert(grid.end(), {static_cast<float>(i % 80), static_cast<float>(i / 80), 0.f});
    view.setPoints(grid, true, {}, true);
    view.setPointSize(3);
    std::vector<int64_t> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    view.setSelection(all);
    auto magenta = [](const QImage& image) {
      int64_t count = 0;
      for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
          const QColor c = image.pixelColor(x, y);
          count += c.red() > 200 && c.green() < 60 && c.blue() > 200;
        }
      return count;
    };
    const int64_t at_rest = magenta(view.grab().toImage());
    // A pan by one pixel: the points stay where they were, near enough.
    QTest::mousePress(&view, Qt::MiddleButton, {}, QPoint(250, 200));
    QTest::mouseMove(&view, QPoint(251, 200));
    const int64_t dragging = magenta(view.grab().toImage());
    QTest::mouseRelease(&view, Qt::MiddleButton, {}, QPoint(251, 200));
    const int64_t released = magenta(view.grab().toImage());
    qInfo("selected pixels: %lld at rest, %lld dragging", static_cast<long long>(at_rest),
          static_cast<long long>(dragging));
    QVERIFY2(dragging > 0 && dragging < 0.6 * at_rest, "the drag draws every selected point");
    QVERIFY2(std::abs(released - at_rest) < at_rest / 20, qPrintable(QString::number(released)));
  }
};

QTEST_MAIN(TestEmbeddingView)
#include "test_embedding_view.moc"
