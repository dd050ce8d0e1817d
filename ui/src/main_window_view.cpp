// The main window's view of an embedding: axes, colours, the spectrum, the
// pinned image and the selection.
#include <algorithm>
#include <cmath>
#include <optional>

#include <QLocale>
#include <QSignalBlocker>

#include "manifold/ui/main_window.h"

namespace manifold::ui {
namespace {

QString en_number(int64_t n) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(n)); }

}  // namespace

std::vector<int> MainWindow::offered_coordinates() const {
  if (!outcome_) return {};
  const DiffusionResult& r = *outcome_->result;
  const std::vector<int>& localised = r.diagnostics.localised;
  const bool hide = hide_localised_->isChecked();
  std::vector<int> offered, all;
  for (int c = 1; c <= r.m; ++c) {
    all.push_back(c);
    if (!hide || std::find(localised.begin(), localised.end(), c) == localised.end()) offered.push_back(c);
  }
  // Hiding every coordinate would leave nothing to draw.
  return offered.empty() ? all : offered;
}

std::vector<int> MainWindow::axisChoices() const {
  std::vector<int> choices;
  for (int i = 0; i < axis_[0]->count(); ++i) choices.push_back(axis_[0]->itemData(i).toInt());
  return choices;
}

void MainWindow::update_axis_choices() {
  const std::vector<int> offered = offered_coordinates();
  if (offered == axisChoices()) return;
  updating_controls_ = true;
  // One axis per offered coordinate, up to three: an axis keeps its
  // coordinate while that is still offered (the user's choice); the others
  // take the first offered ones not on an axis yet, in order. An axis past
  // the offered coordinates (Y and Z of one, Z of two) says "none": showing
  // a coordinate already on another axis there pretended the points spread
  // in a dimension the embedding does not have.
  const int with_coordinate = std::min(3, static_cast<int>(offered.size()));
  int previous[3];
  for (int i = 0; i < 3; ++i) previous[i] = axis_[i]->currentData().toInt();
  auto is_offered = [&](int c) { return std::find(offered.begin(), offered.end(), c) != offered.end(); };
  int chosen[3] = {0, 0, 0};
  for (int i = 0; i < with_coordinate; ++i)
    if (is_offered(previous[i]) && std::find(chosen, chosen + i, previous[i]) == chosen + i) chosen[i] = previous[i];
  for (int i = 0; i < with_coordinate; ++i) {
    if (chosen[i] != 0) continue;
    // There are at least as many offered coordinates as axes that take one.
    chosen[i] = *std::find_if(offered.begin(), offered.end(),
                              [&](int c) { return std::find(chosen, chosen + 3, c) == chosen + 3; });
  }
  for (int i = 0; i < 3; ++i) {
    axis_[i]->clear();
    if (i < with_coordinate)
      for (int c : offered) axis_[i]->addItem(QStringLiteral("\u03c8%1").arg(c), c);
    else if (!offered.empty())
      axis_[i]->addItem(tr("none"), 0);
    axis_[i]->setCurrentIndex(std::max(0, axis_[i]->findData(chosen[i])));
  }
  updating_controls_ = false;
  update_axis_states();
}

void MainWindow::update_axis_states() {
  static const char* const names[3] = {"X", "Y", "Z"};
  const int offered = static_cast<int>(axisChoices().size());
  // Before any embedding the boxes are empty but stay enabled, as the 2-D
  // switch does: neither says anything about coordinates yet.
  const bool known = offered > 0;
  const QString only = offered == 1 ? tr("one diffusion coordinate") : tr("two diffusion coordinates");
  // Fewer than three coordinates are drawn flat whatever the switch says:
  // it then shows the view as it is, ticked and greyed, and gets the user's
  // choice back with a third coordinate.
  const bool switchable = !known || offered >= 3;
  if (switchable != planar_->isEnabled()) {
    const QSignalBlocker quiet(planar_);
    if (!switchable) planar_choice_ = planar_->isChecked();
    planar_->setChecked(switchable ? planar_choice_ : true);
  }
  planar_->setEnabled(switchable);
  planar_->setToolTip(switchable ? tr("Flat view of the X and Y coordinates (left drag pans)")
                                 : tr("The view is flat: the embedding has %1 to show").arg(only));
  for (int i = 1; i < 3; ++i) {
    const bool has_coordinate = !known || offered > i;
    axis_[i]->setEnabled(has_coordinate && !(i == 2 && planar_->isChecked()));
    axis_[i]->setToolTip(has_coordinate ? tr("Diffusion coordinate on the %1 axis").arg(names[i])
                                        : tr("No %1 axis: the embedding has %2 to show").arg(names[i], only));
  }
}

