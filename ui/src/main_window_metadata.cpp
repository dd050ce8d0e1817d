// The main window's Metadata dock: how each column that colours points (the
// user's metadata, labels, angles, mean intensity, index) correlates with
// the diffusion coordinates, computed for the embedding shown when the dock
// is looked at (clicking a row colours the view by that column); columns
// loaded from any file (File ▸ Load Metadata…); and the Clusters section,
// whose result is the column "cluster" and whose rows select their points.
#include <QDockWidget>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "manifold/error.h"
#include "manifold/ui/file_check.h"
#include "manifold/ui/file_dialogs.h"
#include "manifold/ui/main_window.h"

namespace manifold::ui {

namespace {

const QString kClusterColumn = QStringLiteral("cluster");

// A file libhdf5 reads (an HDF5 name, or HDF5's signature): core's rule.
bool is_hdf5(const QString& file) { return read_by_libhdf5(file.toStdString()); }

// `name`, or name_2, name_3, ... when a column has it already.
QString unique_name(const QString& name, const std::vector<PointMetadata>& columns) {
  auto taken = [&](const QString& n) {
    return std::any_of(columns.begin(), columns.end(), [&](const PointMetadata& m) { return m.name == n; });
  };
  QString out = name;
  for (int i = 2; taken(out); ++i) out = QStringLiteral("%1_%2").arg(name).arg(i);
  return out;
}

// The columns of one metadata file, each of `rows` values. Throws Error
// naming the file (a bad file, or a column of another length).
std::vector<PointMetadata> read_columns(const QString& file, const QString& column, int64_t rows) {
  if (is_hdf5(file)) checkMetadataInChild(file, column, rows);
  MetadataTable checked(rows);  // add() refuses a column of another length, naming its file
  for (MetadataColumn& c : load_metadata_file({file.toStdString(), column.toStdString()})) checked.add(std::move(c));
  std::vector<PointMetadata> out;
  for (const MetadataColumn& c : checked.columns()) out.push_back(pointMetadata(c));
  return out;
}

}  // namespace

void MainWindow::build_metadata_dock(QDockWidget* beside) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* load = new QPushButton(tr("Load metadata\u2026"), content);
  load->setObjectName(QStringLiteral("loadMetadataButton"));
  load
      ->setToolTip(tr("Add columns from a file anywhere: .npy, .csv/.tsv with a header, a dataset of an HDF5/CXI "
                      "file, MNIST label files"));
  connect(load, &QPushButton::clicked, this, &MainWindow::chooseMetadataFile);
  auto* load_row = new QHBoxLayout;
  load_row->addWidget(load);
  load_row->addStretch(1);
  layout->addLayout(load_row);

  metadata_table_ = new MetadataTableWidget(content);
  metadata_table_
      ->setToolTip(tr("How each column tracks \u03c8k: Pearson r for numbers, the correlation ratio \u03b7 "
                      "for categories, circular-linear R for angles (and the best atan2(\u03c8j, \u03c8i) "
                      "pair). Click a row to colour the points by it."));
  connect(metadata_table_, &MetadataTableWidget::columnChosen, this,
          [this](const QString& name) { setColourBy(name); });
  layout->addWidget(metadata_table_, 1);

  cluster_panel_ = new ClusterPanel(content);
  layout->addWidget(cluster_panel_);
  connect(cluster_panel_, &ClusterPanel::clustered, this,
          [this](std::shared_ptr<const EmbeddingClustering> result, std::shared_ptr<const EmbeddingOutcome> of) {
    if (!outcome_ || !dataset_) return;
    // The embedding changed while the worker ran: the user asked for
    // clusters of what is shown, so the same choice runs again on it.
    if (of->result != outcome_->result) {
      cluster_panel_->cluster(cluster_panel_->coordinates(), cluster_panel_->clusters());
      return;
    }
    show_clustering(*result, of->result->m);
  });
  connect(cluster_panel_, &ClusterPanel::failed, this, [this](const QString& message) { show_error(message); });
  connect(cluster_panel_, &ClusterPanel::clusterPicked, this, &MainWindow::selectCluster);
  // A new dataset has none of the user's columns; a session's come back
  // before its view settings apply (they may colour by one).
  connect(this, &MainWindow::datasetOpened, this, [this] {
    reset_user_columns();
    if (pending_session_) restore_user_columns(*pending_session_);
  });
  connect(this, &MainWindow::embeddingShown, this, [this] { cluster_panel_->setEmbedding(outcome_); });

