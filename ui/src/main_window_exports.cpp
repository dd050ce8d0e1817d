// The main window's exports: each runs off the GUI thread and reports
// through exportFinished.
#include <QSaveFile>
#include <QtConcurrent/QtConcurrent>

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/ui/exporters.h"
#include "manifold/ui/main_window.h"

namespace manifold::ui {

void MainWindow::start_export(const QString& what, std::function<QStringList()> work) {
  if (export_watcher_.isRunning()) {
    show_error(tr("An export is still running; try again when it has finished."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  status_->setText(tr("Exporting %1\u2026").arg(what));
  export_watcher_.setFuture(QtConcurrent::run([work]() -> ExportResult {
    ExportResult r;
    try {
      r.files = work();
      r.ok = true;
    } catch (const std::bad_alloc&) {
      r.error = tr("Out of memory while exporting.");
    } catch (const std::exception& e) {
      r.error = QString::fromStdString(e.what());
    }
    return r;
  }));
}

void MainWindow::exportGraph(const QString& path) {
  if (!outcome_) {
    show_error(tr("Run first: there is no graph to export."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  auto graph = outcome_->graph;
  const int k = outcome_->result->k;  // the neighbours the embedding used
  if (path.endsWith(".mtx", Qt::CaseInsensitive))
    start_export(tr("the graph"), [graph, k, path] {
      exportGraphMatrixMarket(path, *graph, k);
      return QStringList{path};
    });
  else
    start_export(tr("the graph"), [graph, k, path] {
      exportGraphDirectory(path, *graph, k);
      return QStringList{path + "/indices.npy", path + "/distances.npy", path + "/graph.json"};
    });
}

void MainWindow::exportEmbedding(const QString& path) {
  if (!outcome_) {
    show_error(tr("Run first: there is no embedding to export."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  auto outcome = outcome_;
  start_export(tr("the embedding"), [outcome, path] {
    DiffusionParams dp = outcome->params.diffusion;
    dp.k = outcome->result->k;
    nlohmann::json graph_meta = graph_metadata(*outcome->graph);
    return ui::exportEmbedding(path, *outcome->result, dp, graph_meta);
  });
}

void MainWindow::exportSelectionIndices(const QString& path) {
  auto rows = selected_rows_;
  start_export(tr("the selection"), [rows, path] {
    ui::exportSelectionIndices(path, rows);
    return QStringList{path};
  });
}

void MainWindow::exportSelectionImages(const QString& path) {
  if (!dataset_) {
    show_error(tr("Open a dataset first."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  auto rows = selected_rows_;
  auto ds = dataset_;
  start_export(tr("the selected images"), [rows, ds, path] {
    ui::exportSelectionImages(path, *ds, rows);
    return QStringList{path};
  });
}

void MainWindow::exportScreenshot(const QString& path) {
  if (view_->pointCount() == 0) {
    show_error(tr("Nothing to capture: the view is empty."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  const QImage frame = view_->renderFrame();
  start_export(tr("the screenshot"), [frame, path] {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !frame.save(&file, "PNG") || !file.commit())
      throw Error(path.toStdString() + ": cannot write the PNG (" + file.errorString().toStdString() + ")");
    return QStringList{path};
  });
}

}  // namespace manifold::ui
