// HDF5 files read in a child process first (ui/file_check.h): a file that
// crashes Debian's libhdf5 (tests/cli/data/libhdf5-null-copy.h5, found by
// the fuzzer) is refused in one line as a dataset and as metadata while the
// window stays; good HDF5 files still open through the check; the child's
// exit statuses; without a check program nothing changes.
#include <QMessageBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "manifold/error.h"
#include "manifold/simulate.h"
#include "manifold/ui/file_check.h"
#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

constexpr int kRows = 40;

// A small CXI file of kRows diffraction images with their rotation angles.
void write_good_cxi(const std::string& path) {
  DiffractionImages cxi;
  cxi.count = kRows;
  cxi.size = 4;
  cxi.images.resize(static_cast<size_t>(kRows) * 16);
  for (size_t i = 0; i < cxi.images.size(); ++i) cxi.images[i] = 1.0f + static_cast<float>((i * 7919) % 23);
  cxi.axis = "x";
  for (int i = 0; i < kRows; ++i) cxi.angles.push_back(2 * M_PI * i / kRows);
  cxi.quaternions.assign(static_cast<size_t>(kRows) * 4, 0.5);
  cxi.metadata = {{"pdb_id", "test"}};
  write_diffraction(path, cxi);
}

}  // namespace

class TestFileCheck : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString crash_, good_;

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    const QString data = qEnvironmentVariable("MANIFOLD_TEST_DATA");
    if (data.isEmpty() || qEnvironmentVariableIsEmpty("MANIFOLD_EXPLORER"))
      QSKIP("MANIFOLD_TEST_DATA and MANIFOLD_EXPLORER name the crashing file and the explorer (ctest sets them)");
    crash_ = data + QStringLiteral("/libhdf5-null-copy.h5");
    QVERIFY(QFileInfo::exists(crash_));
    good_ = dir_.filePath(QStringLiteral("good.cxi"));
    write_good_cxi(good_.toStdString());
  }

  void init() { setFileCheckProgram(qEnvironmentVariable("MANIFOLD_EXPLORER")); }
  void cleanup() { setFileCheckProgram(QString()); }

  // The child's side: 0 for a file it read, 2 (and a line on stderr) for a
  // file refused with an error or arguments it does not take.
  void childStatuses() {
    QCOMPARE(runFileCheck({"dataset", good_, "", "none", ""}), 0);
    QCOMPARE(runFileCheck({"dataset", good_, "/no/such/dataset", "none", ""}), 2);
    QCOMPARE(runFileCheck({"metadata", good_, "", QString::number(kRows)}), 0);
    QCOMPARE(runFileCheck({"metadata", good_, "/entry_1/sample_1/rotation_angle", QString::number(kRows)}), 0);
    QCOMPARE(runFileCheck({"metadata", dir_.filePath("missing.h5"), "", "3"}), 2);
    QCOMPARE(runFileCheck({"dataset", good_}), 2);
  }

  // loadDataset refuses the crashing file in one line naming it, instead of
  // the process dying; a good CXI file opens through the check.
  void datasetCheck() {
    try {
      loadDataset(crash_);
      QFAIL("the crashing file was opened");
    } catch (const Error& e) {
      const QString m = QString::fromUtf8(e.what());
      QVERIFY2(m.contains(crash_) && m.contains("crashed") && !m.contains('\n'), qPrintable(m));
    }
    const auto ds = loadDataset(good_);
    QCOMPARE(ds->rows(), int64_t(kRows));
    // A check program that cannot start: the file is read as before.
    setFileCheckProgram(dir_.filePath(QStringLiteral("no-such-program")));
    QCOMPARE(loadDataset(good_)->rows(), int64_t(kRows));
  }

  // The window: the crashing file is an error message and the window goes
  // on; then a good file opens, and the crashing file as metadata is
  // refused too (listing its datasets and reading one).
  void windowStays() {
    MainWindow w;
    QVERIFY(t::show_window(w));
    QSignalSpy errors(&w, &MainWindow::errorShown), opened(&w, &MainWindow::datasetOpened);
    w.openFile(crash_);
    QVERIFY(errors.wait(60000));
    QVERIFY2(w.lastError().contains("crashed"), qPrintable(w.lastError()));
    QVERIFY(!w.dataset());
    w.openFile(good_);
    QVERIFY(opened.wait(60000));
    QCOMPARE(w.dataset()->rows(), int64_t(kRows));
    QVERIFY(!w.loadMetadata(crash_, QStringLiteral("/data")));
    QVERIFY2(w.lastError().contains("crashed"), qPrintable(w.lastError()));
    for (QMessageBox* box : w.findChildren<QMessageBox*>()) box->close();
    QVERIFY(w.loadMetadata(good_, QStringLiteral("/entry_1/sample_1/rotation_angle")));
  }
};

QTEST_MAIN(TestFileCheck)
#include "test_file_check.moc"
