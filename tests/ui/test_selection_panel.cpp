// Two-way selection and what is in it: Shift/Ctrl-click in the gallery is the
// view's selection and a selection made in the view shows in the gallery; the
// gallery sorts by any coordinate or metadata column; the selection panel
// counts the selection per category and shows its mean image; selection, pin
// and camera come back with a session; all of it at Fashion-MNIST's 60,000
// training images when they are there.
#include <QDir>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>
#include <numeric>

#include "manifold/npy.h"
#include "manifold/session.h"
#include "manifold/ui/dataset_panel.h"
#include "manifold/ui/main_window.h"
#include "manifold/ui/palette.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

constexpr int kSide = 16;

// n rotating-spot images whose label is the row's index modulo `classes`.
std::shared_ptr<const LoadedDataset> labelled_spots(int n, int classes) {
  Dataset d(n, kSide * kSide, t::rotating_spot_images(n, kSide, kSide));
  d.item_shape = {kSide, kSide};
  for (int i = 0; i < n; ++i) d.labels.push_back(i % classes);
  return adoptDataset(std::move(d), QStringLiteral("spots"), QStringLiteral("rotating spots"), false);
}

std::vector<double> mean_of(const Dataset& d, const std::vector<int64_t>& rows) {
  std::vector<double> mean(static_cast<size_t>(d.cols()), 0.0);
  for (int64_t r : rows)
    for (int64_t j = 0; j < d.cols(); ++j) mean[static_cast<size_t>(j)] += d.row(r)[j];
  for (double& v : mean) v /= static_cast<double>(rows.size());
  return mean;
}