  auto* dock = new QDockWidget(tr("Metadata"), this);
  dock->setObjectName(QStringLiteral("metadataDock"));
  dock->setWidget(content);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  tabifyDockWidget(beside, dock);
  beside->raise();
  // isVisible() stays true behind another dock's tab; the signal does not.
  connect(dock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
    metadata_shown_ = visible;
    if (visible) update_metadata_table();
  });
}

void MainWindow::update_metadata_table() {
  if (!metadata_table_ || !metadata_stale_ || !metadata_shown_ || !outcome_ || !dataset_) return;
  metadata_stale_ = false;
  const DiffusionResult& r = *outcome_->result;
  const MetadataTable table = ui::metadataTable(dataset_->metadata, dataset_->rows());
  if (table.empty() || r.m < 1) {
    metadata_table_->clearData();
    return;
  }
  metadata_table_->setData(table, r.coordinates.data(), r.n, r.m, r.point_index.data());
  metadata_table_->setCurrentColumn(colour_key_);
}

// ---- the user's columns ----------------------------------------------------------

std::vector<PointMetadata>& MainWindow::dataset_columns() {
  // The window's dataset is shared read-only with the workers (runs,
  // exports, means, trajectories), which read its rows and never its
  // metadata; the metadata is read and changed only on the GUI thread, so
  // the user's columns join the dataset's own in place.
  return const_cast<LoadedDataset&>(*dataset_).metadata;
}

void MainWindow::chooseMetadataFile() {
  if (!dataset_) {
    show_error(tr("Open a dataset before loading metadata for it."));
    return;
  }
  const QString file = askOpenFile(
      this, tr("Load metadata"),
      tr("Metadata (*.npy *.csv *.tsv *.tab *.h5 *.hdf5 *.hdf *.cxi *idx1-ubyte *idx1-ubyte.gz *.idx1 *.idx1.gz);;"
         "All files (*)"),
      QStringLiteral("metadata"));
  if (file.isEmpty()) return;
  QString column;
  if (is_hdf5(file)) {
    // An HDF5 file holds many datasets: the user picks one of N rows.
    QStringList candidates;
    try {
      checkMetadataInChild(file, QString(), dataset_->rows());
      for (const std::string& p : hdf5_datasets_of_length(file.toStdString(), dataset_->rows()))
        candidates << QString::fromStdString(p);
    } catch (const std::exception& e) {
      metadata_error(QString::fromStdString(e.what()));
      return;
    }
    if (candidates.isEmpty()) {
      metadata_error(tr("%1: no dataset of %2 rows (one value or one row per image)").arg(file).arg(dataset_->rows()));
      return;
    }
    bool ok = false;
    column =
        QInputDialog::getItem(this, tr("Load metadata"),
                              tr("Datasets of %1 rows in %2:").arg(dataset_->rows()).arg(QFileInfo(file).fileName()),
                              candidates, 0, false, &ok);
    if (!ok) return;
  }
  loadMetadata(file, column);
}

bool MainWindow::loadMetadata(const QString& file, const QString& column) {
  if (!dataset_) {
    metadata_error(tr("Open a dataset before loading metadata for it."));
    return false;
  }
  std::vector<PointMetadata> columns;
  try {
    columns = read_columns(file, column, dataset_->rows());
  } catch (const std::exception& e) {
    metadata_error(QString::fromStdString(e.what()));
    return false;
  }
  loaded_metadata_ << (column.isEmpty() ? file : file + QLatin1Char(':') + column);
  QStringList names = add_columns(std::move(columns));
  // The user loaded it to look at it: the points take its first column's colours.
  if (!names.isEmpty()) {
    setColourBy(names.first());
    metadata_table_->setCurrentColumn(colour_key_);  // the table's current row is the colouring
  }
  status_->setText(tr("Loaded %1 from %2.").arg(names.join(QStringLiteral(", ")), file));
  return true;
}

