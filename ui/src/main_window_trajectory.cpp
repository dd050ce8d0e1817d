// The main window's Trajectory dock: the player (trajectory_player.h) fed
// with the embedding shown, its current bin ringed in the view, and a path
// made of pinned points (pin a point, "Add pin to path", pin the next...),
// drawn in the view while the movie runs along it.
#include <QDockWidget>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "manifold/ui/main_window.h"

namespace manifold::ui {
namespace {

// The view draws the path while the movie runs along it (its dock shown,
// the player ordered by the path); else none.
void show_path(EmbeddingView* view, const TrajectoryPlayer* player, bool shown, const std::vector<int64_t>& path) {
  view->setPath(shown && player && player->order() == TrajectoryPlayer::Order::Path ? path : std::vector<int64_t>{});
}

}  // namespace

void MainWindow::build_trajectory_dock(QDockWidget* beside) {
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(4, 4, 4, 4);
  trajectory_ = new TrajectoryPlayer(content);
  layout->addWidget(trajectory_, 1);
  auto* path_row = new QHBoxLayout;
  auto* add = new QPushButton(tr("Add pin to path"), content);
  add
      ->setToolTip(tr("Pin a point in the view, add it, pin the next: the movie then runs along the path "
                      "through them (the points near it, in order)"));
  auto* clear = new QPushButton(tr("Clear path"), content);
  path_label_ = new QLabel(content);
  path_row->addWidget(add);
  path_row->addWidget(clear);
  path_row->addWidget(path_label_, 1);
  layout->addLayout(path_row);
  connect(add, &QPushButton::clicked, this, [this] {
    if (!addPinToPath())
      show_notice(tr("Pin an embedded point first (click it in the view), then add it to the path."));
  });
  connect(clear, &QPushButton::clicked, this, &MainWindow::clearPath);
  // The bin shown is ringed in the view; the user's selection stays as it is.
  connect(trajectory_, &TrajectoryPlayer::currentBinChanged, this,
          [this](const std::vector<int64_t>& points, const std::vector<int64_t>&) { view_->setHighlight(points); });
  connect(trajectory_, &TrajectoryPlayer::framesReady, this,
          [this] { show_path(view_, trajectory_, trajectory_shown_, path_points_); });

  trajectory_dock_ = new QDockWidget(tr("Trajectory"), this);
  trajectory_dock_->setObjectName(QStringLiteral("trajectoryDock"));
  trajectory_dock_->setWidget(content);
  addDockWidget(Qt::RightDockWidgetArea, trajectory_dock_);
  tabifyDockWidget(beside, trajectory_dock_);
  beside->raise();
  // isVisible() stays true for a dock behind another's tab; the signal
  // says when its tab is the one shown.
  connect(trajectory_dock_, &QDockWidget::visibilityChanged, this, [this](bool visible) {
    trajectory_shown_ = visible;
    if (visible) update_trajectory();
    else
      view_->setHighlight({});
    show_path(view_, trajectory_, visible, path_points_);
  });
  clearPath();
}

void MainWindow::update_trajectory() {
  if (!trajectory_ || !trajectory_stale_ || !trajectory_shown_ || !outcome_) return;
  trajectory_stale_ = false;
  path_points_.clear();  // points of another embedding
  path_label_->setText(tr("No path: the movie follows the order above."));
  trajectory_->setEmbedding(outcome_->dataset, outcome_->result);
  show_path(view_, trajectory_, trajectory_shown_, path_points_);
}

bool MainWindow::addPinToPath() {
  const int64_t e = embedded_index(pinned_row_);
  if (!outcome_ || e < 0) return false;
  if (!path_points_.empty() && path_points_.back() == e) return true;
  path_points_.push_back(e);
  path_label_->setText(path_points_.size() < 2 ? tr("Path: 1 point; pin and add another.")
                                               : tr("Path through %1 points.").arg(path_points_.size()));
  if (path_points_.size() >= 2) {
    // The path lies in the coordinates on the axes drawn (planar: the first
    // two; one coordinate: X alone).
    trajectory_stale_ = false;
    trajectory_->setEmbedding(outcome_->dataset, outcome_->result);
    trajectory_->setPathThrough(path_points_, shownAxes());
  }
  show_path(view_, trajectory_, trajectory_shown_, path_points_);
  return true;
}

void MainWindow::clearPath() {
  path_points_.clear();
  if (path_label_) path_label_->setText(tr("No path: the movie follows the order above."));
  if (trajectory_ && outcome_ && trajectory_->order() == TrajectoryPlayer::Order::Path) trajectory_->setCoordinate(1);
  show_path(view_, trajectory_, trajectory_shown_, path_points_);
}

}  // namespace manifold::ui
