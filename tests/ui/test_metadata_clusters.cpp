// The Metadata dock's own columns and clusters: metadata loaded from files
// that are not beside the data (.npy, .csv, a CXI dataset) colours the
// points and joins the table; a file of another length says so and changes
// nothing; sessions bring the columns back. Clusters of a simulated hit mix
// (blanks, single and double hits) match the true classes, a cluster's row
// selects exactly its points, re-clustering replaces the column, and a
// session keeps it. The table fits the Metadata dock of a window at its
// default size.
#include <QDockWidget>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include "manifold/clustering.h"
#include "manifold/npy.h"
#include "manifold/simulate.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

constexpr int kRows = 240;

const PointMetadata* column(const MainWindow& w, const QString& name) {
  for (const PointMetadata& m : w.dataset()->metadata)
    if (m.name == name) return &m;
  return nullptr;
}

int columns_named(const MainWindow& w, const QString& name) {
  int n = 0;
  for (const PointMetadata& m : w.dataset()->metadata) n += m.name == name;
  return n;
}

// Columns for the spots written into `folder`, away from the data, so
// nothing finds them by itself: tilt.npy, short.npy (one row short),
// runs.csv (a category and a number) and facts.cxi (rotation angles).
void write_columns_elsewhere(const std::string& folder) {
  std::vector<double> tilt(kRows), short_column(kRows - 1, 1.0);
  for (int i = 0; i < kRows; ++i) tilt[static_cast<size_t>(i)] = std::sin(0.1 * i);
  npy::write(folder + "/tilt.npy", tilt.data(), {kRows});
  npy::write(folder + "/short.npy", short_column.data(), {kRows - 1});
  {
    std::ofstream csv(folder + "/runs.csv");
    csv << "run,dose\n";
    for (int i = 0; i < kRows; ++i) csv << (i < kRows / 2 ? "early" : "late") << "," << 0.5 * i << "\n";
  }
  DiffractionImages cxi;
  cxi.count = kRows;
  cxi.size = 2;
  cxi.images.assign(static_cast<size_t>(kRows) * 4, 1.0f);
  cxi.axis = "x";
  for (int i = 0; i < kRows; ++i) cxi.angles.push_back(2 * M_PI * i / kRows);
  cxi.quaternions.assign(static_cast<size_t>(kRows) * 4, 0.5);
  cxi.metadata = {{"pdb_id", "test"}};
  write_diffraction(folder + "/facts.cxi", cxi);
}

QMessageBox* open_error_box(const MainWindow& w) {
  for (QMessageBox* box : w.findChildren<QMessageBox*>(QStringLiteral("metadataError")))
    if (box->isVisible()) return box;
  return nullptr;
}

}  // namespace

