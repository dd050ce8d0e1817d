#include "manifold/ui/embedding_view.h"

#include <QElapsedTimer>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>
#include <QTimer>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <vtkActor.h>
#include <vtkCallbackCommand.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkColorTransferFunction.h>
#include <vtkCommand.h>
#include <vtkCubeAxesActor.h>
#include <vtkFloatArray.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkIdTypeArray.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkLookupTable.h>
#include <vtkMatrix4x4.h>
#include <vtkNew.h>
#include <vtkObjectFactory.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>
#include <vtkTextProperty.h>
#include <vtkUnsignedCharArray.h>

#include "manifold/ui/colour_maps.h"
#include "manifold/ui/palette.h"

namespace manifold::ui {
namespace {

// In 2-D the left button pans instead of rotating; wheel and right button
// still zoom (Dolly honours parallel projection).
class PlanarInteractorStyle : public vtkInteractorStyleTrackballCamera {
 public:
  static PlanarInteractorStyle* New();
  vtkTypeMacro(PlanarInteractorStyle, vtkInteractorStyleTrackballCamera);

  void OnLeftButtonDown() override {
    const int* pos = this->Interactor->GetEventPosition();
    this->FindPokedRenderer(pos[0], pos[1]);
    if (!this->CurrentRenderer) return;
    this->GrabFocus(this->EventCallbackCommand);
    this->StartPan();
  }
  void OnLeftButtonUp() override {
    if (this->State == VTKIS_PAN) {
      this->EndPan();
      if (this->Interactor) this->ReleaseFocus();
    }
  }
};
vtkStandardNewMacro(PlanarInteractorStyle);

vtkSmartPointer<vtkCellArray> vertices_of(const std::vector<vtkIdType>& ids) {
  vtkNew<vtkIdTypeArray> offsets, connectivity;
  const auto n = static_cast<vtkIdType>(ids.size());
  offsets->SetNumberOfValues(n + 1);
  connectivity->SetNumberOfValues(n);
  for (vtkIdType i = 0; i < n; ++i) {
    offsets->SetValue(i, i);
    connectivity->SetValue(i, ids[static_cast<size_t>(i)]);
  }
  offsets->SetValue(n, n);
  auto cells = vtkSmartPointer<vtkCellArray>::New();
  cells->SetData(offsets, connectivity);
  return cells;
}

/// The axis-aligned box of the points drawn.
struct Bounds {
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  bool empty = true;
  double size() const {
    return std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                     (hi[2] - lo[2]) * (hi[2] - lo[2]));
  }
};

Bounds bounds_of(const std::vector<float>& xyz, int64_t n, bool planar) {
  Bounds b;
  for (int64_t i = 0; i < n; ++i)
    for (int a = 0; a < (planar ? 2 : 3); ++a) {
      const double v = xyz[static_cast<size_t>(3 * i + a)];
      if (!std::isfinite(v)) continue;
      if (b.empty || v < b.lo[a]) b.lo[a] = v;
      if (b.empty || v > b.hi[a]) b.hi[a] = v;
      if (a == (planar ? 1 : 2)) b.empty = false;
    }
  return b;
}

/// Whether the view must be re-framed for points that moved from `a` to `b`:
/// their extent grew or shrank by more than half (a new epsilon or diffusion
/// time, another point set), or their centre moved by more than a quarter of
/// it. Smaller changes (a re-embedding that flips a sign or rescales by a few
/// per cent) keep the user's zoom and pan as well as the rotation.
bool materially_different(const Bounds& a, const Bounds& b) {
  if (a.empty || b.empty) return a.empty != b.empty;
  const double sa = a.size(), sb = b.size();
  if (!(sa > 0) || !(sb > 0)) return sa != sb;
  if (sb > 1.5 * sa || sb < sa / 1.5) return true;
  double shift = 0;
  for (int i = 0; i < 3; ++i) {
    const double d = (a.lo[i] + a.hi[i] - b.lo[i] - b.hi[i]) / 2;
    shift += d * d;
  }
  return std::sqrt(shift) > 0.25 * std::max(sa, sb);
}

vtkSmartPointer<vtkCellArray> all_vertices(vtkIdType n, vtkIdType stride) {
  std::vector<vtkIdType> ids;
  ids.reserve(static_cast<size_t>(n / stride + 1));
  for (vtkIdType i = 0; i < n; i += stride) ids.push_back(i);
  return vertices_of(ids);
}

// A dark slate grey, darker than every colour the points take, so each
// reads by its lightness, not by hue alone. ParaView's blue-grey (0.32,
// 0.34, 0.43) had the lightness of both ends of the diverging map (OKLab L
// 0.46 against 0.48) and nearly the hue of its blue end: the lowest values
// were lost on it. Here every colour of that map is at least 0.18 lighter
// in OKLab L (about 0.25 apart in OKLab; the categories and the cyclic map, L
// 0.62 and more, further), the axes and labels are light, and the halos
// of the highlighted bin (in a light edge) and the path are black, darker
// still.
constexpr double kBackground[3] = {0.16, 0.17, 0.20};

// The colour bar's numbers: three significant digits, no trailing point
// (number_label writes those from a thousand to a million whole).
constexpr const char* kLabelFormat = "%.3g";

/// What the colour bar shows: a ramp of colours over [lo, hi] with numbers,
/// or one swatch per category with its name.
struct Legend {
  bool shown = false;
  QString title;
  std::vector<QColor> ramp;  // from lo (first) to hi (last)
  double lo = 0, hi = 1;
  std::vector<std::pair<QColor, QString>> categories;  // top to bottom
};

/// Where the colour bar's parts are painted, in widget coordinates.
struct LegendLayout {
  QRectF strip, title, bar;
  QStringList title_lines;
  std::vector<std::pair<QRectF, QColor>> swatches;  // categories
  std::vector<std::pair<double, QString>> labels;   // centre height, text
  QFont title_font, label_font;
};

QString number_label(double v, double span) {
  // A tick that is zero but for rounding reads "0", not "-1.4e-17".
  if (std::abs(v) < 1e-9 * span) v = 0;
  // From a thousand up to a million, %g's exponent ("2.5e+03", an index of
  // 10,000 images) reads worse than the whole number at the same three
  // significant digits ("2500").
  // (999.5 and up: %.3g rounds those to "1e+03" too.)
  const double magnitude = std::abs(v);
  if (magnitude >= 999.5 && magnitude < 1e6) {
    const double unit = std::pow(10.0, std::floor(std::log10(magnitude)) - 2);
    return QString::asprintf("%.0f", std::round(v / unit) * unit);
  }
  return QString::asprintf(kLabelFormat, v);
}

/// `text` broken at spaces into lines no wider than `width` (at most
/// `max_lines`, the last elided when more would be needed; a word wider than
/// a line is elided too).
QStringList wrap_words(const QString& text, const QFontMetricsF& fm, double width, int max_lines) {
  QStringList lines;
  for (const QString& word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    if (!lines.isEmpty() && fm.horizontalAdvance(lines.back() + QLatin1Char(' ') + word) <= width)
      lines.back() += QLatin1Char(' ') + word;
    else
      lines << word;
  }
  while (lines.size() > max_lines) lines[max_lines - 1] += QLatin1Char(' ') + lines.takeAt(max_lines);
  for (QString& line : lines) line = fm.elidedText(line, Qt::ElideRight, width);
  return lines;
}

/// The colour bar's layout in a widget of `size`: a strip at the right edge,
/// wide enough for the bar and its labels and, up to 30% of the widget, for
/// the title on one line; a longer title wraps onto up to four lines. The
/// points are drawn left of the strip, so none is ever under the bar.
LegendLayout layout_legend(const Legend& legend, QSizeF size, const QFont& base) {
  LegendLayout out;
  if (!legend.shown || size.isEmpty()) return out;
  constexpr double kMargin = 10, kBarWidth = 16, kGap = 6, kMinLabel = 40;
  out.title_font = base;
  out.label_font = base;
  out.label_font.setPointSizeF(base.pointSizeF() * 0.9);
  const QFontMetricsF tm(out.title_font), lm(out.label_font);

  QStringList texts;
  if (legend.categories.empty()) {
    for (int i = 0; i < 5; ++i)
      texts << number_label(legend.lo + (legend.hi - legend.lo) * i / 4, std::abs(legend.hi - legend.lo));
  } else {
    for (const auto& [colour, name] : legend.categories) texts << name;
  }
  double label_width = kMinLabel;
  for (const QString& text : texts) label_width = std::max(label_width, lm.horizontalAdvance(text));
  const double fixed = kMargin + kBarWidth + kGap + kMargin;
  const double widest = std::max(fixed + kMinLabel, std::min(0.3 * size.width(), 240.0));
  const double content = std::min(fixed + label_width, widest);
  const double title_width = tm.horizontalAdvance(legend.title) + 2 * kMargin;
  const double width = std::clamp(title_width, content, std::max(content, widest));
  out.strip = QRectF(size.width() - width, 0, width, size.height());

  out.title_lines = wrap_words(legend.title, tm, width - 2 * kMargin, 4);
  out.title = QRectF(out.strip.left() + kMargin, kMargin, width - 2 * kMargin,
                     out.title_lines.size() * tm.lineSpacing());
  // The bar starts half a label below the title (its top label is centred
  // on its top edge) and takes at most 60% of the height.
  const double top = out.title.bottom() + 6 + lm.height() / 2;
  const double available = size.height() - kMargin - lm.height() / 2 - top;
  const double label_space = width - fixed;
  if (legend.categories.empty()) {
    const double height = std::max(0.0, std::min(available, 0.6 * size.height()));
    out.bar = QRectF(out.strip.left() + kMargin, top, kBarWidth, height);
    for (int i = 0; i < 5; ++i)
      out.labels.emplace_back(out.bar.bottom() - height * i / 4, lm.elidedText(texts[i], Qt::ElideRight, label_space));
  } else {
    const int count = static_cast<int>(legend.categories.size());
    const double row = std::min(std::max(0.0, available) / count, 2 * lm.height());
    out.bar = QRectF(out.strip.left() + kMargin, top, kBarWidth, row * count);
    // Every k-th name where the rows are lower than a line of text.
    const int every = std::max(1, static_cast<int>(std::ceil(lm.height() / std::max(row, 1e-9))));
    for (int i = 0; i < count; ++i) {
      const double gap = row >= 6 ? 2 : 0;
      out.swatches.emplace_back(QRectF(out.bar.left(), top + i * row + gap / 2, kBarWidth, row - gap),
                                legend.categories[static_cast<size_t>(i)].first);
      if (i % every == 0)
        out.labels.emplace_back(top + (i + 0.5) * row, lm.elidedText(texts[i], Qt::ElideRight, label_space));
    }
  }
  return out;
}

}  // namespace

