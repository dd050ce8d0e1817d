#include "manifold/ui/trajectory_player.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include <cmath>
#include <cstring>
#include <functional>

#include "manifold/error.h"
#include "manifold/progress.h"
#include "manifold/ui/file_dialogs.h"

namespace manifold::ui {

/// The frame scaled to fit, square pixels kept sharp (no smoothing: a
/// 24 x 24 mean image stays readable when enlarged).
class TrajectoryCanvas : public QWidget {
 public:
  explicit TrajectoryCanvas(QWidget* parent) : QWidget(parent) {
    setMinimumSize(120, 120);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  }
  void setImage(QImage image) {
    image_ = std::move(image);
    update();
  }
  QSize sizeHint() const override { return {260, 260}; }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Window).darker(130));
    if (image_.isNull()) return;
    const QSize fit = image_.size().scaled(size(), Qt::KeepAspectRatio);
    const QRect target(QPoint((width() - fit.width()) / 2, (height() - fit.height()) / 2), fit);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    p.drawImage(target, image_);
  }

 private:
  QImage image_;
};

/// What one computation needs, copied when it starts.
struct TrajectoryPlayer::Job {
  std::shared_ptr<const LoadedDataset> dataset;
  std::shared_ptr<const DiffusionResult> result;
  Order order = Order::Coordinate;
  int coordinate = 1, phase_a = 1, phase_b = 2;
  std::vector<double> path;
  int path_columns = 0;
  PathOptions path_options;
  int bins = 50;
  MovieOptions movie;
  uint64_t generation = 0;
  std::shared_ptr<std::atomic<bool>> cancel;
};

struct TrajectoryPlayer::Outcome {
  uint64_t generation = 0;
  std::shared_ptr<const TrajectoryFrames> frames;
  GreyFrames grey;  ///< at image size, the movie's contrast
  QString error;
  bool cancelled = false;
};

namespace {

/// Forwards core progress to the player on the GUI thread (queued; dropped
/// if the player is gone).
class PlayerProgress : public ProgressSink {
 public:
  PlayerProgress(QObject* target, std::function<void(qint64, qint64)> show) : target_(target), show_(std::move(show)) {}
  void report(const ProgressEvent& e) override {
    if (e.stage != "frames") return;
    const qint64 done = static_cast<qint64>(e.done), total = static_cast<qint64>(e.total);
    QMetaObject::invokeMethod(
        target_, [show = show_, done, total] { show(done, total); }, Qt::QueuedConnection);
  }

 private:
  QObject* target_;
  std::function<void(qint64, qint64)> show_;
};

TrajectoryOrder order_for(const EmbeddedPoints& p, const TrajectoryPlayer::Order order, int coordinate, int a, int b,
                          const std::vector<double>& path, int columns, const PathOptions& options) {
  switch (order) {
    case TrajectoryPlayer::Order::Phase: return order_by_phase(p, a, b);
    case TrajectoryPlayer::Order::Path: return order_along_path(p, path, columns, options);
    case TrajectoryPlayer::Order::Coordinate: break;
  }
  return order_by_coordinate(p, coordinate);
}

QImage to_qimage(const GreyFrames& g, size_t i) {
  QImage image(g.width, g.height, QImage::Format_Grayscale8);
  for (int y = 0; y < g.height; ++y)
    std::memcpy(image.scanLine(y), g.frame(i) + static_cast<size_t>(y) * g.width, static_cast<size_t>(g.width));
  return image;
}

}  // namespace

TrajectoryPlayer::TrajectoryPlayer(QWidget* parent) : QWidget(parent) {
  build_ui();
  connect(&compute_watcher_, &QFutureWatcher<std::shared_ptr<Outcome>>::finished, this, &TrajectoryPlayer::on_computed);
  connect(&export_watcher_, &QFutureWatcher<QString>::finished, this, &TrajectoryPlayer::on_exported);
  update_controls();
  set_status(tr("Run an embedding to play its images in order."));
}

TrajectoryPlayer::~TrajectoryPlayer() {
  if (cancel_) cancel_->store(true);
  compute_watcher_.waitForFinished();
  export_watcher_.waitForFinished();
}

