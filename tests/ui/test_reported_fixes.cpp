// The explorer's reported misbehaviour (issue 23, item 4), each reproduced
// here: opening image folders, a k typed into the box, the cluster backend
// and the graph cache, re-framing after a change of scale, the pinned
// image's coordinates, category colours against the selection colour, and
// the smaller ones (gallery scroll, placeholder, status and progress lines,
// axis titles, colour-bar labels, the BGH plot's width, the demo's colour,
// the core's option names in GUI messages) and a folder's file names in the
// exports.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>

#include <vtkDataArray.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPolyData.h>
#include <vtkStringArray.h>
#include <vtkXMLPolyDataReader.h>

#include "manifold/npy.h"
#include "manifold/session.h"
#include "manifold/ui/gui_words.h"
#include "manifold/ui/main_window.h"
#include "manifold/ui/palette.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

bool wait_for(QSignalSpy& spy, int ms = 60000) { return !spy.isEmpty() || spy.wait(ms); }

double colour_distance(QColor a, QColor b) {
  const double dr = a.red() - b.red(), dg = a.green() - b.green(), db = a.blue() - b.blue();
  return std::sqrt(dr * dr + dg * dg + db * db);
}

/// The bounding box of every point as drawn, in widget pixels.
QRectF drawn_extent(EmbeddingView& view) {
  double x0 = 1e30, y0 = 1e30, x1 = -1e30, y1 = -1e30;
  for (int64_t i = 0; i < view.pointCount(); ++i) {
    const QPointF p = view.projectedPosition(i);
    x0 = std::min(x0, p.x()), x1 = std::max(x1, p.x());
    y0 = std::min(y0, p.y()), y1 = std::max(y1, p.y());
  }
  return QRectF(QPointF(x0, y0), QPointF(x1, y1));
}

/// A ring of n points in the plane z = 0 tilted out of it, radius r.
std::vector<float> ring(int n, float r) {
  std::vector<float> xyz;
  for (int i = 0; i < n; ++i) {
    const double a = 2 * M_PI * i / n;
    xyz.insert(xyz.end(), {static_cast<float>(r * std::cos(a)), static_cast<float>(r * std::sin(a)),
                           static_cast<float>(0.3 * r * std::sin(2 * a))});
  }
  return xyz;
}

/// The X, Y and Z boxes of `w` show `coordinates` on the first axes (each
/// enabled, offering every coordinate of the embedding) and "none"
/// (disabled, nothing else to choose) on the rest; the view draws exactly
/// those axes.
void expect_axes(MainWindow& w, const std::vector<int>& coordinates) {
  const int drawn = static_cast<int>(coordinates.size());
  for (int i = 0; i < 3; ++i) {
    const QComboBox* box = w.axisEditor(i);
    const QString what = QStringLiteral("axis %1: '%2'").arg(i).arg(box->currentText());
    if (i < drawn) {
      QCOMPARE(box->currentData().toInt(), coordinates[static_cast<size_t>(i)]);
      QVERIFY2(box->isEnabled(), qPrintable(what));
      QCOMPARE(box->count(), w.outcome()->result->m);
    } else {
      QVERIFY2(box->currentText() == QStringLiteral("none") && box->currentData().toInt() == 0, qPrintable(what));
      QVERIFY2(!box->isEnabled(), qPrintable(what));
      QCOMPARE(box->count(), 1);
    }
  }
  QCOMPARE(w.planarEditor()->isEnabled(), drawn >= 3);
  // A greyed switch shows the view as drawn: flat.
  if (drawn < 3) QVERIFY(w.planarEditor()->isChecked());
  QCOMPARE(w.view()->planar(), drawn < 3 || w.planarEditor()->isChecked());
  QCOMPARE(w.shownAxes(), coordinates);
  QStringList titles;
  for (int c : coordinates) titles << QStringLiteral("\u03c8%1").arg(c);
  QCOMPARE(w.view()->axisTitles(), titles);
}

}  // namespace

