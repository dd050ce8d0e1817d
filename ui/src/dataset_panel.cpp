#include "manifold/ui/dataset_panel.h"

#include <QHBoxLayout>
#include <QItemSelection>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <QLocale>
#include <QPushButton>
#include <QVBoxLayout>

namespace manifold::ui {

void configureThumbnailView(QListView* view, int thumbnail_size) {
  view->setViewMode(QListView::IconMode);
  view->setResizeMode(QListView::Adjust);
  view->setMovement(QListView::Static);
  // Uniform sizes let the view place 100,000 items without asking each one
  // for its size; batches keep the window responsive while it lays them out.
  view->setUniformItemSizes(true);
  view->setLayoutMode(QListView::Batched);
  view->setBatchSize(2000);
  view->setGridSize(QSize(thumbnail_size + 12, thumbnail_size + 24));
  view->setIconSize(QSize(thumbnail_size, thumbnail_size));
  view->setSpacing(2);
  view->setWordWrap(false);
  view->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
}

std::vector<int64_t> selectedDatasetRows(const QListView* view, const ThumbnailModel* model) {
  std::vector<int64_t> rows;
  // Ranges, not selectedIndexes(): a selection of every image is one range.
  for (const QItemSelectionRange& range : view->selectionModel()->selection())
    for (int r = range.top(); r <= range.bottom(); ++r) rows.push_back(model->datasetRow(r));
  rows.erase(std::remove(rows.begin(), rows.end(), int64_t{-1}), rows.end());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

void selectDatasetRows(QListView* view, const ThumbnailModel* model, const std::vector<int64_t>& rows) {
  std::vector<int> model_rows;
  model_rows.reserve(rows.size());
  for (int64_t row : rows)
    if (const int r = model->modelRow(row); r >= 0) model_rows.push_back(r);
  std::sort(model_rows.begin(), model_rows.end());
  QItemSelection selection;
  for (size_t i = 0; i < model_rows.size();) {
    size_t j = i + 1;
    while (j < model_rows.size() && model_rows[j] == model_rows[j - 1] + 1) ++j;
    selection.append(QItemSelectionRange(model->index(model_rows[i]), model->index(model_rows[j - 1])));
    i = j;
  }
  // A lasso of scattered points in a sorted gallery is tens of thousands of
  // ranges. Replacing one selection by another in one call splits them
  // against each other (quadratic); clearing first, then selecting
  // into nothing, is linear. Quietly, then one repaint: the view's own
  // response unites every range's rectangle into a region, quadratic too.
  {
    const QSignalBlocker quiet(view->selectionModel());
    view->selectionModel()->clearSelection();
    view->selectionModel()->select(selection, QItemSelectionModel::Select);
  }
  view->viewport()->update();
}

std::vector<int64_t> rowsSortedBy(const std::vector<double>& key) {
  std::vector<int64_t> rows(key.size());
  std::iota(rows.begin(), rows.end(), int64_t{0});
  const auto missing_last = std::stable_partition(rows.begin(), rows.end(),
                                                  [&](int64_t r) { return !std::isnan(key[static_cast<size_t>(r)]); });
  std::stable_sort(rows.begin(), missing_last,
                   [&](int64_t a, int64_t b) { return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)]; });
  return rows;
}

