// The smaller comforts of issue 23, item 5: the cluster-profile editor
// (the core's checks, the same JSON), export dialogs that remember their
// folder and suggest a writable one, the graph export into a new folder,
// Help ▸ Manual and the shortcuts list, and the image panel's pixel value
// and contrast.
#include <QCheckBox>
#include <QDialog>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

#include <sys/stat.h>

#include <cmath>

#include "manifold/cluster.h"
#include "manifold/graph_io.h"
#include "manifold/ui/cluster_profile_dialog.h"
#include "manifold/ui/file_dialogs.h"
#include "manifold/ui/image_panel.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

double mean_grey(const QImage& image) {
  double sum = 0;
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) sum += qGray(image.pixel(x, y));
  return sum / (image.width() * image.height());
}

}  // namespace

class TestComforts : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
  }

  // The editor says what the core's loader says, and saves what it loads.
  void clusterProfileEditor() {
    ClusterProfileDialog dialog;
    dialog.kindEditor()->setCurrentIndex(dialog.kindEditor()->findData("slurm"));
    QVERIFY2(dialog.problem().contains("work_dir"), qPrintable(dialog.problem()));
    dialog.workDirEditor()->setText(dir_.filePath("jobs"));
    dialog.partitionEditor()->setText("gpu");
    dialog.nodesEditor()->setValue(2);
    dialog.ranksPerNodeEditor()->setValue(4);
    dialog.gpusPerNodeEditor()->setValue(1);
    dialog.timeLimitEditor()->setText("2:00:0:0");
    QVERIFY2(dialog.problem().contains("time_limit"), qPrintable(dialog.problem()));
    dialog.timeLimitEditor()->setText("02:00:00");
    dialog.envEditor()->setPlainText("OMP_NUM_THREADS=8");
    dialog.extraArgsEditor()->setText("--account=abc --qos=high");
    QVERIFY2(dialog.problem().isEmpty(), qPrintable(dialog.problem()));

    const QString path = dir_.filePath("slurm.json");
    QVERIFY(dialog.save(path));
    const cluster::Profile p = cluster::load_profile(path.toStdString());
    QCOMPARE(p.kind, cluster::Profile::Kind::Slurm);
    QCOMPARE(p.partition, std::string("gpu"));
    QCOMPARE(p.nodes, 2);
    QCOMPARE(p.ranks_per_node, 4);
    QCOMPARE(p.gpus_per_node, 1);
    QCOMPARE(p.time_limit, std::string("02:00:00"));
    QCOMPARE(p.env.at("OMP_NUM_THREADS"), std::string("8"));
    QCOMPARE(p.sbatch_args, (std::vector<std::string>{"--account=abc", "--qos=high"}));

    // Loaded back, the fields hold the same profile; a bad value is refused
    // and the file is left as it was.
    ClusterProfileDialog again;
    QVERIFY2(again.load(path), qPrintable(again.problem()));
    QCOMPARE(again.profileJson(), dialog.profileJson());
    again.partitionEditor()->setText("gpu\nrm -rf /");
    QVERIFY2(again.problem().contains("control character"), qPrintable(again.problem()));
    QVERIFY(!again.save(path));
    QCOMPARE(cluster::load_profile(path.toStdString()).partition, std::string("gpu"));

    // mpirun: ranks, no Slurm keys.
    ClusterProfileDialog local;
    local.ranksEditor()->setValue(3);
    QVERIFY(local.save(dir_.filePath("local.json")));
    const cluster::Profile l = cluster::load_profile(dir_.filePath("local.json").toStdString());
    QCOMPARE(l.kind, cluster::Profile::Kind::Mpirun);
    QCOMPARE(l.ranks, 3);
  }

  // Save dialogs start where the last export went, never in a folder that
  // cannot be written, and suggest a file name.
  void exportDialogsRememberTheirFolder() {
    const QString exports = dir_.filePath("exports");
    QVERIFY(QDir().mkpath(exports));
    rememberFolder("test-exports", exports + "/embedding.npy");
    QCOMPARE(suggestedSavePath("test-exports", "spots-embedding.npy"), exports + "/spots-embedding.npy");
    const QString readonly = dir_.filePath("readonly");
    QVERIFY(QDir().mkpath(readonly));
    QVERIFY(::chmod(readonly.toLocal8Bit().constData(), 0555) == 0);
    rememberFolder("test-exports", readonly);
    if (QFileInfo(readonly).isWritable()) QSKIP("running as a user who can write anywhere");
    QVERIFY(!suggestedSavePath("test-exports", "x.npy").startsWith(readonly));
    QVERIFY(startFolder("test-exports", false) == readonly);  // fine for opening
  }

  // The graph export writes into a folder it creates, parents included.
  void graphExportCreatesItsFolder() {
    const QString data = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 200, 12, 12);
    MainWindow w;
    QSignalSpy exported(&w, &MainWindow::exportFinished);
    QVERIFY(t::open_file(w, data, 20000));
    w.parameterPanel()->componentsEditor()->setValue(3);
    QVERIFY(t::run_now(w, 60000));
    const QString out = dir_.filePath("new/nested/spots-graph");
    w.exportGraph(out);
    QVERIFY(exported.wait(20000));
    QVERIFY2(exported.first().at(0).toBool(), qPrintable(exported.first().at(1).toStringList().join(' ')));
    QCOMPARE(read_graph(out.toStdString()).n, int64_t(200));
  }

  // Help ▸ Manual shows docs/ui.md; Help ▸ Keyboard Shortcuts lists the menus' keys.
  void manualAndShortcuts() {
    MainWindow w;
    QFile manual(MainWindow::manualPath());
    QVERIFY2(manual.open(QIODevice::ReadOnly), qPrintable(MainWindow::manualPath()));
    QVERIFY(manual.readAll().startsWith("# "));
    w.showManual();
    auto* dialog = w.findChild<QDialog*>("manualDialog");
    QVERIFY(dialog && dialog->isVisible());
    auto* browser = dialog->findChild<QTextBrowser*>();
    QVERIFY(browser && browser->toPlainText().contains("Manifold Explorer"));
    dialog->grab().save(QDir(t::output_dir()).filePath("manual.png"));  // to look at, not asserted

    const auto rows = w.shortcutList();
    auto has = [&rows](const QString& keys, const QString& does) {
      for (const auto& [k, d] : rows)
        if (k.contains(keys) && d.contains(does)) return true;
      return false;
    };
    QVERIFY(has("Ctrl+R", "Run"));
    QVERIFY(has("Ctrl+O", "Open Dataset"));
    QVERIFY(has("Ctrl+Shift+O", "Open Folder"));
    QVERIFY(has("Esc", "Cancel"));
    w.showShortcuts();
    QVERIFY(w.findChild<QDialog*>("shortcutsDialog")->isVisible());
    w.findChild<QDialog*>("shortcutsDialog")->grab().save(QDir(t::output_dir()).filePath("shortcuts.png"));
  }

  // The value under the mouse is the data's; clip and gamma change the picture.
  void imagePanelPixelValueAndContrast() {
    std::vector<float> values(2 * 16 * 16);
    for (int i = 0; i < 256; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i % 16 + i / 16);
    values[37] = 1000.f;  // a hot pixel at (5, 2)
    Dataset d(2, 256, std::move(values));
    d.item_shape = {16, 16};
    auto ds = adoptDataset(std::move(d), "ramp", "test", false);
    ImagePanel panel;
    QVERIFY(t::show_window(panel, QSize(300, 380)));
    panel.setDataset(ds);
    panel.setPinned(0);
    QTest::mouseMove(panel.canvas(), panel.canvas()->positionOf({5, 2}).toPoint());
    QTRY_COMPARE(panel.pixelText(), QString("pixel (5, 2) = 1000"));
    QTest::mouseMove(panel.canvas(), panel.canvas()->positionOf({3, 7}).toPoint());
    QTRY_COMPARE(panel.pixelText(), QString("pixel (3, 7) = 10"));

    // The hot pixel squeezes the ramp into black; clipping 1% restores it.
    const double full = mean_grey(panel.shownImage());
    panel.clipEditor()->setValue(1);
    const double clipped = mean_grey(panel.shownImage());
    QVERIFY2(clipped > 3 * full, qPrintable(QString("%1 vs %2").arg(clipped).arg(full)));
    panel.gammaEditor()->setValue(2);
    QVERIFY(mean_grey(panel.shownImage()) > clipped * 1.1);
  }

  // Rows read from a folder's files: the caption names the image's file
  // (escaped: a name is not markup).
  void imagePanelNamesTheFile() {
    Dataset d(2, 16, std::vector<float>(32, 1.f));
    d.item_shape = {4, 4};
    d.item_names = {"run 7 <a>.png", "stack.tif, page 2"};
    auto ds = adoptDataset(std::move(d), "files", "test", false);
    ImagePanel panel;
    QVERIFY(t::show_window(panel, QSize(300, 380)));
    panel.setDataset(ds);
    panel.setPinned(1);
    QTRY_VERIFY2(panel.caption().contains("stack.tif, page 2"), qPrintable(panel.caption()));
    panel.setPinned(0);
    QTRY_VERIFY2(panel.caption().contains("run 7 &lt;a&gt;.png"), qPrintable(panel.caption()));
  }

  // Photon counts (a bright centre over a background of a few photons) open
  // on a log scale, in the gallery's box and the image panel alike, which
  // then shows the background; natural or class images and zero-mean data
  // open linear, and each new dataset takes its own.
  void photonCountsOpenOnALogScale() {
    const int side = 32, n = 40;
    std::vector<float> counts(static_cast<size_t>(n) * side * side), flat(counts.size()), centred(counts.size());
    for (int i = 0; i < n; ++i)
      for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x) {
          const size_t at = (static_cast<size_t>(i) * side + y) * side + x;
          const double r2 = (x - 15.5) * (x - 15.5) + (y - 15.5) * (y - 15.5);
          counts[at] = std::round(800.0 * std::exp(-r2 / 6.0)) + static_cast<float>((x * 7 + y * 3 + i) % 4);
          flat[at] = static_cast<float>((x * 37 + y * 11 + i * 5) % 256);
          centred[at] = flat[at] - 127.5f;
        }
    auto make = [&](std::vector<float> v, const char* name) {
      Dataset d(n, side * side, std::move(v));
      d.item_shape = {side, side};
      return adoptDataset(std::move(d), name, "test", false);
    };
    const auto photons = make(counts, "photons"), natural = make(flat, "flat"), zero_mean = make(centred, "centred");
    QVERIFY(photons->log_scale);
    QVERIFY(!natural->log_scale);
    QVERIFY(!zero_mean->log_scale);

    MainWindow w;
    QVERIFY(t::show_window(w));
    w.openDataset(natural);
    QVERIFY(!w.datasetPanel()->logScale());
    w.openDataset(photons);
    QVERIFY(w.datasetPanel()->logScale());
    ImagePanel* image = w.imagePanel();
    image->setPinned(0);
    const double log_grey = mean_grey(image->shownImage());
    for (QCheckBox* box : w.datasetPanel()->findChildren<QCheckBox*>())
      if (box->text() == "Log scale") box->setChecked(false);
    QVERIFY(!w.datasetPanel()->logScale());
    const double linear_grey = mean_grey(image->shownImage());
    QVERIFY2(log_grey > 5 * linear_grey, qPrintable(QString("%1 vs %2").arg(log_grey).arg(linear_grey)));
    w.openDataset(zero_mean);
    QVERIFY(!w.datasetPanel()->logScale());
  }
};

QTEST_MAIN(TestComforts)
#include "test_comforts.moc"
