// The main window end to end: open (file, bad file, drag and drop, session),
// run, re-embed on a parameter change, hover and pin, select, export every
// format and read it back, cancel, and a lazy gallery of 100,000 images.
#include <QDropEvent>
#include <QMimeData>
#include <QProcess>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <random>

#include <vtkDataArray.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPolyData.h>
#include <vtkXMLPolyDataReader.h>

#include "cli/commands.h"
#include "manifold/embedding_io.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/session.h"
#include "manifold/ui/exporters.h"
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

 private Q_SLOTS:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // recent files go to a test location
    QCoreApplication::setOrganizationName("ManifoldExplorerTests");
    cli::register_all_backends();
    QVERIFY(dir_.isValid());
    data_path_ = dir_.filePath("spots.npy");
    t::write_rotating_spot_npy(data_path_, 600, 16, 16);
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
    w.resize(1300, 850);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy opened(&w, &MainWindow::datasetOpened), shown(&w, &MainWindow::embeddingShown),
        errors(&w, &MainWindow::errorShown), exported(&w, &MainWindow::exportFinished);

    // Open by drag and drop.
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

    auto* params = w.parameterPanel();
    params->kEditor()->setValue(12);
    params->componentsEditor()->setValue(4);
    params->backendEditor()->setCurrentIndex(params->backendEditor()->findData("cpu"));
    w.runNow();
    QVERIFY(shown.wait(60000));
    auto first = w.outcome();
    QVERIFY(first);
    QCOMPARE(first->params.knn.k, 12);
    QCOMPARE(w.view()->pointCount(), first->result->n);
    QCOMPARE(w.spectrumPlot()->ys().size(), size_t(5));
    QCOMPARE(w.spectrumPlot()->ys()[0], first->result->eigenvalues[0]);
    QVERIFY(w.progressText().startsWith("done"));

    // Lowering k re-embeds from the cached graph without pressing Run.
    shown.clear();
    params->kEditor()->setValue(7);
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

    // Other axes and colours.
    w.setAxes(2, 3, 1, false);
    w.setColourBy("dc2");
    w.setAxes(1, 2, 3, true);
    QVERIFY(w.view()->planar());

    // Hover shows the image of the point under the cursor; a click pins it.
    EmbeddingView* view = w.view();
    view->renderFrame();
    const int64_t e = second->result->n / 3;
    const QPoint at = view->projectedPosition(e).toPoint();
    const int64_t under = view->pointAt(at);
    QVERIFY(under >= 0);
    const int64_t row = second->result->point_index[static_cast<size_t>(under)];
    QTest::mouseMove(view, at);
    QTRY_COMPARE(w.imagePanel()->shownRow(), row);
    QVERIFY(!w.imagePanel()->shownImage().isNull());
    QCOMPARE(w.imagePanel()->shownImage().width(), 16);
    QTest::mouseClick(view, Qt::LeftButton, {}, at);
    QCOMPARE(w.imagePanel()->pinnedRow(), row);
    QCOMPARE(w.datasetPanel()->gallery()->currentIndex().row(), static_cast<int>(row));

    // Lasso selection in the view selects points and shows their images.
    view->setTool(EmbeddingView::Tool::LassoSelect);
    const QRect r = view->rect().adjusted(view->width() / 4, view->height() / 4, -view->width() / 4, 0);
    QTest::mousePress(view, Qt::LeftButton, {}, r.topLeft());
    QTest::mouseMove(view, r.topRight());
    QTest::mouseMove(view, r.bottomRight());
    QTest::mouseMove(view, r.bottomLeft());
    QTest::mouseRelease(view, Qt::LeftButton, {}, r.bottomLeft());
    view->setTool(EmbeddingView::Tool::Navigate);
    const std::vector<int64_t> selection = w.selectedRows();
    qInfo("lasso selected %zu of %lld points", selection.size(), static_cast<long long>(second->result->n));
    QVERIFY(!selection.empty() && selection.size() < static_cast<size_t>(second->result->n));
    // Exactly the points drawn inside the outline (away from its edges).
    for (int64_t p = 0; p < second->result->n; p += 7) {
      const QPointF q = view->projectedPosition(p);
      const QRectF inner = QRectF(r).adjusted(2, 2, -2, -2), outer = QRectF(r).adjusted(-2, -2, 2, 2);
      const int64_t dataset_row = second->result->point_index[static_cast<size_t>(p)];
      const bool selected = std::binary_search(selection.begin(), selection.end(), dataset_row);
      if (inner.contains(q)) QVERIFY(selected);
      if (!outer.contains(q)) QVERIFY(!selected);
    }
    QCOMPARE(w.selectionModel()->rowCount(), static_cast<int>(selection.size()));
    QCOMPARE(w.selectionModel()->datasetRow(0), selection[0]);

    // ---- exports, each read back ----
    const KnnGraph expected_graph = second->graph->sliced(7);
    const QString graph_dir = dir_.filePath("graph");
    w.exportGraph(graph_dir);
    QVERIFY(wait_for(exported));
    QVERIFY2(exported.last().at(0).toBool(), qPrintable(exported.last().at(1).toStringList().join(' ')));
    KnnGraph g = read_graph(graph_dir.toStdString());
    QCOMPARE(g.k, 7);
    QCOMPARE(g.indices, expected_graph.indices);
    QCOMPARE(g.distances, expected_graph.distances);

    exported.clear();
    const QString mtx = dir_.filePath("graph.mtx");
    w.exportGraph(mtx);
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    SparseTriplets tri = readMatrixMarket(mtx);
    QCOMPARE(tri.rows, int64_t(600));
    QCOMPARE(tri.value.size(), size_t(600 * 7));
    for (size_t x = 0; x < tri.value.size(); x += 97) {
      const int64_t i = tri.i[x];
      const int c = static_cast<int>(x % 7);
      QCOMPARE(tri.j[x], expected_graph.row_indices(i)[c]);
      QVERIFY(std::abs(tri.value[x] - expected_graph.row_distances(i)[c]) <= 1e-6 * (1 + tri.value[x]));
    }

    const DiffusionResult& res = *second->result;
    exported.clear();
    w.exportEmbedding(dir_.filePath("embedding.npy"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    std::vector<int64_t> shape;
    auto coords = npy::read<double>(dir_.filePath("embedding.npy").toStdString(), &shape);
    QCOMPARE(shape, (std::vector<int64_t>{res.n, res.m}));
    QCOMPARE(coords, res.coordinates);

    exported.clear();
    w.exportEmbedding(dir_.filePath("embedding.csv"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    {
      std::ifstream csv(dir_.filePath("embedding.csv").toStdString());
      std::string header, line;
      std::getline(csv, header);
      QVERIFY(QString::fromStdString(header).startsWith("index,dc1"));
      int lines = 0;
      while (std::getline(csv, line)) {
        if (lines == 10) {
          const QStringList cells = QString::fromStdString(line).split(',');
          QCOMPARE(cells.size(), res.m + 1);
          QCOMPARE(cells[0].toLongLong(), res.point_index[10]);
          QVERIFY(std::abs(cells[1].toDouble() - res.coordinates[10 * res.m]) < 1e-12);
        }
        ++lines;
      }
      QCOMPARE(lines, static_cast<int>(res.n));
    }

    exported.clear();
    w.exportEmbedding(dir_.filePath("embedding.vtp"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
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

    exported.clear();
    w.exportEmbedding(dir_.filePath("embedding-folder"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    Embedding folder = read_embedding(dir_.filePath("embedding-folder").toStdString());
    QCOMPARE(folder.coordinates, res.coordinates);
    QCOMPARE(folder.metadata["parameters"]["k"].get<int>(), 7);

    exported.clear();
    w.exportSelectionIndices(dir_.filePath("selection.npy"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    QCOMPARE(npy::read<int64_t>(dir_.filePath("selection.npy").toStdString()), selection);

    exported.clear();
    w.exportSelectionImages(dir_.filePath("selected-images.npy"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    auto images = npy::read<float>(dir_.filePath("selected-images.npy").toStdString(), &shape);
    QCOMPARE(shape, (std::vector<int64_t>{static_cast<int64_t>(selection.size()), 16, 16}));
    for (size_t s = 0; s < selection.size(); ++s)
      QVERIFY(std::equal(images.begin() + static_cast<ptrdiff_t>(s * 256), images.begin() + static_cast<ptrdiff_t>((s + 1) * 256),
                         w.dataset()->data.row(selection[s])));

    exported.clear();
    w.exportScreenshot(dir_.filePath("view.png"));
    QVERIFY(wait_for(exported) && exported.last().at(0).toBool());
    QImage png(dir_.filePath("view.png"));
    QCOMPARE(png.size(), view->size() * view->devicePixelRatio());
    const t::PixelStats stats = t::pixel_stats(png, QColor::fromRgbF(0.32, 0.34, 0.43));
    QVERIFY(stats.total - stats.near_background > 200);
    QVERIFY(stats.black < stats.total / 2);

    // An export that cannot be written is an error message, not a crash.
    exported.clear();
    w.exportEmbedding(dir_.filePath("no-such-dir/embedding.npy"));
    QVERIFY(wait_for(exported));
    QVERIFY(!exported.last().at(0).toBool());
    QVERIFY(w.messageBarVisible());

    // The session records the run; opening it reproduces the embedding.
    const QString session = dir_.filePath("session.json");
    QVERIFY(w.saveSession(session));
    Session s = read_session(session.toStdString());
    QCOMPARE(s.knn.k, 12);  // the graph that was built
    QCOMPARE(s.diffusion.k, 7);  // the neighbours the embedding used
    QCOMPARE(s.diffusion.components, 4);
    QCOMPARE(QString::fromStdString(s.data), QFileInfo(data_path_).absoluteFilePath());

    MainWindow w2;
    w2.show();
    QSignalSpy shown2(&w2, &MainWindow::embeddingShown);
    w2.openSession(session);
    QVERIFY(shown2.wait(60000));
    QCOMPARE(w2.outcome()->result->k, 7);
    QCOMPARE(w2.parameterPanel()->kEditor()->value(), 7);
    // A session reopens with a full solve; the recorded one was a re-embedding.
    QVERIFY(same_embedding(*w2.outcome()->result, res, "session reopened"));

    // And the CLI reproduces it from the same session.
    const QByteArray cli = qgetenv("MANIFOLD_CLI");
    if (!cli.isEmpty()) {
      QProcess proc;
      proc.start(QString::fromLocal8Bit(cli), {"run", "--session", session, "-o", dir_.filePath("cli-run"), "--quiet"});
      QVERIFY(proc.waitForFinished(120000));
      QVERIFY2(proc.exitCode() == 0, proc.readAllStandardError().constData());
      Embedding cli_run = read_embedding(dir_.filePath("cli-run").toStdString());
      QVERIFY(close_coordinates(cli_run.coordinates, res.coordinates, "CLI run of the session"));
    }
    QVERIFY(errors.isEmpty() || errors.size() == 1);  // only the deliberate export failure

    // "Embed selection" opens the selected images as a dataset and embeds them.
    QPushButton* embed_selection = nullptr;
    for (auto* b : w.findChildren<QPushButton*>())
      if (b->text() == "Embed selection") embed_selection = b;
    QVERIFY(embed_selection);
    opened.clear();
    shown.clear();
    embed_selection->click();
    QVERIFY(opened.wait(20000));
    QCOMPARE(w.dataset()->rows(), static_cast<int64_t>(selection.size()));
    QVERIFY(std::equal(w.dataset()->data.row(0), w.dataset()->data.row(0) + 256, data_row_copy(selection[0])));
    QVERIFY(shown.wait(60000));
    QCOMPARE(w.outcome()->result->graph_points, static_cast<int64_t>(selection.size()));
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
    w.parameterPanel()->backendEditor()->setCurrentIndex(w.parameterPanel()->backendEditor()->findData("cpu"));
    w.parameterPanel()->componentsEditor()->setValue(3);
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
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
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
    qInfo("100,000 images: shown after %lld ms, fully laid out after %lld ms; %d jumps across the gallery at "
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
