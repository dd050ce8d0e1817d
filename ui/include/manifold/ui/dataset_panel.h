#pragma once
// The dataset: how to open one (file, demo), its facts (N, shape, type,
// value range) and a gallery of every image.
#include <QCheckBox>
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
  /// Scrolls the gallery to dataset row `row` and highlights it.
  void revealRow(int64_t row);
  ThumbnailModel* model() const { return model_; }
  QListView* gallery() const { return gallery_; }
  bool logScale() const { return log_scale_->isChecked(); }
  /// The facts as shown ("N", "Shape", ...), for tests.
  QString fact(const QString& name) const;

 Q_SIGNALS:
  void openRequested();
  void demoRequested();
  void imageActivated(qint64 row);
  void logScaleChanged(bool on);

 private:
  void set_fact(const QString& name, const QString& value);

  QFormLayout* facts_;
  QListView* gallery_;
  ThumbnailModel* model_;
  QSlider* size_;
  QCheckBox* log_scale_;
  QLabel* placeholder_;
};

/// Sets up a QListView as a lazy thumbnail grid (uniform items, batched
/// layout), shared by the gallery and the selection strip.
void configureThumbnailView(QListView* view, int thumbnail_size);

}  // namespace manifold::ui
