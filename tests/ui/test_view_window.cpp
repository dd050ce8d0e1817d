// The view inside the main window, on the demo (2,000 diffraction patterns
// of a rotation, coloured by their angle in degrees): the colour bar
// labelled in degrees with its title whole at the usual window sizes, the
// view's controls all shown at 1280 and 1440 px, and the trajectory's path
// through pinned points drawn while the movie runs along it.
#include <QComboBox>
#include <QDockWidget>
#include <QSignalSpy>
#include <QToolBar>
#include <QtTest>

#include <algorithm>
#include <memory>

#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

class TestViewWindow : public QObject {
  Q_OBJECT

  std::unique_ptr<MainWindow> w_;

  // The window at `width` x `height`, or as near as its docks' minimum
  // widths let it come (about 1,280 px): then the view is as narrow as it gets.
  void resize_window(int width, int height) {
    w_->resize(width, height);
    QCoreApplication::processEvents();
    QTest::qWait(50);
    QVERIFY(w_->width() == width || w_->width() == w_->minimumSizeHint().width());
    qInfo("window %dx%d, view %dx%d", w_->width(), w_->height(), w_->view()->width(), w_->view()->height());
  }

  // Pins embedded point `e` with a click where it is drawn.
  bool pin_by_click(int64_t e) {
    EmbeddingView* view = w_->view();
    view->renderFrame();
    QTest::mouseClick(view, Qt::LeftButton, {}, view->projectedPosition(e).toPoint());
    QCoreApplication::processEvents();
    return w_->pinnedRow() >= 0;
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    w_ = std::make_unique<MainWindow>();
    w_->resize(1440, 900);
    w_->show();
    QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
    QSignalSpy shown(w_.get(), &MainWindow::embeddingShown), errors(w_.get(), &MainWindow::errorShown);
    w_->openDemo(true);
    QVERIFY2(shown.wait(180000), errors.isEmpty() ? "no embedding" : qPrintable(errors.last().at(0).toString()));
    QTRY_VERIFY_WITH_TIMEOUT(!w_->runner()->busy(), 60000);
  }

  void cleanupTestCase() { w_.reset(); }

  // The demo's angle column is in degrees: so is its colour bar.
  void angleColourBarInDegrees() {
    const QString angle = tr("rotation angle (deg)");
    QCOMPARE(w_->colourKey(), angle);
    QCOMPARE(w_->view()->colourTitle(), angle);
    QCOMPARE(w_->view()->colourBarLabels(), QStringList({"0", "90", "180", "270", "360"}));
  }

