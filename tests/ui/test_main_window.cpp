// The main window end to end: open (file, bad file, drag and drop, session),
// run, re-embed on a parameter change, hover and pin, select, export every
// format and read it back, cancel, and a lazy gallery of 100,000 images.
#include <QDropEvent>
#include <QMimeData>
#include <QProcess>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>

#include <vtkDataArray.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPolyData.h>
#include <vtkXMLPolyDataReader.h>

#include "manifold/embedding_io.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/session.h"
#include "manifold/ui/exporters.h"
#include "manifold/ui/embedding_view.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

// Two embeddings of the same graph from two converged solves (the warm
// re-embedding and a full solve) agree to the solvers' accuracy: coordinates
// to ~1e-8 of their scale, eigenvalues to ~1e-12. A wrong, unconverged or
// sign-flipped solve is off by O(1).
bool close_coordinates(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  if (a.size() != b.size() || a.empty()) return false;
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  qInfo("%s: max coordinate difference %.3g (scale %.3g)", what, worst, scale);
  return scale > 0 && worst < 1e-7 * scale;
}

bool same_embedding(const DiffusionResult& a, const DiffusionResult& b, const char* what) {
  if (a.eigenvalues.size() != b.eigenvalues.size()) return false;
  for (size_t i = 0; i < a.eigenvalues.size(); ++i)
    if (std::abs(a.eigenvalues[i] - b.eigenvalues[i]) > 1e-10) return false;
  return close_coordinates(a.coordinates, b.coordinates, what);
}

}  // namespace

// Drop handling is the window's own; this reaches it the way Qt's drag
// manager does once a drag has entered the window.
class DroppableWindow : public MainWindow {
 public:
  void drop(QDropEvent* event) { dropEvent(event); }
};