QStringList MainWindow::add_columns(std::vector<PointMetadata> columns) {
  std::vector<PointMetadata>& all = dataset_columns();
  QStringList names;
  for (PointMetadata& c : columns) {
    c.name = unique_name(c.name, all);
    names << c.name;
    all.push_back(std::move(c));
  }
  columns_changed();
  return names;
}

void MainWindow::columns_changed() {
  // Every list of columns (colouring, gallery sort, breakdown, the table) and
  // the colours, which may be of a column just replaced.
  update_colour_choices();
  update_colours();
  metadata_stale_ = true;
  update_metadata_table();
}

void MainWindow::metadata_error(const QString& message) {
  last_error_ = message;
  status_->setText(message);
  // Window-modal but not blocking: the window (and a test) goes on.
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Load metadata"), message, QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("metadataError"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
  Q_EMIT errorShown(message);
}

// ---- clusters -------------------------------------------------------------------

void MainWindow::clusterPoints(int coordinates, int clusters) {
  cluster_panel_->setEmbedding(outcome_ && !outcome_->preview ? outcome_ : nullptr);
  cluster_panel_->setChoice(coordinates, clusters);
  cluster_panel_->cluster(coordinates, clusters);
}

QListWidget* MainWindow::clusterList() const { return cluster_panel_->list(); }

QString MainWindow::clusterSummary() const { return cluster_panel_->summary(); }

void MainWindow::show_clustering(const EmbeddingClustering& c, int m_all) {
  PointMetadata column{kClusterColumn, std::vector<float>(c.labels.size()), true};
  for (size_t i = 0; i < c.labels.size(); ++i)
    column.values[i] = c.labels[i] < 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(c.labels[i]);
  for (int k = 0; k < c.clusters; ++k) column.category_names.emplace_back(k, tr("cluster %1").arg(k));
  QString summary = tr("%1 clusters (%2)")
                        .arg(c.clusters)
                        .arg(c.clusters_from == "given"      ? tr("K given")
                             : c.clusters_from == "eigengap" ? tr("eigengap")
                                                             : tr("graph pieces"));
  if (c.kmeans_clusters > 1) summary += tr(", k-means on \u03c81\u2026\u03c8%1 of %2").arg(c.coordinates).arg(m_all);
  set_cluster_column(std::move(column), summary);
  setColourBy(kClusterColumn);
  metadata_table_->setCurrentColumn(colour_key_);  // the table's current row is the colouring
  Q_EMIT clustersReady();
}

void MainWindow::set_cluster_column(PointMetadata column, const QString& how) {
  cluster_how_ = how;
  QString summary = how;
  std::vector<PointMetadata>& all = dataset_columns();
  // Re-clustering replaces the column in its place.
  auto old = std::find_if(all.begin(), all.end(), [](const PointMetadata& m) { return m.name == kClusterColumn; });
  std::vector<int64_t> sizes(column.category_names.size(), 0);
  for (float v : column.values)
    if (!std::isnan(v)) ++sizes[static_cast<size_t>(v)];
  // How well the clusters match a category the data came with (the true
  // hit classes, labels): the best one-to-one match, over the rows that have one.
  for (const PointMetadata& other : all) {
    if (!other.categorical || other.name == kClusterColumn || other.values.size() != column.values.size()) continue;
    std::vector<int32_t> classes, clusters;
    int most_class = 0;
    for (size_t i = 0; i < column.values.size(); ++i)
      if (std::isfinite(other.values[i]) && other.values[i] >= 0 && std::isfinite(column.values[i])) {
        classes.push_back(static_cast<int32_t>(other.values[i]));
        clusters.push_back(static_cast<int32_t>(column.values[i]));
        most_class = std::max(most_class, classes.back() + 1);
      }
    // The match tries every assignment: only for a few clusters and classes.
    if (classes.empty() || sizes.size() > 8 || most_class > 8) continue;
    const Agreement a = cluster_agreement(classes, clusters);
    summary += tr("; agrees %1 % with %2 (best match)").arg(100.0 * a.accuracy, 0, 'f', 1).arg(other.name);
    break;
  }
  if (old != all.end()) *old = std::move(column);
  else
    all.push_back(std::move(column));
  cluster_panel_->showClusters(sizes, summary);
  columns_changed();
}