struct EmbeddingView::Impl {
  EmbeddingView* widget = nullptr;
  vtkNew<vtkRenderWindow> window;
  vtkNew<vtkRenderer> renderer;
  vtkNew<vtkRenderer> overlay;  // selection and pinned marker, drawn over everything
  vtkNew<vtkGenericRenderWindowInteractor> interactor;
  vtkNew<vtkInteractorStyleTrackballCamera> style3d;
  vtkNew<PlanarInteractorStyle> style2d;

  vtkNew<vtkPoints> points;
  vtkNew<vtkFloatArray> scalars;
  vtkNew<vtkPolyData> cloud, lod, selected, selected_lod, pinned, highlighted, path_line;
  vtkNew<vtkPolyDataMapper> cloud_mapper, lod_mapper, selected_mapper, selected_lod_mapper, pinned_mapper,
      highlighted_mapper, path_mapper;
  vtkNew<vtkActor> cloud_actor, lod_actor, selected_actor, selected_lod_actor, pinned_actor, highlight_edge_actor,
      highlighted_actor, path_halo_actor, path_actor;
  // A 256-entry table sampled from a diverging transfer function: mapping a
  // million scalars through a table is a lookup each, through the transfer
  // function an interpolation in Msh space each (about ten times slower).
  vtkNew<vtkLookupTable> gradient;
  vtkNew<vtkLookupTable> categories;
  vtkNew<vtkLookupTable> cyclic;  // angles: one turn of colour_maps.h's cyclic map
  vtkNew<vtkCubeAxesActor> axes;
  // The colour bar, painted by the widget in a strip right of the points
  // (Qt's fonts have the Greek letters VTK's lack, and its text wraps).
  Legend legend;
  LegendLayout legend_layout;
  double viewport_right = 1;  // the renderers' right edge, a fraction of the width
  QSize layout_size;
  // The camera frames every point (Reset view, a re-framing) and the user has
  // not zoomed or panned since: a new viewport (the colour bar appears, the
  // widget is resized) frames them again.
  bool framed = true;

  int64_t n = 0;
  bool planar = false;
  // One coordinate (setPoints with one axis title): the points lie along X
  // at y = 0, and there is no Y axis.
  bool line = false;
  Bounds bounds;  // of the points drawn: a re-embedding far from them re-frames the view
  QString placeholder = QObject::tr("Open a dataset (or the demo) and press Run to see its diffusion map.");
  QStringList axis_titles;
  bool has_colours = false;
  double point_size = 3.0;
  // What a drag frame costs is the points drawn: the axes, the overlay
  // layer, the read-back and the colour bar are a few milliseconds between
  // them. Software OpenGL (Mesa llvmpipe) on two cores shared with other
  // work draws about 80,000 points within 50 ms.
  int64_t lod_threshold = 80000;
  int64_t lod_stride = 1;  // the subset drawn while dragging: every lod_stride-th point
  std::vector<int64_t> selection;
  std::vector<int64_t> highlight;
  std::vector<int64_t> path;
  int64_t pinned_row = -1;
  Tool tool = Tool::Navigate;

  QImage frame;
  bool dirty = true;
  bool interacting = false;
  double frame_ms = 0;
  QTimer wheel_settle;

  // Projected points (x, y in widget pixels, depth), valid for one camera
  // state, widget size and point set.
  std::vector<float> screen;
  vtkMTimeType screen_camera_time = 0;
  QSize screen_size;
  uint64_t points_version = 0, screen_points_version = ~0ull;
  double screen_viewport_right = 0;