DatasetPanel::DatasetPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);

  auto* buttons = new QHBoxLayout;
  auto* open = new QPushButton(tr("Open\u2026"), this);
  open
      ->setToolTip(tr("Open a dataset: .npy, MNIST IDX, a folder of PNG/TIFF images, multi-page TIFF, "
                      "MRC/MRCS or HDF5/CXI. You can also drop a file on the window."));
  auto* demo = new QPushButton(QIcon(QStringLiteral(":/icons/demo.png")), tr("Demo"), this);
  demo
      ->setToolTip(tr("Open the built-in demo (diffraction patterns of a molecule turning about one axis) "
                      "and embed it: the points should trace a circle."));
  buttons->addWidget(open);
  buttons->addWidget(demo);
  buttons->addStretch();
  layout->addLayout(buttons);
  connect(open, &QPushButton::clicked, this, &DatasetPanel::openRequested);
  connect(demo, &QPushButton::clicked, this, &DatasetPanel::demoRequested);

  facts_ = new QFormLayout;
  facts_->setLabelAlignment(Qt::AlignRight);
  layout->addLayout(facts_);
  placeholder_ = new QLabel(tr("No dataset open."), this);
  layout->addWidget(placeholder_);

  auto* sorting = new QHBoxLayout;
  sorting->addWidget(new QLabel(tr("Sort by"), this));
  sort_ = new QComboBox(this);
  sort_
      ->setToolTip(tr("Order the gallery by a diffusion coordinate or a metadata column, ascending; "
                      "images not embedded (or without a value) come last"));
  sort_->addItem(tr("dataset order"), QString());
  sorting->addWidget(sort_, 1);
  layout->addLayout(sorting);
  connect(sort_, &QComboBox::currentIndexChanged, this, [this] {
    wanted_sort_ = sort_->currentData().toString();
    Q_EMIT sortRequested(wanted_sort_);
  });

  model_ = new ThumbnailModel(this);
  gallery_ = new QListView(this);
  gallery_->setModel(model_);
  configureThumbnailView(gallery_, model_->thumbnailSize());
  gallery_
      ->setToolTip(tr("Click to pin an image; Shift/Ctrl-click or Ctrl+A select several, which are "
                      "selected in the view too"));
  layout->addWidget(gallery_, 1);
  connect(gallery_, &QListView::clicked, this,
          [this](const QModelIndex& index) { Q_EMIT imageActivated(model_->datasetRow(index.row())); });
  connect(gallery_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    if (!applying_selection_) Q_EMIT selectionEdited(selectedRows());
  });

  auto* options = new QHBoxLayout;
  options->addWidget(new QLabel(tr("Size"), this));
  size_ = new QSlider(Qt::Horizontal, this);
  size_->setRange(32, 160);
  size_->setValue(model_->thumbnailSize());
  size_->setToolTip(tr("Thumbnail size in pixels"));
  options->addWidget(size_, 1);
  log_scale_ = new QCheckBox(tr("Log scale"), this);
  log_scale_->setToolTip(tr("Show intensities on a logarithmic scale (diffraction patterns span several decades)"));
  options->addWidget(log_scale_);
  layout->addLayout(options);
  connect(size_, &QSlider::valueChanged, this, [this](int v) {
    model_->setThumbnailSize(v);
    gallery_->setGridSize(QSize(v + 12, v + 24));
    gallery_->setIconSize(QSize(v, v));
  });
  connect(log_scale_, &QCheckBox::toggled, this, [this](bool on) {
    model_->setLogScale(on);
    Q_EMIT logScaleChanged(on);
  });
}

void DatasetPanel::set_fact(const QString& name, const QString& value) {
  for (int r = 0; r < facts_->rowCount(); ++r) {
    auto* label = qobject_cast<QLabel*>(facts_->itemAt(r, QFormLayout::LabelRole)->widget());
    if (label && label->text() == name + ":") {
      qobject_cast<QLabel*>(facts_->itemAt(r, QFormLayout::FieldRole)->widget())->setText(value);
      return;
    }
  }
  auto* field = new QLabel(value, this);
  field->setTextInteractionFlags(Qt::TextSelectableByMouse);
  field->setWordWrap(true);
  facts_->addRow(name + ":", field);
}

QString DatasetPanel::fact(const QString& name) const {
  for (int r = 0; r < facts_->rowCount(); ++r) {
    auto* label = qobject_cast<QLabel*>(facts_->itemAt(r, QFormLayout::LabelRole)->widget());
    if (label && label->text() == name + ":")
      return qobject_cast<QLabel*>(facts_->itemAt(r, QFormLayout::FieldRole)->widget())->text();
  }
  return {};
}