void MainWindow::set_planar_choice(bool planar) {
  if (planar_->isEnabled()) planar_->setChecked(planar);
  else
    planar_choice_ = planar;
}

bool MainWindow::planar_choice() const { return planar_->isEnabled() ? planar_->isChecked() : planar_choice_; }

std::vector<int> MainWindow::shownAxes() const {
  std::vector<int> axes;
  if (!outcome_) return axes;
  const int m = outcome_->result->m;
  for (int i = 0; i < (planar_->isChecked() ? 2 : 3); ++i) {
    const int c = axis_[i]->currentData().toInt();
    // "none" (0) on an axis leaves it and those after it without a coordinate.
    if (c < 1 || c > m) break;
    axes.push_back(c);
  }
  return axes;
}

void MainWindow::update_colour_choices() {
  updating_controls_ = true;
  const int m = outcome_ ? outcome_->result->m : 0;
  colour_by_->clear();
  colour_by_->addItem(tr("none"), QStringLiteral("none"));
  for (int c = 1; c <= m; ++c) colour_by_->addItem(QStringLiteral("\u03c8%1").arg(c), QStringLiteral("dc%1").arg(c));
  if (dataset_)
    for (const PointMetadata& meta : dataset_->metadata) colour_by_->addItem(meta.name, meta.name);
  // colour_key_ is the user's wish; it may name a coordinate that exists only
  // once the embedding does, so it is kept when it cannot be shown yet.
  int idx = colour_by_->findData(colour_key_);
  if (idx < 0 || colour_key_.isEmpty()) {
    // Labels say most when a dataset has them, then a known angle (the
    // demo's, or the one `manifold simulate` writes beside its patterns,
    // NAME.angles.npy), else the first diffusion coordinate.
    QStringList fallbacks{tr("label"), tr("rotation angle (deg)")};
    if (dataset_)
      for (const PointMetadata& meta : dataset_->metadata)
        if (meta.period > 0) fallbacks << meta.name;
    fallbacks << QStringLiteral("dc1");
    for (const QString& fallback : fallbacks)
      if ((idx = colour_by_->findData(fallback)) >= 0) break;
    if (idx < 0) idx = 0;
    if (m > 0) colour_key_ = colour_by_->itemData(idx).toString();
  }
  colour_by_->setCurrentIndex(idx);
  updating_controls_ = false;
  update_sort_choices();
}

void MainWindow::setAxes(int x, int y, int z, bool planar) {
  updating_controls_ = true;
  const int v[3] = {x, y, z};
  for (int i = 0; i < 3; ++i) {
    const int idx = axis_[i]->findData(v[i]);
    if (idx >= 0) axis_[i]->setCurrentIndex(idx);
  }
  set_planar_choice(planar);
  updating_controls_ = false;
  update_axis_states();
  update_view(true);
}

void MainWindow::setColourBy(const QString& key) {
  colour_key_ = key;
  const int idx = colour_by_->findData(key);
  if (idx >= 0) {
    updating_controls_ = true;
    colour_by_->setCurrentIndex(idx);
    updating_controls_ = false;
  }
  update_colours();
}

void MainWindow::update_view(bool reset_camera) {
  if (!outcome_) {
    view_->clearPoints();
    return;
  }
  const DiffusionResult& r = *outcome_->result;
  // One title per axis drawn: one coordinate is a line along X (y = 0 is no
  // coordinate), two or the 2-D switch a plane, three a cloud.
  const std::vector<int> axes = shownAxes();
  const bool planar = axes.size() < 3;
  QStringList titles;
  for (int c : axes) titles << QStringLiteral("\u03c8%1").arg(c);
  std::vector<float> xyz(static_cast<size_t>(r.n) * 3, 0.f);
  for (int64_t e = 0; e < r.n; ++e) {
    const double* c = r.coordinates.data() + e * r.m;
    for (size_t a = 0; a < axes.size(); ++a) xyz[3 * e + a] = static_cast<float>(c[axes[a] - 1]);
  }
  view_->setPoints(std::move(xyz), planar, titles, reset_camera);
  update_colours();
  show_selection();
  view_->setPinned(embedded_index(pinned_row_));
}

