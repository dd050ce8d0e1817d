#pragma once
// The gallery's model: one item per dataset row (or per row of a subset, for
// the selection strip). Thumbnails are drawn only when the view asks for a
// visible item and kept in a bounded cache, so a 100,000-image stack opens at
// once and scrolls without drawing what is not on screen.
#include <QAbstractListModel>
#include <QCache>
#include <QPixmap>

#include <cstdint>
#include <memory>
#include <vector>

#include "manifold/ui/loaded_dataset.h"

namespace manifold::ui {

class ThumbnailModel : public QAbstractListModel {
  Q_OBJECT

 public:
  static constexpr int DatasetRowRole = Qt::UserRole + 1;

  explicit ThumbnailModel(QObject* parent = nullptr);

  void setDataset(std::shared_ptr<const LoadedDataset> dataset);
  /// Shows only these dataset rows, in this order (a subset, or every row
  /// sorted); showAllRows shows every row in dataset order.
  void setRows(std::vector<int64_t> rows);
  /// The dataset rows shown, in order (empty in dataset order).
  const std::vector<int64_t>& rows() const { return rows_; }
  void showAllRows();
  void setThumbnailSize(int pixels);
  int thumbnailSize() const { return size_; }
  void setLogScale(bool on);
  bool logScale() const { return log_scale_; }

  int64_t datasetRow(int model_row) const;
  /// The model row showing dataset row `row`, or -1.
  int modelRow(int64_t dataset_row) const;
  /// Thumbnails drawn so far (to show that drawing is lazy).
  int64_t thumbnailsDrawn() const { return drawn_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

 private:
  void reset_cache();

  std::shared_ptr<const LoadedDataset> dataset_;
  std::vector<int64_t> rows_;
  std::vector<int32_t> model_row_of_;  // dataset row -> model row (-1: not shown), in subset mode
  bool subset_ = false;
  int size_ = 64;
  bool log_scale_ = false;
  mutable QCache<int64_t, QPixmap> cache_;
  mutable int64_t drawn_ = 0;
};

}  // namespace manifold::ui