double worst_difference(const std::vector<float>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

void click_gallery(QListView* gallery, int model_row, Qt::KeyboardModifiers modifiers) {
  const QModelIndex index = gallery->model()->index(model_row, 0);
  gallery->scrollTo(index);
  QTest::mouseClick(gallery->viewport(), Qt::LeftButton, modifiers, gallery->visualRect(index).center());
}

// The embedded points of dataset rows, ascending (the view's selection).
std::vector<int64_t> embedded_of(const EmbeddingOutcome& o, const std::vector<int64_t>& rows) {
  std::vector<int64_t> out;
  for (int64_t e = 0; e < o.result->n; ++e)
    if (std::binary_search(rows.begin(), rows.end(), o.result->point_index[static_cast<size_t>(e)])) out.push_back(e);
  return out;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

class TestSelectionPanel : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { t::start_gui_tests(); }

  void rowsSortedByPutsMissingLast() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QCOMPARE(rowsSortedBy({0.5, nan, -1.0, 0.5, nan, 2.0}), (std::vector<int64_t>{2, 0, 3, 5, 1, 4}));
    QCOMPARE(rowsSortedBy({}), std::vector<int64_t>{});
  }

  void galleryAndViewShareTheSelection() {
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1200, 800)));
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.openDataset(labelled_spots(300, 5), true);
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError() + " | " + w.statusText() + " | " + w.progressText()));
    const auto outcome = w.outcome();
    QListView* gallery = w.datasetPanel()->gallery();

    // Click, Shift-click, Ctrl-click: rows 4 to 7, and 10.
    click_gallery(gallery, 4, {});
    QCOMPARE(w.selectedRows(), (std::vector<int64_t>{4}));
    QCOMPARE(w.pinnedRow(), 4);
    click_gallery(gallery, 7, Qt::ShiftModifier);
    click_gallery(gallery, 10, Qt::ControlModifier);
    const std::vector<int64_t> picked{4, 5, 6, 7, 10};
    QCOMPARE(w.selectedRows(), picked);
    QCOMPARE(sorted(w.view()->selection()), embedded_of(*outcome, picked));
    QCOMPARE(w.selectionModel()->rowCount(), 5);
    // Ctrl-click again takes one out.
    click_gallery(gallery, 5, Qt::ControlModifier);
    QCOMPARE(w.selectedRows(), (std::vector<int64_t>{4, 6, 7, 10}));

    // A lasso in the view shows in the gallery, and a pin keeps it.
    EmbeddingView* view = w.view();
    view->renderFrame();
    view->setTool(EmbeddingView::Tool::RectangleSelect);
    const QRect r = view->rect().adjusted(view->width() / 4, view->height() / 4, -view->width() / 4, 0);
    QTest::mousePress(view, Qt::LeftButton, {}, r.topLeft());
    QTest::mouseMove(view, r.bottomRight());
    QTest::mouseRelease(view, Qt::LeftButton, {}, r.bottomRight());
    view->setTool(EmbeddingView::Tool::Navigate);
    const std::vector<int64_t> lassoed = w.selectedRows();
    QVERIFY(!lassoed.empty() && lassoed.size() < 300);
    QCOMPARE(w.datasetPanel()->selectedRows(), lassoed);
    QCOMPARE(w.selectionModel()->rowCount(), static_cast<int>(lassoed.size()));
    w.datasetPanel()->revealRow(lassoed.front());
    QCOMPARE(w.datasetPanel()->selectedRows(), lassoed);

    // The selection strip: marking two and "Keep marked" narrows to them.
    QListView* strip = nullptr;
    for (auto* v : w.findChildren<QListView*>())
      if (v->model() == w.selectionModel()) strip = v;
    QVERIFY(strip);
    selectDatasetRows(strip, w.selectionModel(), {lassoed.front(), lassoed.back()});
    QPushButton* keep = nullptr;
    for (auto* b : w.findChildren<QPushButton*>())
      if (b->text() == "Keep marked") keep = b;
    QVERIFY(keep);
    keep->click();
    QCOMPARE(w.selectedRows(), sorted({lassoed.front(), lassoed.back()}));
    QCOMPARE(w.datasetPanel()->selectedRows(), w.selectedRows());
  }

  void gallerySortsByCoordinateAndColumn() {
    MainWindow w;
    w.show();
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.openDataset(labelled_spots(200, 4), true);
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError() + " | " + w.statusText() + " | " + w.progressText()));
    const DiffusionResult& r = *w.outcome()->result;
    DatasetPanel* panel = w.datasetPanel();
    QVERIFY(panel->sortEditor()->findData(QStringLiteral("dc1")) > 0);
    QVERIFY(panel->sortEditor()->findData(QStringLiteral("label")) > 0);
    w.setSelectedRows({7, 8, 9});

    panel->setSortKey(QStringLiteral("dc2"));
    ThumbnailModel* model = panel->model();
    QCOMPARE(model->rowCount(), 200);
    std::vector<int64_t> embedded_of_row(200, -1);
    for (int64_t e = 0; e < r.n; ++e) embedded_of_row[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])] = e;
    bool reached_unembedded = false;
    double last = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < model->rowCount(); ++i) {
      const int64_t e = embedded_of_row[static_cast<size_t>(model->datasetRow(i))];
      if (e < 0) {
        reached_unembedded = true;
        continue;
      }
      QVERIFY2(!reached_unembedded, "an embedded point after one not embedded");
      const double psi2 = r.coordinates[static_cast<size_t>(e * r.m + 1)];
      QVERIFY(psi2 >= last);
      last = psi2;
    }
    // The selection is of dataset rows: it survives the new order.
    QCOMPARE(panel->selectedRows(), (std::vector<int64_t>{7, 8, 9}));

    panel->setSortKey(QStringLiteral("label"));
    for (int i = 1; i < model->rowCount(); ++i) {
      const int64_t a = model->datasetRow(i - 1), b = model->datasetRow(i);
      QVERIFY(a % 4 < b % 4 || (a % 4 == b % 4 && a < b));  // by label, then dataset order
    }
    panel->setSortKey(QString());
    for (int i = 0; i < model->rowCount(); ++i) QCOMPARE(model->datasetRow(i), static_cast<int64_t>(i));

    // A re-embedding leaves a gallery in dataset order where it was scrolled.
    QScrollBar* scroll = panel->gallery()->verticalScrollBar();
    QTRY_VERIFY(scroll->maximum() > 0);
    scroll->setValue(scroll->maximum() / 2);
    const int scrolled = scroll->value();
    shown.clear();
    w.parameterPanel()->timeEditor()->setValue(2);
    QVERIFY(shown.wait(60000));
    QCOMPARE(scroll->value(), scrolled);
  }

  void breakdownAndMeanImage() {
    MainWindow w;
    w.show();
    auto ds = labelled_spots(400, 3);
    w.openDataset(ds, false);
    QCOMPARE(w.breakdownColumn(), QStringLiteral("label"));
    // Rows 0..9: labels 0,1,2,0,1,2,0,1,2,0 -> 4, 3, 3.
    std::vector<int64_t> rows(10);
    std::iota(rows.begin(), rows.end(), int64_t{0});
    QSignalSpy mean_ready(&w, &MainWindow::selectionMeanReady);
    w.setSelectedRows(rows);
    QTableWidget* table = w.selectionBreakdown();
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("0"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("4"));
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("40.0"));
    QCOMPARE(table->item(1, 0)->text(), QStringLiteral("1"));
    QCOMPARE(table->item(1, 1)->text(), QStringLiteral("3"));
    QCOMPARE(table->item(2, 2)->text(), QStringLiteral("30.0"));
    const QImage swatch = table->item(0, 0)->icon().pixmap(12, 12).toImage();
    QCOMPARE(QColor(swatch.pixel(6, 6)), categoryColour(0));
    // A few images are averaged at once.
    QCOMPARE(mean_ready.size(), 1);
    QVERIFY(worst_difference(w.selectionMean(), mean_of(ds->data, rows)) < 1e-5);

    // Every image: averaged off the GUI thread, then shown.
    std::vector<int64_t> all(400);
    std::iota(all.begin(), all.end(), int64_t{0});
    mean_ready.clear();
    w.setSelectedRows(std::vector<int64_t>(all.begin(), all.begin() + 300));  // superseded at once
    w.setSelectedRows(all);
    QTRY_VERIFY_WITH_TIMEOUT(!w.selectionMean().empty(), 20000);
    QVERIFY(worst_difference(w.selectionMean(), mean_of(ds->data, all)) < 1e-5);
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("134"));
    QCOMPARE(w.datasetPanel()->selectedRows(), all);
    // Scattered rows (one range each) replace it exactly.
    std::vector<int64_t> every_third;
    for (int64_t r = 0; r < 400; r += 3) every_third.push_back(r);
    w.setSelectedRows(every_third);
    QCOMPARE(w.datasetPanel()->selectedRows(), every_third);
    QCOMPARE(table->rowCount(), 1);  // every third row has label 0
    QCOMPARE(table->item(0, 2)->text(), QStringLiteral("100.0"));
  }

  void sessionKeepsSelectionPinAndCamera() {
    // On disk, with labels beside the images: the session names the file.
    QTemporaryDir dir;
    const QString data = t::write_rotating_spot_npy(dir.filePath("spots.npy"), 300, kSide, kSide);
    std::vector<int32_t> labels(300);
    for (int i = 0; i < 300; ++i) labels[static_cast<size_t>(i)] = i % 5;
    npy::write(dir.filePath("spots.labels.npy").toStdString(), labels.data(), {300});
    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::datasetOpened), shown(&w, &MainWindow::embeddingShown);
    w.openFile(data);
    QVERIFY(opened.wait(20000));
    const QString column = w.breakdownColumn();
    QVERIFY(!column.isEmpty());
    w.runNow();
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError() + " | " + w.statusText() + " | " + w.progressText()));
    QVERIFY(w.outcome()->result->m >= 3);
    w.setAxes(1, 2, 3, false);
    w.view()->rotateCamera(47, -23);
    const std::vector<int64_t> rows{3, 50, 51, 52, 200};
    w.setSelectedRows(rows);
    w.datasetPanel()->setSortKey(QStringLiteral("dc2"));
    click_gallery(w.datasetPanel()->gallery(), w.datasetPanel()->model()->modelRow(77), Qt::ControlModifier);
    const std::vector<int64_t> expected{3, 50, 51, 52, 77, 200};
    QCOMPARE(w.selectedRows(), expected);
    QCOMPARE(w.pinnedRow(), 77);
    const auto direction = w.view()->viewDirection();
    const QString session = dir.filePath("s.json");
    QVERIFY(w.saveSession(session));

    MainWindow w2;
    w2.show();
    QSignalSpy shown2(&w2, &MainWindow::embeddingShown);
    w2.openSession(session);
    QVERIFY(shown2.wait(60000));
    QCOMPARE(w2.selectedRows(), expected);
    QCOMPARE(sorted(w2.view()->selection()), embedded_of(*w2.outcome(), expected));
    QCOMPARE(w2.pinnedRow(), 77);
    QCOMPARE(w2.view()->pinned(), embedded_of(*w2.outcome(), {77}).front());
    // ψ2 is offered only once the embedding exists: the sort waits for it.
    QCOMPARE(w2.datasetPanel()->sortKey(), QStringLiteral("dc2"));
    QCOMPARE(w2.datasetPanel()->model()->rows(), w.datasetPanel()->model()->rows());
    QCOMPARE(w2.datasetPanel()->selectedRows(), expected);
    const auto direction2 = w2.view()->viewDirection();
    for (int i = 0; i < 3; ++i) QVERIFY2(std::abs(direction2[i] - direction[i]) < 1e-6, "view direction");
    // A hand-edited camera with no direction (at its focal point) and rows
    // out of range are left out: the view frames the points as new.
    Session edited = read_session(session.toStdString());
    edited.view["camera"]["position"] = edited.view["camera"]["focal_point"];
    edited.view["selection"] = {-5, 3, 300, 1000000};
    edited.view["pinned"] = 300;
    const QString session2 = dir.filePath("edited.json");
    write_session(session2.toStdString(), edited);
    MainWindow w3;
    w3.show();
    QSignalSpy shown3(&w3, &MainWindow::embeddingShown);
    w3.openSession(session2);
    QVERIFY(shown3.wait(60000));
    QCOMPARE(w3.selectedRows(), (std::vector<int64_t>{3}));
    QCOMPARE(w3.pinnedRow(), -1);
    const auto framed = w3.view()->viewDirection();
    QVERIFY(std::isfinite(framed[0]) && std::isfinite(framed[1]) && std::isfinite(framed[2]));
    QVERIFY(std::abs(std::hypot(framed[0], framed[1], framed[2]) - 1) < 1e-9);

    // Not the default camera: the rotation was what came back.
    w2.view()->resetCamera();
    const auto fresh = w2.view()->viewDirection();
    QVERIFY(std::abs(fresh[0] - direction[0]) + std::abs(fresh[1] - direction[1]) + std::abs(fresh[2] - direction[2]) >
            0.1);
  }

  // Fashion-MNIST's training images: Ctrl+A in the gallery selects all, the
  // breakdown counts 6,000 of each class, the mean comes off the GUI thread.
  void fashionMnistTrainSelection() {
    const QString test_images = t::fashion_mnist_images();
    const QString train = test_images.isEmpty()
                              ? QString()
                              : QFileInfo(test_images).dir().filePath(QStringLiteral("train-images-idx3-ubyte.gz"));
    if (train.isEmpty() || !QFileInfo::exists(train))
      QSKIP("Fashion-MNIST training images not found (MANIFOLD_FASHION_MNIST_DIR)");
    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    w.openFile(train);
    QVERIFY(opened.wait(120000));
    const int64_t n = w.dataset()->rows();
    QCOMPARE(n, 60000);
    QListView* gallery = w.datasetPanel()->gallery();
    gallery->setFocus();
    QElapsedTimer clock;
    clock.start();
    QTest::keyClick(gallery, Qt::Key_A, Qt::ControlModifier);
    qInfo("Ctrl+A in the gallery of %lld images: %lld ms (selection panel filled)", static_cast<long long>(n),
          static_cast<long long>(clock.elapsed()));
    QCOMPARE(static_cast<int64_t>(w.selectedRows().size()), n);
    QCOMPARE(w.breakdownColumn(), QStringLiteral("label"));
    QTableWidget* table = w.selectionBreakdown();
    QCOMPARE(table->rowCount(), 10);
    for (int r = 0; r < 10; ++r) {
      QCOMPARE(table->item(r, 1)->text(), QStringLiteral("6,000"));
      QCOMPARE(table->item(r, 2)->text(), QStringLiteral("10.0"));
    }
    QTRY_VERIFY_WITH_TIMEOUT(!w.selectionMean().empty(), 60000);
    QVERIFY(worst_difference(w.selectionMean(), mean_of(w.dataset()->data, w.selectedRows())) < 1e-3);
    clock.restart();
    w.datasetPanel()->setSortKey(QStringLiteral("label"));
    qInfo("sort the gallery of %lld images by label, keeping the selection: %lld ms", static_cast<long long>(n),
          static_cast<long long>(clock.elapsed()));
    QCOMPARE(static_cast<int64_t>(w.datasetPanel()->selectedRows().size()), n);
  }
};

QTEST_MAIN(TestSelectionPanel)
#include "test_selection_panel.moc"
