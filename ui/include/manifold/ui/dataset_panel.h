#pragma once
// The dataset: how to open one (file, demo), its facts (N, shape, type,
// value range) and a gallery of every image, sorted as the user chooses, whose
// Shift/Ctrl multi-selection is the view's selection and shows it back.
#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QListView>
#include <QSlider>
#include <QWidget>

#include <memory>

#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/thumbnail_model.h"

namespace manifold::ui {

class DatasetPanel : public QWidget {
  Q_OBJECT

 public:
  explicit DatasetPanel(QWidget* parent = nullptr);

  void setDataset(std::shared_ptr<const LoadedDataset> dataset);
  /// Scrolls the gallery to dataset row `row` and makes it the current item
  /// (without changing the selection).
  void revealRow(int64_t row);
  /// Selects these dataset rows in the gallery (the view's selection shown
  /// here); selectionEdited is not emitted for it.
  void setSelectedRows(const std::vector<int64_t>& rows);
  /// The dataset rows selected in the gallery, ascending.
  std::vector<int64_t> selectedRows() const;
  /// The sort combo's entries after "dataset order": (shown text, key).
  void setSortChoices(const QList<QPair<QString, QString>>& choices);
  /// The sort chosen: "" for dataset order, else a key of setSortChoices.
  QString sortKey() const;
  /// Chooses a sort by key ("" for dataset order); sortRequested follows. A
  /// key not offered yet is chosen when setSortChoices offers it.
  void setSortKey(const QString& key);
  /// Shows every row in this order (from sortRequested); empty for dataset order.
  void setOrder(std::vector<int64_t> rows);
  QComboBox* sortEditor() const { return sort_; }
  ThumbnailModel* model() const { return model_; }
  QListView* gallery() const { return gallery_; }
  bool logScale() const { return log_scale_->isChecked(); }
  /// The facts as shown ("N", "Shape", ...), for tests.
  QString fact(const QString& name) const;

 Q_SIGNALS:
  void openRequested();
  void demoRequested();
  void imageActivated(qint64 row);
  /// The user changed the gallery's selection (click, Shift/Ctrl-click, Ctrl+A).
  void selectionEdited(const std::vector<int64_t>& rows);
  /// The sort combo changed: the owner computes the order and calls setOrder.
  void sortRequested(const QString& key);
  void logScaleChanged(bool on);

 private:
  void set_fact(const QString& name, const QString& value);

  QFormLayout* facts_;
  QListView* gallery_;
  ThumbnailModel* model_;
  QComboBox* sort_;
  // The sort asked for: kept while its key is not offered (ψ before the
  // embedding exists, as a session restores it) and chosen once it is.
  QString wanted_sort_;
  bool applying_selection_ = false;  // setSelectedRows at work: not the user's edit
  QSlider* size_;
  QCheckBox* log_scale_;
  QLabel* placeholder_;
};

/// Sets up a QListView as a lazy thumbnail grid (uniform items, batched
/// layout, Shift/Ctrl multi-selection), shared by the gallery and the
/// selection strip.
void configureThumbnailView(QListView* view, int thumbnail_size);

/// The model rows of `view` selected, as dataset rows, ascending.
std::vector<int64_t> selectedDatasetRows(const QListView* view, const ThumbnailModel* model);
/// Selects exactly these dataset rows in `view` (runs of adjacent model rows
/// become one range, so selecting every image stays one range).
void selectDatasetRows(QListView* view, const ThumbnailModel* model, const std::vector<int64_t>& rows);

/// Every row in 0..key.size()-1 ordered by ascending key (stable: ties keep
/// dataset order); NaN keys (missing, or not embedded) go last.
std::vector<int64_t> rowsSortedBy(const std::vector<double>& key);

}  // namespace manifold::ui