void TrajectoryPlayer::build_ui() {
  canvas_ = new TrajectoryCanvas(this);
  setFocusPolicy(Qt::StrongFocus);  // the keys of keyPressEvent

  order_box_ = new QComboBox(this);
  order_box_->addItem(tr("Along"), static_cast<int>(Order::Coordinate));
  order_box_->addItem(tr("Around the phase of"), static_cast<int>(Order::Phase));
  order_box_->addItem(tr("Along the drawn path"), static_cast<int>(Order::Path));
  order_box_
      ->setToolTip(tr("How the images are put in order: by one diffusion coordinate, by the angle "
                      "atan2(second, first) of two (a loop such as a rotation), or along a path drawn in the view"));
  coordinate_box_ = new QSpinBox(this);
  coordinate_box_->setPrefix(QStringLiteral("ψ"));
  coordinate_box_->setRange(1, 1);
  second_box_ = new QSpinBox(this);
  second_box_->setPrefix(QStringLiteral("ψ"));
  second_box_->setRange(1, 2);
  second_box_->setValue(2);
  bins_box_ = new QSpinBox(this);
  bins_box_->setRange(1, 1000000);
  bins_box_->setValue(50);
  bins_box_->setPrefix(tr("bins "));
  bins_box_->setToolTip(tr("Frames: the ordered points split into bins of equal count, each shown as its mean image"));
  log_box_ = new QCheckBox(tr("Log"), this);
  log_box_->setToolTip(tr("log(1 + value - minimum) before the contrast (photon counts span decades)"));

  play_button_ = new QPushButton(tr("Play"), this);
  play_button_->setCheckable(true);
  speed_box_ = new QDoubleSpinBox(this);
  speed_box_->setRange(0.5, 60);
  speed_box_->setDecimals(1);
  speed_box_->setValue(10);
  speed_box_->setSuffix(tr(" fps"));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setRange(0, 0);
  frame_label_ = new QLabel(this);
  frame_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  progress_ = new QProgressBar(this);
  progress_->setTextVisible(true);
  cancel_button_ = new QPushButton(tr("Cancel"), this);
  status_ = new QLabel(this);
  status_->setWordWrap(true);

  export_png_ = new QPushButton(tr("PNG series…"), this);
  export_gif_ = new QPushButton(tr("GIF…"), this);
  export_mp4_ = new QPushButton(tr("MP4…"), this);
  if (!have_video_encoding())
    for (QPushButton* b : {export_gif_, export_mp4_}) {
      b->setEnabled(false);
      b->setToolTip(tr("This build has no FFmpeg libraries: export a PNG series"));
    }

  auto* order_row = new QHBoxLayout;
  order_row->addWidget(order_box_);
  order_row->addWidget(coordinate_box_);
  order_row->addWidget(second_box_);
  order_row->addWidget(bins_box_);
  order_row->addWidget(log_box_);
  order_row->addStretch(1);
  auto* play_row = new QHBoxLayout;
  play_row->addWidget(play_button_);
  play_row->addWidget(speed_box_);
  play_row->addWidget(slider_, 1);
  auto* progress_row = new QHBoxLayout;
  progress_row->addWidget(progress_, 1);
  progress_row->addWidget(cancel_button_);
  auto* export_row = new QHBoxLayout;
  export_row->addWidget(new QLabel(tr("Export:"), this));
  export_row->addWidget(export_png_);
  export_row->addWidget(export_gif_);
  export_row->addWidget(export_mp4_);
  export_row->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(order_row);
  layout->addWidget(canvas_, 1);
  layout->addWidget(frame_label_);
  layout->addLayout(play_row);
  layout->addLayout(progress_row);
  layout->addLayout(export_row);
  layout->addWidget(status_);
  connect_controls();
}

