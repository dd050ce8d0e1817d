#pragma once
// A small QPainter plot for the eigenvalue spectrum (bars) and the
// Berry-Giannakis-Harlim curve (line over a log axis). Enough to read the
// values; hovering shows the value under the cursor.
#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

class QPainter;

namespace manifold::ui {

class PlotWidget : public QWidget {
  Q_OBJECT

 public:
  enum class Style { Bars, Line };

  explicit PlotWidget(QWidget* parent = nullptr);

  void setStyle(Style style) {
    style_ = style;
    update();
  }
  void setLogX(bool on) {
    log_x_ = on;
    update();
  }
  void setTitles(const QString& title, const QString& x, const QString& y);
  /// Bars are labelled by their x values (integers).
  void setData(std::vector<double> x, std::vector<double> y);
  /// A vertical line (e.g. the epsilon chosen); nullopt removes it.
  void setMarker(std::optional<double> x, const QString& label = {});
  /// Bars before this index are drawn faded (the trivial eigenvalue 1).
  void setFadedCount(int n) {
    faded_ = n;
    update();
  }
  void clear(const QString& message);
  const std::vector<double>& xs() const { return x_; }
  const std::vector<double>& ys() const { return y_; }

  QSize sizeHint() const override { return {280, 180}; }
  QSize minimumSizeHint() const override { return {160, 110}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  QRectF plot_area() const;
  double map_x(double x, const QRectF& area) const;
  double map_y(double y, const QRectF& area) const;
  // paintEvent's phases, in drawing order.
  void paint_y_ticks(QPainter& p, const QRectF& area) const;
  void paint_bars(QPainter& p, const QRectF& area) const;
  void paint_line(QPainter& p, const QRectF& area) const;
  void paint_marker(QPainter& p, const QRectF& area) const;
  void paint_hovered_value(QPainter& p, const QRectF& area) const;

  Style style_ = Style::Bars;
  bool log_x_ = false;
  QString title_, x_title_, y_title_, message_;
  std::vector<double> x_, y_;
  std::optional<double> marker_;
  QString marker_label_;
  int faded_ = 0;
  int hover_ = -1;
  double x_lo_ = 0, x_hi_ = 1, y_lo_ = 0, y_hi_ = 1;
};

}  // namespace manifold::ui
