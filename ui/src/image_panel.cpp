#include "manifold/ui/image_panel.h"

#include <QHBoxLayout>
#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <QVBoxLayout>

#include "manifold/ui/image_render.h"

namespace manifold::ui {

ImageCanvas::ImageCanvas(QWidget* parent) : QWidget(parent) {
  setMinimumSize(96, 96);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMouseTracking(true);
}

QRect ImageCanvas::target() const {
  const QSize fitted = image_.size().scaled(size(), Qt::KeepAspectRatio);
  return QRect(QPoint((width() - fitted.width()) / 2, (height() - fitted.height()) / 2), fitted);
}

QPoint ImageCanvas::pixelAt(QPointF pos) const {
  const QRect t = target();
  if (image_.isNull() || t.isEmpty() || !QRectF(t).contains(pos)) return {-1, -1};
  const int x = static_cast<int>((pos.x() - t.left()) * image_.width() / t.width());
  const int y = static_cast<int>((pos.y() - t.top()) * image_.height() / t.height());
  return {std::clamp(x, 0, image_.width() - 1), std::clamp(y, 0, image_.height() - 1)};
}

QPointF ImageCanvas::positionOf(QPoint pixel) const {
  const QRect t = target();
  if (image_.isNull()) return {};
  return {t.left() + (pixel.x() + 0.5) * t.width() / image_.width(),
          t.top() + (pixel.y() + 0.5) * t.height() / image_.height()};
}

void ImageCanvas::mouseMoveEvent(QMouseEvent* event) { Q_EMIT pixelHovered(pixelAt(event->position())); }

void ImageCanvas::leaveEvent(QEvent*) { Q_EMIT pixelHovered({-1, -1}); }

void ImageCanvas::setImage(QImage image) {
  image_ = std::move(image);
  update();
}

void ImageCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 24, 28));
  if (image_.isNull()) return;
  const QRect t = target();
  p.setRenderHint(QPainter::SmoothPixmapTransform, t.width() < image_.width());
  p.drawImage(t, image_);
}

ImagePanel::ImagePanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  canvas_ = new ImageCanvas(this);
  caption_ = new QLabel(tr("Hover over a point to see its image; click to pin it."), this);
  caption_->setWordWrap(true);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(canvas_, 1);
  layout->addWidget(caption_);
  pixel_ = new QLabel(this);
  pixel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(pixel_);

  auto* contrast = new QHBoxLayout;
  contrast->addWidget(new QLabel(tr("Clip"), this));
  clip_ = new QDoubleSpinBox(this);
  clip_->setRange(0, 20);
  clip_->setSingleStep(0.5);
  clip_->setDecimals(1);
  clip_->setSuffix(tr(" %"));
  clip_
      ->setToolTip(tr("Contrast: the darkest and the brightest this percent of the pixels are clipped, so a few "
                      "hot pixels do not turn the rest black"));
  contrast->addWidget(clip_);
  contrast->addWidget(new QLabel(tr("\u03b3"), this));
  gamma_ = new QDoubleSpinBox(this);
  gamma_->setRange(0.2, 5);
  gamma_->setSingleStep(0.1);
  gamma_->setDecimals(2);
  gamma_->setValue(1);
  gamma_->setToolTip(tr("Contrast: a gamma above 1 lifts faint detail, below 1 darkens it"));
  contrast->addWidget(gamma_);
  contrast->addStretch();
  layout->addLayout(contrast);
  for (QDoubleSpinBox* box : {clip_, gamma_})
    connect(box, &QDoubleSpinBox::valueChanged, this, [this] {
      shown_ = -2;  // force a redraw
      refresh();
    });
  connect(canvas_, &ImageCanvas::pixelHovered, this, &ImagePanel::show_pixel);
}

Contrast ImagePanel::contrast() const { return {clip_->value(), gamma_->value()}; }

void ImagePanel::show_pixel(QPoint pixel) {
  if (!dataset_ || shown_ < 0 || pixel.x() < 0) {
    pixel_->clear();
    return;
  }
  const int64_t index = static_cast<int64_t>(pixel.y()) * dataset_->image_width + pixel.x();
  if (index >= dataset_->data.cols()) {
    pixel_->clear();
    return;
  }
  const float value = dataset_->data.row(shown_)[index];
  pixel_->setText(tr("pixel (%1, %2) = %3").arg(pixel.x()).arg(pixel.y()).arg(value, 0, 'g', 6));
}

void ImagePanel::setDataset(std::shared_ptr<const LoadedDataset> dataset) {
  dataset_ = std::move(dataset);
  hovered_ = pinned_ = -1;
  refresh();
}

void ImagePanel::setHovered(int64_t row, const QString& details) {
  hovered_ = row;
  hovered_details_ = details;
  refresh();
}

void ImagePanel::setPinned(int64_t row, const QString& details) {
  pinned_ = row;
  pinned_details_ = details;
  refresh();
}

void ImagePanel::setLogScale(bool on) {
  log_scale_ = on;
  shown_ = -2;  // force a redraw
  refresh();
}

void ImagePanel::refresh() {
  const bool hovering = hovered_ >= 0;
  const int64_t row = hovering ? hovered_ : pinned_;
  if (!dataset_ || row < 0 || row >= dataset_->rows()) {
    shown_ = -1;
    canvas_->setImage({});
    caption_->setText(dataset_ ? tr("Hover over a point to see its image; click to pin it.") : QString());
    return;
  }
  if (row != shown_) canvas_->setImage(renderRow(*dataset_, row, 0, log_scale_, contrast()));
  shown_ = row;
  QString text = hovering ? tr("<b>Image %1</b> (under the cursor)").arg(row) : tr("<b>Image %1</b> (pinned)").arg(row);
  if (const QString label = dataset_->labelText(row); !label.isEmpty())
    text += tr(" \u00b7 label %1").arg(label.toHtmlEscaped());
  const auto& names = dataset_->data.item_names;
  if (static_cast<int64_t>(names.size()) > row)
    text += QStringLiteral(" \u00b7 ") + QString::fromStdString(names[static_cast<size_t>(row)]).toHtmlEscaped();
  const QString& details = hovering ? hovered_details_ : pinned_details_;
  if (!details.isEmpty()) text += QStringLiteral("<br>") + details;
  caption_->setText(text);
}

}  // namespace manifold::ui