class TestMainWindow : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString data_path_;
  std::vector<float> original_;  // the spots, as written

  const float* data_row_copy(int64_t row) const { return original_.data() + row * 256; }

  static bool wait_for(QSignalSpy& spy, int ms = 60000) { return !spy.isEmpty() || spy.wait(ms); }

  /// Runs one export of `w` (`start` starts it) and waits for it; true when
  /// it succeeded, else its messages as a warning.
  static bool export_succeeds(MainWindow& w, const std::function<void()>& start) {
    QSignalSpy exported(&w, &MainWindow::exportFinished);
    start();
    if (!wait_for(exported)) return false;
    if (exported.last().at(0).toBool()) return true;
    qWarning("export failed: %s", qPrintable(exported.last().at(1).toStringList().join(' ')));
    return false;
  }

  // ---- the phases of openRunReembedPickSelectExport ----

  // Open by drag and drop: the panel describes the spots.
  void open_by_drop(DroppableWindow& w) {
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(data_path_)});
    QDropEvent drop(QPointF(200, 200), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    w.drop(&drop);
    QVERIFY(drop.isAccepted());
    QVERIFY(opened.wait(20000));
    QCOMPARE(w.datasetPanel()->fact("N"), QString("600"));
    QVERIFY(w.datasetPanel()->fact("Shape").startsWith("16 \u00d7 16"));
    QVERIFY(w.datasetPanel()->fact("Type").contains("float32"));
    QCOMPARE(w.datasetPanel()->model()->rowCount(), 600);
  }

  // Run at k = 12; lowering k to 7 re-embeds from the cached graph without
  // pressing Run, to the direct solve's accuracy.
  void run_then_reembed_at_smaller_k(MainWindow& w, std::shared_ptr<const EmbeddingOutcome>* reembedded) {
    t::use_cpu(w, 12, 4);
    QVERIFY(t::run_now(w, 60000));
    auto first = w.outcome();
    QVERIFY(first);
    QCOMPARE(first->params.knn.k, 12);
    QCOMPARE(w.view()->pointCount(), first->result->n);
    QCOMPARE(w.spectrumPlot()->ys().size(), size_t(5));
    QCOMPARE(w.spectrumPlot()->ys()[0], first->result->eigenvalues[0]);
    QVERIFY(w.progressText().startsWith("done"));

    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.parameterPanel()->kEditor()->setValue(7);
    QVERIFY(shown.wait(30000));
    auto second = w.outcome();
    QVERIFY(second != first);
    QVERIFY(second->graph_reused);
    QVERIFY(second->graph == first->graph);
    QCOMPARE(second->result->k, 7);
    Progress quiet;
    DiffusionResult direct = diffusion_map(first->graph->sliced(7), second->params.diffusion, quiet);
    QCOMPARE(direct.coordinates.size(), second->result->coordinates.size());
    // The re-embedding is a warm-started iterative solve converged to the same
    // residual tolerance as the direct one, so the two agree to the solvers'
    // accuracy, not to the last bit.
    QVERIFY(same_embedding(direct, *second->result, "re-embed vs direct solve"));
    *reembedded = second;
  }

  // Other axes and colours; hover shows the image of the point under the
  // cursor, and a click pins it.
  void change_axes_hover_and_pin(MainWindow& w, const DiffusionResult& res) {
    w.setAxes(2, 3, 1, false);
    w.setColourBy("dc2");
    w.setAxes(1, 2, 3, true);
    QVERIFY(w.view()->planar());

    EmbeddingView* view = w.view();
    view->renderFrame();
    const QPoint at = view->projectedPosition(res.n / 3).toPoint();
    const int64_t under = view->pointAt(at);
    QVERIFY(under >= 0);
    const int64_t row = res.point_index[static_cast<size_t>(under)];
    QTest::mouseMove(view, at);
    QTRY_COMPARE(w.imagePanel()->shownRow(), row);
    QVERIFY(!w.imagePanel()->shownImage().isNull());
    QCOMPARE(w.imagePanel()->shownImage().width(), 16);
    QTest::mouseClick(view, Qt::LeftButton, {}, at);
    QCOMPARE(w.imagePanel()->pinnedRow(), row);
    QCOMPARE(w.datasetPanel()->gallery()->currentIndex().row(), static_cast<int>(row));
  }

  // Lasso selection in the view selects exactly the points drawn inside the
  // outline (away from its edges) and shows their images.
  void lasso_selects_the_points_inside(MainWindow& w, const DiffusionResult& res, std::vector<int64_t>* selected) {
    EmbeddingView* view = w.view();
    const QRect r = view->rect().adjusted(view->width() / 4, view->height() / 4, -view->width() / 4, 0);
    t::lasso(view, r);
    const std::vector<int64_t> selection = w.selectedRows();
    qInfo("lasso selected %zu of %lld points", selection.size(), static_cast<long long>(res.n));
    QVERIFY(!selection.empty() && selection.size() < static_cast<size_t>(res.n));
    for (int64_t p = 0; p < res.n; p += 7) {
      const QPointF q = view->projectedPosition(p);
      const QRectF inner = QRectF(r).adjusted(2, 2, -2, -2), outer = QRectF(r).adjusted(-2, -2, 2, 2);
      const int64_t dataset_row = res.point_index[static_cast<size_t>(p)];
      const bool is_selected = std::binary_search(selection.begin(), selection.end(), dataset_row);
      if (inner.contains(q)) QVERIFY(is_selected);
      if (!outer.contains(q)) QVERIFY(!is_selected);
    }
    QCOMPARE(w.selectionModel()->rowCount(), static_cast<int>(selection.size()));
    QCOMPARE(w.selectionModel()->datasetRow(0), selection[0]);
    *selected = selection;
  }

  // The graph as a folder and as Matrix Market, each read back.
  void export_graphs(MainWindow& w, const KnnGraph& expected_graph) {
    const QString graph_dir = dir_.filePath("graph");
    QVERIFY(export_succeeds(w, [&] { w.exportGraph(graph_dir); }));
    KnnGraph g = read_graph(graph_dir.toStdString());
    QCOMPARE(g.k, 7);
    QCOMPARE(g.indices, expected_graph.indices);
    QCOMPARE(g.distances, expected_graph.distances);

    const QString mtx = dir_.filePath("graph.mtx");
    QVERIFY(export_succeeds(w, [&] { w.exportGraph(mtx); }));
    SparseTriplets tri = readMatrixMarket(mtx);
    QCOMPARE(tri.rows, int64_t(600));
    QCOMPARE(tri.value.size(), size_t(600 * 7));
    for (size_t x = 0; x < tri.value.size(); x += 97) {
      const int64_t i = tri.i[x];
      const int c = static_cast<int>(x % 7);
      QCOMPARE(tri.j[x], expected_graph.row_indices(i)[c]);
      QVERIFY(std::abs(tri.value[x] - expected_graph.row_distances(i)[c]) <= 1e-6 * (1 + tri.value[x]));
    }
  }

  // The embedding as .npy, .csv, .vtp and a folder, each read back.
  void export_embeddings(MainWindow& w, const DiffusionResult& res) {
    QVERIFY(export_succeeds(w, [&] { w.exportEmbedding(dir_.filePath("embedding.npy")); }));
    std::vector<int64_t> shape;
    auto coords = npy::read<double>(dir_.filePath("embedding.npy").toStdString(), &shape);
    QCOMPARE(shape, (std::vector<int64_t>{res.n, res.m}));
    QCOMPARE(coords, res.coordinates);

    QVERIFY(export_succeeds(w, [&] { w.exportEmbedding(dir_.filePath("embedding.csv")); }));
    {
      std::ifstream csv(dir_.filePath("embedding.csv").toStdString());
      std::string header, line;
      std::getline(csv, header);
      QVERIFY(QString::fromStdString(header).startsWith("index,dc1"));
      // The coordinates, then the dataset's metadata columns ("mean
      // intensity", its row number as index_2), as manifold run writes them.
      const QStringList fields = QString::fromStdString(header).split(',');
      QVERIFY2(fields.size() > res.m + 1 && fields.contains("index_2"), qPrintable(fields.join(',')));
      int lines = 0;
      while (std::getline(csv, line)) {
        if (lines == 10) {
          const QStringList cells = QString::fromStdString(line).split(',');
          QCOMPARE(cells.size(), fields.size());
          QCOMPARE(cells[static_cast<int>(fields.indexOf("index_2"))].toLongLong(), res.point_index[10]);
          QCOMPARE(cells[0].toLongLong(), res.point_index[10]);
          QVERIFY(std::abs(cells[1].toDouble() - res.coordinates[10 * res.m]) < 1e-12);
        }
        ++lines;
      }
      QCOMPARE(lines, static_cast<int>(res.n));
    }

    QVERIFY(export_succeeds(w, [&] { w.exportEmbedding(dir_.filePath("embedding.vtp")); }));
    {
      vtkNew<vtkXMLPolyDataReader> reader;
      reader->SetFileName(dir_.filePath("embedding.vtp").toStdString().c_str());
      reader->Update();
      vtkPolyData* poly = reader->GetOutput();
      QCOMPARE(poly->GetNumberOfPoints(), static_cast<vtkIdType>(res.n));
      vtkDataArray* dc2 = poly->GetPointData()->GetArray("dc2");
      QVERIFY(dc2);
      QVERIFY(std::abs(dc2->GetTuple1(42) - res.coordinates[42 * res.m + 1]) < 1e-12);
      double p[3];
      poly->GetPoint(42, p);
      QVERIFY(std::abs(p[0] - res.coordinates[42 * res.m]) < 1e-6);
    }

    QVERIFY(export_succeeds(w, [&] { w.exportEmbedding(dir_.filePath("embedding-folder")); }));
    Embedding folder = read_embedding(dir_.filePath("embedding-folder").toStdString());
    QCOMPARE(folder.coordinates, res.coordinates);
    QCOMPARE(folder.metadata["parameters"]["k"].get<int>(), 7);
  }

  // The selection's indices and images, and the view as a PNG.
  void export_selection_and_view(MainWindow& w, const std::vector<int64_t>& selection) {
    QVERIFY(export_succeeds(w, [&] { w.exportSelectionIndices(dir_.filePath("selection.npy")); }));
    QCOMPARE(npy::read<int64_t>(dir_.filePath("selection.npy").toStdString()), selection);

    QVERIFY(export_succeeds(w, [&] { w.exportSelectionImages(dir_.filePath("selected-images.npy")); }));
    std::vector<int64_t> shape;
    auto images = npy::read<float>(dir_.filePath("selected-images.npy").toStdString(), &shape);
    QCOMPARE(shape, (std::vector<int64_t>{static_cast<int64_t>(selection.size()), 16, 16}));
    for (size_t s = 0; s < selection.size(); ++s)
      QVERIFY(std::equal(images.begin() + static_cast<ptrdiff_t>(s * 256),
                         images.begin() + static_cast<ptrdiff_t>((s + 1) * 256), w.dataset()->data.row(selection[s])));

    QVERIFY(export_succeeds(w, [&] { w.exportScreenshot(dir_.filePath("view.png")); }));
    QImage png(dir_.filePath("view.png"));
    QCOMPARE(png.size(), w.view()->size() * w.view()->devicePixelRatio());
    const t::PixelStats stats = t::pixel_stats(png, EmbeddingView::backgroundColour());
    QVERIFY(stats.total - stats.near_background > 200);
    QVERIFY(stats.black < stats.total / 2);
  }

  // An export that cannot be written is an error message, not a crash.
  void failed_export_is_a_message(MainWindow& w) {
    QSignalSpy exported(&w, &MainWindow::exportFinished);
    w.exportEmbedding(dir_.filePath("no-such-dir/embedding.npy"));
    QVERIFY(wait_for(exported));
    QVERIFY(!exported.last().at(0).toBool());
    QVERIFY(w.messageBarVisible());
  }

  // The session records the run; opening it reproduces the embedding, and
  // so does the CLI's run of it.
  void session_reproduces_the_embedding(MainWindow& w, const DiffusionResult& res) {
    const QString session = dir_.filePath("session.json");
    QVERIFY(w.saveSession(session));
    Session s = read_session(session.toStdString());
    QCOMPARE(s.knn.k, 12);       // the graph that was built
    QCOMPARE(s.diffusion.k, 7);  // the neighbours the embedding used
    QCOMPARE(s.diffusion.components, 4);
    QCOMPARE(QString::fromStdString(s.data), QFileInfo(data_path_).absoluteFilePath());

    MainWindow w2;
    w2.show();
    QVERIFY(t::open_session(w2, session, 60000));
    QCOMPARE(w2.outcome()->result->k, 7);
    QCOMPARE(w2.parameterPanel()->kEditor()->value(), 7);
    // A session reopens with a full solve; the recorded one was a re-embedding.
    QVERIFY(same_embedding(*w2.outcome()->result, res, "session reopened"));

    const QByteArray cli = qgetenv("MANIFOLD_CLI");
    if (cli.isEmpty()) return;
    QProcess proc;
    proc.start(QString::fromLocal8Bit(cli), {"run", "--session", session, "-o", dir_.filePath("cli-run"), "--quiet"});
    QVERIFY(proc.waitForFinished(120000));
    QVERIFY2(proc.exitCode() == 0, proc.readAllStandardError().constData());
    Embedding cli_run = read_embedding(dir_.filePath("cli-run").toStdString());
    QVERIFY(close_coordinates(cli_run.coordinates, res.coordinates, "CLI run of the session"));
  }

  // "Embed selection" opens the selected images as a dataset and embeds them.
  void embed_selection(MainWindow& w, const std::vector<int64_t>& selection) {
    QPushButton* embed_selection = t::button(w, "Embed selection");
    QVERIFY(embed_selection);
    QSignalSpy opened(&w, &MainWindow::datasetOpened), shown(&w, &MainWindow::embeddingShown);
    embed_selection->click();
    QVERIFY(opened.wait(20000));
    QCOMPARE(w.dataset()->rows(), static_cast<int64_t>(selection.size()));
    QVERIFY(std::equal(w.dataset()->data.row(0), w.dataset()->data.row(0) + 256, data_row_copy(selection[0])));
    QVERIFY(shown.wait(60000));
    QCOMPARE(w.outcome()->result->graph_points, static_cast<int64_t>(selection.size()));
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    data_path_ = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 600, 16, 16);
    original_ = t::rotating_spot_images(600, 16, 16);
  }

  void badFileShowsMessage() {
    const QString bad = dir_.filePath("corrupt.npy");
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("this is not a NumPy file at all");
    }
    MainWindow w;
    w.show();
    QSignalSpy errors(&w, &MainWindow::errorShown), opened(&w, &MainWindow::datasetOpened);
    w.openFile(bad);
    QVERIFY(errors.wait(20000));
    QVERIFY2(w.lastError().contains("corrupt.npy"), qPrintable(w.lastError()));
    QVERIFY(w.messageBarVisible());
    QVERIFY(opened.isEmpty());
    QVERIFY(!w.dataset());

    w.openFile(dir_.filePath("no-such-file.npy"));
    QVERIFY(errors.wait(20000));
    QVERIFY(w.lastError().contains("no-such-file.npy"));
    // The window still works: a good file opens afterwards.
    w.openFile(data_path_);
    QVERIFY(opened.wait(20000));
    QCOMPARE(w.dataset()->rows(), int64_t(600));
  }

  void openRunReembedPickSelectExport() {
    DroppableWindow w;
    QVERIFY(t::show_window(w));
    QSignalSpy errors(&w, &MainWindow::errorShown);
    TEST_PHASE(open_by_drop(w));
    std::shared_ptr<const EmbeddingOutcome> reembedded;
    TEST_PHASE(run_then_reembed_at_smaller_k(w, &reembedded));
    const DiffusionResult& res = *reembedded->result;
    TEST_PHASE(change_axes_hover_and_pin(w, res));
    std::vector<int64_t> selection;
    TEST_PHASE(lasso_selects_the_points_inside(w, res, &selection));
    TEST_PHASE(export_graphs(w, reembedded->graph->sliced(7)));
    TEST_PHASE(export_embeddings(w, res));
    TEST_PHASE(export_selection_and_view(w, selection));
    TEST_PHASE(failed_export_is_a_message(w));
    TEST_PHASE(session_reproduces_the_embedding(w, res));
    QVERIFY(errors.isEmpty() || errors.size() == 1);  // only the deliberate export failure
    TEST_PHASE(embed_selection(w, selection));
  }

  // Cancel from the window: the run stops within moments, the previous
  // embedding stays, and the run can be started again.
  void cancelKeepsPreviousEmbedding() {
    // Big enough that building a graph takes a while on two cores.
    const int n = 8000, d = 784;
    std::vector<float> v(static_cast<size_t>(n) * d);
    std::mt19937 rng(9);
    std::normal_distribution<float> g(0.f, 1.f);
    for (auto& x : v) x = g(rng);
    Dataset data(n, d, std::move(v));
    data.item_shape = {28, 28};
    data.source = "generated";
    MainWindow w;
    w.show();
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    t::use_cpu(w, 0, 3);
    w.openDataset(adoptDataset(std::move(data), "noise", "generated", false), true);
    QVERIFY(shown.wait(120000));
    auto before = w.outcome();

    // A metric change needs a new graph.
    w.parameterPanel()->setAutoReembed(false);
    w.parameterPanel()->metricEditor()->setCurrentIndex(w.parameterPanel()->metricEditor()->findData("pearson"));
    QSignalSpy cancelled(w.runner(), &JobRunner::cancelled), progressed(w.runner(), &JobRunner::progressed);
    w.runNow();
    QVERIFY(w.runner()->busy());
    // Cancel at once: deterministic however fast the machine (the runner's
    // test cancels in the middle of a k-NN stage).
    w.cancelRun();
    QVERIFY(cancelled.wait(30000));
    qInfo("cancel from the window took effect after %.3f s", w.runner()->lastCancelLatency());
    QVERIFY(!w.runner()->busy());
    QVERIFY(w.outcome() == before);
    QVERIFY(w.statusText().contains("unchanged"));
    QCOMPARE(w.view()->pointCount(), before->result->n);
    QVERIFY(!w.runner()->cachedGraph(w.parameterPanel()->parameters()));
  }

  // 100,000 images open at once: thumbnails are drawn only for what is shown,
  // even after scrolling from top to bottom.
  void galleryIsLazy() {
    const int n = 100000, side = 8;
    std::vector<float> v(static_cast<size_t>(n) * side * side);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (auto& x : v) x = u(rng);
    Dataset data(n, side * side, std::move(v));
    data.item_shape = {side, side};
    data.source = "generated";
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1200, 800)));
    QElapsedTimer timer;
    timer.start();
    w.openDataset(adoptDataset(std::move(data), "noise", "generated", false));
    QListView* gallery = w.datasetPanel()->gallery();
    QCOMPARE(w.datasetPanel()->model()->rowCount(), n);
    QCoreApplication::processEvents();
    const qint64 open_ms = timer.elapsed();
    QScrollBar* bar = gallery->verticalScrollBar();
    // The view lays items out in batches between events: wait until the last
    // one has a place.
    QTRY_VERIFY_WITH_TIMEOUT(gallery->visualRect(w.datasetPanel()->model()->index(n - 1)).isValid(), 30000);
    const qint64 layout_ms = timer.elapsed();
    timer.restart();
    int pages = 0;
    for (int pos = 0; pos <= bar->maximum(); pos += std::max(1, bar->maximum() / 40), ++pages) {
      bar->setValue(pos);
      gallery->viewport()->repaint();
    }
    bar->setValue(bar->maximum());
    gallery->viewport()->repaint();
    const double per_page = static_cast<double>(timer.elapsed()) / std::max(1, pages);
    const int64_t drawn = w.datasetPanel()->model()->thumbnailsDrawn();
    qInfo(
        "100,000 images: shown after %lld ms, fully laid out after %lld ms; %d jumps across the gallery at "
        "%.1f ms each (paint included); %lld thumbnails drawn",
        static_cast<long long>(open_ms), static_cast<long long>(layout_ms), pages, per_page,
        static_cast<long long>(drawn));
    QVERIFY(drawn > 0);
    QVERIFY2(drawn < 20000, "thumbnails were drawn for images never shown");
    const QModelIndex last = gallery->indexAt(gallery->viewport()->rect().bottomLeft() + QPoint(10, -30));
    QVERIFY(last.isValid());
    QVERIFY(last.row() > n - 500);
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
