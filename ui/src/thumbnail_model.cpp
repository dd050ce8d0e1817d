#include "manifold/ui/thumbnail_model.h"

#include <algorithm>
#include <limits>

#include "manifold/ui/image_render.h"

namespace manifold::ui {

ThumbnailModel::ThumbnailModel(QObject* parent) : QAbstractListModel(parent) {
  // A few screens of thumbnails: scrolling back is free, memory stays bounded.
  cache_.setMaxCost(4000);
}

void ThumbnailModel::setDataset(std::shared_ptr<const LoadedDataset> dataset) {
  beginResetModel();
  dataset_ = std::move(dataset);
  rows_.clear();
  model_row_of_.clear();
  subset_ = false;
  reset_cache();
  endResetModel();
}

void ThumbnailModel::setRows(std::vector<int64_t> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  // The inverse map makes modelRow constant time: the gallery maps every
  // selected row through it, and a selection can hold every image.
  model_row_of_.assign(dataset_ ? static_cast<size_t>(dataset_->rows()) : 0, -1);
  for (size_t i = 0; i < rows_.size() && i <= static_cast<size_t>(std::numeric_limits<int32_t>::max()); ++i)
    if (rows_[i] >= 0 && rows_[i] < static_cast<int64_t>(model_row_of_.size()))
      model_row_of_[static_cast<size_t>(rows_[i])] = static_cast<int32_t>(i);
  subset_ = true;
  endResetModel();
}

void ThumbnailModel::showAllRows() {
  beginResetModel();
  rows_.clear();
  model_row_of_.clear();
  subset_ = false;
  endResetModel();
}

void ThumbnailModel::setThumbnailSize(int pixels) {
  if (pixels == size_) return;
  beginResetModel();
  size_ = pixels;
  reset_cache();
  endResetModel();
}

void ThumbnailModel::setLogScale(bool on) {
  if (on == log_scale_) return;
  log_scale_ = on;
  reset_cache();
  if (rowCount() > 0) Q_EMIT dataChanged(index(0), index(rowCount() - 1), {Qt::DecorationRole});
}

void ThumbnailModel::reset_cache() { cache_.clear(); }

int64_t ThumbnailModel::datasetRow(int model_row) const {
  if (model_row < 0 || model_row >= rowCount()) return -1;
  return subset_ ? rows_[static_cast<size_t>(model_row)] : model_row;
}

int ThumbnailModel::modelRow(int64_t dataset_row) const {
  if (!dataset_ || dataset_row < 0 || dataset_row >= dataset_->rows()) return -1;
  if (!subset_) return static_cast<int>(dataset_row);
  return dataset_row < static_cast<int64_t>(model_row_of_.size()) ? model_row_of_[static_cast<size_t>(dataset_row)]
                                                                  : -1;
}

int ThumbnailModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !dataset_) return 0;
  // QListView counts rows in int; datasets beyond 2^31 images are shown in part.
  const int64_t n = subset_ ? static_cast<int64_t>(rows_.size()) : dataset_->rows();
  return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
}

QVariant ThumbnailModel::data(const QModelIndex& index, int role) const {
  const int64_t row = datasetRow(index.row());
  if (row < 0) return {};
  switch (role) {
    case Qt::DisplayRole: {
      QString text = QString::number(row);
      const auto& labels = dataset_->data.labels;
      if (static_cast<int64_t>(labels.size()) > row) text += QStringLiteral(" \u00b7 %1").arg(labels[row]);
      return text;
    }
    case Qt::DecorationRole: {
      if (QPixmap* cached = cache_.object(row)) return *cached;
      const QImage image = renderRow(*dataset_, row, size_, log_scale_);
      ++drawn_;
      auto* pixmap = new QPixmap(QPixmap::fromImage(image.scaled(size_, size_, Qt::KeepAspectRatio,
                                                                 image.width() < size_ ? Qt::FastTransformation
                                                                                       : Qt::SmoothTransformation)));
      QPixmap copy = *pixmap;
      cache_.insert(row, pixmap, 1);
      return copy;
    }
    case Qt::ToolTipRole: {  // the caption keeps the label's number; its class's name is here
      const QString label = dataset_->labelText(row);
      const QString image = tr("Image %1 of %2").arg(row).arg(dataset_->rows());
      return label.isEmpty() ? image : image + QStringLiteral(" \u00b7 ") + label;
    }
    case DatasetRowRole: return QVariant::fromValue<qlonglong>(row);
    case Qt::SizeHintRole: return QSize(size_ + 8, size_ + 22);
    default: return {};
  }
}

}  // namespace manifold::ui
