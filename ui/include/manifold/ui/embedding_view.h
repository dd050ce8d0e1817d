#pragma once
// The 3-D / 2-D view of an embedding. VTK draws the scene in its own
// off-screen render window; each frame is read back into a QImage that this
// widget paints. Debian's VTK Qt module is built for Qt 5, so this is how a
// Qt 6 widget hosts VTK here (docs/ui.md explains the choice). Mouse and wheel
// events go to a vtkGenericRenderWindowInteractor, so camera interaction is
// VTK's own; hover, click and lasso picking project the points with the VTK
// camera's matrices.
#include <QColor>
#include <QImage>
#include <QPolygonF>
#include <QRectF>
#include <QStringList>
#include <QWidget>

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace manifold::ui {

/// What colours the points: one value per point. Categorical values (labels)
/// get one distinct colour each and a legend instead of a gradient.
struct PointColours {
  std::vector<float> values;
  QString title;
  bool categorical = false;
  /// Angles: when > 0, the values are angles in their own unit with this
  /// period (360 for degrees, 2 pi for radians), drawn on a cyclic map
  /// (colour_maps.h) over [0, period), so 0 and one turn meet without a seam;
  /// the colour bar is labelled in that unit.
  double period = 0;
  /// Categorical: the legend's name of each value (value -> name); the
  /// number itself where missing.
  std::vector<std::pair<int, QString>> category_names = {};
};

/// Where the camera stands: enough to put it back exactly (a session).
struct CameraState {
  std::array<double, 3> position{0, 0, 1};
  std::array<double, 3> focal_point{0, 0, 0};
  std::array<double, 3> view_up{0, 1, 0};
  double parallel_scale = 1;  ///< half the view's height in planar (parallel) mode
  double view_angle = 30;     ///< degrees, in perspective mode
};

class EmbeddingView : public QWidget {
  Q_OBJECT

 public:
  enum class Tool { Navigate, RectangleSelect, LassoSelect };

  explicit EmbeddingView(QWidget* parent = nullptr);
  ~EmbeddingView() override;

  /// Shows n = xyz.size()/3 points. In planar mode z is ignored and the
  /// camera looks down the z axis with a parallel projection. The camera is
  /// kept unless `reset_camera` (so re-embedding does not lose the user's
  /// view); when the points' extent changes materially (more than 1.5-fold,
  /// or the centre moves by a quarter of it) the view is re-framed, keeping
  /// the user's rotation. `axis_titles`: one per axis drawn; a single one
  /// (a one-coordinate embedding, planar, y = 0) draws the points as a line
  /// along X with the X axis below it and no Y axis.
  void setPoints(std::vector<float> xyz, bool planar, const QStringList& axis_titles, bool reset_camera);
  void clearPoints();
  void setColours(const PointColours& colours);
  void setSelection(std::vector<int64_t> rows);
  /// Marks one point (the image pinned in the image panel); -1 for none.
  void setPinned(int64_t row);
  /// Rings points in a dark halo of their own, apart from the selection (the
  /// trajectory player's current bin); empty for none.
  void setHighlight(std::vector<int64_t> rows);
  /// Draws a polyline through these points in order (a trajectory's path
  /// through pinned points), over the cloud; fewer than two points draw
  /// nothing. Rows outside the points shown are dropped.
  void setPath(std::vector<int64_t> rows);
  void setPointSize(double pixels);
  void setTool(Tool tool);
  Tool tool() const;
  void resetCamera();
  /// Fits every point in the view without turning the camera.
  void reframe();
  /// Rotates the 3-D camera (azimuth, elevation in degrees), as a drag would.
  void rotateCamera(double azimuth, double elevation);
  /// Above this many points, interaction draws a subsample and the full set
  /// once the mouse is released (ParaView's level of detail).
  void setLodThreshold(int64_t points);

  int64_t pointCount() const;
  /// The positions drawn: x, y, z per point (z = 0 in planar mode).
  std::vector<float> points() const;
  /// The camera's direction of projection (unit vector).
  std::array<double, 3> viewDirection() const;
  CameraState camera() const;
  /// Puts the camera where `state` says (the projection stays the view's:
  /// parallel in planar mode).
  void setCamera(const CameraState& state);
  /// The text shown while there are no points.
  QString placeholderText() const;
  void setPlaceholderText(const QString& text);
  /// The colour bar's title and label format (printf style; numbers from a
  /// thousand up to a million are written whole instead, rounded to three
  /// significant digits: "2500", not "2.5e+03").
  QString colourTitle() const;
  QString colourBarLabelFormat() const;
  /// The colour bar's labels as drawn, bottom to top (numbers) or top to
  /// bottom (category names); empty while the points are not coloured.
  QStringList colourBarLabels() const;
  /// The strip at the right edge that holds the colour bar, its title and
  /// labels, in widget coordinates; empty while the points are not coloured.
  /// The points are drawn left of it, never under it.
  QRectF colourBarArea() const;
  /// The colour bar's title as drawn: its lines (wrapped to the strip) and
  /// the rectangle they fill, in widget coordinates.
  QStringList colourTitleLines() const;
  QRectF colourTitleRect() const;
  /// The ramp of a colour bar of numbers (the lowest value at the bottom),
  /// in widget coordinates; empty for categories or without colours.
  QRectF colourRampRect() const;
  /// The colour behind the points and the colour bar.
  static QColor backgroundColour();
  /// The part of the widget the points are drawn in (left of the colour
  /// bar), in widget coordinates.
  QRectF plotArea() const;
  /// The titles of the x, y and z axes, as last set.
  QStringList axisTitles() const;
  bool planar() const;
  const std::vector<int64_t>& selection() const;
  const std::vector<int64_t>& highlight() const;
  /// The points the path's polyline runs through, in order (as drawn).
  std::vector<int64_t> path() const;
  int64_t pinned() const;

  /// Renders a full-detail frame at the widget's size now and returns it.
  QImage renderFrame();
  /// Milliseconds the last VTK render + read-back took.
  double lastFrameMs() const;

  /// The point drawn nearest to `pos` (widget coordinates) within `radius`
  /// pixels, the front-most when several overlap; -1 when none.
  int64_t pointAt(QPointF pos, double radius = 6.0);
  /// Points whose projection falls inside `polygon` (widget coordinates).
  std::vector<int64_t> pointsInPolygon(const QPolygonF& polygon);
  /// The point an arrow key moves the pin to from point `from`: the nearest
  /// drawn within 45 degrees of `direction` (widget coordinates: +y is
  /// down), or -1 when there is none that way.
  int64_t neighbourInDirection(int64_t from, QPointF direction);
  /// Where point `row` is drawn, in widget coordinates.
  QPointF projectedPosition(int64_t row);

 Q_SIGNALS:
  void hovered(qint64 row);  ///< -1 when the cursor leaves every point
  void picked(qint64 row);
  /// The user finished a rectangle or lasso selection.
  void selectionChanged();
  void frameRendered(double ms);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};

}  // namespace manifold::ui
