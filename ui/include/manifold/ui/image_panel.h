#pragma once
// The image under the cursor in the view, or the pinned one when the cursor
// is elsewhere: the picture at full resolution, its index, label and
// diffusion coordinates.
#include <QImage>
#include <QLabel>
#include <QWidget>

#include <cstdint>
#include <memory>

#include "manifold/ui/loaded_dataset.h"

namespace manifold::ui {

/// Paints an image scaled to fit, with square pixels kept sharp when
/// enlarged (a 28 x 28 digit stays readable).
class ImageCanvas : public QWidget {
  Q_OBJECT

 public:
  explicit ImageCanvas(QWidget* parent = nullptr);
  void setImage(QImage image);
  const QImage& image() const { return image_; }
  QSize sizeHint() const override { return {220, 220}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QImage image_;
};

class ImagePanel : public QWidget {
  Q_OBJECT

 public:
  explicit ImagePanel(QWidget* parent = nullptr);

  void setDataset(std::shared_ptr<const LoadedDataset> dataset);
  /// The row under the cursor (-1: none, show the pinned one).
  void setHovered(int64_t row, const QString& details = {});
  void setPinned(int64_t row, const QString& details = {});
  void setLogScale(bool on);
  int64_t shownRow() const { return shown_; }
  int64_t pinnedRow() const { return pinned_; }
  const QImage& shownImage() const { return canvas_->image(); }
  QString caption() const { return caption_->text(); }

 private:
  void refresh();

  std::shared_ptr<const LoadedDataset> dataset_;
  ImageCanvas* canvas_;
  QLabel* caption_;
  int64_t hovered_ = -1, pinned_ = -1, shown_ = -1;
  QString hovered_details_, pinned_details_;
  bool log_scale_ = false;
};

}  // namespace manifold::ui
