#include "manifold/ui/image_panel.h"

#include <QPainter>
#include <QVBoxLayout>

#include "manifold/ui/image_render.h"

namespace manifold::ui {

ImageCanvas::ImageCanvas(QWidget* parent) : QWidget(parent) {
  setMinimumSize(96, 96);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ImageCanvas::setImage(QImage image) {
  image_ = std::move(image);
  update();
}

void ImageCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 24, 28));
  if (image_.isNull()) return;
  const QSize fitted = image_.size().scaled(size(), Qt::KeepAspectRatio);
  const QRect target(QPoint((width() - fitted.width()) / 2, (height() - fitted.height()) / 2), fitted);
  p.setRenderHint(QPainter::SmoothPixmapTransform, fitted.width() < image_.width());
  p.drawImage(target, image_);
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
  if (row != shown_) canvas_->setImage(renderRow(*dataset_, row, 0, log_scale_));
  shown_ = row;
  QString text = hovering ? tr("<b>Image %1</b> (under the cursor)").arg(row) : tr("<b>Image %1</b> (pinned)").arg(row);
  const auto& labels = dataset_->data.labels;
  if (static_cast<int64_t>(labels.size()) > row) text += tr(" \u00b7 label %1").arg(labels[row]);
  const QString& details = hovering ? hovered_details_ : pinned_details_;
  if (!details.isEmpty()) text += QStringLiteral("<br>") + details;
  caption_->setText(text);
}

}  // namespace manifold::ui