void DatasetPanel::setDataset(std::shared_ptr<const LoadedDataset> ds) {
  // Each dataset opens on the scale that suits its values (photon counts on
  // a log scale), set before its thumbnails are drawn; the toggled signal
  // carries it to the image and selection views.
  if (ds) log_scale_->setChecked(ds->log_scale);
  model_->setDataset(ds);
  // A new dataset starts at its first image, not where the last one was scrolled to.
  gallery_->scrollToTop();
  applying_selection_ = true;
  gallery_->clearSelection();
  applying_selection_ = false;
  placeholder_->setVisible(!ds);
  while (facts_->rowCount() > 0) facts_->removeRow(0);
  if (!ds) return;
  const QLocale en(QLocale::English);
  const Dataset& d = ds->data;
  set_fact(tr("Name"), ds->name);
  // The mask decides which pixels the graph sees: said with where the data came from.
  set_fact(tr("Source"), ds->mask.empty() ? ds->origin : ds->origin + QStringLiteral("; ") + ds->maskText());
  set_fact(tr("N"), en.toString(static_cast<qlonglong>(d.rows())));
  // With a mask, d is the pixels the distances use, not the frame's.
  if (ds->mask.empty())
    set_fact(tr("Shape"),
             tr("%1 per item (d = %2)").arg(ds->frameText(), en.toString(static_cast<qlonglong>(d.cols()))));
  else
    set_fact(tr("Shape"), tr("%1 per item, %2").arg(ds->frameText(), ds->usedText()));
  const QString dtype = QString::fromStdString(d.source_dtype.empty() ? "float32" : d.source_dtype);
  if (ds->path.isEmpty()) set_fact(tr("Type"), tr("float32, in memory"));
  else
    set_fact(tr("Type"), tr("%1 in the file, float32 in memory%2")
                             .arg(dtype, d.memory_mapped() ? tr(" (memory-mapped)") : QString()));
  set_fact(tr("Range"),
           QStringLiteral("%1 \u2026 %2").arg(ds->range.first, 0, 'g', 6).arg(ds->range.second, 0, 'g', 6));
  if (!d.labels.empty()) {
    std::vector<int32_t> distinct(d.labels);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    set_fact(tr("Labels"), tr("%1 classes").arg(distinct.size()));
  }
}

void DatasetPanel::revealRow(int64_t row) {
  const int r = model_->modelRow(row);
  if (r < 0) return;
  const QModelIndex index = model_->index(r);
  // NoUpdate: pinning an image keeps the selection made in the view.
  gallery_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::NoUpdate);
  gallery_->scrollTo(index, QAbstractItemView::EnsureVisible);
}

void DatasetPanel::setSelectedRows(const std::vector<int64_t>& rows) {
  applying_selection_ = true;
  selectDatasetRows(gallery_, model_, rows);
  applying_selection_ = false;
}

std::vector<int64_t> DatasetPanel::selectedRows() const { return selectedDatasetRows(gallery_, model_); }

void DatasetPanel::setSortChoices(const QList<QPair<QString, QString>>& choices) {
  const QSignalBlocker quiet(sort_);
  while (sort_->count() > 1) sort_->removeItem(1);
  for (const auto& [text, key] : choices) sort_->addItem(text, key);
  sort_->setCurrentIndex(std::max(0, sort_->findData(wanted_sort_)));
}

QString DatasetPanel::sortKey() const { return sort_->currentData().toString(); }

void DatasetPanel::setSortKey(const QString& key) {
  wanted_sort_ = key;
  const int idx = std::max(0, sort_->findData(key));
  if (idx == sort_->currentIndex()) Q_EMIT sortRequested(sortKey());
  else
    sort_->setCurrentIndex(idx);
}

void DatasetPanel::setOrder(std::vector<int64_t> rows) {
  // The selection and the current image are dataset rows: they survive the new order.
  const std::vector<int64_t> selected = selectedRows();
  const int64_t current = model_->datasetRow(gallery_->currentIndex().row());
  if (rows.empty()) model_->showAllRows();
  else
    model_->setRows(std::move(rows));
  setSelectedRows(selected);
  if (current >= 0) revealRow(current);
  else
    gallery_->scrollToTop();
}

}  // namespace manifold::ui