  // Mouse state.
  QPointF press_pos;
  bool pressed = false, moved = false;
  Qt::MouseButton press_button = Qt::NoButton;
  QPolygonF lasso;
  int64_t hover_row = -1;

  void setup();
  // setup()'s phases.
  void setup_window();
  void share_points();
  void build_lookup_tables();
  void connect_mappers();
  void style_and_add_actors();
  void setup_axes();
  void render(bool full_detail);
  void request_render() {
    dirty = true;
    widget->update();
  }
  void on_vtk_render() { request_render(); }
  void update_lod_visibility(bool full_detail) {
    const bool use_lod = !full_detail && interacting && n > lod_threshold;
    cloud_actor->SetVisibility(!use_lod);
    lod_actor->SetVisibility(use_lod);
    // The selection too: a large one would cost as much as the cloud.
    selected_actor->SetVisibility(!use_lod);
    selected_lod_actor->SetVisibility(use_lod);
  }
  void update_marks();
  void update_axes();
  /// Points the camera at every point, fitted to the viewport (Reset view,
  /// a re-framing), keeping its direction of projection.
  void frame_points();
  /// Lays the colour bar out for the widget's size and fits the renderers
  /// (and the camera, while it is framed) into the area left of it.
  void sync_viewport();
  void paint_legend(QPainter& p) const;
  /// "X ψ1   Y ψ2   Z ψ3" in the top-left corner.
  void paint_axis_key(QPainter& p) const;
  void project();
  void forward(QMouseEvent* e);
  double dpr() const { return widget->devicePixelRatioF(); }
};

void EmbeddingView::Impl::setup() {
  setup_window();
  share_points();
  build_lookup_tables();
  connect_mappers();
  style_and_add_actors();
  setup_axes();
  wheel_settle.setSingleShot(true);
  wheel_settle.setInterval(250);
}

// The render window with the points' layer and the overlay's, and an
// interactor that never renders on its own.
void EmbeddingView::Impl::setup_window() {
  window->SetOffScreenRendering(1);
  window->SetMultiSamples(0);
  window->SetNumberOfLayers(2);
  window->AddRenderer(renderer);
  window->AddRenderer(overlay);
  renderer->SetBackground(kBackground[0], kBackground[1], kBackground[2]);
  overlay->SetLayer(1);
  overlay->InteractiveOff();
  overlay->SetActiveCamera(renderer->GetActiveCamera());

  interactor->SetRenderWindow(window);
  // VTK must not render on its own: the widget renders inside paintEvent,
  // so a burst of mouse events costs one frame.
  interactor->EnableRenderOff();
  interactor->AddObserver(vtkCommand::RenderEvent, this, &Impl::on_vtk_render);
  interactor->SetInteractorStyle(style3d);
  interactor->Initialize();
}

// Every layer (cloud, its level of detail, selection, pins, the highlighted
// bin, the path) draws the one point set; the cloud and its level of
// detail are coloured by the one scalar array.
void EmbeddingView::Impl::share_points() {
  cloud->SetPoints(points);
  lod->SetPoints(points);
  selected->SetPoints(points);
  selected_lod->SetPoints(points);
  pinned->SetPoints(points);
  highlighted->SetPoints(points);
  path_line->SetPoints(points);
  scalars->SetName("colour");
  cloud->GetPointData()->SetScalars(scalars);
  lod->GetPointData()->SetScalars(scalars);
}

// The colour maps: a diverging gradient for values, indexed colours for
// categories and a cyclic map for angles.
void EmbeddingView::Impl::build_lookup_tables() {
  vtkNew<vtkColorTransferFunction> diverging;  // ParaView's "Cool to Warm"
  diverging->SetColorSpaceToDiverging();
  diverging->AddRGBPoint(0.0, 0.230, 0.299, 0.754);
  diverging->AddRGBPoint(1.0, 0.706, 0.016, 0.150);
  gradient->SetNumberOfTableValues(256);
  for (int i = 0; i < 256; ++i) {
    double rgb[3];
    diverging->GetColor(i / 255.0, rgb);
    gradient->SetTableValue(i, rgb[0], rgb[1], rgb[2], 1.0);
  }
  gradient->SetRange(0, 1);
  gradient->Build();
  categories->IndexedLookupOn();
  const std::vector<QColor> turn = cyclicTable(256);
  cyclic->SetNumberOfTableValues(256);
  for (int i = 0; i < 256; ++i) cyclic->SetTableValue(i, turn[i].redF(), turn[i].greenF(), turn[i].blueF(), 1.0);
  cyclic->SetRange(0, 2 * M_PI);  // setColours sets the column's period
  cyclic->Build();
}

void EmbeddingView::Impl::connect_mappers() {
  for (auto* m : {cloud_mapper.GetPointer(), lod_mapper.GetPointer()}) {
    m->SetScalarModeToUsePointData();
    m->SetColorModeToMapScalars();
    m->UseLookupTableScalarRangeOn();
    m->SetLookupTable(gradient);
  }
  cloud_mapper->SetInputData(cloud);
  lod_mapper->SetInputData(lod);
  selected_mapper->SetInputData(selected);
  selected_mapper->ScalarVisibilityOff();
  selected_lod_mapper->SetInputData(selected_lod);
  selected_lod_mapper->ScalarVisibilityOff();
  pinned_mapper->SetInputData(pinned);
  pinned_mapper->ScalarVisibilityOff();
  highlighted_mapper->SetInputData(highlighted);
  highlighted_mapper->ScalarVisibilityOff();
  path_mapper->SetInputData(path_line);
  path_mapper->ScalarVisibilityOff();
}

void EmbeddingView::Impl::style_and_add_actors() {
  cloud_actor->SetMapper(cloud_mapper);
  lod_actor->SetMapper(lod_mapper);
  lod_actor->VisibilityOff();
  selected_actor->SetMapper(selected_mapper);
  selected_lod_actor->SetMapper(selected_lod_mapper);
  selected_lod_actor->SetProperty(selected_actor->GetProperty());
  selected_lod_actor->VisibilityOff();
  pinned_actor->SetMapper(pinned_mapper);
  highlight_edge_actor->SetMapper(highlighted_mapper);
  highlighted_actor->SetMapper(highlighted_mapper);
  path_halo_actor->SetMapper(path_mapper);
  path_actor->SetMapper(path_mapper);
  // Constant colour when nothing colours the points: light, like ParaView's.
  cloud_actor->GetProperty()->SetColor(0.95, 0.95, 0.95);
  lod_actor->GetProperty()->SetColor(0.95, 0.95, 0.95);
  selected_actor->GetProperty()->SetColor(kSelectionColour.redF(), kSelectionColour.greenF(), kSelectionColour.blueF());
  pinned_actor->GetProperty()->SetColor(1.0, 0.9, 0.1);
  // Black and larger, drawn before the selection, in a light edge: a halo
  // around each point of the bin that reads on light and coloured points
  // alike (the black) and on the dark background (the edge; black alone
  // all but vanished there).
  highlight_edge_actor->GetProperty()->SetColor(0.95, 0.95, 0.95);
  highlighted_actor->GetProperty()->SetColor(0.0, 0.0, 0.0);
  // The path: a light line in a dark halo, its vertices (the pins it runs
  // through) as larger dots, readable on any point colour.
  path_halo_actor->GetProperty()->SetColor(0.0, 0.0, 0.0);
  path_halo_actor->GetProperty()->SetLineWidth(5);
  path_actor->GetProperty()->SetColor(1.0, 1.0, 1.0);
  path_actor->GetProperty()->SetLineWidth(2);
  for (auto* a : {cloud_actor.GetPointer(), lod_actor.GetPointer(), selected_actor.GetPointer(),
                  pinned_actor.GetPointer(), highlight_edge_actor.GetPointer(), highlighted_actor.GetPointer(),
                  path_halo_actor.GetPointer(), path_actor.GetPointer()})
    a->GetProperty()->LightingOff();
  renderer->AddActor(cloud_actor);
  renderer->AddActor(lod_actor);
  overlay->AddActor(highlight_edge_actor);
  overlay->AddActor(highlighted_actor);
  overlay->AddActor(selected_actor);
  overlay->AddActor(selected_lod_actor);
  overlay->AddActor(path_halo_actor);
  overlay->AddActor(path_actor);
  overlay->AddActor(pinned_actor);
}

