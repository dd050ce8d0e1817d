#pragma once
// The main window: dataset and parameter panels on the left, the embedding
// view in the middle with its controls and the run bar, the spectrum, image
// and selection panels on the right. Every long task (opening, k-NN,
// diffusion map, export) runs off the GUI thread; errors appear in a message
// bar above the view, never as a crash or a blocking dialog, and a failed run
// leaves the last embedding in view. What the embedding's diagnostics say
// (points left out, localised coordinates, eigenvalues at 1) stands in a
// warning line right above the view while that embedding is shown; when the
// panel's parameters no longer match it and only Run can make them (a new
// graph, or automatic re-embedding off), a stale line says so.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFutureWatcher>
#include <QLabel>
#include <QListView>
#include <QMainWindow>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "manifold/session.h"
#include "manifold/ui/cluster_panel.h"
#include "manifold/ui/dataset_panel.h"
#include "manifold/ui/embedding_view.h"
#include "manifold/ui/image_panel.h"
#include "manifold/ui/job_runner.h"
#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/metadata_table.h"
#include "manifold/ui/parameter_panel.h"
#include "manifold/ui/plot_widget.h"
#include "manifold/ui/run_parameters.h"
#include "manifold/ui/thumbnail_model.h"
#include "manifold/ui/trajectory_player.h"

class QBoxLayout;
class QDockWidget;
class QListWidget;
class QMenu;
class QToolBar;

