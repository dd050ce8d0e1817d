// The main window's Trajectory dock: the player gets the embedding shown
// once its dock is visible, the current bin is ringed in the view (and the
// user's selection left alone), a path through pinned points orders the
// movie along it, and a new dataset clears it all. Category colours 0-9 stay
// apart from each other.
#include <QDockWidget>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "manifold/npy.h"
#include "manifold/ui/colour_maps.h"
#include "manifold/ui/main_window.h"
#include "manifold/ui/palette.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

class TestExplorerPanels : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString data_path_;

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    data_path_ = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 600, 16, 16);
  }

  void trajectoryDockFollowsTheEmbeddingAndRingsItsBin() {
    MainWindow w;
    QVERIFY(t::show_window(w));
    QVERIFY(t::open_file(w, data_path_, 20000));
    QVERIFY(t::run_now(w, 60000));
    TrajectoryPlayer* player = w.trajectoryPlayer();
    QVERIFY(player);
    // Hidden behind the spectrum: no frames computed for nobody.
    QTest::qWait(300);
    QVERIFY(!player->frames());

    w.setSelectedRows({1, 2, 3});
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("trajectoryDock"));
    QVERIFY(dock);
    QSignalSpy ready(player, &TrajectoryPlayer::framesReady);
    dock->raise();
    QVERIFY(ready.wait(30000));
    QVERIFY(player->frames());
    QVERIFY(player->frameCount() > 1);
    player->setCurrentFrame(2);
    const auto& bin = player->frames()->bins[2];
    QTRY_VERIFY(!w.view()->highlight().empty());
    std::vector<int64_t> want = bin.points, got = w.view()->highlight();
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    QCOMPARE(got, want);
    // The user's selection is not the bin.
    QCOMPARE(w.selectedRows(), (std::vector<int64_t>{1, 2, 3}));

    // A path through two pinned points orders the movie along it.
    const int64_t n = w.outcome()->result->n;
    Q_EMIT w.view()->picked(0);
    QVERIFY(w.addPinToPath());
    Q_EMIT w.view()->picked(n / 4);
    QVERIFY(w.addPinToPath());
    QCOMPARE(w.trajectoryPath().size(), size_t(2));
    QTRY_COMPARE(player->order(), TrajectoryPlayer::Order::Path);
    w.clearPath();
    QVERIFY(w.trajectoryPath().empty());

    // A new dataset empties the player and the rings.
    QVERIFY(t::open_file(w, data_path_, 20000));
    QVERIFY(!player->frames());
    QVERIFY(w.view()->highlight().empty());
  }

  void metadataFoundBesideTheDataColoursAndCorrelates() {
    // spots.npy with spots.angles.npy beside it: the loop's phase, 2 pi i / n
    // (the spot turns half a turn, its pattern a whole one).
    QTemporaryDir dir;
    const QString data = t::write_rotating_spot_npy(dir.filePath("loop.npy"), 600, 16, 16);
    std::vector<double> phase(600);
    for (int i = 0; i < 600; ++i) phase[i] = 2 * M_PI * i / 600;
    npy::write(dir.filePath("loop.angles.npy").toStdString(), phase.data(), {600});
    MainWindow w;
    QVERIFY(t::show_window(w));
    QVERIFY(t::open_file(w, data, 20000));
    const auto& meta = w.dataset()->metadata;
    const auto angle = std::find_if(meta.begin(), meta.end(), [](const PointMetadata& m) { return m.name == "angle"; });
    QVERIFY(angle != meta.end());
    QCOMPARE(angle->period, 2 * M_PI);
    QVERIFY(t::run_now(w, 60000));
    // Filled when its tab is shown.
    QVERIFY(w.metadataTable()->correlations().empty());
    w.findChild<QDockWidget*>(QStringLiteral("metadataDock"))->raise();
    QTRY_VERIFY(!w.metadataTable()->correlations().empty());
    const auto& corr = w.metadataTable()->correlations();
    const auto a = std::find_if(corr.begin(), corr.end(),
                                [](const MetadataCorrelation& c) { return c.name == "angle"; });
    QVERIFY(a != corr.end());
    QVERIFY2(std::abs(a->pair_fisher_lee) >= 0.99, qPrintable(QString::number(a->pair_fisher_lee)));
    // A row click colours by its column, with the cyclic map for an angle.
    w.metadataTable()->setCurrentColumn("index");
    Q_EMIT w.metadataTable()->columnChosen("angle");
    QCOMPARE(w.colourKey(), QString("angle"));
    QCOMPARE(w.view()->colourTitle(), QString("angle"));
  }

  void tenCategoryColoursStayApart() {
    // Labels 0-9 are what users colour by most: each pair at least 0.12 apart
    // in OKLab (about six just-noticeable steps), none near the selection.
    for (int i = 0; i < 10; ++i) {
      QVERIFY(colourDistance(categoryColour(i), kSelectionColour) > 0.2);
      for (int j = i + 1; j < 10; ++j)
        QVERIFY2(colourDistance(categoryColour(i), categoryColour(j)) > 0.12,
                 qPrintable(QString("%1 and %2").arg(i).arg(j)));
    }
  }
};

QTEST_MAIN(TestExplorerPanels)
#include "test_explorer_panels.moc"