void EmbeddingView::Impl::setup_axes() {
  axes->SetCamera(renderer->GetActiveCamera());
  axes->SetFlyModeToOuterEdges();
  axes->XAxisMinorTickVisibilityOff();
  axes->YAxisMinorTickVisibilityOff();
  axes->ZAxisMinorTickVisibilityOff();
  for (int i = 0; i < 3; ++i) {
    axes->GetTitleTextProperty(i)->SetColor(0.9, 0.9, 0.9);
    axes->GetLabelTextProperty(i)->SetColor(0.8, 0.8, 0.8);
  }
  axes->GetXAxesLinesProperty()->SetColor(0.8, 0.8, 0.8);
  axes->GetYAxesLinesProperty()->SetColor(0.8, 0.8, 0.8);
  axes->GetZAxesLinesProperty()->SetColor(0.8, 0.8, 0.8);
  axes->VisibilityOff();
  renderer->AddActor(axes);
}

void EmbeddingView::Impl::render(bool full_detail) {
  const double ratio = dpr();
  const int w = std::max(1, static_cast<int>(std::lround(widget->width() * ratio)));
  const int h = std::max(1, static_cast<int>(std::lround(widget->height() * ratio)));
  QElapsedTimer timer;
  timer.start();
  sync_viewport();
  update_lod_visibility(full_detail);
  window->Render();
  vtkNew<vtkUnsignedCharArray> rgba;
  window->GetRGBACharPixelData(0, 0, w - 1, h - 1, /*front=*/1, rgba);
  QImage image(w, h, QImage::Format_RGBX8888);
  const unsigned char* src = rgba->GetPointer(0);
  // OpenGL rows start at the bottom.
  for (int y = 0; y < h; ++y)
    std::memcpy(image.scanLine(h - 1 - y), src + static_cast<size_t>(y) * w * 4, static_cast<size_t>(w) * 4);
  image.setDevicePixelRatio(ratio);
  frame = std::move(image);
  dirty = false;
  frame_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  Q_EMIT widget->frameRendered(frame_ms);
}

void EmbeddingView::Impl::update_marks() {
  std::vector<vtkIdType> ids;
  ids.reserve(selection.size());
  for (int64_t r : selection)
    if (r >= 0 && r < n) ids.push_back(static_cast<vtkIdType>(r));
  selected->SetVerts(vertices_of(ids));
  selected->Modified();
  // While dragging: the selected points of the subset drawn.
  ids.erase(std::remove_if(ids.begin(), ids.end(), [this](vtkIdType r) { return r % lod_stride != 0; }), ids.end());
  selected_lod->SetVerts(vertices_of(ids));
  selected_lod->Modified();
  ids.clear();
  for (int64_t r : highlight)
    if (r >= 0 && r < n) ids.push_back(static_cast<vtkIdType>(r));
  highlighted->SetVerts(vertices_of(ids));
  highlighted->Modified();
  ids.clear();
  if (pinned_row >= 0 && pinned_row < n) ids.push_back(static_cast<vtkIdType>(pinned_row));
  pinned->SetVerts(vertices_of(ids));
  pinned->Modified();
  ids.clear();
  for (int64_t r : path)
    if (r >= 0 && r < n) ids.push_back(static_cast<vtkIdType>(r));
  if (ids.size() < 2) ids.clear();
  vtkNew<vtkCellArray> line;
  if (!ids.empty()) line->InsertNextCell(static_cast<vtkIdType>(ids.size()), ids.data());
  path_line->SetLines(line);
  path_line->SetVerts(vertices_of(ids));
  path_line->Modified();
  cloud_actor->GetProperty()->SetPointSize(static_cast<float>(point_size));
  lod_actor->GetProperty()->SetPointSize(static_cast<float>(point_size));
  selected_actor->GetProperty()->SetPointSize(static_cast<float>(point_size + 2));
  pinned_actor->GetProperty()->SetPointSize(static_cast<float>(point_size + 8));
  highlight_edge_actor->GetProperty()->SetPointSize(static_cast<float>(point_size + 9));
  highlighted_actor->GetProperty()->SetPointSize(static_cast<float>(point_size + 5));
  path_halo_actor->GetProperty()->SetPointSize(static_cast<float>(point_size + 7));
  path_actor->GetProperty()->SetPointSize(static_cast<float>(point_size + 3));
}

void EmbeddingView::Impl::sync_viewport() {
  const QSize size = widget->size();
  const double ratio = dpr();
  const int w = std::max(1, static_cast<int>(std::lround(size.width() * ratio)));
  const int h = std::max(1, static_cast<int>(std::lround(size.height() * ratio)));
  if (window->GetSize()[0] != w || window->GetSize()[1] != h) interactor->UpdateSize(w, h);
  legend_layout = layout_legend(legend, QSizeF(size), widget->font());
  const double right = legend_layout.strip.isEmpty() ? 1.0
                                                     : std::clamp(legend_layout.strip.left() / size.width(), 0.2, 1.0);
  if (right == viewport_right && size == layout_size) return;
  viewport_right = right;
  layout_size = size;
  renderer->SetViewport(0, 0, right, 1);
  overlay->SetViewport(0, 0, right, 1);
  if (framed && n > 0) frame_points();
  renderer->ResetCameraClippingRange();
}

// A line of points has a flat box, whose bounding sphere, which VTK fits to
// the viewport, is exactly as wide as the points: the two at its ends stood
// on the view's left and right edges, and the X axis ran through them all
// (QA 16). So a line is framed with a band a third of its length above and
// below it (the sphere's radius is then 0.6 of the length: a tenth of it
// to spare at either end) and its X axis drawn below it (update_axes).
void EmbeddingView::Impl::frame_points() {
  if (!line || bounds.empty) {
    renderer->ResetCamera();
    return;
  }
  const double length = bounds.hi[0] > bounds.lo[0] ? bounds.hi[0] - bounds.lo[0] : 1.0;
  double box[6] = {bounds.lo[0], bounds.hi[0], bounds.lo[1] - length / 3, bounds.hi[1] + length / 3, 0, 0};
  renderer->ResetCamera(box);
}

