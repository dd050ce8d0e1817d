// The screenshots of docs/ui.md, taken from the real main window under Xvfb
// and left in the test output folder (docs/metadata-demo.png,
// docs/metadata-fashion-mnist.png and docs/trajectory-demo.png are copies):
//   metadata-demo.png           the demo coloured by its rotation angle, the
//                               Metadata dock raised
//   metadata-fashion-mnist.png  Fashion-MNIST t10k coloured by label, the
//                               Metadata dock raised (skipped without the data)
//   trajectory-demo.png         the demo's Trajectory dock raised, ordered by
//                               the phase of psi1, psi2, mid-movie, the
//                               current bin ringed in the view
//   clusters-hit-mix.png        a simulated mix of blanks, single and double
//                               hits coloured by its clusters, the Metadata
//                               dock's cluster list shown
// Each asserts what the picture is meant to show: the dock's content, the
// correlation it claims, the colouring, the ring's pixels.
#include <QDockWidget>
#include <QListWidget>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "manifold/ui/main_window.h"
#include "manifold/ui/thumbnail_model.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

// The screenshots are shown in the manual at about this size: large enough
// to read the docks, small enough for a PNG under 300 KB.
constexpr int kWidth = 1440, kHeight = 900;

const MetadataCorrelation* find_correlation(const std::vector<MetadataCorrelation>& all, const QString& name) {
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const MetadataCorrelation& c) { return QString::fromStdString(c.name) == name; });
  return it == all.end() ? nullptr : &*it;
}

QDockWidget* raise_dock(MainWindow& w, const char* name) {
  auto* dock = w.findChild<QDockWidget*>(QString::fromLatin1(name));
  if (dock) dock->raise();
  return dock;
}

// Saves the whole window and says where.
bool save_window(MainWindow& w, const QString& name) {
  QCoreApplication::processEvents();
  w.view()->renderFrame();
  const QImage shot = w.grab().toImage();
  const QString path = t::output_dir() + "/" + name;
  if (!shot.save(path)) return false;
  qInfo("saved %s (%dx%d, %lld bytes)", qPrintable(path), shot.width(), shot.height(),
        static_cast<long long>(QFileInfo(path).size()));
  return true;
}

// Pins the point drawn nearest the middle of the view, as a click would, so
// the image panel shows a pattern.
bool pin_middle_point(MainWindow& w) {
  EmbeddingView* view = w.view();
  view->renderFrame();
  int64_t pick = -1;
  for (int r = 4; r < 400 && pick < 0; r += 8)
    pick = view->pointAt(QPointF(view->width() / 2.0, view->height() / 2.0), r);
  if (pick < 0) return false;
  QTest::mouseClick(view, Qt::LeftButton, {}, view->projectedPosition(pick).toPoint());
  QCoreApplication::processEvents();
  return w.imagePanel()->pinnedRow() >= 0;
}

// The view as drawn now, in device pixels.
QImage view_pixels(MainWindow& w) { return w.view()->renderFrame(); }

// Pixels of the ring's black, which neither the background (the view's
// darkest colour otherwise, 41 and more in each channel), the colour maps
// nor the axes use.
int64_t ring_pixels(const QImage& image) {
  int64_t count = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      count += c.red() < 24 && c.green() < 24 && c.blue() < 24;
    }
  return count;
}

}  // namespace

class TestDocsScreenshots : public QObject {
  Q_OBJECT