void TrajectoryPlayer::connect_controls() {
  play_timer_ = new QTimer(this);
  recompute_timer_ = new QTimer(this);
  recompute_timer_->setSingleShot(true);
  recompute_timer_->setInterval(250);  // a bin count typed digit by digit starts one computation
  connect(recompute_timer_, &QTimer::timeout, this, &TrajectoryPlayer::recompute);
  connect(play_timer_, &QTimer::timeout, this, [this] {
    if (frameCount() > 0) show_frame((current_ + 1) % frameCount());
  });

  connect(order_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_controls_) return;
    order_ = static_cast<Order>(order_box_->currentData().toInt());
    update_controls();
    schedule_recompute();
  });
  connect(coordinate_box_, &QSpinBox::valueChanged, this, [this](int v) {
    if (updating_controls_) return;
    if (order_ == Order::Phase) phase_a_ = v;
    else
      coordinate_ = v;
    schedule_recompute();
  });
  connect(second_box_, &QSpinBox::valueChanged, this, [this](int v) {
    if (updating_controls_) return;
    phase_b_ = v;
    schedule_recompute();
  });
  connect(bins_box_, &QSpinBox::valueChanged, this, [this] {
    if (!updating_controls_) schedule_recompute();
  });
  connect(log_box_, &QCheckBox::toggled, this, [this] {
    if (!updating_controls_) schedule_recompute();
  });
  connect(play_button_, &QPushButton::toggled, this, [this](bool on) { on ? play() : pause(); });
  connect(speed_box_, &QDoubleSpinBox::valueChanged, this,
          [this](double fps) { play_timer_->setInterval(static_cast<int>(std::lround(1000.0 / fps))); });
  play_timer_->setInterval(100);
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!updating_controls_) show_frame(v);
  });
  connect(cancel_button_, &QPushButton::clicked, this, &TrajectoryPlayer::cancel);
  connect(export_png_, &QPushButton::clicked, this, [this] { choose_export(MovieFormat::PngSeries); });
  connect(export_gif_, &QPushButton::clicked, this, [this] { choose_export(MovieFormat::Gif); });
  connect(export_mp4_, &QPushButton::clicked, this, [this] { choose_export(MovieFormat::Mp4); });
}

// ---- inputs ----------------------------------------------------------------

void TrajectoryPlayer::setEmbedding(std::shared_ptr<const LoadedDataset> dataset,
                                    std::shared_ptr<const DiffusionResult> result) {
  cancel();
  pause();
  dataset_ = std::move(dataset);
  result_ = std::move(result);
  // Frames and a drawn path belong to the embedding they were made on.
  frames_.reset();
  images_.clear();
  current_ = -1;
  path_.clear();
  if (order_ == Order::Path) order_ = Order::Coordinate;
  Q_EMIT currentBinChanged({}, {});
  if (result_) {
    coordinate_ = std::clamp(coordinate_, 1, std::max(1, result_->m));
    phase_a_ = std::clamp(phase_a_, 1, std::max(1, result_->m));
    phase_b_ = std::clamp(phase_b_, 1, std::max(1, result_->m));
  }
  canvas_->setImage({});
  update_controls();
  if (dataset_ && result_) {
    schedule_recompute();
  } else {
    set_status(tr("Run an embedding to play its images in order."));
  }
}

void TrajectoryPlayer::setCoordinate(int coordinate) {
  const int m = result_ ? std::max(1, result_->m) : 1;
  order_ = Order::Coordinate;
  coordinate_ = std::clamp(coordinate, 1, m);
  update_controls();
  schedule_recompute();
}

void TrajectoryPlayer::setPhase(int a, int b) {
  const int m = result_ ? std::max(2, result_->m) : 2;
  order_ = Order::Phase;
  phase_a_ = std::clamp(a, 1, m);
  phase_b_ = std::clamp(b, 1, m);
  update_controls();
  schedule_recompute();
}

void TrajectoryPlayer::setPath(std::vector<double> path, int q, std::vector<int> axes, double tube) {
  path_ = std::move(path);
  path_columns_ = q;
  path_axes_ = std::move(axes);
  path_tube_ = tube;
  order_ = Order::Path;
  update_controls();
  schedule_recompute();
}

void TrajectoryPlayer::setPathThrough(const std::vector<int64_t>& points, std::vector<int> axes, double tube) {
  if (!result_) return;
  if (axes.empty())
    for (int c = 1; c <= result_->m; ++c) axes.push_back(c);
  std::vector<double> path;
  for (int64_t point : points) {
    if (point < 0 || point >= result_->n) continue;
    for (int c : axes)
      if (c >= 1 && c <= result_->m)
        path.push_back(result_->coordinates[static_cast<size_t>(point * result_->m + c - 1)]);
  }
  // Axes out of range leave a ragged path, which the computation refuses in one line.
  const int q = static_cast<int>(axes.size());
  setPath(std::move(path), q, std::move(axes), tube);
}

void TrajectoryPlayer::setBins(int bins) {
  bins_box_->setValue(bins);  // schedules through valueChanged
}

void TrajectoryPlayer::setLogScale(bool on) { log_box_->setChecked(on); }