void MainWindow::update_colours() {
  if (!outcome_ || !dataset_) return;
  const DiffusionResult& r = *outcome_->result;
  PointColours colours;
  if (colour_key_.startsWith("dc")) {
    const int c = colour_key_.mid(2).toInt();
    if (c >= 1 && c <= r.m) {
      colours.values.resize(static_cast<size_t>(r.n));
      for (int64_t e = 0; e < r.n; ++e)
        colours.values[static_cast<size_t>(e)] = static_cast<float>(r.coordinates[e * r.m + c - 1]);
      colours.title = QStringLiteral("\u03c8%1").arg(c);
    }
  } else {
    for (const PointMetadata& meta : dataset_->metadata)
      if (meta.name == colour_key_) {
        colours.values.resize(static_cast<size_t>(r.n));
        for (int64_t e = 0; e < r.n; ++e)
          colours
              .values[static_cast<size_t>(e)] = meta.values[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])];
        colours.title = meta.name;
        colours.categorical = meta.categorical;
        colours.category_names = meta.category_names;
        // Angles keep their unit (degrees stay degrees on the colour bar).
        colours.period = meta.period;
      }
  }
  view_->setColours(colours);
  // The breakdown counts the categorical column the points are coloured by.
  update_breakdown();
}

void MainWindow::update_spectrum() {
  if (!outcome_) return;
  const auto& ev = outcome_->result->eigenvalues;
  std::vector<double> x(ev.size()), y(ev.begin(), ev.end());
  for (size_t i = 0; i < ev.size(); ++i) x[i] = static_cast<double>(i);
  spectrum_->setData(std::move(x), std::move(y));
  spectrum_->setFadedCount(1);
}

int64_t MainWindow::embedded_index(int64_t row) const {
  if (row < 0 || row >= static_cast<int64_t>(embedded_of_row_.size())) return -1;
  return embedded_of_row_[static_cast<size_t>(row)];
}

QString MainWindow::point_details(int64_t row) const {
  const int64_t e = embedded_index(row);
  if (!outcome_ || e < 0) return outcome_ ? tr("not embedded (outside the largest component)") : QString();
  const DiffusionResult& r = *outcome_->result;
  QStringList parts;
  for (int c = 0; c < std::min(r.m, 3); ++c)
    parts << QStringLiteral("\u03c8%1 = %2").arg(c + 1).arg(r.coordinates[e * r.m + c], 0, 'g', 4);
  return parts.join(QStringLiteral(", "));
}

void MainWindow::on_hovered(qint64 embedded) {
  if (!outcome_ || embedded < 0 || embedded >= outcome_->result->n) {
    image_panel_->setHovered(-1);
    return;
  }
  const int64_t row = outcome_->result->point_index[static_cast<size_t>(embedded)];
  image_panel_->setHovered(row, point_details(row));
}

void MainWindow::on_picked(qint64 embedded) {
  if (!outcome_ || embedded < 0 || embedded >= outcome_->result->n) return;
  pin_row(outcome_->result->point_index[static_cast<size_t>(embedded)]);
}

void MainWindow::pin_row(int64_t row) {
  if (!dataset_ || row < 0 || row >= dataset_->rows()) return;
  pinned_row_ = row;
  image_panel_->setPinned(row, point_details(row));
  view_->setPinned(embedded_index(row));
  dataset_panel_->revealRow(row);
}

void MainWindow::on_view_selection() {
  if (!outcome_) return;
  std::vector<int64_t> rows;
  rows.reserve(view_->selection().size());
  for (int64_t e : view_->selection()) rows.push_back(outcome_->result->point_index[static_cast<size_t>(e)]);
  std::sort(rows.begin(), rows.end());
  selected_rows_ = std::move(rows);
  show_selection();
}

void MainWindow::setSelectedRows(std::vector<int64_t> rows) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (dataset_)
    rows.erase(std::remove_if(rows.begin(), rows.end(), [this](int64_t r) { return r < 0 || r >= dataset_->rows(); }),
               rows.end());
  selected_rows_ = std::move(rows);
  show_selection();
}

void MainWindow::show_selection() {
  std::vector<int64_t> embedded;
  embedded.reserve(selected_rows_.size());
  for (int64_t r : selected_rows_) {
    const int64_t e = embedded_index(r);
    if (e >= 0) embedded.push_back(e);
  }
  view_->setSelection(std::move(embedded));
  dataset_panel_->setSelectedRows(selected_rows_);
  selection_model_->setRows(selected_rows_);
  selection_label_->setText(selected_rows_.empty()
                                ? tr("No points selected. Use the Rectangle or Lasso tool in the view.")
                                : tr("%1 points selected (Shift adds, Ctrl removes).")
                                      .arg(en_number(static_cast<int64_t>(selected_rows_.size()))));
  update_selection_summary();
  update_actions();
}

nlohmann::json MainWindow::view_settings() const {
  nlohmann::json v = {
      {"axes", {axis_[0]->currentData().toInt(), axis_[1]->currentData().toInt(), axis_[2]->currentData().toInt()}},
      {"planar", planar_choice()},
      {"hide_localised", hide_localised_->isChecked()},
      {"colour_by", colour_key_.toStdString()},
      {"point_size", point_size_->value()},
      {"selection", selected_rows_},
      {"pinned", pinned_row_},
      {"gallery_sort", dataset_panel_->sortKey().toStdString()}};
  if (outcome_) {
    const CameraState c = view_->camera();
    v["camera"] = {{"position", c.position},
                   {"focal_point", c.focal_point},
                   {"view_up", c.view_up},
                   {"parallel_scale", c.parallel_scale},
                   {"view_angle", c.view_angle}};
  }
  return v;
}