void EmbeddingView::Impl::paint_legend(QPainter& p) const {
  const LegendLayout& l = legend_layout;
  if (l.strip.isEmpty()) return;
  p.save();
  // VTK leaves the strip undrawn: it gets the background here.
  p.fillRect(l.strip, QColor::fromRgbF(kBackground[0], kBackground[1], kBackground[2]));
  const QColor text(235, 235, 235);
  p.setPen(text);
  p.setFont(l.title_font);
  const QFontMetricsF tm(l.title_font);
  for (int i = 0; i < l.title_lines.size(); ++i)
    p.drawText(QRectF(l.title.left(), l.title.top() + i * tm.lineSpacing(), l.title.width(), tm.lineSpacing()),
               Qt::AlignHCenter | Qt::AlignVCenter, l.title_lines[i]);
  if (l.swatches.empty()) {
    // The ramp, hi at the top.
    QImage ramp(1, static_cast<int>(legend.ramp.size()), QImage::Format_RGB32);
    for (int i = 0; i < ramp.height(); ++i)
      ramp.setPixel(0, ramp.height() - 1 - i, legend.ramp[static_cast<size_t>(i)].rgb());
    p.drawImage(l.bar, ramp);
    p.setPen(QColor(30, 30, 30));
    p.setBrush(Qt::NoBrush);
    p.drawRect(l.bar);
  } else {
    for (const auto& [rect, colour] : l.swatches) p.fillRect(rect, colour);
  }
  p.setFont(l.label_font);
  const QFontMetricsF lm(l.label_font);
  for (const auto& [y, label] : l.labels) {
    p.setPen(text);
    if (l.swatches.empty()) p.drawLine(QPointF(l.bar.right(), y), QPointF(l.bar.right() + 4, y));
    p.drawText(QPointF(l.bar.right() + 6, y + (lm.ascent() - lm.descent()) / 2), label);
  }
  p.restore();
}

void EmbeddingView::Impl::update_axes() {
  if (n == 0) {
    axes->VisibilityOff();
    return;
  }
  double b[6];
  cloud->GetBounds(b);
  if (planar) b[4] = b[5] = 0;
  // A line's X axis runs a tenth of its length below it (frame_points), not
  // through the points.
  if (line) b[2] = b[3] = b[2] - (b[1] > b[0] ? b[1] - b[0] : 1.0) / 10;
  axes->SetBounds(b);
  axes->SetYAxisVisibility(!line);
  axes->SetZAxisVisibility(!planar);
  axes->SetUse2DMode(planar ? 1 : 0);
  axes->VisibilityOn();
}

void EmbeddingView::Impl::project() {
  const QSize size = widget->size();
  vtkCamera* camera = renderer->GetActiveCamera();
  sync_viewport();
  if (screen_points_version == points_version && screen_size == size && screen_camera_time == camera->GetMTime() &&
      screen_viewport_right == viewport_right)
    return;
  const double ratio = dpr();
  const int w = std::max(1, static_cast<int>(std::lround(size.width() * ratio)));
  const int h = std::max(1, static_cast<int>(std::lround(size.height() * ratio)));
  // The points are drawn in the renderer's viewport, left of the colour bar.
  const double aspect = w * viewport_right / h;
  vtkMatrix4x4* m = camera->GetCompositeProjectionTransformMatrix(aspect, -1, 1);
  double e[16];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) e[r * 4 + c] = m->GetElement(r, c);
  screen.resize(static_cast<size_t>(n) * 3);
  const float* xyz = static_cast<vtkFloatArray*>(points->GetData())->GetPointer(0);
  const double half_w = size.width() * viewport_right / 2.0, half_h = size.height() / 2.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    const double cx = e[0] * x + e[1] * y + e[2] * z + e[3];
    const double cy = e[4] * x + e[5] * y + e[6] * z + e[7];
    const double cz = e[8] * x + e[9] * y + e[10] * z + e[11];
    const double cw = e[12] * x + e[13] * y + e[14] * z + e[15];
    float* s = &screen[3 * i];
    if (cw <= 0) {  // behind the camera
      s[0] = s[1] = std::numeric_limits<float>::quiet_NaN();
      s[2] = 2;
      continue;
    }
    s[0] = static_cast<float>((cx / cw + 1.0) * half_w);
    s[1] = static_cast<float>((1.0 - cy / cw) * half_h);
    s[2] = static_cast<float>(cz / cw);
  }
  screen_points_version = points_version;
  screen_size = size;
  screen_camera_time = camera->GetMTime();
  screen_viewport_right = viewport_right;
}

void EmbeddingView::Impl::forward(QMouseEvent* e) {
  const QPointF p = e->position() * dpr();
  interactor->SetEventInformationFlipY(static_cast<int>(p.x()), static_cast<int>(p.y()),
                                       (e->modifiers() & Qt::ControlModifier) ? 1 : 0,
                                       (e->modifiers() & Qt::ShiftModifier) ? 1 : 0);
}

// ---------------------------------------------------------------------------

EmbeddingView::EmbeddingView(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  d_->widget = this;
  d_->setup();
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(200, 200);
  setToolTip({});
  connect(&d_->wheel_settle, &QTimer::timeout, this, [this] {
    d_->interacting = false;
    d_->request_render();
  });
}

EmbeddingView::~EmbeddingView() = default;

void EmbeddingView::setPoints(std::vector<float> xyz, bool planar, const QStringList& axis_titles, bool reset_camera) {
  const int64_t n = static_cast<int64_t>(xyz.size() / 3);
  const bool was_planar = d_->planar;
  const bool was_empty = d_->n == 0;
  d_->n = n;
  d_->planar = planar;
  d_->line = planar && axis_titles.size() == 1;
  vtkNew<vtkFloatArray> coords;
  coords->SetNumberOfComponents(3);
  coords->SetNumberOfTuples(n);
  float* dst = coords->GetPointer(0);
  for (int64_t i = 0; i < n; ++i) {
    dst[3 * i] = xyz[3 * i];
    dst[3 * i + 1] = xyz[3 * i + 1];
    dst[3 * i + 2] = planar ? 0.f : xyz[3 * i + 2];
  }
  d_->points->SetData(coords);
  d_->points->Modified();
  d_->cloud->SetVerts(all_vertices(n, 1));
  d_->lod_stride = std::max<int64_t>(1, (n + d_->lod_threshold - 1) / d_->lod_threshold);
  d_->lod->SetVerts(all_vertices(n, static_cast<vtkIdType>(d_->lod_stride)));
  if (d_->has_colours && d_->scalars->GetNumberOfTuples() != n) {
    d_->has_colours = false;
    d_->cloud_mapper->ScalarVisibilityOff();
    d_->lod_mapper->ScalarVisibilityOff();
    d_->legend.shown = false;
  }
  d_->cloud->Modified();
  d_->lod->Modified();
  d_->selection.erase(std::remove_if(d_->selection.begin(), d_->selection.end(), [n](int64_t r) { return r >= n; }),
                      d_->selection.end());
  if (d_->pinned_row >= n) d_->pinned_row = -1;
  d_->path.erase(std::remove_if(d_->path.begin(), d_->path.end(), [n](int64_t r) { return r >= n; }), d_->path.end());
  d_->update_marks();
  d_->axis_titles = axis_titles;
  // VTK draws axis titles in its vector font, which has no Greek letters
  // ("ψ1" would come out as "1"): the axes are named X, Y, Z there and the
  // titles stand in a key the widget paints (paint_axis_key).
  d_->axes->SetXTitle("X");
  d_->axes->SetYTitle("Y");
  d_->axes->SetZTitle("Z");
  d_->update_axes();
  d_->interactor->SetInteractorStyle(planar ? static_cast<vtkInteractorObserver*>(d_->style2d)
                                            : static_cast<vtkInteractorObserver*>(d_->style3d));
  ++d_->points_version;
  const Bounds before = d_->bounds;
  d_->bounds = bounds_of(xyz, n, planar);
  if (reset_camera || was_empty || was_planar != planar) resetCamera();
  else if (materially_different(before, d_->bounds))
    reframe();
  else
    d_->renderer->ResetCameraClippingRange();
  d_->request_render();
}