  // At the sizes the window is used at, the title is drawn whole inside the
  // strip, and every point lies left of the colour bar (after the window
  // was resized and after Reset view).
  void colourBarTitleWholeAndPointsLeftOfIt_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::newRow("1024x700") << 1024 << 700;
    QTest::newRow("1440x900") << 1440 << 900;
  }
  void colourBarTitleWholeAndPointsLeftOfIt() {
    QFETCH(int, width);
    QFETCH(int, height);
    resize_window(width, height);
    EmbeddingView* view = w_->view();
    for (bool planar : {true, false}) {
      w_->setAxes(1, 2, 3, planar);
      for (bool reset : {false, true}) {
        if (reset) view->resetCamera();
        view->renderFrame();
        const QString where =
            QStringLiteral("%1x%2, %3%4").arg(width).arg(height).arg(planar ? "2-D" : "3-D", reset ? ", reset" : "");
        QCOMPARE(view->colourTitleLines().join(QLatin1Char(' ')), w_->view()->colourTitle());
        const QRectF title = view->colourTitleRect(), strip = view->colourBarArea();
        QVERIFY2(strip.contains(title) && QRectF(view->rect()).contains(title), qPrintable(where));
        double right = -1e300;
        for (int64_t e = 0; e < view->pointCount(); ++e) right = std::max(right, view->projectedPosition(e).x());
        QVERIFY2(right < strip.left(), qPrintable(QStringLiteral("%1: a point at x = %2, the bar from %3")
                                                      .arg(where)
                                                      .arg(right)
                                                      .arg(strip.left())));
      }
    }
    w_->setAxes(1, 2, 3, true);
  }

  // Every control of the view's tool bars is shown (none folded behind an
  // extension button) and lies within the view's width.
  void viewControlsFit_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::newRow("1280x800") << 1280 << 800;
    QTest::newRow("1440x900") << 1440 << 900;
  }
  void viewControlsFit() {
    QFETCH(int, width);
    QFETCH(int, height);
    resize_window(width, height);
    const QList<QToolBar*> bars = {w_->findChild<QToolBar*>(QStringLiteral("viewControls")),
                                   w_->findChild<QToolBar*>(QStringLiteral("viewColouring"))};
    int controls = 0;
    for (QToolBar* bar : bars) {
      QVERIFY(bar);
      QVERIFY2(bar->sizeHint().width() <= bar->width(), qPrintable(QStringLiteral("%1 wants %2 px, has %3")
                                                                       .arg(bar->objectName())
                                                                       .arg(bar->sizeHint().width())
                                                                       .arg(bar->width())));
      for (QAction* action : bar->actions()) {
        QWidget* control = bar->widgetForAction(action);
        if (!control) continue;
        ++controls;
        QVERIFY2(control->isVisible(),
                 qPrintable(bar->objectName() + ": " + control->metaObject()->className() + " " + control->toolTip()));
        const QRect r(control->mapTo(w_.get(), QPoint(0, 0)), control->size());
        const QRect view(w_->view()->mapTo(w_.get(), QPoint(0, 0)), w_->view()->size());
        QVERIFY2(r.right() <= view.right() + 2, qPrintable(control->toolTip()));
      }
    }
    // X, Y, Z with their labels, 2-D, the gap, four tools; Colour, the gap, Size.
    QVERIFY2(controls >= 16, qPrintable(QString::number(controls)));
  }

  // Pins added to the path are drawn as a polyline through them, in order,
  // while the movie runs along the path; a movie in another order, or
  // Clear path, removes it.
  void pathThroughPinsIsDrawn() {
    resize_window(1440, 900);
    w_->setAxes(1, 2, 3, true);
    auto* dock = w_->findChild<QDockWidget*>(QStringLiteral("trajectoryDock"));
    QVERIFY(dock);
    dock->raise();
    QCoreApplication::processEvents();
    TrajectoryPlayer* player = w_->trajectoryPlayer();
    QTRY_VERIFY_WITH_TIMEOUT(player->frames() && !player->computing(), 60000);
    EmbeddingView* view = w_->view();
    const int64_t n = view->pointCount();
    QVERIFY(n > 100);
    for (int64_t e : {n / 8, n / 2, 7 * n / 8}) {
      QVERIFY(pin_by_click(e));
      QVERIFY(w_->addPinToPath());
      if (w_->trajectoryPath().size() == 1) QVERIFY(view->path().empty());  // one point is no line yet
    }
    const std::vector<int64_t> path = w_->trajectoryPath();
    QCOMPARE(path.size(), size_t(3));
    QCOMPARE(player->order(), TrajectoryPlayer::Order::Path);
    QCOMPARE(view->path(), path);
    // Drawn: the middle of the first segment is the path's white.
    const QImage frame = view->renderFrame();
    const QPointF mid = (view->projectedPosition(path[0]) + view->projectedPosition(path[1])) / 2;
    const QColor c = frame.pixelColor((mid * frame.devicePixelRatio()).toPoint());
    QVERIFY2(c.red() > 240 && c.green() > 240 && c.blue() > 240, qPrintable(c.name()));

    // Another order: the movie no longer runs along the path, nor is it drawn.
    player->setCoordinate(1);
    QTRY_VERIFY_WITH_TIMEOUT(view->path().empty() && !player->computing(), 60000);
    // A fourth pin: along the path again, drawn through all four; then Clear path.
    QVERIFY(pin_by_click(n / 3));
    QVERIFY(w_->addPinToPath());
    QCOMPARE(player->order(), TrajectoryPlayer::Order::Path);
    QCOMPARE(w_->trajectoryPath().size(), size_t(4));
    QCOMPARE(view->path(), w_->trajectoryPath());
    w_->clearPath();
    QVERIFY(view->path().empty());
    // Hidden behind another tab, the path is not drawn either.
    for (int64_t e : {n / 4, 3 * n / 4}) {
      QVERIFY(pin_by_click(e));
      QVERIFY(w_->addPinToPath());
    }
    QCOMPARE(view->path().size(), size_t(2));
    auto* metadata = w_->findChild<QDockWidget*>(QStringLiteral("metadataDock"));
    QVERIFY(metadata);
    metadata->raise();
    QTRY_VERIFY(view->path().empty());
    dock->raise();
    QTRY_COMPARE(view->path().size(), size_t(2));
  }
};

QTEST_MAIN(TestViewWindow)
#include "test_view_window.moc"
