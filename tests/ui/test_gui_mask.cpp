// The explorer applies the detector mask as knn and run do (mask.h): on
// simulated diffraction with hot pixels and a panel gap (the mask written
// beside by `manifold simulate diffraction`), the graph the GUI builds is the
// CLI's graph index for index, and a different one with the mask off; the
// dataset panel names the mask, hover shows full frames, a saved session
// records the mask and `run --session` replays the same graph, a session's
// mask is applied when it opens, a folder `manifold run` wrote opens with
// its graph, and a bad mask is the CLI's one line.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "manifold/error.h"
#include "manifold/knn.h"
#include "manifold/npy.h"
#include "manifold/session.h"
#include "manifold/ui/image_render.h"
#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

constexpr int kSize = 32, kGap = 2, kHot = 10, kNeighbours = 10;
// The valid pixels: the frame less the gap's rows and columns, less the hot pixels.
constexpr int kValid = (kSize - kGap) * (kSize - kGap) - kHot;

}  // namespace

class TestGuiMask : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_, data_;

  QString path(const QString& name) const { return dir_.filePath(name); }

  /// Runs the CLI; fails the test with its stderr when it does not exit 0.
  bool cli(const QStringList& args) {
    QProcess p;
    p.start(cli_, args);
    if (!p.waitForFinished(240000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
      qWarning("manifold %s: %s", qPrintable(args.join(' ')), p.readAllStandardError().constData());
      return false;
    }
    return true;
  }

  ResultVector<int64_t> cli_graph(const QString& folder) {
    return npy::read<int64_t, DefaultInitAllocator<int64_t>>(path(folder + "/indices.npy").toStdString());
  }

  /// Opens `file` (a dataset or a session) in `w`, runs the CPU backend at
  /// kNeighbours and waits for the embedding. `opened_status` receives the
  /// status line between the open and the run (datasets only).
  static bool open_and_run(MainWindow& w, const QString& file, bool session, QString* opened_status = nullptr) {
    if (session) return t::open_session(w, file);
    if (!t::open_file(w, file)) return false;
    if (opened_status) *opened_status = w.statusText();
    t::use_cpu(w, kNeighbours);
    return t::run_now(w);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    t::start_gui_tests();
    cli_ = QString::fromLocal8Bit(qgetenv("MANIFOLD_CLI"));
    if (cli_.isEmpty()) QSKIP("MANIFOLD_CLI is not set (ctest sets it)");
    data_ = path("ub.npy");
    QVERIFY(cli({"simulate", "diffraction", "--pdb", "1ubq", "--count", "300", "--size", QString::number(kSize),
                 "--axis", "x", "--photons", "1e5", "--hot-pixels", QString::number(kHot), "--gap",
                 QString::number(kGap), "-o", data_, "--quiet"}));
    QVERIFY(QFileInfo::exists(path("ub.mask.npy")));
    const QString k = QString::number(kNeighbours);
    QVERIFY(cli({"knn", data_, "-k", k, "--backend", "cpu", "-o", path("cli-masked"), "--quiet"}));
    QVERIFY(cli({"knn", data_, "-k", k, "--backend", "cpu", "--mask", "none", "-o", path("cli-unmasked"), "--quiet"}));
  }

  void graphIsTheClisAndSessionKeepsTheMask() {
    MainWindow w;
    QVERIFY(t::show_window(w));
    QString opened_status;
    QVERIFY(open_and_run(w, data_, false, &opened_status));

    // The panel says which pixels the graph sees, and from which file.
    const QString source = w.datasetPanel()->fact("Source");
    QVERIFY2(source.contains(QStringLiteral("mask: %1 of 1,024 pixels valid").arg(kValid)), qPrintable(source));
    QVERIFY2(source.contains("ub.mask.npy"), qPrintable(source));
    // The status line and the shape give the frame and the pixels the distances use.
    const QString used = QStringLiteral("%1 of 1,024 pixels used").arg(kValid);
    QVERIFY2(opened_status.contains(QStringLiteral("300 items of 32 \u00d7 32, ") + used), qPrintable(opened_status));
    QCOMPARE(w.datasetPanel()->fact("Shape"), QStringLiteral("32 \u00d7 32 per item, ") + used);

    // The graph: the CLI's, index for index, over the valid pixels only.
    const auto outcome = w.outcome();
    QVERIFY(outcome && outcome->graph);
    QCOMPARE(outcome->graph->d, int64_t(kValid));
    const ResultVector<int64_t> masked = cli_graph("cli-masked");
    QCOMPARE(outcome->graph->indices, masked);
    // The mask decides: without it the hot pixels pick other neighbours.
    QVERIFY(cli_graph("cli-unmasked") != masked);

    // The images stay whole: the frames and the hovered image are 32 x 32.
    QCOMPARE(w.dataset()->data.cols(), int64_t(kSize * kSize));
    EmbeddingView* view = w.view();
    view->renderFrame();
    const QPoint at = view->projectedPosition(outcome->result->n / 3).toPoint();
    const int64_t under = view->pointAt(at);
    QVERIFY(under >= 0);
    QTest::mouseMove(view, at);
    QTRY_COMPARE(w.imagePanel()->shownRow(), outcome->result->point_index[static_cast<size_t>(under)]);
    QCOMPARE(w.imagePanel()->shownImage().width(), kSize);
    QCOMPARE(w.imagePanel()->shownImage().height(), kSize);

    // The session records the mask used; the CLI replays the same graph from it.
    const QString session = path("masked.json");
    QVERIFY(w.saveSession(session));
    const Session s = read_session(session.toStdString());
    QCOMPARE(QString::fromStdString(s.mask), QFileInfo(path("ub.mask.npy")).absoluteFilePath());
    QVERIFY(cli({"run", "--session", session, "-o", path("cli-run"), "--quiet"}));
    QCOMPARE(cli_graph("cli-run"), masked);

    // A selection embedded on its own keeps the mask; its session writes the
    // frames and the mask beside it, and the CLI replays the same graph.
    t::lasso(view, view->rect().adjusted(8, 8, -8, -8));
    QVERIFY(w.selectedRows().size() >= 3);
    QPushButton* embed_selection = t::button(w, "Embed selection");
    QVERIFY(embed_selection);
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    embed_selection->click();
    QVERIFY(shown.wait(120000));
    QCOMPARE(w.dataset()->rows(), static_cast<int64_t>(w.outcome()->graph->n));
    QCOMPARE(w.outcome()->graph->d, int64_t(kValid));
    QVERIFY(w.datasetPanel()->fact("Source").contains(QStringLiteral("mask: %1 of 1,024").arg(kValid)));
    const QString selection_session = path("selection.json");
    QVERIFY(w.saveSession(selection_session));
    QVERIFY(QFileInfo::exists(path("selection.data.mask.npy")));
    QVERIFY(cli({"run", "--session", selection_session, "-o", path("cli-selection"), "--quiet"}));
    QCOMPARE(cli_graph("cli-selection"), w.outcome()->graph->indices);
  }

  // Thumbnails and hover images: the masked pixels (hot pixels far above
  // the patterns, the gap) are black and set no contrast, so the pattern
  // shows; with the mask dropped the hot pixels stretch it to near black.
  void imagesLeaveMaskedPixelsOut() {
    const auto ds = loadDataset(data_);
    QCOMPARE(ds->mask.pixels(), int64_t(kSize * kSize));
    LoadedDataset unmasked = *ds;
    unmasked.mask = DetectorMask{};
    double masked_mean = 0, unmasked_mean = 0;
    for (int64_t row = 0; row < ds->rows(); row += 50) {
      const QImage a = renderRow(*ds, row, 0, false), b = renderRow(unmasked, row, 0, false);
      QCOMPARE(a.size(), QSize(kSize, kSize));
      int brightest = 0;
      for (int i = 0; i < kSize * kSize; ++i) {
        const int ga = qGray(a.pixel(i % kSize, i / kSize)), gb = qGray(b.pixel(i % kSize, i / kSize));
        if (!ds->mask.valid[static_cast<size_t>(i)]) {
          QCOMPARE(ga, 0);
          continue;
        }
        brightest = std::max(brightest, ga);
        masked_mean += ga, unmasked_mean += gb;
      }
      QCOMPARE(brightest, 255);  // the valid pixels span the whole grey range
    }
    QVERIFY2(masked_mean > 4 * unmasked_mean,
             qPrintable(QStringLiteral("mean grey %1 masked, %2 unmasked").arg(masked_mean).arg(unmasked_mean)));
  }

  void sessionMaskIsApplied() {
    // A session that turns the mask off: the GUI builds the unmasked graph.
    Session s;
    s.data = data_.toStdString();
    s.mask = "none";
    s.backend = "cpu";
    s.knn.k = kNeighbours;
    s.diffusion.k = kNeighbours;
    const QString session = path("unmasked.json");
    write_session(session.toStdString(), s);
    MainWindow w;
    w.show();
    QVERIFY(open_and_run(w, session, true));
    QVERIFY(w.dataset()->mask.empty());
    QVERIFY(!w.datasetPanel()->fact("Source").contains("mask"));
    QCOMPARE(w.datasetPanel()->fact("Shape"), QStringLiteral("32 \u00d7 32 per item (d = 1,024)"));
    QCOMPARE(w.outcome()->graph->d, int64_t(kSize * kSize));
    QCOMPARE(w.outcome()->graph->indices, cli_graph("cli-unmasked"));
    // Saved again, it still says "none", so a replay does not find the mask beside.
    QVERIFY(w.saveSession(path("unmasked-again.json")));
    QCOMPARE(read_session(path("unmasked-again.json").toStdString()).mask, std::string("none"));
  }

  /// Opens `folder` (a results folder) in a new window and waits for its
  /// embedding; `built` says whether the run built its graph.
  static bool open_results(MainWindow& w, const QString& folder, bool* built) {
    QSignalSpy started(w.runner(), &JobRunner::started);
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.openFile(folder);
    if (!shown.wait(120000)) {
      qWarning("%s: no embedding (%s)", qPrintable(folder), qPrintable(w.lastError()));
      return false;
    }
    *built = !started.isEmpty() && started.first().first().toBool();
    return true;
  }

  // A folder `manifold run` wrote opens with the graph it holds: the
  // session's data and mask, the CLI's graph taken as built (no k-NN run
  // here), only the embedding computed, and it is the CLI's embedding; a
  // folder `manifold knn` wrote likewise, from what its graph.json records.
  // A graph of other data is built anew with a notice, data moved beside
  // the folder are found there, and data that are nowhere are one line.
  void resultsFolderOpensWithItsGraph() {
    const QString results = path("run-results");
    QVERIFY(cli({"run", data_, "-k", QString::number(kNeighbours), "--backend", "cpu", "--components", "4", "-o",
                 results, "--quiet"}));
    bool built = true;
    {
      MainWindow w;
      QVERIFY(t::show_window(w));
      QVERIFY(open_results(w, results, &built));
      QVERIFY2(!built, "the k-NN graph was built again");
      QVERIFY(w.outcome()->graph_reused);
      QCOMPARE(w.outcome()->graph->d, int64_t(kValid));
      QCOMPARE(w.outcome()->graph->indices, cli_graph("run-results"));
      const auto eigenvalues = npy::read<double>((results + "/eigenvalues.npy").toStdString());
      QCOMPARE(w.outcome()->result->eigenvalues.size(), eigenvalues.size());
      for (size_t i = 0; i < eigenvalues.size(); ++i)
        QVERIFY(std::abs(w.outcome()->result->eigenvalues[i] - eigenvalues[i]) < 1e-9);
      QVERIFY(w.messageText().isEmpty());
    }
    // The session turned to the unmasked data: the masked graph is not theirs.
    const QString other = path("run-other");
    QVERIFY(QDir().mkpath(other));
    for (const char* f : {"indices.npy", "distances.npy", "graph.json"})
      QVERIFY(QFile::copy(results + "/" + f, other + "/" + f));
    Session s = read_session((results + "/session.json").toStdString());
    s.mask = "none";
    write_session((other + "/session.json").toStdString(), s);
    {
      MainWindow w;
      QVERIFY(t::show_window(w));
      QVERIFY(open_results(w, other, &built));
      QVERIFY(built);
      QCOMPARE(w.outcome()->graph->d, int64_t(kSize * kSize));
      QVERIFY2(w.messageText().contains("is not used: it was built from other data"), qPrintable(w.messageText()));
    }
    // Moved to another machine: the data and mask by name beside the folder.
    const QString moved = path("moved/results");
    QVERIFY(QDir().mkpath(moved));
    for (const char* f : {"indices.npy", "distances.npy", "graph.json"})
      QVERIFY(QFile::copy(results + "/" + f, moved + "/" + f));
    QVERIFY(QFile::copy(data_, path("moved/ub.npy")));
    QVERIFY(QFile::copy(path("ub.mask.npy"), path("moved/ub.mask.npy")));
    s = read_session((results + "/session.json").toStdString());
    s.data = "/no/such/folder/ub.npy";
    s.mask = "/no/such/folder/ub.mask.npy";
    write_session((moved + "/session.json").toStdString(), s);
    {
      MainWindow w;
      QVERIFY(t::show_window(w));
      QVERIFY(open_results(w, moved, &built));
      QVERIFY2(!built, "the k-NN graph was built again");
      QCOMPARE(w.outcome()->graph->indices, cli_graph("run-results"));
      QVERIFY2(w.messageText().contains("beside the results"), qPrintable(w.messageText()));
    }
    // A graph folder `manifold knn` wrote: the data and mask its graph.json
    // records, its k, the embedding's defaults; the graph taken as built.
    {
      MainWindow w;
      QVERIFY(t::show_window(w));
      QVERIFY(open_results(w, path("cli-masked"), &built));
      QVERIFY2(!built, "the k-NN graph was built again");
      QCOMPARE(w.outcome()->graph->indices, cli_graph("cli-masked"));
      QCOMPARE(w.outcome()->graph->d, int64_t(kValid));
      QCOMPARE(w.outcome()->params.knn.k, kNeighbours);
      QCOMPARE(w.outcome()->result->k, kNeighbours);
    }
    // The unmasked graph: no mask recorded, none applied.
    {
      MainWindow w;
      QVERIFY(t::show_window(w));
      QVERIFY(open_results(w, path("cli-unmasked"), &built));
      QVERIFY2(!built, "the k-NN graph was built again");
      QCOMPARE(w.outcome()->graph->d, int64_t(kSize * kSize));
      QVERIFY(w.dataset()->mask.empty());
    }
    // Nowhere: one line naming the folder and the data.
    s.data = "/no/such/folder/nowhere.npy";
    write_session((moved + "/session.json").toStdString(), s);
    MainWindow w;
    QSignalSpy error(&w, &MainWindow::errorShown);
    w.openFile(moved);
    QVERIFY(!error.isEmpty() || error.wait(10000));
    QVERIFY2(w.lastError().contains("nowhere.npy is not there, nor beside the folder"), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
  }

  // Two notices of one opening both stay: the data found beside moved
  // results, and their graph not used (the session turned to unmasked data).
  void movedResultsWithAGraphNotUsedSayBoth() {
    const QString results = path("notices-made");
    QVERIFY(cli({"run", data_, "-k", QString::number(kNeighbours), "--backend", "cpu", "--components", "4", "-o",
                 results, "--quiet"}));
    const QString moved = path("notices/results");
    QVERIFY(QDir().mkpath(moved));
    for (const char* f : {"indices.npy", "distances.npy", "graph.json"})
      QVERIFY(QFile::copy(results + "/" + f, moved + "/" + f));
    QVERIFY(QFile::copy(data_, path("notices/ub.npy")));
    Session s = read_session((results + "/session.json").toStdString());
    s.data = "/no/such/folder/ub.npy";
    s.mask = "none";
    write_session((moved + "/session.json").toStdString(), s);
    MainWindow w;
    QVERIFY(t::show_window(w));
    bool built = false;
    QVERIFY(open_results(w, moved, &built));
    QVERIFY(built);
    const QString text = w.messageText();
    QVERIFY2(text.contains("beside the results") && text.contains("is not used: it was built from other data"),
             qPrintable(text));
  }

  void badMaskIsTheClisLine() {
    // A mask of another frame shape: the open fails with the CLI's one line.
    const std::vector<uint8_t> small(16 * 16, 1);
    npy::write(path("wrong.npy").toStdString(), small.data(), {16, 16});
    OpenOptions options;
    options.mask = path("wrong.npy").toStdString();
    QString line;
    try {
      loadDataset(data_, options);
    } catch (const Error& e) {
      line = QString::fromUtf8(e.what());
    }
    QVERIFY2(line.contains("wrong.npy: mask of shape 16x16 does not fit the frames of"), qPrintable(line));

    QProcess p;
    p.start(cli_, {"knn", data_, "-k", "5", "--mask", path("wrong.npy"), "-o", path("g-wrong"), "--quiet"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(QString::fromUtf8(p.readAllStandardError()).contains(line), qPrintable(line));

    // Through a session, the window shows that line as the open error.
    Session s;
    s.data = data_.toStdString();
    s.mask = path("wrong.npy").toStdString();
    write_session(path("wrong-mask.json").toStdString(), s);
    MainWindow w;
    w.show();
    QSignalSpy errors(&w, &MainWindow::errorShown);
    w.openSession(path("wrong-mask.json"));
    QVERIFY(errors.wait(60000));
    QVERIFY2(w.lastError().contains(line), qPrintable(w.lastError()));
    QVERIFY(!w.dataset());
  }
};

QTEST_MAIN(TestGuiMask)
#include "test_gui_mask.moc"