void EmbeddingView::clearPoints() { setPoints({}, d_->planar, {}, true); }

void EmbeddingView::setColours(const PointColours& colours) {
  auto& s = *d_->scalars;
  if (colours.values.empty() || static_cast<int64_t>(colours.values.size()) != d_->n) {
    d_->has_colours = false;
    d_->cloud_mapper->ScalarVisibilityOff();
    d_->lod_mapper->ScalarVisibilityOff();
    d_->legend = {};
    d_->request_render();
    return;
  }
  const bool cyclic = !colours.categorical && colours.period > 0 && std::isfinite(colours.period);
  vtkNew<vtkFloatArray> values;
  values->SetName("colour");
  values->SetNumberOfTuples(static_cast<vtkIdType>(colours.values.size()));
  std::copy(colours.values.begin(), colours.values.end(), values->GetPointer(0));
  if (cyclic) {
    // Onto [0, period): the table covers one turn.
    const auto period = static_cast<float>(colours.period);
    for (vtkIdType i = 0; i < values->GetNumberOfTuples(); ++i) {
      float& v = values->GetPointer(0)[i];
      v = std::fmod(v, period);
      if (v < 0) v += period;
    }
  }
  s.DeepCopy(values);
  s.Modified();
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : colours.values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = hi = 0;
  Legend legend;
  legend.shown = true;
  legend.title = colours.title;
  vtkScalarsToColors* table = d_->gradient;
  if (colours.categorical) {
    std::map<int, int> seen;
    for (float v : colours.values) seen.emplace(static_cast<int>(v), 0);
    auto& lut = *d_->categories;
    lut.ResetAnnotations();
    lut.SetNumberOfTableValues(static_cast<vtkIdType>(seen.size()));
    int i = 0;
    for (auto& [value, unused] : seen) {
      const QColor c = categoryColour(value);
      lut.SetTableValue(i, c.redF(), c.greenF(), c.blueF(), 1.0);
      QString name = QString::number(value);
      for (const auto& [code, text] : colours.category_names)
        if (code == value) name = text;
      lut.SetAnnotation(vtkVariant(static_cast<double>(value)), name.toStdString());
      legend.categories.emplace_back(c, name);
      ++i;
    }
    lut.Build();
    table = d_->categories;
  } else if (cyclic) {
    d_->cyclic->SetRange(0, colours.period);
    table = d_->cyclic;
    legend.ramp = cyclicTable(256);
    legend.lo = 0;
    legend.hi = colours.period;
  } else {
    if (hi == lo) hi = lo + 1;
    d_->gradient->SetRange(lo, hi);
    for (int i = 0; i < d_->gradient->GetNumberOfTableValues(); ++i) {
      const double* rgba = d_->gradient->GetTableValue(i);
      legend.ramp.push_back(QColor::fromRgbF(static_cast<float>(rgba[0]), static_cast<float>(rgba[1]),
                                             static_cast<float>(rgba[2])));
    }
    legend.lo = lo;
    legend.hi = hi;
  }
  for (auto* m : {d_->cloud_mapper.GetPointer(), d_->lod_mapper.GetPointer()}) {
    m->SetLookupTable(table);
    m->ScalarVisibilityOn();
    m->Modified();
  }
  d_->legend = std::move(legend);
  d_->has_colours = true;
  d_->request_render();
}

void EmbeddingView::setSelection(std::vector<int64_t> rows) {
  d_->selection = std::move(rows);
  d_->update_marks();
  d_->request_render();
}

void EmbeddingView::setHighlight(std::vector<int64_t> rows) {
  d_->highlight = std::move(rows);
  d_->update_marks();
  d_->request_render();
}

void EmbeddingView::setPath(std::vector<int64_t> rows) {
  d_->path = std::move(rows);
  d_->path.erase(std::remove_if(d_->path.begin(), d_->path.end(), [this](int64_t r) { return r < 0 || r >= d_->n; }),
                 d_->path.end());
  d_->update_marks();
  d_->request_render();
}

std::vector<int64_t> EmbeddingView::path() const { return d_->path.size() < 2 ? std::vector<int64_t>{} : d_->path; }

void EmbeddingView::setPinned(int64_t row) {
  d_->pinned_row = row;
  d_->update_marks();
  d_->request_render();
}

void EmbeddingView::setPointSize(double pixels) {
  d_->point_size = std::clamp(pixels, 1.0, 30.0);
  d_->update_marks();
  d_->request_render();
}

void EmbeddingView::setTool(Tool tool) {
  d_->tool = tool;
  d_->lasso.clear();
  setCursor(tool == Tool::Navigate ? Qt::ArrowCursor : Qt::CrossCursor);
  update();
}

EmbeddingView::Tool EmbeddingView::tool() const { return d_->tool; }

std::array<double, 3> EmbeddingView::viewDirection() const {
  const double* v = d_->renderer->GetActiveCamera()->GetDirectionOfProjection();
  return {v[0], v[1], v[2]};
}

CameraState EmbeddingView::camera() const {
  vtkCamera* camera = d_->renderer->GetActiveCamera();
  CameraState state;
  camera->GetPosition(state.position.data());
  camera->GetFocalPoint(state.focal_point.data());
  camera->GetViewUp(state.view_up.data());
  state.parallel_scale = camera->GetParallelScale();
  state.view_angle = camera->GetViewAngle();
  return state;
}

void EmbeddingView::setCamera(const CameraState& state) {
  d_->framed = false;  // the user's camera (a session's) stays as it is
  vtkCamera* camera = d_->renderer->GetActiveCamera();
  camera->SetPosition(state.position.data());
  camera->SetFocalPoint(state.focal_point.data());
  camera->SetViewUp(state.view_up.data());
  if (state.parallel_scale > 0) camera->SetParallelScale(state.parallel_scale);
  if (state.view_angle > 0 && state.view_angle < 180) camera->SetViewAngle(state.view_angle);
  d_->renderer->ResetCameraClippingRange();
  d_->request_render();
}

QString EmbeddingView::placeholderText() const { return d_->placeholder; }

void EmbeddingView::setPlaceholderText(const QString& text) {
  d_->placeholder = text;
  if (d_->n == 0) update();
}