void TrajectoryPlayer::setSpeed(double fps) { speed_box_->setValue(fps); }

int TrajectoryPlayer::bins() const { return bins_box_->value(); }
double TrajectoryPlayer::speed() const { return speed_box_->value(); }
QString TrajectoryPlayer::statusText() const { return status_->text(); }
int TrajectoryPlayer::frameCount() const { return static_cast<int>(images_.size()); }
bool TrajectoryPlayer::playing() const { return play_timer_->isActive(); }
bool TrajectoryPlayer::computing() const { return compute_watcher_.isRunning(); }

QImage TrajectoryPlayer::currentImage() const {
  return current_ >= 0 && current_ < frameCount() ? images_[static_cast<size_t>(current_)] : QImage();
}

// ---- computing -------------------------------------------------------------

void TrajectoryPlayer::schedule_recompute() {
  if (dataset_ && result_) recompute_timer_->start();
}

void TrajectoryPlayer::recompute() {
  recompute_timer_->stop();
  if (!dataset_ || !result_) return;
  if (cancel_) cancel_->store(true);  // the newer request wins
  auto job = std::make_shared<Job>();
  job->dataset = dataset_;
  job->result = result_;
  job->order = order_;
  job->coordinate = coordinate_;
  job->phase_a = phase_a_;
  job->phase_b = phase_b_;
  job->path = path_;
  job->path_columns = path_columns_;
  job->path_options.axes = path_axes_;
  job->path_options.tube = path_tube_;
  job->bins = bins_box_->value();
  job->movie.log_scale = log_box_->isChecked();
  job->movie.scale = 1;
  job->generation = ++generation_;
  job->cancel = cancel_ = std::make_shared<std::atomic<bool>>(false);
  progress_->setRange(0, 0);
  progress_->setFormat(tr("Averaging images… %p%"));
  update_controls();

  const uint64_t generation = job->generation;
  auto show = [this, generation](qint64 done, qint64 total) {
    if (generation == generation_) on_progress(done, total);
  };
  // One computation at a time: the one running was told to stop above and
  // stops at its next image; its outcome is dropped by its generation.
  compute_watcher_.waitForFinished();
  compute_watcher_.setFuture(QtConcurrent::run([job, target = static_cast<QObject*>(this), show]() {
    auto out = std::make_shared<Outcome>();
    out->generation = job->generation;
    PlayerProgress sink(target, show);
    Progress progress(&sink, job->cancel.get(), 0.05);
    try {
      progress.check_cancel();
      const DiffusionResult& r = *job->result;
      EmbeddedPoints p;
      p.n = r.n;
      p.m = r.m;
      p.coordinates = r.coordinates.data();
      p.point_index = r.point_index.data();
      const TrajectoryOrder order = order_for(p, job->order, job->coordinate, job->phase_a, job->phase_b, job->path,
                                              job->path_columns, job->path_options);
      auto frames = std::make_shared<TrajectoryFrames>(compute_frames(job->dataset->data,
                                                                      split_into_bins(p, order, job->bins),
                                                                      order.description, progress));
      progress.check_cancel();
      out->grey = render_frames(*frames, job->movie);
      out->frames = std::move(frames);
    } catch (const Cancelled&) {
      out->cancelled = true;
    } catch (const std::bad_alloc&) {
      out->error = QObject::tr("Trajectory: out of memory for the frames (fewer bins?)");
    } catch (const std::exception& e) {
      out->error = QString::fromStdString(e.what());
    }
    return out;
  }));
}

void TrajectoryPlayer::cancel() {
  recompute_timer_->stop();
  if (cancel_) cancel_->store(true);
}

void TrajectoryPlayer::on_progress(qint64 done, qint64 total) {
  if (total <= 0) return;
  progress_->setRange(0, 1000);
  progress_->setValue(static_cast<int>(1000 * done / total));
}