namespace manifold::ui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // ---- opening (asynchronous: datasetOpened or errorShown follows) -------
  /// A dataset; a results folder or its files (openResults); a session
  /// file (openSession).
  void openFile(const QString& path);
  /// Opens the built-in demo; `run` embeds it at once.
  void openDemo(bool run = true);
  /// Shows a dataset already in memory.
  void openDataset(std::shared_ptr<const LoadedDataset> dataset, bool run = false);
  /// Opens the session's dataset, applies its parameters and view, and runs.
  void openSession(const QString& path);
  /// Opens a folder `manifold run` wrote -- its session (session.json) --
  /// or `manifold knn` wrote -- the data, mask, metric and k its graph.json
  /// records, the embedding's defaults -- with the graph it holds
  /// (indices.npy, distances.npy, graph.json) taken as the run's graph when
  /// it is this data's (the same fingerprint, metric and k), so only the
  /// embedding is computed. openFile() comes here for such folders.
  void openResults(const QString& dir);
  /// The results folder `path` stands for: the path itself when it holds
  /// a session.json or a graph (graph.json and indices.npy), or the folder
  /// of its session.json, graph.json or embedding.json; "" for anything
  /// else. What openFile (and so a drop) opens with openResults.
  static QString resultsFolderOf(const QString& path);
  /// Whether openFile(path) runs by itself: a results folder or one of its
  /// files, or a session file (any other .json), which openFile opens with
  /// openSession.
  static bool runsByItself(const QString& path);
  bool saveSession(const QString& path);

  // ---- help and dialogs ---------------------------------------------------
  /// Help ▸ Manual: docs/ui.md as installed, found beside the program, or
  /// the copy built into the program.
  void showManual();
  /// Where the manual is read from (a file, or ":/docs/ui.md" built in).
  static QString manualPath();
  /// Help ▸ Keyboard Shortcuts: every menu shortcut and the view's keys.
  void showShortcuts();
  /// The shortcuts list's rows: "Ctrl+R" -> "Run", ...
  QList<QPair<QString, QString>> shortcutList() const;
  /// Run ▸ Cluster Profile: edits the profile the panel names (or a new one).
  void editClusterProfile();

  // ---- running ------------------------------------------------------------
  void runNow();
  void cancelRun();

  // ---- exports (asynchronous: exportFinished follows) ----------------------
  /// A path ending in .mtx writes MatrixMarket, anything else a graph folder.
  void exportGraph(const QString& path);
  /// .npy, .csv, .vtp, or a folder with every file of `manifold embed`.
  void exportEmbedding(const QString& path);
  void exportSelectionIndices(const QString& path);
  void exportSelectionImages(const QString& path);
  void exportScreenshot(const QString& path);

  // ---- view settings -------------------------------------------------------
  /// Diffusion coordinates (1-based) on the axes; z is ignored in 2-D.
  void setAxes(int x, int y, int z, bool planar);
  /// "none", "dc<i>" (a diffusion coordinate) or a metadata name.
  void setColourBy(const QString& key);
  void setSelectedRows(std::vector<int64_t> rows);

  // ---- the user's metadata and clusters (the Metadata dock) ---------------
  /// File ▸ Load Metadata…: asks for a file (for HDF5/CXI, then one of its
  /// datasets of N rows) and loads it (loadMetadata).
  void chooseMetadataFile();
  /// Adds the columns of `file` (`column`: the HDF5 dataset, the csv column,
  /// or an .npy's new name) to the dataset's own: they colour, sort the
  /// gallery, correlate and break the selection down like them, and
  /// sessions keep them. A bad file or one of another length than the
  /// dataset shows one line naming the file in a message box and changes
  /// nothing (false).
  bool loadMetadata(const QString& file, const QString& column = {});
  /// The files loadMetadata added to this dataset ("FILE" or "FILE:COLUMN").
  const QStringList& loadedMetadata() const { return loaded_metadata_; }
  /// Clusters the embedding shown off the GUI thread (see cluster_panel.h):
  /// m = `coordinates` (0: K - 1), K = `clusters` (0: estimated);
  /// clustersReady or errorShown follows. The result is the categorical
  /// column "cluster" (re-clustering replaces it), colouring the points.
  void clusterPoints(int coordinates, int clusters);
  /// The clusters, one row each (colour, size); a click selects its points.
  QListWidget* clusterList() const;
  /// Makes the points of cluster `code` the selection.
  void selectCluster(int code);
  /// How K was chosen, and how well the clusters match a category the data
  /// came with (labels, hit classes).
  QString clusterSummary() const;

  // ---- state, for tests and the command line ------------------------------
  JobRunner* runner() const { return runner_; }
  EmbeddingView* view() const { return view_; }
  ParameterPanel* parameterPanel() const { return parameters_; }
  DatasetPanel* datasetPanel() const { return dataset_panel_; }
  ImagePanel* imagePanel() const { return image_panel_; }
  PlotWidget* spectrumPlot() const { return spectrum_; }
  ThumbnailModel* selectionModel() const { return selection_model_; }
  TrajectoryPlayer* trajectoryPlayer() const { return trajectory_; }
  /// The Metadata dock's table: each column's correlation with psi_1..psi_m.
  MetadataTableWidget* metadataTable() const { return metadata_table_; }
  /// The trajectory's path: the embedded points it runs through, in order
  /// (the pinned point added by "Add pin to path").
  const std::vector<int64_t>& trajectoryPath() const { return path_points_; }
  /// Adds the pinned point to the trajectory's path (ordered along the path
  /// from two points on); false when nothing embedded is pinned.
  bool addPinToPath();
  void clearPath();
  std::shared_ptr<const LoadedDataset> dataset() const { return dataset_; }
  std::shared_ptr<const EmbeddingOutcome> outcome() const { return outcome_; }
  const std::vector<int64_t>& selectedRows() const { return selected_rows_; }
  /// The pinned dataset row, or -1.
  int64_t pinnedRow() const { return pinned_row_; }
  /// The selection panel's breakdown: one row per category of the selection
  /// (name, count, percent), coloured as in the view.
  QTableWidget* selectionBreakdown() const { return breakdown_; }
  /// The column the breakdown counts: the categorical column colouring the
  /// points, else the first categorical column; "" when there is none.
  QString breakdownColumn() const;
  /// The mean image of the selection (empty while none is selected or while
  /// it is being computed; selectionMeanReady follows).
  const std::vector<float>& selectionMean() const { return selection_mean_; }
  QString lastError() const { return last_error_; }
  QString statusText() const { return status_->text(); }
  QString progressText() const { return progress_label_->text(); }
  QProgressBar* progressBar() const { return progress_; }
  bool messageBarVisible() const;
  /// The warning line above the view: the shown embedding's diagnostics, one
  /// line each; empty while hidden (nothing to say).
  QString warningText() const;
  /// In the warning line: leaves the localised coordinates off the axes
  /// (enabled when the shown embedding has some).
  QCheckBox* hideLocalisedEditor() const { return hide_localised_; }
  /// The diffusion coordinates (1-based) the axes offer.
  std::vector<int> axisChoices() const;
  /// The X, Y or Z box (axis 0, 1, 2). An axis the embedding has no
  /// coordinate for (Y and Z of one coordinate, Z of two) is disabled and
  /// holds only "none" (data 0).
  QComboBox* axisEditor(int axis) const { return axis_[axis]; }
  /// The 2-D switch (disabled while fewer than three coordinates are offered:
  /// the view is flat whatever it says).
  QCheckBox* planarEditor() const { return planar_; }
  /// The diffusion coordinates (1-based) on the axes drawn: X, then Y and Z
  /// where the embedding has them (Z not in 2-D); empty without an embedding.
  std::vector<int> shownAxes() const;
  /// The message bar's text (an error or a notice); empty while hidden.
  QString messageText() const;
  /// The line that says the embedding shown no longer matches the panel's
  /// parameters (and whether Run is needed); empty while they match.
  QString staleText() const;
  /// What colours the points: "none", "dc<i>" or a metadata name.
  QString colourKey() const { return colour_key_; }
  /// File ▸ Open's name filter: every format the readers take.
  static QString datasetFileFilter();

 Q_SIGNALS:
  void datasetOpened();
  void embeddingShown();
  /// A warm-start preview is shown; embeddingShown follows with the exact result.
  void previewShown();
  void errorShown(const QString& message);
  /// The selection's mean image is shown (selectionMean()).
  void selectionMeanReady();
  void exportFinished(bool ok, const QStringList& files_or_error);
  /// A clustering is shown (the column "cluster" and the cluster list).
  void clustersReady();

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  struct LoadResult {
    std::shared_ptr<const LoadedDataset> dataset;
    std::shared_ptr<const KnnGraph> graph;  ///< a results folder's graph (openResults)
    QString error;
    QString graph_error;  ///< why the graph asked for could not be read
  };
  struct ExportResult {
    bool ok = false;
    QStringList files;
    QString error;
  };

  void build_menus();
  QWidget* build_view_area();
  // build_view_area's phases, top to bottom.
  QWidget* build_message_bar(QWidget* area);
  void add_axis_controls(QToolBar* controls, QWidget* area);
  void add_colouring_controls(QToolBar* colouring, QWidget* area);
  void add_view_tools(QToolBar* controls, QWidget* area);
  QWidget* build_warning_bar(QWidget* area);
  QWidget* build_stale_bar(QWidget* area);
  QLayout* build_run_bar(QWidget* area);
  void build_docks();
  /// The Trajectory dock, tabbed with `beside`.
  void build_trajectory_dock(QDockWidget* beside);
  /// Gives the player the embedding shown, when its dock is visible (frames
  /// stream every image: not computed for a dock nobody looks at).
  void update_trajectory();
  /// The Metadata dock (the correlation table; a row click colours by it), tabbed with `beside`.
  void build_metadata_dock(QDockWidget* beside);
  /// Fills the table for the embedding shown, when its dock is visible.
  void update_metadata_table();
  /// The dataset's columns, to which the user's join (see the .cpp).
  std::vector<PointMetadata>& dataset_columns();
  /// Appends columns (renamed name_2... where a name is taken); their names.
  QStringList add_columns(std::vector<PointMetadata> columns);
  /// Refreshes every list of columns and the colours after columns changed.
  void columns_changed();
  void metadata_error(const QString& message);
  void show_clustering(const EmbeddingClustering& clustering, int m_all);
  /// Adds or replaces the column "cluster"; `how` says how K was chosen.
  void set_cluster_column(PointMetadata column, const QString& how);
  /// A new dataset: no loaded files, no clusters.
  void reset_user_columns();
  /// The session's "metadata_files" and "clusters" (see docs/ui.md).
  void save_user_columns(Session& session) const;
  void restore_user_columns(const Session& session);
  /// True, with the message bar saying so, while a dataset is being opened
  /// (one load at a time).
  bool still_loading();
  /// Loads off the GUI thread (`graph`, if given, read after the data);
  /// on_loaded() takes the result.
  void start_load(std::function<std::shared_ptr<const LoadedDataset>()> load, const QString& what, bool run,
                  std::function<std::shared_ptr<const KnnGraph>()> graph = {});
  /// The results folder's graph (pending_graph_) to the runner's cache when
  /// it is the graph `p` asks for of this dataset; else a notice says why
  /// it is built anew.
  void adopt_pending_graph(const RunParameters& p);
  /// Opens the session's dataset (and reads `graph`, if given); openDataset
  /// then applies the session and runs.
  void start_session(const Session& s, std::function<std::shared_ptr<const KnnGraph>()> graph);
  void on_loaded();
  void show_error(const QString& message);
  void show_notice(const QString& message);
  void on_parameters_changed();
  /// Starts a run (or queues it behind the running one) and remembers it.
  void request_run(const RunParameters& params);
  /// Shows or hides the line saying the embedding shown is not the panel's.
  void update_staleness();
  void on_run_started(bool builds_graph);
  void on_progress(const ProgressInfo& info);
  void on_finished(std::shared_ptr<const EmbeddingOutcome> outcome);
  void on_preview(std::shared_ptr<const EmbeddingOutcome> outcome);
  void show_outcome(std::shared_ptr<const EmbeddingOutcome> outcome);
  void on_failed(const QString& message);
  void on_cancelled();
  void on_busy(bool busy);
  void update_view(bool reset_camera);
  void update_colours();
  std::vector<int> offered_coordinates() const;
  void update_axis_choices();
  /// Enables the axis boxes and the 2-D switch that choose something.
  void update_axis_states();
  /// The user's choice of the 2-D switch, kept aside while fewer than three
  /// coordinates force the view flat (the switch then shows it ticked).
  void set_planar_choice(bool planar);
  bool planar_choice() const;
  void update_colour_choices();
  void show_diagnostics();
  void update_spectrum();
  void on_view_selection();
  void show_selection();
  /// The breakdown table and the mean image under the selection strip.
  void build_selection_summary(QWidget* parent, QBoxLayout* layout);
  void update_selection_summary();
  void update_breakdown();
  /// Averages the selected images: inline for a few, off the GUI thread for many.
  void start_selection_mean();
  void show_selection_mean(std::vector<float> mean);
  /// The gallery's "Sort by" entries: every ψ of the embedding, every metadata column.
  void update_sort_choices();
  void sort_gallery(const QString& key);
  void on_hovered(qint64 embedded);
  void on_picked(qint64 embedded);
  void pin_row(int64_t row);
  QString point_details(int64_t row) const;
  int64_t embedded_index(int64_t row) const;
  void start_export(const QString& what, std::function<QStringList()> work);
  void update_actions();
  void fill_recent_menu();
  nlohmann::json view_settings() const;
  void apply_view_settings(const nlohmann::json& view);
  QString ask_save_path(const QString& title, const QString& filter, const QString& suffix, const QString& key,
                        const QString& file_name);
  void build_export_menu(QMenu* menu);
  /// A file name for an export: the dataset's name with `ending`.
  QString suggested_name(const QString& ending) const;

  JobRunner* runner_;
  EmbeddingView* view_;
  ParameterPanel* parameters_;
  DatasetPanel* dataset_panel_;
  ImagePanel* image_panel_;
  PlotWidget* spectrum_;
  ThumbnailModel* selection_model_;
  TrajectoryPlayer* trajectory_ = nullptr;
  MetadataTableWidget* metadata_table_ = nullptr;
  bool metadata_shown_ = false;  // the Metadata dock's tab is the one shown
  bool metadata_stale_ = true;   // the table is not of the embedding shown
  ClusterPanel* cluster_panel_ = nullptr;
  QStringList loaded_metadata_;  // files loadMetadata added, as sessions keep them
  QString cluster_how_;          // how the clusters shown were made
  QDockWidget* trajectory_dock_ = nullptr;
  QLabel* path_label_ = nullptr;
  std::vector<int64_t> path_points_;  // embedded points, in path order
  bool trajectory_stale_ = true;      // the player has not seen the embedding shown
  bool trajectory_shown_ = false;     // the dock's tab is the one shown
  QListView* selection_view_;
  QLabel* selection_label_;
  QLabel* breakdown_title_ = nullptr;
  QTableWidget* breakdown_ = nullptr;
  QLabel* mean_image_ = nullptr;
  std::vector<float> selection_mean_;
  QFutureWatcher<std::vector<float>> mean_watcher_;
  std::shared_ptr<std::atomic<bool>> mean_cancel_;  // the running mean's: set when a newer selection supersedes it

  QComboBox* axis_[3];
  QCheckBox* planar_;
  bool planar_choice_ = false;  ///< the user's choice while the switch is forced (update_axis_states)
  QCheckBox* hide_localised_;
  QComboBox* colour_by_;
  QDoubleSpinBox* point_size_;
  QToolButton* tool_navigate_;
  QToolButton* tool_rectangle_;
  QToolButton* tool_lasso_;

  QPushButton* run_button_;
  QPushButton* cancel_button_;
  QProgressBar* progress_;
  QLabel* progress_label_;
  QLabel* status_;
  QWidget* message_bar_;
  QLabel* message_text_;
  QStringList notices_;  ///< what message_text_ shows while it shows notices (show_notice)
  QWidget* warning_bar_;
  QLabel* warning_text_;
  QWidget* stale_bar_;
  QLabel* stale_text_;
  QMenu* recent_menu_ = nullptr;
  QAction* export_graph_action_ = nullptr;
  QAction* export_mtx_action_ = nullptr;
  QAction* export_embedding_action_ = nullptr;
  QAction* export_selection_action_ = nullptr;
  QAction* export_images_action_ = nullptr;
  QAction* export_screenshot_action_ = nullptr;
  QAction* save_session_action_ = nullptr;
  QAction* load_metadata_action_ = nullptr;

  std::shared_ptr<const LoadedDataset> dataset_;
  std::shared_ptr<const EmbeddingOutcome> outcome_;
  std::vector<int64_t> embedded_of_row_;  // dataset row -> embedded point, -1 when not embedded
  std::vector<int64_t> selected_rows_;    // dataset rows, ascending
  int64_t pinned_row_ = -1;
  QString last_error_;
  QString colour_key_;
  QTimer reembed_timer_;
  std::optional<RunParameters> requested_;  // the last run asked of the runner
  bool cancelling_ = false;                 // Cancel pressed, the job not stopped yet
  QFutureWatcher<LoadResult> load_watcher_;
  bool run_after_load_ = false;
  std::optional<Session> pending_session_;
  std::shared_ptr<const KnnGraph> pending_graph_;  ///< with pending_session_, from openResults
  QString pending_graph_dir_;                      ///< the results folder being opened (openResults), until on_loaded
  QString pending_notice_;                         ///< shown once the session's dataset is open
  QFutureWatcher<ExportResult> export_watcher_;
  bool updating_controls_ = false;
};

}  // namespace manifold::ui