QString EmbeddingView::colourTitle() const { return d_->legend.shown ? d_->legend.title : QString(); }

QString EmbeddingView::colourBarLabelFormat() const { return QString::fromLatin1(kLabelFormat); }

QStringList EmbeddingView::colourBarLabels() const {
  d_->sync_viewport();
  QStringList labels;
  for (const auto& [y, text] : d_->legend_layout.labels) labels << text;
  return labels;
}

QRectF EmbeddingView::colourBarArea() const {
  d_->sync_viewport();
  return d_->legend_layout.strip;
}

QStringList EmbeddingView::colourTitleLines() const {
  d_->sync_viewport();
  return d_->legend_layout.title_lines;
}

QRectF EmbeddingView::colourTitleRect() const {
  d_->sync_viewport();
  return d_->legend_layout.title;
}

QRectF EmbeddingView::colourRampRect() const {
  d_->sync_viewport();
  return d_->legend_layout.swatches.empty() ? d_->legend_layout.bar : QRectF();
}

QColor EmbeddingView::backgroundColour() { return QColor::fromRgbF(kBackground[0], kBackground[1], kBackground[2]); }

QRectF EmbeddingView::plotArea() const {
  d_->sync_viewport();
  return QRectF(0, 0, width() * d_->viewport_right, height());
}

void EmbeddingView::resetCamera() {
  d_->sync_viewport();  // frame the points in the area they are drawn in
  d_->framed = true;
  vtkCamera* camera = d_->renderer->GetActiveCamera();
  camera->SetFocalPoint(0, 0, 0);
  camera->SetPosition(0, 0, 1);
  camera->SetViewUp(0, 1, 0);
  camera->SetParallelProjection(d_->planar);
  d_->frame_points();
  if (!d_->planar) {
    camera->Azimuth(30);
    camera->Elevation(20);
    camera->OrthogonalizeViewUp();
    d_->frame_points();
  }
  d_->renderer->ResetCameraClippingRange();
  d_->request_render();
}

void EmbeddingView::reframe() {
  // vtkRenderer::ResetCamera keeps the direction of projection and the view
  // up: the points fill the view again, seen from where the user turned them.
  d_->sync_viewport();
  d_->framed = true;
  d_->frame_points();
  d_->renderer->ResetCameraClippingRange();
  d_->request_render();
}

void EmbeddingView::rotateCamera(double azimuth, double elevation) {
  vtkCamera* camera = d_->renderer->GetActiveCamera();
  camera->Azimuth(azimuth);
  camera->Elevation(elevation);
  camera->OrthogonalizeViewUp();
  d_->renderer->ResetCameraClippingRange();
  d_->request_render();
}

void EmbeddingView::setLodThreshold(int64_t points) { d_->lod_threshold = std::max<int64_t>(1000, points); }

int64_t EmbeddingView::pointCount() const { return d_->n; }
std::vector<float> EmbeddingView::points() const {
  if (d_->n == 0) return {};
  const float* xyz = static_cast<vtkFloatArray*>(d_->points->GetData())->GetPointer(0);
  return std::vector<float>(xyz, xyz + 3 * d_->n);
}
QStringList EmbeddingView::axisTitles() const { return d_->axis_titles; }
bool EmbeddingView::planar() const { return d_->planar; }
const std::vector<int64_t>& EmbeddingView::selection() const { return d_->selection; }
const std::vector<int64_t>& EmbeddingView::highlight() const { return d_->highlight; }
int64_t EmbeddingView::pinned() const { return d_->pinned_row; }
double EmbeddingView::lastFrameMs() const { return d_->frame_ms; }

QImage EmbeddingView::renderFrame() {
  d_->render(true);
  QImage frame = d_->frame;
  QPainter p(&frame);
  d_->paint_axis_key(p);
  d_->paint_legend(p);
  return frame;
}

void EmbeddingView::Impl::paint_axis_key(QPainter& p) const {
  if (n == 0 || axis_titles.isEmpty()) return;
  QStringList parts;
  const char* names[3] = {"X", "Y", "Z"};
  for (int i = 0; i < std::min<int>(planar ? 2 : 3, static_cast<int>(axis_titles.size())); ++i)
    parts << QStringLiteral("%1 %2").arg(QLatin1String(names[i]), axis_titles[i]);
  p.save();
  p.setPen(QColor(235, 235, 235));
  QFont font = p.font();
  font.setPointSizeF(font.pointSizeF() * 1.1);
  p.setFont(font);
  p.drawText(QPointF(10, 10 + QFontMetrics(font).ascent()), parts.join(QStringLiteral("   ")));
  p.restore();
}

int64_t EmbeddingView::pointAt(QPointF pos, double radius) {
  if (d_->n == 0) return -1;
  d_->project();
  const float px = static_cast<float>(pos.x()), py = static_cast<float>(pos.y());
  const float r2 = static_cast<float>(radius * radius);
  // A point hidden under another one drawn over it should not win just
  // because its centre is a little nearer to the cursor.
  const float overlap = static_cast<float>(std::max(1.5, d_->point_size / 2));
  const float overlap2 = overlap * overlap;
  int64_t best = -1, best_front = -1;
  float best_d2 = r2, best_depth = 2;
  const float* s = d_->screen.data();
  for (int64_t i = 0; i < d_->n; ++i) {
    const float dx = s[3 * i] - px, dy = s[3 * i + 1] - py, depth = s[3 * i + 2];
    const float d2 = dx * dx + dy * dy;
    if (!(d2 <= r2) || depth < -1 || depth > 1) continue;
    if (d2 <= best_d2) best_d2 = d2, best = i;
    if (d2 <= overlap2 && depth < best_depth) best_depth = depth, best_front = i;
  }
  return best_front >= 0 ? best_front : best;
}

std::vector<int64_t> EmbeddingView::pointsInPolygon(const QPolygonF& polygon) {
  std::vector<int64_t> rows;
  if (d_->n == 0 || polygon.size() < 3) return rows;
  d_->project();
  // Rasterising the polygon once makes the test per point O(1), whatever the
  // number of lasso vertices.
  const QSize size = d_->screen_size;
  QImage mask(size, QImage::Format_Grayscale8);
  mask.fill(0);
  {
    QPainter p(&mask);
    p.setPen(Qt::NoPen);
    p.setBrush(Qt::white);
    p.drawPolygon(polygon, Qt::OddEvenFill);
  }
  const float* s = d_->screen.data();
  const int w = size.width(), h = size.height();
  for (int64_t i = 0; i < d_->n; ++i) {
    const float x = s[3 * i], y = s[3 * i + 1], depth = s[3 * i + 2];
    if (!(x >= 0 && y >= 0 && x < w && y < h) || depth < -1 || depth > 1) continue;
    if (mask.constScanLine(static_cast<int>(y))[static_cast<int>(x)]) rows.push_back(i);
  }
  return rows;
}

QPointF EmbeddingView::projectedPosition(int64_t row) {
  if (row < 0 || row >= d_->n) return {};
  d_->project();
  return {d_->screen[3 * row], d_->screen[3 * row + 1]};
}

// ---- Qt events --------------------------------------------------------------