void MainWindow::selectCluster(int code) {
  if (!dataset_) return;
  const std::vector<PointMetadata>& all = dataset_->metadata;
  auto c = std::find_if(all.begin(), all.end(), [](const PointMetadata& m) { return m.name == kClusterColumn; });
  if (c == all.end()) return;
  std::vector<int64_t> rows;
  for (size_t i = 0; i < c->values.size(); ++i)
    if (c->values[i] == static_cast<float>(code)) rows.push_back(static_cast<int64_t>(i));
  setSelectedRows(std::move(rows));
}

void MainWindow::reset_user_columns() {
  loaded_metadata_.clear();
  cluster_how_.clear();
  cluster_panel_->setEmbedding(nullptr);
  cluster_panel_->clearClusters();
}

// ---- sessions -------------------------------------------------------------------

void MainWindow::save_user_columns(Session& s) const {
  // The files as `run --metadata` takes them, so the CLI's replay has them too.
  for (const QString& spec : loaded_metadata_) s.metadata.push_back(spec.toStdString());
  nlohmann::json& view = s.view;
  if (!dataset_) return;
  for (const PointMetadata& m : dataset_->metadata)
    if (m.name == kClusterColumn) {
      std::vector<int32_t> labels;
      for (float v : m.values) labels.push_back(std::isnan(v) ? -1 : static_cast<int32_t>(v));
      view["clusters"] = {{"coordinates", cluster_panel_->coordinates()},
                          {"clusters", cluster_panel_->clusters()},
                          {"count", m.category_names.size()},
                          {"how", cluster_how_.toStdString()},
                          {"labels", labels}};
    }
}

void MainWindow::restore_user_columns(const Session& session) {
  if (!dataset_) return;
  const nlohmann::json& view = session.view;
  // The session's metadata files; sessions of earlier versions kept them
  // in the view ("metadata_files").
  std::vector<std::string> specs = session.metadata;
  if (view.is_object() && view.contains("metadata_files") && view["metadata_files"].is_array())
    for (const nlohmann::json& spec : view["metadata_files"])
      if (spec.is_string()) specs.push_back(spec.get<std::string>());
  QStringList failed;
  for (const std::string& text : specs) {
    try {
      const MetadataSpec s = parse_metadata_spec(text);
      std::vector<PointMetadata> columns = read_columns(QString::fromStdString(s.file),
                                                        QString::fromStdString(s.column), dataset_->rows());
      loaded_metadata_ << QString::fromStdString(text);
      add_columns(std::move(columns));
    } catch (const std::exception& e) {
      failed << QString::fromStdString(e.what());
    }
  }
  if (!view.is_object()) {
    if (!failed.isEmpty()) show_notice(failed.join(QLatin1Char(' ')));
    return;
  }
  if (view.contains("clusters") && view["clusters"].is_object()) {
    const nlohmann::json& c = view["clusters"];
    const nlohmann::json labels = c.value("labels", nlohmann::json::array());
    const int count = c.value("count", 0);
    // Labels as saved for these rows, each a cluster of the count (-1: left out).
    bool ok = labels.is_array() && static_cast<int64_t>(labels.size()) == dataset_->rows() && count >= 1;
    PointMetadata column{kClusterColumn, {}, true};
    for (size_t i = 0; ok && i < labels.size(); ++i) {
      ok = labels[i].is_number_integer() && labels[i].get<int>() >= -1 && labels[i].get<int>() < count;
      if (ok)
        column.values.push_back(labels[i].get<int>() < 0 ? std::numeric_limits<float>::quiet_NaN()
                                                         : static_cast<float>(labels[i].get<int>()));
    }
    if (ok) {
      for (int k = 0; k < count; ++k) column.category_names.emplace_back(k, tr("cluster %1").arg(k));
      cluster_panel_->setChoice(c.value("coordinates", 0), c.value("clusters", 0));
      set_cluster_column(std::move(column), QString::fromStdString(c.value("how", std::string())));
    } else {
      failed << tr("the session's clusters do not fit this dataset's %1 rows; left out").arg(dataset_->rows());
    }
  }
  if (!failed.isEmpty()) show_notice(failed.join(QStringLiteral(" ")));
}

}  // namespace manifold::ui