void TrajectoryPlayer::on_computed() {
  if (!compute_watcher_.future().isFinished()) return;  // a superseded future's late signal
  const std::shared_ptr<Outcome> out = compute_watcher_.result();
  if (!out || out->generation != generation_) return;  // superseded
  update_controls();
  if (out->cancelled) {
    set_status(tr("Cancelled; the frames shown are unchanged."));
    Q_EMIT computeFailed(tr("cancelled"));
    return;
  }
  if (!out->error.isEmpty()) {
    set_status(out->error);
    Q_EMIT computeFailed(out->error);
    return;
  }
  frames_ = out->frames;
  images_.clear();
  for (size_t i = 0; i < out->grey.count; ++i) images_.push_back(to_qimage(out->grey, i));
  shown_low_ = out->grey.low;
  shown_high_ = out->grey.high;
  size_t fewest = SIZE_MAX, most = 0;
  for (const TrajectoryBin& b : frames_->bins) {
    fewest = std::min(fewest, b.rows.size());
    most = std::max(most, b.rows.size());
  }
  const QString each = fewest == most ? QString::number(most) : tr("%1–%2").arg(fewest).arg(most);
  // Core names coordinates dc1, dc2 (as the CLI's files); the window says ψ1, ψ2.
  const QString order = QString::fromStdString(frames_->description).replace(QStringLiteral("dc"), QStringLiteral("ψ"));
  set_status(tr("%1 frames by %2, %3 images each; contrast %4 … %5 (0.5 and 99.5 percentiles of every frame)")
                 .arg(frameCount())
                 .arg(order)
                 .arg(each)
                 .arg(static_cast<double>(shown_low_), 0, 'g', 4)
                 .arg(static_cast<double>(shown_high_), 0, 'g', 4));
  update_controls();
  show_frame(std::clamp(current_, 0, frameCount() - 1));
  Q_EMIT framesReady();
}

// ---- playing ---------------------------------------------------------------

void TrajectoryPlayer::play() {
  if (frameCount() == 0) {
    play_button_->setChecked(false);
    return;
  }
  play_timer_->start();
  play_button_->setChecked(true);
  play_button_->setText(tr("Pause"));
}

void TrajectoryPlayer::pause() {
  play_timer_->stop();
  play_button_->setChecked(false);
  play_button_->setText(tr("Play"));
}

void TrajectoryPlayer::keyPressEvent(QKeyEvent* event) {
  const int count = frameCount();
  if (count == 0) return QWidget::keyPressEvent(event);
  switch (event->key()) {
    case Qt::Key_Space: playing() ? pause() : play(); break;
    case Qt::Key_Left: show_frame((current_ + count - 1) % count); break;
    case Qt::Key_Right: show_frame((current_ + 1) % count); break;
    case Qt::Key_Home: show_frame(0); break;
    case Qt::Key_End: show_frame(count - 1); break;
    default: return QWidget::keyPressEvent(event);
  }
  event->accept();
}

void TrajectoryPlayer::setCurrentFrame(int frame) {
  if (frame >= 0 && frame < frameCount()) show_frame(frame);
}

void TrajectoryPlayer::show_frame(int frame) {
  if (frame < 0 || frame >= frameCount() || !frames_) return;
  current_ = frame;
  canvas_->setImage(images_[static_cast<size_t>(frame)]);
  updating_controls_ = true;
  slider_->setValue(frame);
  updating_controls_ = false;
  const TrajectoryBin& bin = frames_->bins[static_cast<size_t>(frame)];
  QString where;
  for (size_t c = 0; c < bin.mean_coordinate.size() && c < 3; ++c)
    where += QStringLiteral(" ψ%1 = %2").arg(c + 1).arg(bin.mean_coordinate[c], 0, 'g', 4);
  frame_label_->setText(
      tr("Frame %1 / %2 · %3 images · mean%4").arg(frame + 1).arg(frameCount()).arg(bin.rows.size()).arg(where));
  Q_EMIT currentBinChanged(bin.points, bin.rows);
}

// ---- controls --------------------------------------------------------------