class TestReportedFixes : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString spots_, other_spots_;

  /// A window with the spots open and embedded (k = 10, 4 components, CPU).
  void open_and_run(MainWindow& w, const QString& path) {
    QVERIFY(t::open_file(w, path, 20000));
    t::use_cpu(w, 10, 4);
    QVERIFY(t::run_now(w, 60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    spots_ = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 300, 16, 16);
    other_spots_ = t::write_rotating_spot_npy(dir_.filePath("other.npy"), 400, 16, 16, 11);
  }

  // File ▸ Open offers image files and folders; one image opens its folder.
  void opensImageFoldersAndFiles() {
    QVERIFY(MainWindow::datasetFileFilter().contains("*.png"));
    QVERIFY(MainWindow::datasetFileFilter().contains("*.tif"));
    MainWindow w;
    auto* open_folder = w.findChild<QAction*>("openFolderAction");
    QVERIFY(open_folder);
    QVERIFY(open_folder->text().contains("Folder"));

    QDir folder(dir_.filePath("pngs"));
    QVERIFY(folder.mkpath("."));
    for (int i = 0; i < 6; ++i) {
      QImage img(8, 8, QImage::Format_Grayscale8);
      img.fill(static_cast<uint>(i * 40));
      img.setPixel(i, i, 255);
      QVERIFY(img.save(folder.filePath(QStringLiteral("img%1.png").arg(i))));
    }
    QSignalSpy opened(&w, &MainWindow::datasetOpened), errors(&w, &MainWindow::errorShown);
    w.openFile(folder.path());
    QVERIFY(opened.wait(20000));
    QCOMPARE(w.dataset()->rows(), int64_t(6));
    // One image of a folder is no dataset: its folder opens, and the window says so.
    w.openFile(folder.filePath("img2.png"));
    QVERIFY2(opened.wait(20000), qPrintable(w.lastError()));
    QCOMPARE(w.dataset()->rows(), int64_t(6));
    QVERIFY2(w.messageText().contains("folder"), qPrintable(w.messageText()));
    QVERIFY(errors.isEmpty());
  }

  // "30" typed quickly: the 3 is cached, the 30 is not; no graph is built.
  void typedKNeverBuildsAGraphWithoutRun() {
    MainWindow w;
    w.show();
    open_and_run(w, spots_);
    QSignalSpy started(w.runner(), &JobRunner::started), shown(&w, &MainWindow::embeddingShown);
    auto* k = w.parameterPanel()->kEditor();
    QVERIFY(w.parameterPanel()->autoReembed());
    k->setValue(3);
    k->setValue(30);
    QTest::qWait(400);
    for (const auto& args : started) QVERIFY2(!args.at(0).toBool(), "a k-NN graph build started without Run");
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
    QVERIFY2(w.staleText().contains("Run"), qPrintable(w.staleText()));
    QVERIFY2(w.staleText().contains("30"), qPrintable(w.staleText()));

    // Typed slowly: 4 re-embeds from the cache, 40 only says Run is needed.
    started.clear();
    shown.clear();
    k->setValue(4);
    QVERIFY(wait_for(shown));
    QCOMPARE(w.outcome()->result->k, 4);
    QVERIFY2(w.staleText().isEmpty(), qPrintable(w.staleText()));
    k->setValue(40);
    QTest::qWait(400);
    for (const auto& args : started) QVERIFY(!args.at(0).toBool());
    QCOMPARE(w.outcome()->result->k, 4);
    QVERIFY2(w.staleText().contains("k = 4") && w.staleText().contains("40"), qPrintable(w.staleText()));
    w.grab().save(QDir(t::output_dir()).filePath("stale_line.png"));  // to look at, not asserted
    // Run builds it, and the line goes.
    shown.clear();
    w.runNow();
    QVERIFY(wait_for(shown));
    QCOMPARE(w.outcome()->result->k, 40);
    QTRY_VERIFY(w.staleText().isEmpty());
  }

  // The cluster backend is part of the graph cache key: Run submits a job
  // (here it fails on the missing profile) instead of reusing the CPU graph.
  void clusterRunIsNotServedByALocalGraph() {
    MainWindow w;
    w.show();
    open_and_run(w, spots_);
    QSignalSpy started(w.runner(), &JobRunner::started), errors(&w, &MainWindow::errorShown),
        shown(&w, &MainWindow::embeddingShown);
    auto* params = w.parameterPanel();
    params->clusterProfileEditor()->setText(dir_.filePath("no-such-profile.json"));
    params->backendEditor()->setCurrentIndex(params->backendEditor()->findData("cluster"));
    QTest::qWait(300);
    QVERIFY2(started.isEmpty(), "switching to the cluster backend started a job without Run");
    QVERIFY(w.runner()->cachedGraph(params->parameters()) == nullptr);
    w.runNow();
    QVERIFY(wait_for(errors, 20000));
    QVERIFY(!started.isEmpty() && started.first().at(0).toBool());
    QVERIFY2(w.lastError().contains("no-such-profile.json"), qPrintable(w.lastError()));
    QVERIFY(shown.isEmpty());
  }

  // A re-embedding that shrinks the coordinates 20-fold is re-framed; the
  // user's rotation is kept.
  void reframesWhenTheScaleChanges() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(500, 400)));
    view.setPoints(ring(200, 1.0f), false, {"a", "b", "c"}, true);
    view.rotateCamera(35, 15);
    const auto direction = view.viewDirection();
    const QRectF before = drawn_extent(view);
    QVERIFY(before.width() > 100);
    view.setPoints(ring(200, 0.05f), false, {"a", "b", "c"}, false);
    const QRectF after = drawn_extent(view);
    QVERIFY2(after.width() > 0.7 * before.width(),
             qPrintable(QString("%1 vs %2").arg(after.width()).arg(before.width())));
    const auto kept = view.viewDirection();
    for (int i = 0; i < 3; ++i) QVERIFY(std::abs(kept[i] - direction[i]) < 1e-9);
    // A small change (sign flips, 10% in scale) keeps the camera as it is.
    view.setPoints(ring(200, 0.055f), false, {"a", "b", "c"}, false);
    const QRectF small = drawn_extent(view);
    QVERIFY(small.width() > 1.05 * after.width());
  }

  // The pinned image's ψ values follow the embedding shown.
  void pinnedCoordinatesFollowReembedding() {
    MainWindow w;
    w.show();
    open_and_run(w, spots_);
    w.setSelectedRows({});
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    const int64_t row = 17;
    // Pinning goes through the view's pick, as a click does.
    const auto& r0 = *w.outcome()->result;
    int64_t e = -1;
    for (int64_t i = 0; i < r0.n; ++i)
      if (r0.point_index[static_cast<size_t>(i)] == row) e = i;
    QVERIFY(e >= 0);
    Q_EMIT w.view()->picked(e);
    QCOMPARE(w.imagePanel()->pinnedRow(), row);
    w.parameterPanel()->timeEditor()->setValue(3);
    QVERIFY(wait_for(shown));
    const auto& r = *w.outcome()->result;
    const QString psi1 = QString::number(r.coordinates[static_cast<size_t>(e * r.m)], 'g', 4);
    QVERIFY2(w.imagePanel()->caption().contains(QStringLiteral("\u03c81 = ") + psi1),
             qPrintable(w.imagePanel()->caption() + " / " + psi1));
  }

  // No category colour is near the selection colour; a category keeps its
  // colour in a subset.
  void categoryColoursAvoidSelectionAndStayStable() {
    double nearest = 1e9;
    for (int i = -4; i < 256; ++i) nearest = std::min(nearest, colour_distance(categoryColour(i), kSelectionColour));
    QVERIFY2(nearest >= 120, qPrintable(QString::number(nearest)));

    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(400, 300)));
    view.setPointSize(14);
    auto colour_of = [&view](int64_t point) {
      const QImage frame = view.renderFrame();
      const QPointF p = view.projectedPosition(point) * frame.devicePixelRatio();
      return frame.pixelColor(p.toPoint());
    };
    // Points inside their bounding box, where the axes' outline is not drawn.
    std::vector<float> xyz, values;
    for (int i = 0; i < 10; ++i) {
      const double a = 2 * M_PI * i / 10;
      xyz.insert(xyz.end(), {static_cast<float>(std::cos(a)), static_cast<float>(std::sin(a)), 0.f});
      values.push_back(static_cast<float>(i));
    }
    view.setPoints(xyz, true, {"x", "y", "z"}, true);
    view.setColours({values, "label", true});
    const QColor six_in_all = colour_of(6);
    QVERIFY2(colour_distance(six_in_all, categoryColour(6)) < 10,
             qPrintable(six_in_all.name() + " drawn, " + categoryColour(6).name() + " expected"));
    view.setPoints({0.f, 0.f, 0.f, 0.5f, 0.4f, 0.f, 1.f, 1.f, 0.f}, true, {"x", "y", "z"}, true);
    view.setColours({{3.f, 6.f, 3.f}, "label", true});
    QVERIFY2(colour_distance(colour_of(1), six_in_all) < 10, "category 6 changed colour in a subset");
  }

  // Arrow keys move the pin to the nearest point that way on screen.
  void arrowKeysMoveThePin() {
    EmbeddingView view;
    QVERIFY(t::show_window(view, QSize(400, 300)));
    view.setPoints({0.f, 0.f, 0.f, 1.f, 0.1f, 0.f, 0.f, 1.f, 0.f, -1.f, 0.f, 0.f, 2.f, 0.f, 0.f}, true, {"x", "y", "z"},
                   true);
    view.setPinned(0);
    QSignalSpy picked(&view, &EmbeddingView::picked);
    QTest::keyClick(&view, Qt::Key_Right);
    QCOMPARE(picked.size(), 1);
    QCOMPARE(picked.takeFirst().at(0).toLongLong(), 1LL);
    QTest::keyClick(&view, Qt::Key_Up);
    QCOMPARE(picked.takeFirst().at(0).toLongLong(), 2LL);
    QTest::keyClick(&view, Qt::Key_Left);
    QCOMPARE(picked.takeFirst().at(0).toLongLong(), 3LL);
    QTest::keyClick(&view, Qt::Key_Down);  // nothing below the pin
    QVERIFY(picked.isEmpty());
  }

  void galleryStartsAtTheTopOfANewDataset() {
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    w.openFile(spots_);
    QVERIFY(wait_for(opened, 20000));
    QScrollBar* bar = w.datasetPanel()->gallery()->verticalScrollBar();
    QTRY_VERIFY(bar->maximum() > 0);
    bar->setValue(bar->maximum());
    opened.clear();
    w.openFile(other_spots_);
    QVERIFY(wait_for(opened, 20000));
    QTest::qWait(100);
    QCOMPARE(bar->value(), 0);
  }

  void placeholderAsksForRunOnceADatasetIsOpen() {
    MainWindow w;
    w.show();
    QVERIFY(w.view()->placeholderText().contains("Open a dataset"));
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    w.openFile(spots_);
    QVERIFY(wait_for(opened, 20000));
    QVERIFY2(!w.view()->placeholderText().contains("Open a dataset"), qPrintable(w.view()->placeholderText()));
    QVERIFY(w.view()->placeholderText().contains("Run"));
  }

  // A run replaces the last run's status line; "cancelling…" stays until
  // the job has stopped.
  void statusAndCancellingLines() {
    MainWindow w;
    w.show();
    open_and_run(w, spots_);
    QVERIFY(w.statusText().startsWith("Embedded"));
    w.parameterPanel()->kEditor()->setValue(25);
    w.runNow();
    QVERIFY2(!w.statusText().startsWith("Embedded"), qPrintable(w.statusText()));
    w.cancelRun();
    QVERIFY(w.progressText().contains("cancelling"));
    ProgressInfo info;
    info.stage = "knn";
    info.unit = "rows";
    info.done = 10;
    info.total = 100;
    Q_EMIT w.runner()->progressed(info);
    QVERIFY2(w.progressText().contains("cancelling"), qPrintable(w.progressText()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
  }

  // ψ everywhere: the combos, the axis titles and the colour bar's title;
  // colour-bar labels without trailing dots.
  void oneSpellingOfPsi() {
    MainWindow w;
    w.show();
    open_and_run(w, spots_);
    w.setColourBy("dc1");
    for (const QString& title : w.view()->axisTitles())
      QVERIFY2(title.startsWith(QStringLiteral("\u03c8")), qPrintable(title));
    QCOMPARE(w.view()->colourTitle(), QStringLiteral("\u03c81"));
    QVERIFY(!w.view()->colourBarLabelFormat().contains('#'));
  }

  // The BGH curve, shown once ε is automatic and a run has drawn it, does
  // not widen the Parameters dock.
  void bghPlotKeepsTheDockWidth() {
    MainWindow w;
    QVERIFY(t::show_window(w));
    auto* dock = w.findChild<QDockWidget*>("parametersDock");
    QVERIFY(dock);
    dock->raise();
    open_and_run(w, spots_);
    QTest::qWait(100);
    const int before = dock->width();
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    auto* mode = w.parameterPanel()->epsilonModeEditor();
    mode->setCurrentIndex(mode->findData("auto"));
    w.runNow();
    QVERIFY(wait_for(shown));
    QTest::qWait(200);
    QVERIFY2(w.parameterPanel()->bghPlot()->isVisible(), "the BGH plot is not shown");
    QVERIFY2(dock->width() <= before, qPrintable(QString("%1 > %2").arg(dock->width()).arg(before)));
  }

  // Opened after another dataset coloured by ψ1, the demo is coloured by its
  // rotation angle.
  void demoOpensColouredByTheAngle() {
    MainWindow w;
    w.show();
    open_and_run(w, spots_);
    QCOMPARE(w.colourKey(), QString("dc1"));
    // A column the next dataset has too keeps colouring it.
    w.setColourBy("index");
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    w.openFile(other_spots_);
    QVERIFY(wait_for(opened, 20000));
    QCOMPARE(w.colourKey(), QString("index"));
    w.setColourBy("dc1");
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.openDemo(true);
    QVERIFY(shown.wait(120000));
    QCOMPARE(w.colourKey(), QString("rotation angle (deg)"));
  }

  // The core's messages name command-line options; the window names the fields.
  void coreMessagesUseTheFieldNames() {
    QCOMPARE(guiWords("weakly joined; try --epsilon 12.5 (10x) or a larger --k"),
             QStringLiteral("weakly joined; try \u03b5 = 12.5 (10x) or a larger k"));
    QCOMPARE(guiWords("stopped at 20000 mat-vecs; raise --max-matvecs or --time-limit"),
             QStringLiteral("stopped at 20000 mat-vecs; raise Max mat-vecs or Time limit"));
    QCOMPARE(guiWords("give --epsilon VALUE or fewer --components"),
             QStringLiteral("give an \u03b5 value or fewer Components"));
    QCOMPARE(guiWords("--local-scaling 40: must be at most k"), QStringLiteral("Local scaling 40: must be at most k"));
    QCOMPARE(guiWords("plain text with a -- dash"), QStringLiteral("plain text with a -- dash"));
  }

  // QA 16: three images embed in one coordinate, a line of points along X
  // at y = 0. They stood on the view's left and right edges, on the X axis
  // line; now they stand inside the view, above the axis, with no Y axis.
  void oneCoordinateStandsInsideTheView() {
    const std::vector<float> three = t::rotating_spot_images(3, 16, 16);
    const QString path = dir_.filePath("three.npy");
    npy::write(path.toStdString(), three.data(), {3, 16, 16});
    MainWindow w;
    QVERIFY(t::show_window(w));
    QVERIFY(t::open_file(w, path, 20000));
    t::use_cpu(w, 2, 0);
    QVERIFY(t::run_now(w, 60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
    QCOMPARE(w.outcome()->result->m, 1);
    EmbeddingView& view = *w.view();
    QCOMPARE(view.axisTitles(), QStringList{QStringLiteral("\u03c8"
                                                           "1")});
    const QRectF area = view.plotArea();
    for (int64_t i = 0; i < view.pointCount(); ++i) {
      const QPointF p = view.projectedPosition(i);
      QVERIFY2(p.x() > area.left() + 0.05 * area.width() && p.x() < area.right() - 0.05 * area.width(),
               qPrintable(QString("point %1 at x = %2 of %3").arg(i).arg(p.x()).arg(area.width())));
    }
    // Reset view frames it the same way.
    view.resetCamera();
    const QRectF extent = drawn_extent(view);
    QVERIFY2(extent.left() > area.left() + 0.05 * area.width() && extent.right() < area.right() - 0.05 * area.width(),
             qPrintable(QString("%1 .. %2 of %3").arg(extent.left()).arg(extent.right()).arg(area.width())));
    w.grab().save(QDir(t::output_dir()).filePath("one_coordinate.png"));  // to look at, not asserted
  }

  // An embedding of one coordinate showed psi1 in the X, Y and Z boxes, and
  // one of two showed psi2 in Y and Z, as if the points spread in three
  // dimensions: an axis without a coordinate says "none" and is disabled,
  // as is the 2-D switch (the view is flat either way), and only the axes
  // with a coordinate are drawn.
  void axesWithoutACoordinateSayNone() {
    MainWindow w;
    QVERIFY(t::show_window(w));
    QVERIFY(t::open_file(w, spots_, 20000));
    t::use_cpu(w, 10, 1);
    QVERIFY(t::run_now(w, 60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
    QCOMPARE(w.outcome()->result->m, 1);
    TEST_PHASE(expect_axes(w, {1}));
    QVERIFY2(w.statusText().contains("in one diffusion coordinate;"), qPrintable(w.statusText()));
    w.grab().save(QDir(t::output_dir()).filePath("axes_one_coordinate.png"));  // to look at, not asserted

    // Two coordinates (re-embedded on the cached graph): Z alone has none.
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.parameterPanel()->componentsEditor()->setValue(2);
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    QCOMPARE(w.outcome()->result->m, 2);
    TEST_PHASE(expect_axes(w, {1, 2}));
    // A session saved now keeps the user's choice (never ticked), not the
    // forced tick.
    const QString session = dir_.filePath("forced_flat.session.json");
    QVERIFY(w.saveSession(session));
    QCOMPARE(read_session(session.toStdString()).view.value("planar", true), false);

    // Three: every axis and the switch choose again, Y and Z keep their order;
    // the switch is the user's again (never ticked: a 3-D view).
    shown.clear();
    w.parameterPanel()->componentsEditor()->setValue(4);
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    TEST_PHASE(expect_axes(w, {1, 2, 3}));
    QVERIFY(w.planarEditor()->isEnabled());
    QVERIFY(!w.planarEditor()->isChecked());
    QVERIFY(!w.view()->planar());

    // Ticked by the user, forced by two coordinates, kept through them, and
    // saved as the user's choice meanwhile.
    w.planarEditor()->setChecked(true);
    QVERIFY(w.view()->planar());
    shown.clear();
    w.parameterPanel()->componentsEditor()->setValue(2);
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    TEST_PHASE(expect_axes(w, {1, 2}));
    w.planarEditor()->click();  // greyed: no effect
    QVERIFY(w.planarEditor()->isChecked());
    shown.clear();
    w.parameterPanel()->componentsEditor()->setValue(4);
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    QVERIFY(w.planarEditor()->isEnabled() && w.planarEditor()->isChecked());
    QVERIFY(w.view()->planar());
  }

  // Simulated patterns open with their true angle beside them
  // (NAME.angles.npy, as `manifold simulate diffraction` writes it) and
  // are coloured by it, as the demo is by its angle; they were coloured by
  // psi1.
  void simulatedAnglesColourThePoints() {
    QDir folder(dir_.filePath("simulated"));
    QVERIFY(folder.mkpath("."));
    const int n = 200;
    const QString images = t::write_rotating_spot_npy(folder.filePath("patterns.npy"), n, 12, 12);
    std::vector<float> angles(n);
    for (int i = 0; i < n; ++i) angles[static_cast<size_t>(i)] = static_cast<float>(2 * M_PI * i / n);
    npy::write(folder.filePath("patterns.angles.npy").toStdString(), angles.data(), {n});
    MainWindow w;
    QVERIFY(t::show_window(w));
    QVERIFY(t::open_file(w, images, 20000));
    t::use_cpu(w, 10, 3);
    QVERIFY(t::run_now(w, 60000));
    QCOMPARE(w.colourKey(), QStringLiteral("angle"));
    QCOMPARE(w.view()->colourTitle(), QStringLiteral("angle"));
    QCOMPARE(w.view()->colourBarLabels(), QStringList({"0", "1.57", "3.14", "4.71", "6.28"}));
  }

  // QA 15: the banner of a disconnected graph says the points left out are
  // not drawn; no point_index.npy is in sight before an export.
  void disconnectedGraphBannerSpeaksOfTheView() {
    std::vector<float> v = t::rotating_spot_images(240, 16, 16);
    std::mt19937 rng(5);
    std::normal_distribution<float> noise(0.f, 0.02f);
    for (int i = 0; i < 60 * 256; ++i) v.push_back(5.f + noise(rng));  // 60 bright frames, far from every spot
    const QString path = dir_.filePath("two_pieces.npy");
    npy::write(path.toStdString(), v.data(), {300, 16, 16});
    MainWindow w;
    QVERIFY(t::open_file(w, path, 20000));
    t::use_cpu(w, 8, 2);
    QVERIFY(t::run_now(w, 60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
    const QString text = w.warningText();
    QVERIFY2(text.contains("embedded the largest piece (240 of 300 points; the other 60 are not drawn)"),
             qPrintable(text));
    QVERIFY2(!text.contains("point_index"), qPrintable(text));
  }

  // QA: an image folder's file names reach the exported .csv (last column
  // "file", RFC 4180 quotes) and .vtp (a String point-data array VTK's own
  // reader returns as a vtkStringArray), one per point in point order.
  void exportsNameEachPointsFile() {
    QDir folder(dir_.filePath("named"));
    QVERIFY(folder.mkpath("."));
    const int n = 40;
    const std::vector<float> spots = t::rotating_spot_images(n, 16, 16);
    const QStringList kinds = {"spot %1.png", "spot, %1.png", "spot \"%1\".png", " spot %1 .png"};
    QStringList names;
    for (int i = 0; i < n; ++i) {
      QImage img(16, 16, QImage::Format_Grayscale8);
      for (int p = 0; p < 256; ++p)
        img.setPixel(p % 16, p / 16, static_cast<uint>(std::clamp(spots[i * 256 + p] * 200.f + 20.f, 0.f, 255.f)));
      // The index is zero-padded so the folder's order (by name) is the spots' order.
      names << kinds[i % kinds.size()].arg(i, 2, 10, QChar('0'));
      QVERIFY(img.save(folder.filePath(names.back()), "PNG"));
    }
    MainWindow w;
    QVERIFY(t::open_file(w, folder.path(), 20000));
    t::use_cpu(w, 6, 2);
    QVERIFY(t::run_now(w, 60000));
    QTRY_VERIFY_WITH_TIMEOUT(!w.runner()->busy(), 20000);
    const auto& loaded = w.dataset()->data.item_names;
    QCOMPARE(static_cast<int>(loaded.size()), n);
    const std::vector<int64_t> index = w.outcome()->result->point_index;
    QVERIFY(!index.empty());
    // A metadata column loaded in the explorer goes out beside the names, as
    // `manifold run --metadata` writes it (it had none before).
    const QString doses = dir_.filePath("named_dose.csv");
    {
      QFile f(doses);
      QVERIFY(f.open(QIODevice::WriteOnly));
      QByteArray body = "dose\n";
      for (int i = 0; i < n; ++i) body += QByteArray::number(0.5 + 0.25 * i) + "\n";
      f.write(body);
    }
    QVERIFY(w.loadMetadata(doses));

    const QString vtp = dir_.filePath("named.vtp"), csv = dir_.filePath("named.csv");
    for (const QString& path : {vtp, csv}) {
      QSignalSpy exported(&w, &MainWindow::exportFinished);
      w.exportEmbedding(path);
      QVERIFY(wait_for(exported));
      QVERIFY2(exported.last().at(0).toBool(), qPrintable(exported.last().at(1).toStringList().join(' ')));
    }
    vtkNew<vtkXMLPolyDataReader> reader;
    reader->SetFileName(vtp.toStdString().c_str());
    reader->Update();
    auto* files = vtkStringArray::SafeDownCast(reader->GetOutput()->GetPointData()->GetAbstractArray("file"));
    QVERIFY(files);
    QCOMPARE(static_cast<size_t>(files->GetNumberOfValues()), index.size());
    vtkDataArray* dose = reader->GetOutput()->GetPointData()->GetArray("dose");
    QVERIFY(dose);
    QCOMPARE(static_cast<size_t>(dose->GetNumberOfTuples()), index.size());
    for (size_t e = 0; e < index.size(); ++e)
      QCOMPARE(dose->GetTuple1(static_cast<vtkIdType>(e)), 0.5 + 0.25 * static_cast<double>(index[e]));
    for (size_t e = 0; e < index.size(); ++e)
      QCOMPARE(QString::fromStdString(files->GetValue(static_cast<vtkIdType>(e))),
               QString::fromStdString(loaded[static_cast<size_t>(index[e])]));

    QFile text(csv);
    QVERIFY(text.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(text.readAll()).split('\n', Qt::SkipEmptyParts);
    QVERIFY2(lines[0].endsWith(",dose,file"), qPrintable(lines[0]));
    QCOMPARE(lines.size(), static_cast<int>(index.size()) + 1);
    for (size_t e = 0; e < index.size(); ++e) {
      // The file field after the last coordinate: quoted where it must be.
      const QString name = QString::fromStdString(loaded[static_cast<size_t>(index[e])]);
      const bool quoted = name.contains(',') || name.contains('"') || name.startsWith(' ') || name.endsWith(' ');
      const QString field = quoted ? '"' + QString(name).replace("\"", "\"\"") + '"' : name;
      const QString dose_field = ',' + QString::number(0.5 + 0.25 * static_cast<double>(index[e])) + ',';
      QVERIFY2(lines[static_cast<int>(e) + 1].endsWith(dose_field + field), qPrintable(lines[static_cast<int>(e) + 1]));
    }
  }
};

QTEST_MAIN(TestReportedFixes)
#include "test_reported_fixes.moc"
