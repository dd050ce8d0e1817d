// The real main window under Xvfb with the built-in demo embedded: the saved
// PNG must show the points (not a blank or black view). The PNG is left in
// the test output folder (docs/screenshot.png is one of these).
#include <QSignalSpy>
#include <QtTest>

#include "manifold/ui/embedding_view.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold::ui;
namespace t = manifold::ui::test;

class TestScreenshot : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { t::start_gui_tests(); }

  void demoWindow() {
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1440, 900)));
    QSignalSpy shown(&w, &MainWindow::embeddingShown), errors(&w, &MainWindow::errorShown);
    w.openDemo(true);
    QVERIFY2(shown.wait(120000), errors.isEmpty() ? "no embedding" : qPrintable(errors.last().at(0).toString()));
    QVERIFY(w.dataset()->demo);
    QCOMPARE(w.view()->pointCount(), w.outcome()->result->n);
    QVERIFY(w.outcome()->result->n > 100);

    // Pin the point drawn nearest the middle of the view, as a click would.
    EmbeddingView* view = w.view();
    view->renderFrame();
    int64_t pick = -1;
    for (int r = 4; r < 400 && pick < 0; r += 8)
      pick = view->pointAt(QPointF(view->width() / 2.0, view->height() / 2.0), r);
    QVERIFY(pick >= 0);
    QTest::mouseClick(view, Qt::LeftButton, {}, view->projectedPosition(pick).toPoint());
    QVERIFY(w.imagePanel()->pinnedRow() >= 0);
    QCoreApplication::processEvents();

    const QImage window = w.grab().toImage();
    const QString path = t::output_dir() + "/screenshot.png";
    QVERIFY(window.save(path));
    qInfo("saved %s (%dx%d)", qPrintable(path), window.width(), window.height());

    // The view's part of the saved window.
    const QRect area(view->mapTo(&w, QPoint(0, 0)) * window.devicePixelRatio(),
                     view->size() * window.devicePixelRatio());
    const QImage shot = QImage(path).copy(area);
    const QColor background = EmbeddingView::backgroundColour();
    const t::PixelStats s = t::pixel_stats(shot, background);
    qInfo("view: %lld px, %lld background, %lld black, %lld colours", static_cast<long long>(s.total),
          static_cast<long long>(s.near_background), static_cast<long long>(s.black),
          static_cast<long long>(s.distinct_colours));
    QVERIFY2(s.black < s.total / 20, "the view is black");
    QVERIFY2(s.near_background > s.total / 3, "the view has no background: blank or garbled");
    QVERIFY2(s.distinct_colours > 100, "the view is nearly uniform");
    // The points carry the colour map: saturated reds and blues of the
    // diverging map, which neither the background nor the axes have.
    int64_t red = 0, blue = 0;
    for (int y = 0; y < shot.height(); ++y)
      for (int x = 0; x < shot.width(); ++x) {
        const QColor c = shot.pixelColor(x, y);
        red += c.red() > 150 && c.red() > c.blue() + 60 && c.red() > c.green() + 40;
        blue += c.blue() > 150 && c.blue() > c.red() + 60 && c.blue() > c.green() + 30;
      }
    qInfo("coloured point pixels: %lld red, %lld blue", static_cast<long long>(red), static_cast<long long>(blue));
    QVERIFY2(red > 300 && blue > 300, "the coloured points are missing");
    // The image panel shows the pinned pattern.
    QVERIFY(!w.imagePanel()->shownImage().isNull());
  }
};

QTEST_MAIN(TestScreenshot)
#include "test_screenshot.moc"