  // Opens the demo in `w` (shown at the manual's size) and waits for its embedding.
  static bool open_demo(MainWindow& w) {
    w.resize(kWidth, kHeight);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) return false;
    QSignalSpy shown(&w, &MainWindow::embeddingShown), errors(&w, &MainWindow::errorShown);
    w.openDemo(true);
    if (!shown.wait(180000)) {
      qWarning("no embedding: %s", errors.isEmpty() ? "timed out" : qPrintable(errors.last().at(0).toString()));
      return false;
    }
    return w.dataset() && w.dataset()->demo;
  }

 private Q_SLOTS:
  void initTestCase() { t::start_gui_tests(); }

  void demoColouredByAngleWithTheMetadataTable() {
    MainWindow w;
    QVERIFY(open_demo(w));
    const QString angle = tr("rotation angle (deg)");
    QCOMPARE(w.colourKey(), angle);
    QVERIFY(raise_dock(w, "metadataDock"));
    QTRY_VERIFY(!w.metadataTable()->correlations().empty());
    MetadataTableWidget* table = w.metadataTable();
    QVERIFY(table->rowCount() >= 1);
    QVERIFY(table->columnCount() >= 3);
    // The angle's row: the rotation is the circle of atan2 of two coordinates.
    const MetadataCorrelation* a = find_correlation(table->correlations(), angle);
    QVERIFY(a);
    QCOMPARE(a->kind, MetadataKind::Angle);
    QVERIFY2(std::abs(a->pair_fisher_lee) >= 0.99, qPrintable(QString::number(a->pair_fisher_lee)));
    // The table shows it, the current row is the colouring.
    QCOMPARE(table->currentColumn(), angle);
    bool shown = false;
    for (int r = 0; r < table->rowCount(); ++r)
      shown |= table->item(r, 0) && table->item(r, 0)->text() == angle && table->item(r, table->pairColumn()) &&
               !table->item(r, table->pairColumn())->text().isEmpty();
    QVERIFY2(shown, "the angle's row or its atan2 pair is not in the table");
    QCOMPARE(w.view()->colourTitle(), angle);
    // Flat psi1, psi2: the circle, coloured once round by the angle.
    w.setAxes(1, 2, 3, true);
    QVERIFY(pin_middle_point(w));
    QVERIFY(save_window(w, "metadata-demo.png"));
  }

  void fashionMnistColouredByLabelWithTheMetadataTable() {
    const QString images = t::fashion_mnist_images();
    if (images.isEmpty()) QSKIP("no Fashion-MNIST t10k images (MANIFOLD_FASHION_MNIST_DIR)");
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(kWidth, kHeight)));
    QSignalSpy opened(&w, &MainWindow::datasetOpened), shown(&w, &MainWindow::embeddingShown),
        errors(&w, &MainWindow::errorShown);
    w.openFile(images);
    QVERIFY2(opened.wait(60000), errors.isEmpty() ? "not opened" : qPrintable(errors.last().at(0).toString()));
    const QString label = tr("label");
    w.runNow();
    QVERIFY2(shown.wait(280000), errors.isEmpty() ? "no embedding" : qPrintable(errors.last().at(0).toString()));
    QCOMPARE(w.colourKey(), label);  // the labels found beside the images
    // ... named as Fashion-MNIST's classes in the legend (no class list beside them).
    const auto& columns = w.dataset()->metadata;
    const auto labels = std::find_if(columns.begin(), columns.end(),
                                     [&](const PointMetadata& m) { return m.name == label; });
    QVERIFY(labels != columns.end());
    QCOMPARE(labels->category_names.size(), size_t(10));
    QCOMPARE(labels->category_names[9].second, QStringLiteral("Ankle boot"));
    QVERIFY(raise_dock(w, "metadataDock"));
    QTRY_VERIFY(!w.metadataTable()->correlations().empty());
    const MetadataCorrelation* l = find_correlation(w.metadataTable()->correlations(), label);
    QVERIFY(l);
    QCOMPARE(l->kind, MetadataKind::Categorical);
    // The classes separate along the first coordinates: a clear correlation ratio.
    QVERIFY(l->best >= 0);
    QVERIFY2(l->per_coordinate[l->best] > 0.5, qPrintable(QString::number(l->per_coordinate[l->best])));
    QCOMPARE(w.metadataTable()->currentColumn(), label);
    QVERIFY(pin_middle_point(w));
    // The pinned image's caption and its thumbnail's tooltip name its class.
    const int64_t pinned = w.pinnedRow();
    QVERIFY(pinned >= 0);
    const QString name = labels->category_names[static_cast<size_t>(w.dataset()->data.labels[pinned])].second;
    QVERIFY2(w.imagePanel()->caption().contains(QStringLiteral("label ") + name),
             qPrintable(w.imagePanel()->caption()));
    ThumbnailModel gallery;
    gallery.setDataset(w.dataset());
    const QString tip = gallery.data(gallery.index(static_cast<int>(pinned)), Qt::ToolTipRole).toString();
    QVERIFY2(tip.endsWith(QStringLiteral(" \u00b7 ") + name), qPrintable(tip));
    QVERIFY(save_window(w, "metadata-fashion-mnist.png"));
  }

  void demoTrajectoryAlongThePhaseMidMovie() {
    MainWindow w;
    QVERIFY(open_demo(w));
    TrajectoryPlayer* player = w.trajectoryPlayer();
    QVERIFY(player);
    QSignalSpy ready(player, &TrajectoryPlayer::framesReady), failed(player, &TrajectoryPlayer::computeFailed);
    // The phase of psi1, psi2 is the angle round the circle they draw flat.
    w.setAxes(1, 2, 3, true);
    QVERIFY(raise_dock(w, "trajectoryDock"));
    player->setPhase(1, 2);
    player->recompute();
    QTRY_VERIFY_WITH_TIMEOUT(player->frames() && player->order() == TrajectoryPlayer::Order::Phase &&
                                 !player->computing(),
                             60000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.last().at(0).toString()));
    QCOMPARE(player->frameCount(), player->bins());
    // A frame two thirds round the cycle, so the picture shows the player
    // part-way through.
    const int middle = 2 * player->frameCount() / 3;
    player->setCurrentFrame(middle);
    QCOMPARE(player->currentFrame(), middle);
    QVERIFY(!player->currentImage().isNull());

    // The view rings exactly the current bin.
    std::vector<int64_t> want = player->frames()->bins[middle].points, got = w.view()->highlight();
    QVERIFY(!want.empty());
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    QCOMPARE(got, want);
    // And the ring is drawn: its dark grey is in the frame, and not without it.
    const QImage ringed = view_pixels(w);
    const std::vector<int64_t> bin = w.view()->highlight();
    w.view()->setHighlight({});
    const QImage plain = view_pixels(w);
    w.view()->setHighlight(bin);
    const int64_t with = ring_pixels(ringed), without = ring_pixels(plain);
    qInfo("ring pixels: %lld with the bin ringed, %lld without", static_cast<long long>(with),
          static_cast<long long>(without));
    QVERIFY2(with > without + 20 * static_cast<int64_t>(bin.size()) / 4, "the current bin's ring is not drawn");
    QVERIFY(save_window(w, "trajectory-demo.png"));
  }

  // clusters-hit-mix.png: a simulated mix of blanks, single and double hits
  // (1e3 photons, fluence spread 0.6; bench/physics/RESULTS.md, section 3)
  // clustered in the Metadata dock, coloured by cluster, with the list.
  void hitMixColouredByClusterWithTheClusterList() {
    const QByteArray cli = qgetenv("MANIFOLD_CLI");
    if (cli.isEmpty()) QSKIP("MANIFOLD_CLI is not set (run through CTest)");
    QTemporaryDir dir;
    QProcess sim;
    sim.start(QString::fromLocal8Bit(cli), {"simulate",
                                            "diffraction",
                                            "--pdb",
                                            "1ubq",
                                            "--count",
                                            "1000",
                                            "--size",
                                            "32",
                                            "--axis",
                                            "random",
                                            "--photons",
                                            "1e3",
                                            "--background",
                                            "1000",
                                            "--fluence-jitter",
                                            "0.6",
                                            "--mix",
                                            "blank=0.3,single=0.5,double=0.2",
                                            "--seed",
                                            "1",
                                            "-q",
                                            "-o",
                                            dir.filePath("hits.npy")});
    QVERIFY(sim.waitForFinished(120000));
    if (sim.exitCode() != 0)
      QFAIL(qPrintable("simulating the mix failed: " + QString::fromLocal8Bit(sim.readAllStandardError())));
    QFile session(dir.filePath("hits.json"));
    QVERIFY(session.open(QIODevice::WriteOnly));
    session.write(R"({"format": "manifold-session", "version": 1, "data": "hits.npy", "transform": "anscombe",
                      "knn": {"k": 20, "metric": "cosine"}, "diffusion": {"components": 6}})");
    session.close();
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(kWidth, kHeight)));
    QSignalSpy shown(&w, &MainWindow::embeddingShown), ready(&w, &MainWindow::clustersReady);
    w.openSession(session.fileName());
    QVERIFY(shown.wait(180000));
    QVERIFY(raise_dock(w, "metadataDock"));
    w.clusterPoints(0, 0);
    QVERIFY(ready.wait(60000));
    QCOMPARE(w.colourKey(), QStringLiteral("cluster"));
    QCOMPARE(w.clusterList()->count(), 3);  // the eigengap's K
    QTRY_COMPARE(w.metadataTable()->currentColumn(), QStringLiteral("cluster"));
    // The summary claims the match with the true classes the picture shows.
    const QString summary = w.clusterSummary();
    const qsizetype at = summary.indexOf(QStringLiteral("agrees "));
    QVERIFY2(at >= 0, qPrintable(summary));
    QVERIFY2(summary.mid(at + 7).section(' ', 0, 0).toDouble() >= 90, qPrintable(summary));
    // Flat psi2, psi3: single hits at one end of psi2, double hits at the
    // other, the blanks between, spread along psi3.
    w.setAxes(2, 3, 1, true);
    QVERIFY(save_window(w, "clusters-hit-mix.png"));
  }
};

QTEST_MAIN(TestDocsScreenshots)
#include "test_docs_screenshots.moc"