void TrajectoryPlayer::update_controls() {
  updating_controls_ = true;
  const bool ready = dataset_ && result_;
  const int m = result_ ? std::max(1, result_->m) : 1;
  auto* model = qobject_cast<QStandardItemModel*>(order_box_->model());
  if (model) model->item(2)->setEnabled(!path_.empty());
  order_box_->setCurrentIndex(static_cast<int>(order_));
  coordinate_box_->setRange(1, m);
  second_box_->setRange(1, std::max(2, m));
  coordinate_box_->setValue(order_ == Order::Phase ? phase_a_ : coordinate_);
  second_box_->setValue(phase_b_);
  coordinate_box_->setVisible(order_ != Order::Path);
  second_box_->setVisible(order_ == Order::Phase);
  if (result_) bins_box_->setMaximum(static_cast<int>(std::min<int64_t>(result_->n, 1000000)));
  for (QWidget* w : std::initializer_list<QWidget*>{order_box_, coordinate_box_, second_box_, bins_box_, log_box_})
    w->setEnabled(ready);
  const bool have_frames = frameCount() > 0;
  play_button_->setEnabled(have_frames);
  slider_->setEnabled(have_frames);
  slider_->setRange(0, std::max(0, frameCount() - 1));
  const bool running = compute_watcher_.isRunning();
  progress_->setVisible(running);
  cancel_button_->setVisible(running);
  const bool exporting = export_watcher_.isRunning();
  export_png_->setEnabled(have_frames && !exporting);
  export_gif_->setEnabled(have_frames && !exporting && have_video_encoding());
  export_mp4_->setEnabled(have_frames && !exporting && have_video_encoding());
  if (!have_frames) frame_label_->clear();
  updating_controls_ = false;
}

void TrajectoryPlayer::set_status(const QString& text) { status_->setText(text); }

// ---- export ----------------------------------------------------------------

namespace {

// The export dialogs' folder (file_dialogs.h): a movie goes where the last
// one went, across runs.
const QString kExportFolder = QStringLiteral("trajectories");

QString default_export_name(MovieFormat format) {
  return format == MovieFormat::PngSeries ? QStringLiteral("trajectory")
         : format == MovieFormat::Gif     ? QStringLiteral("trajectory.gif")
                                          : QStringLiteral("trajectory.mp4");
}

}  // namespace

QString TrajectoryPlayer::suggestedExportPath(MovieFormat format) {
  return suggestedSavePath(kExportFolder, default_export_name(format));
}

void TrajectoryPlayer::choose_export(MovieFormat format) {
  QString path;
  if (format == MovieFormat::PngSeries) {
    path = askSavePath(this, tr("Export frames as PNG series (a new folder)"), tr("Folder (*)"), QString(),
                       kExportFolder, default_export_name(format));
  } else {
    const QString ext = format == MovieFormat::Gif ? QStringLiteral("gif") : QStringLiteral("mp4");
    path = askSavePath(this, tr("Export movie"), tr("%1 movie (*.%2)").arg(ext.toUpper(), ext), QLatin1Char('.') + ext,
                       kExportFolder, default_export_name(format));
    if (!path.isEmpty() && !path.endsWith(QLatin1Char('.') + ext, Qt::CaseInsensitive)) path += QLatin1Char('.') + ext;
  }
  if (!path.isEmpty()) exportMovie(path);
}

void TrajectoryPlayer::exportMovie(const QString& path) {
  if (!frames_ || export_watcher_.isRunning()) {
    Q_EMIT exportFinished(false, frames_ ? tr("An export is running.") : tr("No frames to export."));
    return;
  }
  MovieOptions options;
  options.fps = speed_box_->value();
  options.log_scale = log_box_->isChecked();
  const std::shared_ptr<const TrajectoryFrames> frames = frames_;
  const std::string target = path.toStdString();
  export_target_ = path;
  set_status(tr("Exporting to %1…").arg(path));
  export_watcher_.setFuture(QtConcurrent::run([frames, options, target]() -> QString {
    try {
      const MovieFormat format = movie_format_for(target);
      const GreyFrames grey = render_frames(*frames, options);
      const std::string codec = write_movie(target, format, grey, options.fps,
                                            trajectory_metadata(*frames, grey, options.fps));
      return QStringLiteral("ok:") + QObject::tr("Wrote %1 frames of %2 x %3 (%4) to %5")
                                         .arg(grey.count)
                                         .arg(grey.width)
                                         .arg(grey.height)
                                         .arg(QString::fromStdString(codec), QString::fromStdString(target));
    } catch (const std::exception& e) {
      return QString::fromStdString(e.what());
    }
  }));
  update_controls();
}

void TrajectoryPlayer::on_exported() {
  QString message = export_watcher_.result();
  const bool ok = message.startsWith(QStringLiteral("ok:"));
  if (ok) {
    message = message.mid(3);
    // The folder it went into (a PNG series' own folder is new each time:
    // the one holding it).
    rememberFolder(kExportFolder, QFileInfo(export_target_).absolutePath());
  }
  set_status(message);
  update_controls();
  Q_EMIT exportFinished(ok, message);
}

}  // namespace manifold::ui
