#include "manifold/ui/plot_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace manifold::ui {
namespace {

/// A round tick step (1, 2 or 5 times a power of ten) giving about four
/// ticks over `span`.
double nice_step(double span) {
  const double raw = span / 4;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

}  // namespace

PlotWidget::PlotWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void PlotWidget::setTitles(const QString& title, const QString& x, const QString& y) {
  title_ = title;
  x_title_ = x;
  y_title_ = y;
  update();
}

void PlotWidget::setData(std::vector<double> x, std::vector<double> y) {
  x_ = std::move(x);
  y_ = std::move(y);
  const size_t n = std::min(x_.size(), y_.size());
  x_.resize(n);
  y_.resize(n);
  message_.clear();
  hover_ = -1;
  x_lo_ = y_lo_ = INFINITY;
  x_hi_ = y_hi_ = -INFINITY;
  for (size_t i = 0; i < x_.size(); ++i) {
    const double xv = log_x_ ? std::log10(x_[i]) : x_[i];
    if (std::isfinite(xv)) x_lo_ = std::min(x_lo_, xv), x_hi_ = std::max(x_hi_, xv);
    if (std::isfinite(y_[i])) y_lo_ = std::min(y_lo_, y_[i]), y_hi_ = std::max(y_hi_, y_[i]);
  }
  if (!(x_lo_ <= x_hi_)) x_lo_ = 0, x_hi_ = 1;
  if (!(y_lo_ <= y_hi_)) y_lo_ = 0, y_hi_ = 1;
  if (style_ == Style::Bars) {
    x_lo_ -= 0.6;
    x_hi_ += 0.6;
    // Diffusion spectra often sit just below 1: bars from zero would all
    // look equal, so the axis starts near the smallest value instead.
    if (y_lo_ > 0 && y_hi_ - y_lo_ < 0.5 * y_hi_) y_lo_ -= 0.15 * (y_hi_ - y_lo_) + 1e-12;
    else
      y_lo_ = std::min(0.0, y_lo_);
  }
  if (x_hi_ == x_lo_) x_hi_ = x_lo_ + 1;
  if (y_hi_ == y_lo_) y_hi_ = y_lo_ + 1;
  const double pad = 0.06 * (y_hi_ - y_lo_);
  y_hi_ += pad;
  if (style_ == Style::Line) y_lo_ -= pad;
  update();
}

void PlotWidget::setMarker(std::optional<double> x, const QString& label) {
  marker_ = x;
  marker_label_ = label;
  update();
}

void PlotWidget::clear(const QString& message) {
  x_.clear();
  y_.clear();
  marker_.reset();
  message_ = message;
  update();
}

QRectF PlotWidget::plot_area() const {
  const QFontMetrics fm(font());
  const double left = fm.horizontalAdvance(QStringLiteral("-0.00000")) + fm.height() + 6;
  const double top = fm.height() + 8, bottom = 2 * fm.height() + 8;
  return QRectF(left, top, std::max(10.0, width() - left - 10), std::max(10.0, height() - top - bottom));
}

double PlotWidget::map_x(double x, const QRectF& a) const {
  const double v = log_x_ ? std::log10(x) : x;
  return a.left() + (v - x_lo_) / (x_hi_ - x_lo_) * a.width();
}

double PlotWidget::map_y(double y, const QRectF& a) const {
  return a.bottom() - (y - y_lo_) / (y_hi_ - y_lo_) * a.height();
}

void PlotWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  const QColor text = palette().color(QPalette::Text);
  const QFontMetrics fm(font());
  p.setPen(text);
  p.drawText(QRectF(0, 2, width(), fm.height() + 4), Qt::AlignHCenter, title_);
  const QRectF a = plot_area();
  if (x_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(a, Qt::AlignCenter | Qt::TextWordWrap, message_);
    return;
  }
  // Axes with a few round ticks.
  p.setPen(QPen(text, 1));
  p.drawLine(a.bottomLeft(), a.bottomRight());
  p.drawLine(a.bottomLeft(), a.topLeft());
  paint_y_ticks(p, a);
  if (style_ == Style::Bars) paint_bars(p, a);
  else
    paint_line(p, a);
  if (marker_) paint_marker(p, a);
  p.setPen(text);
  p.drawText(QRectF(a.left(), height() - fm.height() - 2, a.width(), fm.height()), Qt::AlignHCenter, x_title_);
  p.save();
  p.translate(fm.height() / 2.0 + 1, a.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-a.height() / 2, -fm.height() / 2.0, a.height(), fm.height()), Qt::AlignCenter, y_title_);
  p.restore();
  if (hover_ >= 0 && hover_ < static_cast<int>(x_.size())) paint_hovered_value(p, a);
}

// Round values with dotted grid lines, with enough decimals to tell
// neighbouring ticks apart (eigenvalues like 0.9997).
void PlotWidget::paint_y_ticks(QPainter& p, const QRectF& a) const {
  const QColor text = palette().color(QPalette::Text);
  const QFontMetrics fm(font());
  const double ys = nice_step(y_hi_ - y_lo_);
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(ys))), 0, 8);
  for (double y = std::ceil(y_lo_ / ys) * ys; y <= y_hi_; y += ys) {
    const double py = map_y(y, a);
    p.setPen(QPen(palette().color(QPalette::Mid), 0.5, Qt::DotLine));
    p.drawLine(QPointF(a.left(), py), QPointF(a.right(), py));
    p.setPen(text);
    p.drawText(QRectF(0, py - fm.height() / 2.0, a.left() - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(std::abs(y) < 1e-12 ? 0.0 : y, 'f', decimals));
  }
}

