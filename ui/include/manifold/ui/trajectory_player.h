#pragma once
// The trajectory player: the images of an embedding played as a movie in
// order along a diffusion coordinate, around the phase of two coordinates,
// or along a path drawn in the view; each frame the mean image of one bin
// of equal count (core's trajectory.h). Play/pause, speed, a scrub slider,
// the bin count, and export as a PNG series, GIF or MP4 (core's movie.h).
// Frames are computed off the GUI thread (QtConcurrent) with progress and
// Cancel; a newer request cancels the one running.
//
// Wiring (the main window): setEmbedding() whenever an embedding is shown;
// setPath() with a path drawn in the view; connect currentBinChanged() to
// the view's highlight of the current bin.
#include <QFutureWatcher>
#include <QImage>
#include <QString>
#include <QWidget>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "manifold/diffusion_map.h"
#include "manifold/movie.h"
#include "manifold/trajectory.h"
#include "manifold/ui/loaded_dataset.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;
class QTimer;

namespace manifold::ui {

class TrajectoryCanvas;

class TrajectoryPlayer : public QWidget {
  Q_OBJECT

 public:
  enum class Order { Coordinate, Phase, Path };

  explicit TrajectoryPlayer(QWidget* parent = nullptr);
  ~TrajectoryPlayer() override;

  /// The images (rows of `dataset`) and the embedding whose points order
  /// them (result->coordinates, result->point_index). Either may be null
  /// (clears the player). Frames are recomputed shortly after.
  void setEmbedding(std::shared_ptr<const LoadedDataset> dataset, std::shared_ptr<const DiffusionResult> result);

  /// Order along dc `coordinate` (1-based).
  void setCoordinate(int coordinate);
  /// Order around atan2(dc b, dc a): a loop such as a rotation, read once round.
  void setPhase(int a, int b);
  /// Order along a polyline of P vertices x q columns in embedding space;
  /// `axes` are the 1-based coordinates of its columns (empty = dc1..dcq);
  /// `tube` = 0 is automatic (see PathOptions).
  void setPath(std::vector<double> path, int q, std::vector<int> axes = {}, double tube = 0);
  /// A path through embedded points in the order given (positions in the
  /// embedding, as the view's picks), on the coordinates `axes` (1-based;
  /// empty = every coordinate): points picked one after another in the
  /// view make a path without mapping the screen back to the embedding.
  void setPathThrough(const std::vector<int64_t>& points, std::vector<int> axes = {}, double tube = 0);
  void setBins(int bins);
  /// log(1 + v - min) before the shared contrast percentiles.
  void setLogScale(bool on);
  /// Frames per second when playing and in exported movies.
  void setSpeed(double fps);

  /// Starts computing the frames now (the setters above wait a moment, so
  /// typing a bin count starts one computation).
  void recompute();
  /// Cancels a computation in progress; the frames shown stay.
  void cancel();
  bool computing() const;

  void play();
  void pause();
  bool playing() const;
  void setCurrentFrame(int frame);
  int currentFrame() const { return current_; }
  int frameCount() const;
  /// The shown frame at image size (the movie's contrast), or null.
  QImage currentImage() const;
  /// The frames shown (null before the first computation).
  std::shared_ptr<const TrajectoryFrames> frames() const { return frames_; }
  Order order() const { return order_; }
  int bins() const;
  double speed() const;
  /// The one-line status (what is shown, or why not).
  QString statusText() const;

  /// Writes the frames to `path` off the GUI thread: a folder (PNG series),
  /// movie.gif or movie.mp4, contrast-scaled as shown, enlarged as the CLI
  /// does (movie_scale). exportFinished() reports the outcome.
  void exportMovie(const QString& path);
  /// Where the export dialog for `format` starts: a default name in the
  /// folder the last successful export went to (file_dialogs.h's rule: never
  /// a folder that cannot be written).
  static QString suggestedExportPath(MovieFormat format);

 protected:
  /// Space plays or pauses; Left/Right step one frame; Home/End go to the ends.
  void keyPressEvent(QKeyEvent* event) override;

 Q_SIGNALS:
  /// The current frame changed: its bin's points (positions in the
  /// embedding, as result->coordinates) and their dataset rows. Empty when
  /// the player is cleared. Connect to the view's highlight.
  void currentBinChanged(const std::vector<int64_t>& points, const std::vector<int64_t>& rows);
  /// New frames are shown.
  void framesReady();
  /// A computation failed or was cancelled (one line).
  void computeFailed(const QString& message);
  void exportFinished(bool ok, const QString& message);

 private:
  struct Job;
  struct Outcome;
  void build_ui();
  void connect_controls();
  void schedule_recompute();
  void on_computed();
  void on_exported();
  void on_progress(qint64 done, qint64 total);
  void show_frame(int frame);
  void update_controls();
  void set_status(const QString& text);
  void choose_export(MovieFormat format);

  std::shared_ptr<const LoadedDataset> dataset_;
  std::shared_ptr<const DiffusionResult> result_;
  Order order_ = Order::Coordinate;
  int coordinate_ = 1, phase_a_ = 1, phase_b_ = 2;
  std::vector<double> path_;
  int path_columns_ = 0;
  std::vector<int> path_axes_;
  double path_tube_ = 0;

  std::shared_ptr<const TrajectoryFrames> frames_;
  std::vector<QImage> images_;
  int current_ = -1;
  float shown_low_ = 0, shown_high_ = 0;

  std::shared_ptr<std::atomic<bool>> cancel_;
  uint64_t generation_ = 0;
  QFutureWatcher<std::shared_ptr<Outcome>> compute_watcher_;
  QFutureWatcher<QString> export_watcher_;
  QString export_target_;  // the running export's path
  bool updating_controls_ = false;

  TrajectoryCanvas* canvas_;
  QComboBox* order_box_;
  QSpinBox* coordinate_box_;
  QSpinBox* second_box_;
  QSpinBox* bins_box_;
  QCheckBox* log_box_;
  QPushButton* play_button_;
  QDoubleSpinBox* speed_box_;
  QSlider* slider_;
  QLabel* frame_label_;
  QLabel* status_;
  QProgressBar* progress_;
  QPushButton* cancel_button_;
  QPushButton* export_png_;
  QPushButton* export_gif_;
  QPushButton* export_mp4_;
  QTimer* play_timer_;
  QTimer* recompute_timer_;
};

}  // namespace manifold::ui
