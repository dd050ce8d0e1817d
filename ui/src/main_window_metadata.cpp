// The main window's Metadata dock: how each column that colours points (the
// user's metadata, labels, angles, mean intensity, index) correlates with
// the diffusion coordinates, computed for the embedding shown when the dock
// is looked at; clicking a row colours the view by that column.
#include <QDockWidget>

#include "manifold/ui/main_window.h"

namespace manifold::ui {

void MainWindow::build_metadata_dock(QDockWidget* beside) {
  metadata_table_ = new MetadataTableWidget(this);
  metadata_table_->setToolTip(tr("How each column tracks \u03c8k: Pearson r for numbers, the correlation ratio \u03b7 "
                                 "for categories, circular-linear R for angles (and the best atan2(\u03c8j, \u03c8i) "
                                 "pair). Click a row to colour the points by it."));
  connect(metadata_table_, &MetadataTableWidget::columnChosen, this, [this](const QString& name) { setColourBy(name); });
  auto* dock = new QDockWidget(tr("Metadata"), this);
  dock->setObjectName(QStringLiteral("metadataDock"));
  dock->setWidget(metadata_table_);
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

}  // namespace manifold::ui