class TestMetadataClusters : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  // ---- the phases of metadataFromAnotherFolder ----

  // .npy, .csv and a CXI dataset load, colour the points and join the
  // breakdown and the correlation table.
  void load_npy_csv_and_cxi_columns(MainWindow& w, size_t own) {
    // .npy: the column colours the points at once.
    QVERIFY(w.loadMetadata(dir_.filePath("elsewhere/tilt.npy")));
    const PointMetadata* tilt = column(w, "tilt");
    QVERIFY(tilt);
    QCOMPARE(tilt->values.size(), size_t{kRows});
    QCOMPARE(tilt->values[10], static_cast<float>(std::sin(1.0)));
    QCOMPARE(w.colourKey(), QStringLiteral("tilt"));
    QCOMPARE(w.view()->colourTitle(), QStringLiteral("tilt"));
    // .csv: a categorical and a numeric column; the breakdown counts the category.
    QVERIFY(w.loadMetadata(dir_.filePath("elsewhere/runs.csv")));
    QVERIFY(column(w, "run") && column(w, "run")->categorical);
    QVERIFY(column(w, "dose") && !column(w, "dose")->categorical);
    w.setColourBy("run");
    QCOMPARE(w.view()->colourTitle(), QStringLiteral("run"));
    w.setSelectedRows({0, 1, 2, kRows - 1});
    QCOMPARE(w.breakdownColumn(), QStringLiteral("run"));
    QCOMPARE(w.selectionBreakdown()->rowCount(), 2);
    QCOMPARE(w.selectionBreakdown()->item(0, 0)->text(), QStringLiteral("early"));
    QCOMPARE(w.selectionBreakdown()->item(0, 1)->text(), QStringLiteral("3"));
    // A CXI dataset, named by its path: an angle.
    QVERIFY(w.loadMetadata(dir_.filePath("elsewhere/facts.cxi"), "/entry_1/sample_1/rotation_angle"));
    const PointMetadata* angle = column(w, "rotation_angle");
    QVERIFY(angle);
    QVERIFY(angle->period > 0);
    QCOMPARE(w.colourKey(), QStringLiteral("rotation_angle"));
    QCOMPARE(w.dataset()->metadata.size(), own + 4);
    // Every column is offered by the colouring and in the correlation table.
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("metadataDock"));
    QVERIFY(dock);
    dock->raise();
    QTRY_COMPARE(w.metadataTable()->rowCount(), static_cast<int>(own + 4));
    QStringList rows;
    for (int r = 0; r < w.metadataTable()->rowCount(); ++r) rows << w.metadataTable()->item(r, 0)->text();
    for (const char* name : {"tilt", "run", "dose", "rotation_angle"}) QVERIFY2(rows.contains(name), name);
  }

  // Another length, or a dataset that is not there: one line naming the
  // file, in a message box; nothing changes.
  void another_length_changes_nothing(MainWindow& w, size_t own, const QStringList& loaded) {
    QVERIFY(!w.loadMetadata(dir_.filePath("elsewhere/short.npy")));
    QVERIFY2(w.lastError().contains("short.npy") && w.lastError().contains(QString::number(kRows)),
             qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
    QMessageBox* box = open_error_box(w);
    QVERIFY(box);
    QCOMPARE(box->text(), w.lastError());
    box->close();
    QVERIFY(!w.loadMetadata(dir_.filePath("elsewhere/facts.cxi"), "/entry_1/nothing"));
    QVERIFY2(w.lastError().contains("facts.cxi"), qPrintable(w.lastError()));
    if (QMessageBox* again = open_error_box(w)) again->close();
    QCOMPARE(w.dataset()->metadata.size(), own + 4);
    QCOMPARE(w.loadedMetadata(), loaded);
    QCOMPARE(w.colourKey(), QStringLiteral("rotation_angle"));
  }

  // A session brings the columns back, and the colouring by one of them.
  void session_brings_the_columns_back(MainWindow& w, const QStringList& loaded) {
    const QString session = dir_.filePath("metadata-session.json");
    QVERIFY(w.saveSession(session));
    MainWindow again;
    QVERIFY(t::open_session(again, session));
    QCOMPARE(again.loadedMetadata(), loaded);
    for (const char* name : {"tilt", "run", "dose", "rotation_angle"}) {
      QVERIFY2(column(again, name), name);
      QCOMPARE(column(again, name)->values.size(), column(w, name)->values.size());
      for (size_t i = 0; i < column(w, name)->values.size(); ++i)
        QCOMPARE(column(again, name)->values[i], column(w, name)->values[i]);
    }
    QCOMPARE(again.colourKey(), QStringLiteral("rotation_angle"));
    QCOMPARE(again.view()->colourTitle(), QStringLiteral("rotation_angle"));
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
  }

  void metadataFromAnotherFolder() {
    QDir(dir_.path()).mkpath("data");
    QDir(dir_.path()).mkpath("elsewhere");
    const QString data = t::write_rotating_spot_npy(dir_.filePath("data/spots.npy"), kRows, 16, 16);
    write_columns_elsewhere(dir_.filePath("elsewhere").toStdString());

    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1440, 900)));
    QVERIFY(t::open_and_run(w, data));
    const size_t own = w.dataset()->metadata.size();
    TEST_PHASE(load_npy_csv_and_cxi_columns(w, own));
    const QStringList loaded = w.loadedMetadata();
    QCOMPARE(loaded.size(), 3);
    TEST_PHASE(another_length_changes_nothing(w, own, loaded));
    TEST_PHASE(session_brings_the_columns_back(w, loaded));
  }

  void clustersOfASimulatedHitMix() {
    const QByteArray cli = qgetenv("MANIFOLD_CLI");
    if (cli.isEmpty()) QSKIP("MANIFOLD_CLI is not set (run through CTest)");
    // Blanks, single and double hits as `manifold simulate diffraction --mix`
    // writes them, the true classes beside (NAME.labels.npy: the column
    // "label"); 1e3 photons with a shot-to-shot fluence spread, so the k-NN
    // graph is one piece and k-means on the coordinates tells the classes
    // apart (bench/physics/RESULTS.md, section 3).
    const QString data = dir_.filePath("mix.npy");
    QProcess sim;
    sim.start(QString::fromLocal8Bit(cli), {"simulate",     "diffraction", "--pdb",
                                            "1ubq",         "--count",     "600",
                                            "--size",       "32",          "--axis",
                                            "random",       "--photons",   "1e3",
                                            "--background", "1000",        "--fluence-jitter",
                                            "0.6",          "--mix",       "blank=0.3,single=0.5,double=0.2",
                                            "--seed",       "1",           "-q",
                                            "-o",           data});
    QVERIFY(sim.waitForFinished(120000));
    if (sim.exitCode() != 0)
      QFAIL(qPrintable("simulating the mix failed: " + QString::fromLocal8Bit(sim.readAllStandardError())));
    // Opened through a session, which carries the photon counts' transform.
    const QString setup = dir_.filePath("mix-session.json");
    {
      std::ofstream f(setup.toStdString());
      f << R"({"format": "manifold-session", "version": 1, "data": "mix.npy", "transform": "anscombe",
               "knn": {"k": 20, "metric": "cosine"}, "diffusion": {"components": 6}})";
    }

    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1440, 900)));
    QVERIFY(t::open_session(w, setup));
    QVERIFY(column(w, "label"));
    QSignalSpy ready(&w, &MainWindow::clustersReady), errors(&w, &MainWindow::errorShown);
    w.clusterPoints(0, 0);  // K and m chosen for the user
    QVERIFY2(ready.wait(60000), errors.isEmpty() ? "no clusters" : qPrintable(errors.last().at(0).toString()));
    const PointMetadata* c = column(w, "cluster");
    QVERIFY(c && c->categorical);
    QCOMPARE(w.colourKey(), QStringLiteral("cluster"));
    QCOMPARE(w.view()->colourTitle(), QStringLiteral("cluster"));

    // The best one-to-one match of clusters to the true classes.
    const PointMetadata* truth = column(w, "label");
    std::vector<int32_t> classes, clusters;
    for (size_t i = 0; i < truth->values.size(); ++i) {
      classes.push_back(static_cast<int32_t>(truth->values[i]));
      clusters.push_back(std::isnan(c->values[i]) ? -1 : static_cast<int32_t>(c->values[i]));
    }
    const Agreement a = cluster_agreement(classes, clusters);
    QVERIFY2(a.accuracy >= 0.9, qPrintable(QString::number(a.accuracy)));
    QVERIFY2(w.clusterSummary().contains("with label"), qPrintable(w.clusterSummary()));

    // The list has a row per cluster; clicking one selects exactly its points.
    QListWidget* list = w.clusterList();
    const int k = list->count();
    QVERIFY(k >= 3);
    QListWidgetItem* second = list->item(1);
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(second).center());
    std::vector<int64_t> members;
    for (size_t i = 0; i < clusters.size(); ++i)
      if (clusters[i] == 1) members.push_back(static_cast<int64_t>(i));
    QVERIFY(!members.empty());
    QCOMPARE(w.selectedRows(), members);
    QCOMPARE(w.selectionModel()->rowCount(), static_cast<int>(members.size()));
    QCOMPARE(static_cast<size_t>(w.view()->selection().size()), members.size());

    // More coordinates than the embedding has: one line, in the panel's words; the clusters stay.
    errors.clear();
    w.clusterPoints(99, 3);
    QTRY_VERIFY_WITH_TIMEOUT(!errors.isEmpty(), 30000);
    QVERIFY2(errors.last().at(0).toString().startsWith("m = 99"), qPrintable(errors.last().at(0).toString()));
    QCOMPARE(columns_named(w, "cluster"), 1);
    QCOMPARE(w.clusterList()->count(), k);

    // Re-clustering with K given replaces the column in its place.
    w.clusterPoints(0, k);
    QVERIFY(ready.wait(60000));
    QCOMPARE(columns_named(w, "cluster"), 1);
    QCOMPARE(w.clusterList()->count(), k);

    // A session keeps the clusters.
    const QString session = dir_.filePath("cluster-session.json");
    QVERIFY(w.saveSession(session));
    MainWindow again;
    QVERIFY(t::open_session(again, session));
    const PointMetadata* kept = column(again, "cluster");
    QVERIFY(kept);
    c = column(w, "cluster");
    QCOMPARE(kept->values.size(), c->values.size());
    for (size_t i = 0; i < c->values.size(); ++i)
      QVERIFY(kept->values[i] == c->values[i] || (std::isnan(kept->values[i]) && std::isnan(c->values[i])));
    QCOMPARE(again.clusterList()->count(), k);
    QVERIFY2(again.clusterSummary().contains("with label"), qPrintable(again.clusterSummary()));
  }

  void tableFitsTheDockAtTheDefaultSize() {
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1440, 900)));  // the explorer's default size
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("metadataDock"));
    QVERIFY(dock);
    dock->raise();
    MetadataTableWidget* table = w.metadataTable();
    // An angle with its pair, a category and a number with a long name.
    auto correlation = [](const char* name, MetadataKind kind, int m) {
      MetadataCorrelation c;
      c.name = name;
      c.kind = kind;
      for (int k = 0; k < m; ++k) c.per_coordinate.push_back(k == 1 ? -0.534 : 0.012 * k);
      c.best = 1;
      if (kind == MetadataKind::Angle) c.pair_i = 0, c.pair_j = 1, c.pair_harmonic = 2, c.pair_fisher_lee = -0.998;
      return c;
    };
    for (int m : {4, 10}) {
      table->setCorrelations({correlation("rotation angle (deg)", MetadataKind::Angle, m),
                              correlation("label", MetadataKind::Categorical, m),
                              correlation("mean intensity of the whole pattern", MetadataKind::Numeric, m)},
                             m);
      QTRY_VERIFY(table->isVisible());
      QCoreApplication::processEvents();
      const int width = table->viewport()->width();
      for (int c = 0; c < table->columnCount(); ++c) {
        if (table->isColumnHidden(c)) continue;
        QVERIFY2(table->columnViewportPosition(c) + table->columnWidth(c) <= width,
                 qPrintable(QStringLiteral("m = %1: column %2 ends at %3, the viewport at %4")
                                .arg(m)
                                .arg(c)
                                .arg(table->columnViewportPosition(c) + table->columnWidth(c))
                                .arg(width)));
      }
      // The pair and the first coordinates always show; the statistic is one letter.
      QVERIFY(!table->isColumnHidden(table->pairColumn()));
      QVERIFY2(table->shownCoordinates() >= std::min(m, 4), qPrintable(QString::number(table->shownCoordinates())));
      QCOMPARE(table->item(0, 1)->text(), QStringLiteral("R"));
      QCOMPARE(table->item(0, table->pairColumn())->text(), QStringLiteral("-1.00 ψ1,ψ2 ×2"));
      QCOMPARE(table->item(1, table->psiColumn(1))->text(), QStringLiteral("-.53"));
      QVERIFY(!table->horizontalScrollBar()->isVisible());
      // Without an angle the pair column has nothing to say and goes.
      table->setCorrelations({correlation("label", MetadataKind::Categorical, m)}, m);
      QVERIFY(table->isColumnHidden(table->pairColumn()));
      table->setCorrelations({correlation("rotation angle (deg)", MetadataKind::Angle, m),
                              correlation("label", MetadataKind::Categorical, m),
                              correlation("mean intensity of the whole pattern", MetadataKind::Numeric, m)},
                             m);
      // Every value is in the name's tooltip, those left off included.
      QVERIFY(table->item(2, 0)->toolTip().contains(QStringLiteral("ψ%1").arg(m)));
    }
  }
};

QTEST_MAIN(TestMetadataClusters)
#include "test_metadata_clusters.moc"