namespace {

// Three finite numbers at `key` of `object`, or false (a session is edited by hand).
bool read_vector3(const nlohmann::json& object, const char* key, std::array<double, 3>& out) {
  if (!object.contains(key) || !object[key].is_array() || object[key].size() != 3) return false;
  for (size_t i = 0; i < 3; ++i) {
    if (!object[key][i].is_number() || !std::isfinite(object[key][i].get<double>())) return false;
    out[i] = object[key][i].get<double>();
  }
  return true;
}

// The camera a session recorded; nullopt when any part is missing or not a
// number (the view then frames the points as for a new embedding).
std::optional<CameraState> read_camera(const nlohmann::json& v) {
  if (!v.contains("camera") || !v["camera"].is_object()) return std::nullopt;
  const nlohmann::json& c = v["camera"];
  CameraState state;
  if (!read_vector3(c, "position", state.position) || !read_vector3(c, "focal_point", state.focal_point) ||
      !read_vector3(c, "view_up", state.view_up))
    return std::nullopt;
  // A camera at its focal point, or looking along its view-up, has no
  // direction to look in: VTK would draw nothing sensible.
  const std::array<double, 3> d{state.focal_point[0] - state.position[0], state.focal_point[1] - state.position[1],
                                state.focal_point[2] - state.position[2]};
  const std::array<double, 3>& u = state.view_up;
  const double cross = std::hypot(d[1] * u[2] - d[2] * u[1], d[2] * u[0] - d[0] * u[2], d[0] * u[1] - d[1] * u[0]);
  if (!(cross > 1e-12 * std::hypot(d[0], d[1], d[2]) * std::hypot(u[0], u[1], u[2]))) return std::nullopt;
  if (c.contains("parallel_scale") && c["parallel_scale"].is_number())
    state.parallel_scale = c["parallel_scale"].get<double>();
  if (c.contains("view_angle") && c["view_angle"].is_number()) state.view_angle = c["view_angle"].get<double>();
  return state;
}

}  // namespace

void MainWindow::apply_view_settings(const nlohmann::json& v) {
  if (!v.is_object()) return;
  updating_controls_ = true;
  if (v.contains("planar") && v["planar"].is_boolean()) set_planar_choice(v["planar"].get<bool>());
  if (v.contains("hide_localised") && v["hide_localised"].is_boolean())
    hide_localised_->setChecked(v["hide_localised"].get<bool>());
  if (v.contains("point_size") && v["point_size"].is_number()) point_size_->setValue(v["point_size"].get<double>());
  if (v.contains("colour_by") && v["colour_by"].is_string())
    colour_key_ = QString::fromStdString(v["colour_by"].get<std::string>());
  updating_controls_ = false;
  // Rows are the dataset's: the selection and the pin apply now (the gallery
  // and the image panel show them) and reach the view with the embedding.
  if (v.contains("selection") && v["selection"].is_array()) {
    std::vector<int64_t> rows;
    for (const nlohmann::json& r : v["selection"])
      if (r.is_number_integer()) rows.push_back(r.get<int64_t>());
    setSelectedRows(std::move(rows));
  }
  if (v.contains("pinned") && v["pinned"].is_number_integer()) pin_row(v["pinned"].get<int64_t>());
  if (v.contains("gallery_sort") && v["gallery_sort"].is_string())
    dataset_panel_->setSortKey(QString::fromStdString(v["gallery_sort"].get<std::string>()));
  if (v.contains("axes") && v["axes"].is_array() && v["axes"].size() == 3) {
    // The axis lists fill once the embedding exists; keep the wish until then.
    const auto axes = v["axes"].get<std::vector<int>>();
    auto apply = std::make_shared<QMetaObject::Connection>();
    *apply = connect(this, &MainWindow::embeddingShown, this, [this, axes, apply] {
      disconnect(*apply);
      setAxes(axes[0], axes[1], axes[2], planar_choice());
    });
  }
  if (const std::optional<CameraState> camera = read_camera(v)) {
    // Connected after the axes: setAxes frames the points anew, then the
    // camera goes where the session left it.
    auto apply = std::make_shared<QMetaObject::Connection>();
    *apply = connect(this, &MainWindow::embeddingShown, this, [this, state = *camera, apply] {
      disconnect(*apply);
      view_->setCamera(state);
    });
  }
}

}  // namespace manifold::ui