// One bar a value, those before the faded count greyed, the hovered one
// lighter; x labels as many as fit.
void PlotWidget::paint_bars(QPainter& p, const QRectF& a) const {
  const QColor text = palette().color(QPalette::Text);
  const QFontMetrics fm(font());
  const double bw = std::max(2.0, 0.7 * a.width() / std::max<size_t>(1, x_.size()));
  const int label_every = std::max(1, static_cast<int>(x_.size() * fm.horizontalAdvance("00 ") / a.width()) + 1);
  for (size_t i = 0; i < x_.size(); ++i) {
    const double px = map_x(x_[i], a);
    const double y0 = map_y(std::max(0.0, y_lo_), a), y1 = map_y(std::max(y_[i], y_lo_), a);
    QColor c = static_cast<int>(i) < faded_ ? palette().color(QPalette::Mid) : QColor(59, 110, 190);
    if (static_cast<int>(i) == hover_) c = c.lighter(140);
    p.fillRect(QRectF(px - bw / 2, std::min(y0, y1), bw, std::abs(y1 - y0)), c);
    if (static_cast<int>(i) % label_every == 0) {
      p.setPen(text);
      p.drawText(QRectF(px - 20, a.bottom() + 2, 40, fm.height()), Qt::AlignHCenter, QString::number(x_[i], 'g', 4));
    }
  }
}

// The finite points joined, with decades on a log x axis, else round ticks.
void PlotWidget::paint_line(QPainter& p, const QRectF& a) const {
  const QColor text = palette().color(QPalette::Text);
  const QFontMetrics fm(font());
  QPainterPath path;
  bool started = false;
  for (size_t i = 0; i < x_.size(); ++i) {
    if (!std::isfinite(y_[i]) || !(x_[i] > 0 || !log_x_)) continue;
    const QPointF pt(map_x(x_[i], a), map_y(y_[i], a));
    if (!started) path.moveTo(pt), started = true;
    else
      path.lineTo(pt);
  }
  p.setPen(QPen(QColor(59, 110, 190), 1.8));
  p.drawPath(path);
  p.setPen(text);
  if (log_x_) {
    for (int e = static_cast<int>(std::ceil(x_lo_)); e <= std::floor(x_hi_); ++e) {
      const double px = map_x(std::pow(10.0, e), a);
      p.drawLine(QPointF(px, a.bottom()), QPointF(px, a.bottom() + 3));
      p.drawText(QRectF(px - 30, a.bottom() + 2, 60, fm.height()), Qt::AlignHCenter, QStringLiteral("1e%1").arg(e));
    }
  } else {
    const double xs = nice_step(x_hi_ - x_lo_);
    for (double x = std::ceil(x_lo_ / xs) * xs; x <= x_hi_; x += xs) {
      const double px = map_x(x, a);
      p.drawText(QRectF(px - 30, a.bottom() + 2, 60, fm.height()), Qt::AlignHCenter, QString::number(x, 'g', 3));
    }
  }
}

// A dashed vertical line at the marker, labelled, when it is in range.
void PlotWidget::paint_marker(QPainter& p, const QRectF& a) const {
  const QFontMetrics fm(font());
  const double px = map_x(*marker_, a);
  if (px >= a.left() && px <= a.right()) {
    p.setPen(QPen(QColor(200, 40, 40), 1.2, Qt::DashLine));
    p.drawLine(QPointF(px, a.top()), QPointF(px, a.bottom()));
    p.setPen(QColor(200, 40, 40));
    p.drawText(QPointF(std::min(px + 3, a.right() - fm.horizontalAdvance(marker_label_)), a.top() + fm.ascent()),
               marker_label_);
  }
}

// The hovered point's x and y in the top-right corner.
void PlotWidget::paint_hovered_value(QPainter& p, const QRectF& a) const {
  const QFontMetrics fm(font());
  const QString s = QStringLiteral("%1: %2").arg(x_[hover_], 0, 'g', 5).arg(y_[hover_], 0, 'g', 6);
  const QRectF box(a.right() - fm.horizontalAdvance(s) - 8, a.top(), fm.horizontalAdvance(s) + 6, fm.height() + 2);
  p.fillRect(box, palette().toolTipBase());
  p.setPen(palette().color(QPalette::ToolTipText));
  p.drawText(box, Qt::AlignCenter, s);
}

void PlotWidget::mouseMoveEvent(QMouseEvent* e) {
  const QRectF a = plot_area();
  int best = -1;
  double best_d = 12;
  for (size_t i = 0; i < x_.size(); ++i) {
    const double d = std::abs(map_x(x_[i], a) - e->position().x());
    if (d < best_d) best_d = d, best = static_cast<int>(i);
  }
  if (best != hover_) {
    hover_ = best;
    update();
  }
}

void PlotWidget::leaveEvent(QEvent*) {
  hover_ = -1;
  update();
}

}  // namespace manifold::ui
