// The main window's exports: each runs off the GUI thread and reports
// through exportFinished.
#include <QDir>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QtConcurrent/QtConcurrent>

#include <algorithm>

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/output.h"
#include "manifold/ui/exporters.h"
#include "manifold/ui/main_window.h"

namespace manifold::ui {
namespace {

// Whether the result folder `dir` would be refused only for holding files
// that are not a previous result of this kind (what --overwrite answers on
// the command line). Any other problem (not a folder, not writable) is left
// for the export to report.
bool needs_overwrite(const QString& dir, const std::vector<std::string>& files, const SourceGraph& source) {
  try {
    check_output_dir(dir.toStdString(), files, {.overwrite = true}, source);
  } catch (const Error&) {
    return false;
  }
  try {
    check_output_dir(dir.toStdString(), files, {}, source);
    return false;
  } catch (const UsageError&) {
    return true;
  }
}

// Asks before an export replaces a folder of other files (for an
// embedding, `source` its graph: another graph there is among them).
// Returns false when the user keeps the folder; sets *overwrite when they
// chose to replace it.
bool confirm_replacing(QWidget* parent, const QString& dir, const std::vector<std::string>& files, bool* overwrite,
                       const SourceGraph& source = {}) {
  *overwrite = false;
  if (!needs_overwrite(dir, files, source)) return true;
  QStringList others;
  for (const QString& e : QDir(dir).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name))
    if (std::find(files.begin(), files.end(), e.toStdString()) == files.end()) others << e;
  QString list = QStringList(others.mid(0, 4)).join(QStringLiteral(", "));
  if (others.size() > 4) list += QObject::tr(" and %1 more").arg(others.size() - 4);
  QMessageBox box(QMessageBox::Question, QObject::tr("Replace folder?"),
                  QObject::tr("Replace the contents of %1?").arg(QDir::toNativeSeparators(dir)),
                  QMessageBox::Yes | QMessageBox::Cancel, parent);
  box.setObjectName(QStringLiteral("replaceFolderQuestion"));
  box.setInformativeText(QObject::tr("It holds files that are not a previous export of this kind (%1). "
                                     "Replacing deletes them.")
                             .arg(list));
  box.button(QMessageBox::Yes)->setText(QObject::tr("Replace"));
  box.setDefaultButton(QMessageBox::Cancel);
  if (box.exec() != QMessageBox::Yes) return false;
  *overwrite = true;
  return true;
}

}  // namespace

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
  else {
    bool overwrite = false;
    if (!confirm_replacing(this, path, graphFolderFiles(), &overwrite)) {
      status_->setText(tr("Export cancelled: %1 was left as it was.").arg(path));
      Q_EMIT exportFinished(false, {status_->text()});
      return;
    }
    start_export(tr("the graph"), [graph, k, path, overwrite] {
      exportGraphDirectory(path, *graph, k, overwrite);
      return QStringList{path + "/indices.npy", path + "/distances.npy", path + "/graph.json"};
    });
  }
}

void MainWindow::exportEmbedding(const QString& path) {
  if (!outcome_) {
    show_error(tr("Run first: there is no embedding to export."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  bool overwrite = false;
  const SourceGraph source = SourceGraph::in_memory(graph_metadata(*outcome_->graph));
  if (isEmbeddingFolderPath(path) && !confirm_replacing(this, path, embeddingFolderFiles(), &overwrite, source)) {
    status_->setText(tr("Export cancelled: %1 was left as it was.").arg(path));
    Q_EMIT exportFinished(false, {status_->text()});
    return;
  }
  auto outcome = outcome_;
  // The dataset the embedding was computed from (opening another one drops
  // the embedding): an image folder's file names and the metadata columns
  // (the data's own and those loaded since) go into the .csv and .vtp.
  auto ds = dataset_;
  start_export(tr("the embedding"), [outcome, ds, path, overwrite] {
    DiffusionParams dp = outcome->params.diffusion;
    dp.k = outcome->result->k;
    nlohmann::json graph_meta = graph_metadata(*outcome->graph);
    const std::vector<std::string>* names = nullptr;
    if (ds && static_cast<int64_t>(ds->data.item_names.size()) == outcome->graph->n) names = &ds->data.item_names;
    const MetadataTable metadata = ds ? ui::metadataTable(ds->metadata, outcome->graph->n) : MetadataTable();
    return ui::exportEmbedding(path, *outcome->result, dp, graph_meta, overwrite, names, ds ? &metadata : nullptr);
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
