// GUI exports into a folder of other files (issue 24): like the CLI, the
// export does not mix its files with the user's, but the window asks
// "Replace the contents of FOLDER?" and replaces them when told to, where
// the CLI asks for --overwrite. A folder holding a previous export of the
// same kind is replaced without asking; "Cancel" leaves the folder as it was.
#include <QApplication>
#include <QFile>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "manifold/embedding_io.h"
#include "manifold/graph_io.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

// Answers every "Replace folder?" question with `button` and records the
// questions asked.
class Answerer : public QObject {
 public:
  explicit Answerer(QMessageBox::StandardButton button) : button_(button) {
    connect(&timer_, &QTimer::timeout, this, [this] {
      auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
      if (!box || box->objectName() != "replaceFolderQuestion") return;
      questions << box->text() + "\n" + box->informativeText();
      box->button(button_)->click();
    });
    timer_.start(20);
  }
  QStringList questions;

 private:
  QMessageBox::StandardButton button_;
  QTimer timer_;
};

QByteArray read_text(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void write_file(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

}  // namespace

class TestExportReplace : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  MainWindow* w_ = nullptr;

  // Exports with `answer` to any question; returns whether it succeeded.
  bool exportInto(void (MainWindow::*what)(const QString&), const QString& path, QMessageBox::StandardButton answer,
                  QStringList* questions) {
    QSignalSpy exported(w_, &MainWindow::exportFinished);
    Answerer answerer(answer);
    (w_->*what)(path);
    if (exported.isEmpty() && !exported.wait(30000)) return false;
    *questions = answerer.questions;
    return exported.first().at(0).toBool();
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    const QString data = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 120, 10, 10);
    w_ = new MainWindow;
    QSignalSpy opened(w_, &MainWindow::datasetOpened), shown(w_, &MainWindow::embeddingShown);
    w_->openFile(data);
    QVERIFY(opened.wait(20000));
    w_->parameterPanel()->componentsEditor()->setValue(3);
    w_->runNow();
    QVERIFY(shown.wait(60000));
  }

  void cleanupTestCase() { delete w_; }

  void graphIntoAFolderOfOtherFilesAsks() {
    const QString mine = dir_.filePath("mine");
    QVERIFY(QDir().mkpath(mine));
    write_file(mine + "/notes.txt", "keep");
    QStringList questions;
    // Cancel: asked, nothing written, the user's file still there.
    QVERIFY(!exportInto(&MainWindow::exportGraph, mine, QMessageBox::Cancel, &questions));
    QCOMPARE(questions.size(), 1);
    QVERIFY2(questions[0].startsWith("Replace the contents of " + QDir::toNativeSeparators(mine) + "?"),
             qPrintable(questions[0]));
    QVERIFY2(questions[0].contains("notes.txt"), qPrintable(questions[0]));
    QVERIFY(QFile::exists(mine + "/notes.txt"));
    QVERIFY(!QFile::exists(mine + "/graph.json"));
    // Replace: the folder holds the graph alone.
    QVERIFY(exportInto(&MainWindow::exportGraph, mine, QMessageBox::Yes, &questions));
    QCOMPARE(questions.size(), 1);
    QCOMPARE(read_graph(mine.toStdString()).n, int64_t(120));
    QVERIFY(!QFile::exists(mine + "/notes.txt"));
    // Its own previous export is replaced without a question.
    QVERIFY(exportInto(&MainWindow::exportGraph, mine, QMessageBox::Cancel, &questions));
    QCOMPARE(questions.size(), 0);
  }

  void embeddingFolderIntoAFolderOfOtherFilesAsks() {
    const QString mine = dir_.filePath("mine-embedding");
    QVERIFY(QDir().mkpath(mine + "/sub"));
    QStringList questions;
    QVERIFY(exportInto(&MainWindow::exportEmbedding, mine, QMessageBox::Yes, &questions));
    QCOMPARE(questions.size(), 1);
    QVERIFY2(questions[0].contains("sub"), qPrintable(questions[0]));
    QCOMPARE(read_embedding(mine.toStdString()).n, int64_t(120));
    QVERIFY(!QFileInfo::exists(mine + "/sub"));
    // A single-file export never asks.
    QVERIFY(exportInto(&MainWindow::exportEmbedding, mine + "/extra.csv", QMessageBox::Cancel, &questions));
    QCOMPARE(questions.size(), 0);
  }

  // An embedding beside a k-NN graph: its own graph (exported there first)
  // stays without a question; another graph (of another run) is one of the
  // folder's other files -- asked, and replaced on Replace -- so the folder
  // never pairs an embedding with a graph it was not computed from.
  void embeddingBesideAGraphKeepsOnlyItsOwn() {
    const QString own = dir_.filePath("own-graph"), other = dir_.filePath("other-graph");
    QStringList questions;
    QVERIFY(exportInto(&MainWindow::exportGraph, own, QMessageBox::Cancel, &questions));
    QVERIFY(exportInto(&MainWindow::exportEmbedding, own, QMessageBox::Cancel, &questions));
    QCOMPARE(questions.size(), 0);
    QCOMPARE(read_graph(own.toStdString()).n, int64_t(120));
    QCOMPARE(read_embedding(own.toStdString()).n, int64_t(120));
    // Another graph: the same files, another k.
    QVERIFY(QDir().mkpath(other));
    for (const char* f : {"indices.npy", "distances.npy"}) QVERIFY(QFile::copy(own + "/" + f, other + "/" + f));
    nlohmann::json meta = nlohmann::json::parse(read_text(own + "/graph.json"));
    meta["k"] = meta["k"].get<int>() + 1;
    write_file(other + "/graph.json", QByteArray::fromStdString(meta.dump()));
    QVERIFY(!exportInto(&MainWindow::exportEmbedding, other, QMessageBox::Cancel, &questions));
    QCOMPARE(questions.size(), 1);
    QVERIFY2(questions[0].contains("graph.json"), qPrintable(questions[0]));
    QVERIFY(QFile::exists(other + "/graph.json"));
    QVERIFY(!QFile::exists(other + "/embedding.json"));
    QVERIFY(exportInto(&MainWindow::exportEmbedding, other, QMessageBox::Yes, &questions));
    QVERIFY(!QFile::exists(other + "/graph.json"));
    QCOMPARE(read_embedding(other.toStdString()).n, int64_t(120));
  }
};

QTEST_MAIN(TestExportReplace)
#include "test_export_replace.moc"