void EmbeddingView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (d_->n == 0) {
    p.fillRect(rect(), QColor::fromRgbF(kBackground[0], kBackground[1], kBackground[2]));
    p.setPen(QColor(230, 230, 230));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, d_->placeholder);
    return;
  }
  const QSize device(static_cast<int>(std::lround(width() * d_->dpr())),
                     static_cast<int>(std::lround(height() * d_->dpr())));
  if (d_->dirty || d_->frame.size() != device) d_->render(false);
  p.drawImage(QPointF(0, 0), d_->frame);
  d_->paint_axis_key(p);
  d_->paint_legend(p);
  if (d_->pressed && d_->tool != Tool::Navigate && d_->lasso.size() > 1) {
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(kSelectionColour, 1.5, Qt::DashLine));
    QColor fill = kSelectionColour;
    fill.setAlpha(40);
    p.setBrush(fill);
    p.drawPolygon(d_->lasso);
  }
}

void EmbeddingView::resizeEvent(QResizeEvent*) { d_->dirty = true; }

void EmbeddingView::mousePressEvent(QMouseEvent* e) {
  d_->press_pos = e->position();
  d_->pressed = true;
  d_->moved = false;
  d_->press_button = e->button();
  if (d_->tool != Tool::Navigate && e->button() == Qt::LeftButton) {
    d_->lasso = QPolygonF{e->position()};
    return;
  }
  if (d_->n == 0) return;
  d_->interacting = true;
  d_->framed = false;  // the user moves the camera
  d_->forward(e);
  switch (e->button()) {
    case Qt::LeftButton: d_->interactor->LeftButtonPressEvent(); break;
    case Qt::MiddleButton: d_->interactor->MiddleButtonPressEvent(); break;
    case Qt::RightButton: d_->interactor->RightButtonPressEvent(); break;
    default: break;
  }
}

void EmbeddingView::mouseMoveEvent(QMouseEvent* e) {
  if (d_->pressed && (e->position() - d_->press_pos).manhattanLength() > 3) d_->moved = true;
  if (d_->pressed && d_->tool != Tool::Navigate && d_->press_button == Qt::LeftButton) {
    if (d_->tool == Tool::RectangleSelect) {
      const QRectF r = QRectF(d_->press_pos, e->position()).normalized();
      d_->lasso = QPolygonF(r);
    } else {
      d_->lasso << e->position();
    }
    update();
    return;
  }
  if (d_->pressed) {
    d_->forward(e);
    d_->interactor->MouseMoveEvent();
    return;
  }
  const int64_t row = pointAt(e->position());
  if (row != d_->hover_row) {
    d_->hover_row = row;
    Q_EMIT hovered(row);
  }
}

void EmbeddingView::mouseReleaseEvent(QMouseEvent* e) {
  const bool was_pressed = d_->pressed;
  d_->pressed = false;
  if (!was_pressed) return;
  if (d_->tool != Tool::Navigate && d_->press_button == Qt::LeftButton) {
    QPolygonF polygon = d_->lasso;
    d_->lasso.clear();
    if (d_->moved && polygon.size() >= 3) {
      std::vector<int64_t> rows = pointsInPolygon(polygon);
      if (e->modifiers() & (Qt::ShiftModifier | Qt::ControlModifier)) {
        std::vector<int64_t> merged;
        std::vector<int64_t> current = d_->selection;
        std::sort(current.begin(), current.end());
        if (e->modifiers() & Qt::ShiftModifier)
          std::set_union(current.begin(), current.end(), rows.begin(), rows.end(), std::back_inserter(merged));
        else
          std::set_difference(current.begin(), current.end(), rows.begin(), rows.end(), std::back_inserter(merged));
        rows = std::move(merged);
      }
      setSelection(std::move(rows));
      Q_EMIT selectionChanged();
    }
    update();
    return;
  }
  if (d_->n == 0) return;
  d_->forward(e);
  switch (e->button()) {
    case Qt::LeftButton: d_->interactor->LeftButtonReleaseEvent(); break;
    case Qt::MiddleButton: d_->interactor->MiddleButtonReleaseEvent(); break;
    case Qt::RightButton: d_->interactor->RightButtonReleaseEvent(); break;
    default: break;
  }
  d_->interacting = false;
  if (!d_->moved && e->button() == Qt::LeftButton) {
    const int64_t row = pointAt(e->position());
    if (row >= 0) {
      setPinned(row);
      Q_EMIT picked(row);
    }
  }
  d_->request_render();
}

void EmbeddingView::wheelEvent(QWheelEvent* e) {
  if (d_->n == 0) return;
  const QPointF p = e->position() * d_->dpr();
  d_->interactor->SetEventInformationFlipY(static_cast<int>(p.x()), static_cast<int>(p.y()));
  d_->interacting = true;
  d_->framed = false;
  if (e->angleDelta().y() > 0) d_->interactor->MouseWheelForwardEvent();
  else if (e->angleDelta().y() < 0)
    d_->interactor->MouseWheelBackwardEvent();
  d_->wheel_settle.start();
  e->accept();
}

void EmbeddingView::leaveEvent(QEvent*) {
  if (d_->hover_row != -1) {
    d_->hover_row = -1;
    Q_EMIT hovered(-1);
  }
}

int64_t EmbeddingView::neighbourInDirection(int64_t from, QPointF direction) {
  if (from < 0 || from >= d_->n) return -1;
  const double length = std::hypot(direction.x(), direction.y());
  if (!(length > 0)) return -1;
  const double ux = direction.x() / length, uy = direction.y() / length;
  d_->project();
  const float fx = d_->screen[3 * from], fy = d_->screen[3 * from + 1];
  // The nearest point within 45 degrees of the direction, distance along it
  // counting once and distance across it twice (so the pin moves along a
  // curve rather than jumping to its neighbour on the side).
  int64_t best = -1;
  double best_cost = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < d_->n; ++i) {
    if (i == from) continue;
    const double dx = d_->screen[3 * i] - fx, dy = d_->screen[3 * i + 1] - fy;
    const double along = dx * ux + dy * uy, across = std::abs(dx * uy - dy * ux);
    if (along <= 0 || across > along) continue;
    const double cost = along + 2 * across;
    if (cost < best_cost) best_cost = cost, best = i;
  }
  return best;
}

void EmbeddingView::keyPressEvent(QKeyEvent* e) {
  static const std::map<int, QPointF> kArrows = {{Qt::Key_Left, {-1, 0}},
                                                 {Qt::Key_Right, {1, 0}},
                                                 {Qt::Key_Up, {0, -1}},
                                                 {Qt::Key_Down, {0, 1}}};
  const auto arrow = kArrows.find(e->key());
  if (arrow != kArrows.end() && d_->pinned_row >= 0) {
    const int64_t next = neighbourInDirection(d_->pinned_row, arrow->second);
    if (next >= 0) Q_EMIT picked(next);
    e->accept();
  } else if (e->key() == Qt::Key_R) {
    resetCamera();
  } else if (e->key() == Qt::Key_Escape && d_->tool != Tool::Navigate) {
    d_->pressed = false;
    d_->lasso.clear();
    update();
  } else {
    QWidget::keyPressEvent(e);
  }
}

}  // namespace manifold::ui
