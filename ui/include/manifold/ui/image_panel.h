#pragma once
// The image under the cursor in the view, or the pinned one when the cursor
// is elsewhere: the picture at full resolution, its index, label and
// diffusion coordinates; the value of the pixel under the mouse, and the
// contrast (percentile clip, gamma).
#include <QDoubleSpinBox>
#include <QImage>
#include <QLabel>
#include <QWidget>

#include <cstdint>
#include <memory>

#include "manifold/ui/image_render.h"
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
  /// The image pixel drawn at widget position `pos`, or (-1, -1) outside the image.
  QPoint pixelAt(QPointF pos) const;
  /// Where the centre of image pixel `pixel` is drawn.
  QPointF positionOf(QPoint pixel) const;

 Q_SIGNALS:
  /// The pixel under the mouse; (-1, -1) when it leaves the image.
  void pixelHovered(QPoint pixel);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  QRect target() const;
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
  /// "pixel (x, y) = value" for the pixel under the mouse, "" elsewhere.
  QString pixelText() const { return pixel_->text(); }
  ImageCanvas* canvas() const { return canvas_; }
  QDoubleSpinBox* clipEditor() const { return clip_; }
  QDoubleSpinBox* gammaEditor() const { return gamma_; }

 private:
  void refresh();
  void show_pixel(QPoint pixel);
  Contrast contrast() const;

  std::shared_ptr<const LoadedDataset> dataset_;
  ImageCanvas* canvas_;
  QLabel* caption_;
  QLabel* pixel_;
  QDoubleSpinBox* clip_;
  QDoubleSpinBox* gamma_;
  int64_t hovered_ = -1, pinned_ = -1, shown_ = -1;
  QString hovered_details_, pinned_details_;
  bool log_scale_ = false;
};

}  // namespace manifold::ui
