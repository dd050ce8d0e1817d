#include "manifold/ui/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QButtonGroup>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSaveFile>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include <algorithm>
#include <cmath>
#include <utility>

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/results_folder.h"
#include "manifold/session.h"
#include "manifold/ui/exporters.h"
#include "manifold/ui/file_dialogs.h"
#include "manifold/ui/gui_words.h"

// Resources compiled into a static library must be registered by name.
static void init_explorer_resources() { Q_INIT_RESOURCE(explorer); }

namespace manifold::ui {
namespace {

QString en_number(int64_t n) { return QLocale(QLocale::English).toString(static_cast<qlonglong>(n)); }

QString seconds_text(double s) {
  return s < 1 ? QObject::tr("%1 ms").arg(static_cast<int>(std::lround(s * 1000)))
               : QObject::tr("%1 s").arg(s, 0, 'f', s < 10 ? 2 : 1);
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  init_explorer_resources();
  setWindowTitle(tr("Manifold Explorer"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/manifold-explorer.png")));
  setAcceptDrops(true);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);

  runner_ = new JobRunner(this);
  {
    // Cluster jobs run the command-line program installed beside this one.
    const QString cli = QCoreApplication::applicationDirPath() + QStringLiteral("/manifold");
    if (QFileInfo(cli).isExecutable()) runner_->setCliPath(cli.toStdString());
  }
  view_ = new EmbeddingView(this);
  parameters_ = new ParameterPanel(this);
  dataset_panel_ = new DatasetPanel(this);
  image_panel_ = new ImagePanel(this);
  spectrum_ = new PlotWidget(this);
  spectrum_->setStyle(PlotWidget::Style::Bars);
  spectrum_->setTitles(tr("Eigenvalues \u03bb\u1d62"), tr("i"), tr("\u03bb"));
  spectrum_->clear(tr("No embedding yet."));

  setCentralWidget(build_view_area());
  build_docks();
  build_menus();
  status_ = new QLabel(tr("Open a dataset, or the demo, to begin."), this);
  statusBar()->addWidget(status_, 1);

  reembed_timer_.setSingleShot(true);
  // Coalesces a burst of edits (a spin box held down) into one re-embedding.
  reembed_timer_.setInterval(40);
  connect(&reembed_timer_, &QTimer::timeout, this, [this] {
    // Only a re-embedding on a cached graph runs without Run: a change that
    // needs a new graph (which may be a cluster job) waits for the user.
    const RunParameters p = parameters_->parameters();
    if (dataset_ && runner_->cachedGraph(p)) request_run(p);
  });

  connect(runner_, &JobRunner::started, this, &MainWindow::on_run_started);
  connect(runner_, &JobRunner::progressed, this, &MainWindow::on_progress);
  connect(runner_, &JobRunner::finished, this, &MainWindow::on_finished);
  connect(runner_, &JobRunner::previewReady, this, &MainWindow::on_preview);
  connect(runner_, &JobRunner::failed, this, &MainWindow::on_failed);
  connect(runner_, &JobRunner::cancelled, this, &MainWindow::on_cancelled);
  connect(runner_, &JobRunner::busyChanged, this, &MainWindow::on_busy);
  connect(parameters_, &ParameterPanel::changed, this, &MainWindow::on_parameters_changed);
  connect(parameters_, &ParameterPanel::editProfileRequested, this, &MainWindow::editClusterProfile);
  connect(&load_watcher_, &QFutureWatcher<LoadResult>::finished, this, &MainWindow::on_loaded);
  connect(&export_watcher_, &QFutureWatcher<ExportResult>::finished, this, [this] {
    const ExportResult r = export_watcher_.result();
    if (r.ok) {
      status_->setText(tr("Wrote %1").arg(r.files.join(QStringLiteral(", "))));
      Q_EMIT exportFinished(true, r.files);
    } else {
      show_error(r.error);
      Q_EMIT exportFinished(false, {r.error});
    }
  });

  connect(dataset_panel_, &DatasetPanel::openRequested, this, [this] {
    const QString path = askOpenFile(this, tr("Open dataset"), datasetFileFilter(), QStringLiteral("datasets"));
    if (!path.isEmpty()) openFile(path);
  });
  connect(dataset_panel_, &DatasetPanel::demoRequested, this, [this] { openDemo(true); });
  connect(dataset_panel_, &DatasetPanel::imageActivated, this, [this](qint64 row) { pin_row(row); });
  connect(dataset_panel_, &DatasetPanel::selectionEdited, this,
          [this](const std::vector<int64_t>& rows) { setSelectedRows(rows); });
  connect(dataset_panel_, &DatasetPanel::sortRequested, this, &MainWindow::sort_gallery);
  connect(dataset_panel_, &DatasetPanel::logScaleChanged, this, [this](bool on) {
    image_panel_->setLogScale(on);
    selection_model_->setLogScale(on);
  });

  connect(view_, &EmbeddingView::hovered, this, &MainWindow::on_hovered);
  connect(view_, &EmbeddingView::picked, this, &MainWindow::on_picked);
  connect(view_, &EmbeddingView::selectionChanged, this, &MainWindow::on_view_selection);

  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  update_actions();
}

MainWindow::~MainWindow() {
  load_watcher_.waitForFinished();
  export_watcher_.waitForFinished();
}

// ---- layout -------------------------------------------------------------------

namespace {

/// A fixed gap of `px` between the widgets of a tool bar.
void add_gap(QToolBar* bar, QWidget* parent, int px) {
  auto* gap = new QWidget(parent);
  gap->setFixedWidth(px);
  bar->addWidget(gap);
}

/// A bar of one colour for a line of text, hidden until there is something
/// to say.
QFrame* coloured_bar(QWidget* parent, const QString& name, QColor window, QColor text) {
  auto* bar = new QFrame(parent);
  bar->setObjectName(name);
  bar->setAutoFillBackground(true);
  QPalette pal = bar->palette();
  pal.setColor(QPalette::Window, window);
  pal.setColor(QPalette::WindowText, text);
  bar->setPalette(pal);
  bar->hide();
  return bar;
}

}  // namespace

// Top to bottom: messages, the view's controls, its diagnostics and staleness,
// the view, the run bar. Widgets are made in that order, which is the tab chain's.
QWidget* MainWindow::build_view_area() {
  auto* area = new QWidget(this);
  auto* layout = new QVBoxLayout(area);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(3);
  layout->addWidget(build_message_bar(area));

  // View controls in two rows, so that all of them show beside docks at
  // 1280 px: what is drawn and how to handle it (axes, 2-D, the tools), then
  // how it is coloured (colour, point size). A tool bar folds what still
  // does not fit behind its extension button instead of widening the window.
  auto* controls = new QToolBar(area);
  controls->setObjectName(QStringLiteral("viewControls"));
  controls->setIconSize(QSize(18, 18));
  auto* colouring = new QToolBar(area);
  colouring->setObjectName(QStringLiteral("viewColouring"));
  colouring->setIconSize(QSize(18, 18));
  add_axis_controls(controls, area);
  add_colouring_controls(colouring, area);
  add_view_tools(controls, area);
  layout->addWidget(controls);
  layout->addWidget(colouring);

  layout->addWidget(build_warning_bar(area));
  layout->addWidget(build_stale_bar(area));
  layout->addWidget(view_, 1);
  layout->addLayout(build_run_bar(area));
  return area;
}

// Errors and notices, dismissed with its close button.
QWidget* MainWindow::build_message_bar(QWidget* area) {
  message_bar_ = new QFrame(area);
  message_bar_->setObjectName(QStringLiteral("messageBar"));
  message_bar_->setAutoFillBackground(true);
  auto* bar = new QHBoxLayout(message_bar_);
  bar->setContentsMargins(8, 4, 4, 4);
  message_text_ = new QLabel(message_bar_);
  message_text_->setWordWrap(true);
  message_text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* close = new QToolButton(message_bar_);
  close->setText(QStringLiteral("\u2715"));
  close->setToolTip(tr("Dismiss"));
  bar->addWidget(message_text_, 1);
  bar->addWidget(close);
  connect(close, &QToolButton::clicked, message_bar_, &QWidget::hide);
  message_bar_->hide();
  return message_bar_;
}

// X, Y and Z coordinates and the 2-D switch.
void MainWindow::add_axis_controls(QToolBar* controls, QWidget* area) {
  const char* axis_names[3] = {"X", "Y", "Z"};
  for (int i = 0; i < 3; ++i) {
    controls->addWidget(new QLabel(axis_names[i], area));
    axis_[i] = new QComboBox(area);
    axis_[i]->setToolTip(tr("Diffusion coordinate on the %1 axis").arg(axis_names[i]));
    // Fixed widths: the lists change with every embedding and must not
    // push the other controls around.
    axis_[i]->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    axis_[i]->setMinimumContentsLength(4);
    controls->addWidget(axis_[i]);
    connect(axis_[i], &QComboBox::currentIndexChanged, this, [this] {
      if (!updating_controls_) update_view(false);
    });
  }
  planar_ = new QCheckBox(tr("2-D"), area);
  planar_->setToolTip(tr("Flat view of the X and Y coordinates (left drag pans)"));
  controls->addWidget(planar_);
  connect(planar_, &QCheckBox::toggled, this, [this] {
    update_axis_states();
    if (!updating_controls_) update_view(true);
  });
  add_gap(controls, area, 8);
}

// What colours the points, and their size.
void MainWindow::add_colouring_controls(QToolBar* colouring, QWidget* area) {
  colouring->addWidget(new QLabel(tr("Colour"), area));
  colour_by_ = new QComboBox(area);
  colour_by_
      ->setToolTip(tr("Colour the points by a diffusion coordinate, the dataset's labels or other "
                      "per-image values"));
  colour_by_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  colour_by_->setMinimumContentsLength(16);
  colouring->addWidget(colour_by_);
  connect(colour_by_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_controls_) return;
    colour_key_ = colour_by_->currentData().toString();
    update_colours();
  });
  add_gap(colouring, area, 8);
  colouring->addWidget(new QLabel(tr("Size"), area));
  point_size_ = new QDoubleSpinBox(area);
  point_size_->setRange(1, 20);
  point_size_->setDecimals(0);
  point_size_->setValue(3);
  point_size_->setToolTip(tr("Point size in pixels"));
  colouring->addWidget(point_size_);
  connect(point_size_, &QDoubleSpinBox::valueChanged, view_, &EmbeddingView::setPointSize);
  view_->setPointSize(3);
}

// The view's tools (navigate, rectangle, lasso: one at a time) and its reset.
void MainWindow::add_view_tools(QToolBar* controls, QWidget* area) {
  auto* tools = new QButtonGroup(area);
  auto make_tool = [&](const QString& text, const QString& icon, const QString& tip, EmbeddingView::Tool tool) {
    auto* b = new QToolButton(area);
    b->setText(text);
    b->setIcon(QIcon(icon));
    b->setToolButtonStyle(Qt::ToolButtonIconOnly);
    b->setToolTip(tip);
    b->setCheckable(true);
    tools->addButton(b);
    controls->addWidget(b);
    connect(b, &QToolButton::toggled, this, [this, tool](bool on) {
      if (on) view_->setTool(tool);
    });
    return b;
  };
  tool_navigate_ = make_tool(tr("Rotate"), QStringLiteral(":/icons/rotate.png"),
                             tr("Rotate (left drag), pan (middle drag), zoom (wheel or right "
                                "drag); hover a point to see its image, click to pin it"),
                             EmbeddingView::Tool::Navigate);
  tool_rectangle_ = make_tool(tr("Rectangle"), QStringLiteral(":/icons/select-rectangle.png"),
                              tr("Select the points in a rectangle (Shift adds, Ctrl removes)"),
                              EmbeddingView::Tool::RectangleSelect);
  tool_lasso_ = make_tool(tr("Lasso"), QStringLiteral(":/icons/select-lasso.png"),
                          tr("Select the points inside a free-hand outline (Shift adds, Ctrl removes)"),
                          EmbeddingView::Tool::LassoSelect);
  tool_navigate_->setChecked(true);
  auto* reset = new QToolButton(area);
  reset->setText(tr("Reset view"));
  reset->setIcon(QIcon(QStringLiteral(":/icons/reset-view.png")));
  reset->setToolButtonStyle(Qt::ToolButtonIconOnly);
  reset->setToolTip(tr("Fit every point in the view (R)"));
  connect(reset, &QToolButton::clicked, view_, &EmbeddingView::resetCamera);
  controls->addWidget(reset);
}

// The shown embedding's diagnostics, right above it: they say how far to
// trust what is drawn, so they stay while it does (a failed run after it
// included) and go when it goes. The remedy for localised coordinates sits
// beside them (the tool bar above is full).
QWidget* MainWindow::build_warning_bar(QWidget* area) {
  warning_bar_ = coloured_bar(area, QStringLiteral("warningBar"), QColor(250, 240, 200), QColor(80, 60, 0));
  auto* warning_layout = new QHBoxLayout(warning_bar_);
  warning_layout->setContentsMargins(8, 4, 8, 4);
  warning_text_ = new QLabel(warning_bar_);
  warning_text_->setWordWrap(true);
  warning_text_->setTextFormat(Qt::PlainText);
  warning_text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hide_localised_ = new QCheckBox(tr("Hide localised coordinates"), warning_bar_);
  hide_localised_->setEnabled(false);
  warning_layout->addWidget(warning_text_, 1);
  warning_layout->addWidget(hide_localised_, 0, Qt::AlignTop);
  connect(hide_localised_, &QCheckBox::toggled, this, [this] {
    if (updating_controls_) return;
    update_axis_choices();
    update_view(true);
  });
  return warning_bar_;
}

// What the view shows no longer matches the panel: says so, and whether
// Run is needed, for as long as that holds.
QWidget* MainWindow::build_stale_bar(QWidget* area) {
  stale_bar_ = coloured_bar(area, QStringLiteral("staleBar"), QColor(215, 230, 250), QColor(0, 40, 90));
  auto* stale_layout = new QHBoxLayout(stale_bar_);
  stale_layout->setContentsMargins(8, 4, 8, 4);
  stale_text_ = new QLabel(stale_bar_);
  stale_text_->setWordWrap(true);
  stale_text_->setTextFormat(Qt::PlainText);
  stale_layout->addWidget(stale_text_, 1);
  return stale_bar_;
}

// Run, Cancel, the progress bar and its line.
QLayout* MainWindow::build_run_bar(QWidget* area) {
  auto* run_bar = new QHBoxLayout;
  run_button_ = new QPushButton(QIcon(QStringLiteral(":/icons/run.png")), tr("Run"), area);
  run_button_->setToolTip(tr("Build the k-NN graph (unless cached) and the diffusion map (Ctrl+R)"));
  run_button_->setDefault(true);
  cancel_button_ = new QPushButton(QIcon(QStringLiteral(":/icons/cancel.png")), tr("Cancel"), area);
  cancel_button_->setToolTip(tr("Stop the running job; nothing it half-computed is kept (Esc)"));
  cancel_button_->setEnabled(false);
  progress_ = new QProgressBar(area);
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_->setTextVisible(true);
  progress_->setMaximumWidth(220);
  progress_label_ = new QLabel(area);
  progress_label_->setMinimumWidth(200);
  run_bar->addWidget(run_button_);
  run_bar->addWidget(cancel_button_);
  run_bar->addWidget(progress_);
  run_bar->addWidget(progress_label_, 1);
  connect(run_button_, &QPushButton::clicked, this, &MainWindow::runNow);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancelRun);
  return run_bar;
}

void MainWindow::build_docks() {
  auto dock = [this](const QString& title, const QString& name, QWidget* content, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(content);
    addDockWidget(area, d);
    return d;
  };
  auto* data_dock = dock(tr("Dataset"), QStringLiteral("datasetDock"), dataset_panel_, Qt::LeftDockWidgetArea);
  auto* param_dock = dock(tr("Parameters"), QStringLiteral("parametersDock"), parameters_, Qt::LeftDockWidgetArea);
  tabifyDockWidget(data_dock, param_dock);
  data_dock->raise();
  auto* spectrum_dock = dock(tr("Spectrum"), QStringLiteral("spectrumDock"), spectrum_, Qt::RightDockWidgetArea);
  build_trajectory_dock(spectrum_dock);
  build_metadata_dock(spectrum_dock);
  dock(tr("Image"), QStringLiteral("imageDock"), image_panel_, Qt::RightDockWidgetArea);

  auto* selection = new QWidget(this);
  auto* layout = new QVBoxLayout(selection);
  layout->setContentsMargins(4, 4, 4, 4);
  selection_label_ = new QLabel(tr("No points selected. Use the Rectangle or Lasso tool in the view."), selection);
  selection_label_->setWordWrap(true);
  layout->addWidget(selection_label_);
  selection_model_ = new ThumbnailModel(this);
  selection_model_->setThumbnailSize(48);
  selection_view_ = new QListView(selection);
  selection_view_->setModel(selection_model_);
  configureThumbnailView(selection_view_, 48);
  layout->addWidget(selection_view_, 1);
  connect(selection_view_, &QListView::clicked, this,
          [this](const QModelIndex& i) { pin_row(selection_model_->datasetRow(i.row())); });
  build_selection_summary(selection, layout);
  auto* buttons = new QHBoxLayout;
  auto* as_dataset = new QPushButton(tr("Embed selection"), selection);
  as_dataset->setToolTip(tr("Open the selected images as a dataset of their own and embed them"));
  auto* keep = new QPushButton(tr("Keep marked"), selection);
  keep->setToolTip(tr("Narrow the selection to the images marked in the strip above (Shift/Ctrl-click)"));
  auto* clear = new QPushButton(tr("Clear"), selection);
  buttons->addWidget(as_dataset);
  buttons->addWidget(keep);
  buttons->addWidget(clear);
  buttons->addStretch();
  layout->addLayout(buttons);
  connect(clear, &QPushButton::clicked, this, [this] { setSelectedRows({}); });
  connect(keep, &QPushButton::clicked, this, [this] {
    std::vector<int64_t> marked = selectedDatasetRows(selection_view_, selection_model_);
    if (!marked.empty()) setSelectedRows(std::move(marked));
  });
  connect(as_dataset, &QPushButton::clicked, this, [this] {
    if (!dataset_ || selected_rows_.size() < 3) {
      show_error(tr("Select at least 3 points to embed them on their own."));
      return;
    }
    // Copying the rows can be large: it runs off the GUI thread like any open.
    auto source = dataset_;
    auto rows = selected_rows_;
    start_load(
        [source, rows]() -> std::shared_ptr<const LoadedDataset> {
          const int64_t d = source->data.cols();
          std::vector<float> values(rows.size() * static_cast<size_t>(d));
          for (size_t s = 0; s < rows.size(); ++s)
            std::copy_n(source->data.row(rows[s]), d, values.begin() + static_cast<ptrdiff_t>(s * d));
          Dataset sub(static_cast<int64_t>(rows.size()), d, std::move(values));
          sub.source = source->data.source;
          sub.format = source->data.format;
          sub.source_dtype = source->data.source_dtype;
          sub.item_shape = source->data.item_shape;
          std::vector<PointMetadata> meta;
          PointMetadata original{tr("row in %1").arg(source->name), {}, false};
          for (int64_t r : rows) {
            original.values.push_back(static_cast<float>(r));
            if (!source->data.labels.empty()) sub.labels.push_back(source->data.labels[static_cast<size_t>(r)]);
          }
          meta.push_back(std::move(original));
          return adoptDataset(std::move(sub), tr("%1 (selection of %2)").arg(source->name).arg(rows.size()),
                              tr("%1 selected images of %2").arg(rows.size()).arg(source->name), false, std::move(meta),
                              source->mask);
        },
        tr("the selection"), true);
  });
  dock(tr("Selection"), QStringLiteral("selectionDock"), selection, Qt::RightDockWidgetArea);
}

bool MainWindow::messageBarVisible() const { return message_bar_->isVisible(); }

QString MainWindow::messageText() const { return message_bar_->isHidden() ? QString() : message_text_->text(); }

QString MainWindow::staleText() const { return stale_bar_->isHidden() ? QString() : stale_text_->text(); }

void MainWindow::update_staleness() {
  // Said only while the user must act (press Run): an automatic re-embedding
  // under way is on the progress line already, and a bar that came and went
  // with each one would shake the view.
  QString text;
  if (outcome_ && dataset_ && outcome_->dataset == dataset_) {
    const RunParameters now = parameters_->parameters();
    const ParameterChanges changes = describeChanges(outcome_->params, now);
    const bool computing = runner_->busy() && requested_ && describeChanges(*requested_, now).empty();
    const bool needs_graph = !runner_->cachedGraph(now);
    if (!changes.empty() && !computing && (needs_graph || !parameters_->autoReembed())) {
      QStringList shown, wanted;
      for (const auto& [was, is] : changes) shown << was, wanted << is;
      text = tr("Shown: the embedding for %1. The panel says %2").arg(shown.join(", "), wanted.join(", "));
      text += needs_graph ? tr(", which needs a new k-NN graph: press Run to build it.")
                          : tr(": press Run to re-embed.");
    }
  }
  stale_text_->setText(text);
  stale_bar_->setVisible(!text.isEmpty());
}

QString MainWindow::datasetFileFilter() {
  // An image file opens the folder of images it is in (File ▸ Open Folder… opens one directly).
  return tr(
      "Datasets (*.npy *.npz *idx3-ubyte *idx3-ubyte.gz *.idx *.png *.tif *.tiff *.mrc *.mrcs *.h5 *.hdf5 *.cxi);;"
      "Images: a folder of them is one dataset (*.png *.tif *.tiff);;"
      "All files (*)");
}

QString MainWindow::warningText() const { return warning_bar_->isHidden() ? QString() : warning_text_->text(); }

void MainWindow::show_error(const QString& message) {
  last_error_ = message;
  notices_.clear();
  QPalette pal = message_bar_->palette();
  pal.setColor(QPalette::Window, QColor(250, 215, 215));
  pal.setColor(QPalette::WindowText, QColor(110, 0, 0));
  message_bar_->setPalette(pal);
  message_text_->setText(message);
  message_bar_->show();
  status_->setText(message);
  Q_EMIT errorShown(message);
}

void MainWindow::show_notice(const QString& message) {
  // The notices shown since the bar was last dismissed or cleared stack, a
  // line each: one opening can have several (data found beside moved
  // results, and their graph not used); an error replaces them.
  if (message_bar_->isHidden()) notices_.clear();
  if (!notices_.contains(message)) notices_ << message;
  QPalette pal = message_bar_->palette();
  pal.setColor(QPalette::Window, QColor(250, 240, 200));
  pal.setColor(QPalette::WindowText, QColor(80, 60, 0));
  message_bar_->setPalette(pal);
  message_text_->setText(notices_.join(QLatin1Char('\n')));
  message_bar_->show();
}

// ---- opening ---------------------------------------------------------------------

bool MainWindow::still_loading() {
  if (!load_watcher_.isRunning()) return false;
  show_error(tr("Still opening the previous dataset; try again in a moment."));
  return true;
}

void MainWindow::start_load(std::function<std::shared_ptr<const LoadedDataset>()> load, const QString& what, bool run,
                            std::function<std::shared_ptr<const KnnGraph>()> graph) {
  if (still_loading()) return;
  run_after_load_ = run;
  message_bar_->hide();
  status_->setText(tr("Opening %1\u2026").arg(what));
  progress_->setRange(0, 0);
  progress_label_->setText(tr("reading %1").arg(what));
  load_watcher_.setFuture(QtConcurrent::run([load, graph, what]() -> LoadResult {
    LoadResult r;
    try {
      r.dataset = load();
    } catch (const std::bad_alloc&) {
      r.error = tr("%1: out of memory while reading it").arg(what);
    } catch (const std::exception& e) {
      r.error = QString::fromStdString(e.what());
    }
    // A graph that cannot be read is built anew: the data open all the same.
    if (r.dataset && graph) try {
        r.graph = graph();
      } catch (const std::exception& e) {
        r.graph_error = QString::fromStdString(e.what());
      }
    return r;
  }));
  update_actions();
}

QString MainWindow::resultsFolderOf(const QString& path) {
  if (is_results_folder(path.toStdString())) return path;
  // A results folder's own files open the folder: its session with its graph.
  const QFileInfo file(path);
  static const QStringList kOwnFiles = {QStringLiteral("session.json"), QStringLiteral("graph.json"),
                                        QStringLiteral("embedding.json")};
  if (file.isFile() && kOwnFiles.contains(file.fileName()) && is_results_folder(file.path().toStdString()))
    return file.path();
  return {};
}

bool MainWindow::runsByItself(const QString& path) {
  return !resultsFolderOf(path).isEmpty() || path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive);
}

void MainWindow::openFile(const QString& path) {
  if (const QString folder = resultsFolderOf(path); !folder.isEmpty()) {
    openResults(folder);
    return;
  }
  if (path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) {
    openSession(path);
    return;
  }
  start_load([path] { return loadDataset(path); }, path, false);
}

void MainWindow::openDemo(bool run) {
  start_load([] { return makeDemoDataset(); }, tr("the demo"), run);
}

void MainWindow::on_loaded() {
  LoadResult r = load_watcher_.result();
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_label_->clear();
  const QString results = pending_graph_dir_;  // the results folder being opened, or ""
  if (!r.dataset) {
    pending_session_.reset();
    pending_notice_.clear();
    pending_graph_dir_.clear();
    update_actions();
    show_error(r.error.isEmpty() ? tr("The dataset could not be read.") : r.error);
    return;
  }
  if (!results.isEmpty()) addRecentFile(results);
  else if (!r.dataset->path.isEmpty())
    addRecentFile(r.dataset->path);
  pending_graph_ = std::move(r.graph);
  openDataset(r.dataset, run_after_load_);
  pending_graph_dir_.clear();
  if (!r.graph_error.isEmpty())
    show_notice(tr("The graph in %1 could not be read (%2); it is built anew.").arg(results, r.graph_error));
}

void MainWindow::openDataset(std::shared_ptr<const LoadedDataset> ds, bool run) {
  dataset_ = std::move(ds);
  outcome_.reset();
  requested_.reset();
  // A column this dataset has too (its labels, in a selection embedded on its
  // own) keeps colouring it; anything else is chosen anew (a session sets its
  // own below): ψ1 of the last embedding says nothing about this one's labels
  // or angles.
  const bool column_kept = dataset_ && std::any_of(dataset_->metadata.begin(), dataset_->metadata.end(),
                                                   [this](const PointMetadata& m) { return m.name == colour_key_; });
  if (!column_kept) colour_key_.clear();
  embedded_of_row_.clear();
  selected_rows_.clear();
  pinned_row_ = -1;
  runner_->setDataset(dataset_);
  dataset_panel_->setDataset(dataset_);
  image_panel_->setDataset(dataset_);
  selection_model_->setDataset(dataset_);
  selection_model_->setRows({});
  selection_label_->setText(tr("No points selected. Use the Rectangle or Lasso tool in the view."));
  update_selection_summary();
  parameters_->setPointCount(dataset_ ? dataset_->rows() : 0);
  view_->setPlaceholderText(dataset_ ? tr("Press Run (Ctrl+R) to embed %1.").arg(dataset_->name)
                                     : tr("Open a dataset (or the demo) and press Run to see its diffusion map."));
  view_->clearPoints();
  view_->setSelection({});
  view_->setPinned(-1);
  clearPath();
  trajectory_->setEmbedding(nullptr, nullptr);
  trajectory_stale_ = true;
  metadata_table_->clearData();
  metadata_stale_ = true;
  spectrum_->clear(tr("No embedding yet: press Run."));
  warning_bar_->hide();
  stale_bar_->hide();
  hide_localised_->setEnabled(false);
  setWindowTitle(dataset_ ? tr("%1 \u2014 Manifold Explorer").arg(dataset_->name) : tr("Manifold Explorer"));
  update_colour_choices();
  update_axis_choices();
  if (dataset_ && dataset_->suggested && !pending_session_) parameters_->setParameters(*dataset_->suggested);
  if (dataset_) {
    status_->setText(tr("%1: %2 items of %3. Press Run to embed.")
                         .arg(dataset_->name, en_number(dataset_->rows()), dataset_->itemText()));
    if (dataset_->demo) show_notice(dataset_->origin);
    if (!dataset_->notice.isEmpty()) show_notice(dataset_->notice);
  }
  update_actions();
  Q_EMIT datasetOpened();
  if (pending_session_) {
    const Session s = *pending_session_;
    pending_session_.reset();
    const std::string fingerprint = s.view.is_object() ? s.view.value("fingerprint", std::string()) : std::string();
    if (!fingerprint.empty() && dataset_ && fingerprint != dataset_->fingerprint)
      show_notice(tr("The data differ from those the session was saved with (fingerprint %1, now %2).")
                      .arg(QString::fromStdString(fingerprint), QString::fromStdString(dataset_->fingerprint)));
    RunParameters p;
    p.knn = s.knn;
    p.backend = s.backend;
    p.diffusion = s.diffusion;
    if (p.diffusion.k <= 0 || p.diffusion.k > p.knn.k) p.diffusion.k = p.knn.k;
    parameters_->setParameters(p);
    apply_view_settings(s.view);
    // The session's graph k may exceed the embedding's k (a re-embedding at
    // a smaller k); building that graph reproduces the run exactly, because
    // the k-NN selection of k' < k neighbours can differ from the first k'
    // of k where neighbours are equidistant within rounding. (The message
    // bar keeps what this opening showed: start_load cleared the older.)
    if (!pending_notice_.isEmpty()) show_notice(pending_notice_);
    pending_notice_.clear();
    adopt_pending_graph(p);
    request_run(p);
    return;
  }
  if (run) runNow();
}

void MainWindow::openSession(const QString& path) {
  try {
    start_session(read_session(path.toStdString()), {});
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
  }
}

void MainWindow::start_session(const Session& s, std::function<std::shared_ptr<const KnnGraph>()> graph) {
  if (still_loading()) return;  // before the pending state: the load under way would take it
  pending_session_ = s;
  OpenOptions options;
  options.hdf5_dataset = s.dataset;
  options.transform = s.transform;
  options.mask = s.mask;
  const QString data = QString::fromStdString(s.data);
  start_load([data, options] { return loadDataset(data, options); }, data, false, std::move(graph));
}

void MainWindow::openResults(const QString& dir) {
  try {
    ResultsFolder r = read_results_folder(dir.toStdString());
    if (r.session.data.empty())
      throw Error(QDir(dir).filePath(QStringLiteral("graph.json")).toStdString() +
                  ": it does not say which data the graph was built from (\"extra\": {\"data\": ...})");
    if (!r.missing.empty())
      throw Error(tr("%1: its %2 %3 is not there, nor beside the folder")
                      .arg(dir, r.missing.front() == r.session.data ? tr("data") : tr("mask"),
                           QString::fromStdString(r.missing.front()))
                      .toStdString());
    std::function<std::shared_ptr<const KnnGraph>()> graph;
    if (QFileInfo::exists(QDir(dir).filePath(QStringLiteral("graph.json"))))
      graph = [graph_dir = dir.toStdString()] { return std::make_shared<const KnnGraph>(read_graph(graph_dir)); };
    if (still_loading()) return;
    QStringList moved;
    for (const std::string& file : r.moved) moved << QString::fromStdString(file);
    if (!moved.isEmpty())
      pending_notice_ = tr("Read %1 beside the results: the path their session recorded is not there.")
                            .arg(moved.join(QStringLiteral(", ")));
    pending_graph_dir_ = dir;
    start_session(r.session, std::move(graph));
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
  }
}

void MainWindow::adopt_pending_graph(const RunParameters& p) {
  const std::shared_ptr<const KnnGraph> g = std::exchange(pending_graph_, nullptr);
  if (!g) return;
  QString why;
  if (!g->fingerprint.empty() && g->fingerprint != dataset_->fingerprint)
    why = tr("it was built from other data (fingerprint %1, these data %2)")
              .arg(QString::fromStdString(g->fingerprint), QString::fromStdString(dataset_->fingerprint));
  else if (g->n != dataset_->rows() || g->d != dataset_->features.cols())
    why = tr("it is of %1 points of %2 values, these data %3 of %4")
              .arg(g->n)
              .arg(g->d)
              .arg(dataset_->rows())
              .arg(dataset_->features.cols());
  else if (g->metric != p.knn.metric || g->keep_self != p.knn.keep_self || g->k < p.knn.k)
    why = tr("it is not the session's graph (k = %1, %2)").arg(g->k).arg(QString::fromStdString(to_string(g->metric)));
  if (!why.isEmpty()) {
    show_notice(tr("The graph in %1 is not used: %2. It is built anew.").arg(pending_graph_dir_, why));
    return;
  }
  runner_->adoptGraph(g, p);
}

bool MainWindow::saveSession(const QString& path) {
  if (!dataset_) {
    show_error(tr("Open a dataset before saving a session."));
    return false;
  }
  Session s;
  RunParameters p = outcome_ ? outcome_->params : parameters_->parameters();
  if (outcome_) {
    // Record the graph that was built and the k the embedding used, so the
    // CLI builds the same graph and slices it the same way.
    p.knn.k = outcome_->graph->k;
    p.diffusion.k = outcome_->result->k;
  }
  // Every backend builds the same graph; the CLI's `run` has no cluster
  // backend, so a cluster run is recorded as "auto" with the profile kept
  // in the view block.
  s.backend = p.backend == "cluster" ? "auto" : p.backend;
  s.knn = p.knn;
  s.diffusion = p.diffusion;
  s.dataset = dataset_->hdf5_dataset;
  s.transform = dataset_->transform;
  s.mask = dataset_->maskOption();  // the mask applied ("none" too), so a replay builds the same graph
  s.view = view_settings();
  save_user_columns(s);
  s.view["fingerprint"] = dataset_->fingerprint;
  if (p.backend == "cluster") s.view["cluster_profile"] = p.cluster_profile;
  try {
    const QFileInfo info(path);
    if (dataset_->path.isEmpty()) {
      // Data made in memory (the demo, a selection) go beside the session,
      // exactly as embedded, so the CLI reads the same numbers.
      const QString data_name = info.completeBaseName() + QStringLiteral(".data.npy");
      const Dataset& d = dataset_->data;
      std::vector<int64_t> shape{d.rows()};
      if (d.item_shape.size() >= 2) shape.insert(shape.end(), d.item_shape.begin(), d.item_shape.end());
      else
        shape.push_back(d.cols());
      npy::write(info.dir().filePath(data_name).toStdString(), d.data(), shape);
      s.data = data_name.toStdString();
      s.transform = "none";
      // Their mask too (a selection of masked data): it fits these frames as embedded.
      if (!dataset_->mask.empty()) {
        const QString mask_name = info.completeBaseName() + QStringLiteral(".data.mask.npy");
        npy::write(info.dir().filePath(mask_name).toStdString(), dataset_->mask.valid.data(), dataset_->mask.shape);
        s.mask = mask_name.toStdString();
      }
    } else {
      s.data = dataset_->path.toStdString();
    }
    write_session(path.toStdString(), s);
    status_->setText(tr("Session saved to %1; `manifold run --session %1 -o OUTDIR` reproduces it.").arg(path));
    return true;
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
    return false;
  }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (urls.isEmpty() || !urls.first().isLocalFile()) return;
  openFile(urls.first().toLocalFile());
  event->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  runner_->cancel();
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  QMainWindow::closeEvent(event);
}

// ---- running ---------------------------------------------------------------------

void MainWindow::runNow() {
  if (!dataset_) {
    show_error(tr("Open a dataset (or the demo) first."));
    return;
  }
  reembed_timer_.stop();
  message_bar_->hide();
  request_run(parameters_->parameters());
}

void MainWindow::request_run(const RunParameters& params) {
  requested_ = params;
  runner_->run(params);
  update_staleness();
}

void MainWindow::cancelRun() {
  reembed_timer_.stop();
  if (!runner_->busy()) return;
  runner_->cancel();
  // Progress reports still arriving from the stopping job must not overwrite this.
  cancelling_ = true;
  progress_label_->setText(tr("cancelling\u2026"));
}

void MainWindow::on_parameters_changed() {
  if (!dataset_) return;
  const RunParameters p = parameters_->parameters();
  const bool reusable = outcome_ && outcome_->dataset == dataset_ && runner_->cachedGraph(p);
  if (parameters_->autoReembed() && reusable) {
    reembed_timer_.start();
  } else {
    // A re-embedding queued by an earlier edit (the 3 of a "30" typed) must
    // not run with the parameters of this one.
    reembed_timer_.stop();
  }
  update_staleness();
}

void MainWindow::on_run_started(bool builds_graph) {
  cancelling_ = false;
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_label_->setText(builds_graph ? tr("building the k-NN graph\u2026") : tr("re-embedding\u2026"));
  // The last run's (or export's) line says nothing about this one.
  status_->setText(builds_graph ? tr("Running: building the k-NN graph, then the diffusion map\u2026")
                                : tr("Running: re-embedding on the cached graph\u2026"));
}

void MainWindow::on_progress(const ProgressInfo& info) {
  if (cancelling_) return;
  const int pct = info.percent();
  if (pct < 0) {
    progress_->setRange(0, 0);  // busy indicator: no amount of work to measure against (unknown, or a budget)
  } else {
    progress_->setRange(0, 100);
    progress_->setValue(pct);
  }
  progress_label_->setText(info.text());
}

void MainWindow::on_busy(bool busy) {
  if (!busy) cancelling_ = false;
  update_staleness();
  cancel_button_->setEnabled(busy);
  run_button_->setText(busy ? tr("Restart") : tr("Run"));
}

void MainWindow::on_preview(std::shared_ptr<const EmbeddingOutcome> outcome) {
  show_outcome(std::move(outcome));
  // The job goes on refining: its progress keeps the progress line.
  status_->setText(tr("Preview (warm start, residual %1) \u2014 refining\u2026")
                       .arg(outcome_->residual >= 0 ? QString::number(outcome_->residual, 'g', 2) : tr("unknown")));
  Q_EMIT previewShown();
}

void MainWindow::on_finished(std::shared_ptr<const EmbeddingOutcome> outcome) {
  show_outcome(std::move(outcome));
  Q_EMIT embeddingShown();
}

void MainWindow::show_outcome(std::shared_ptr<const EmbeddingOutcome> outcome) {
  const bool first = !outcome_ || outcome_->dataset != outcome->dataset || outcome_->result->m != outcome->result->m;
  outcome_ = std::move(outcome);
  const DiffusionResult& r = *outcome_->result;
  embedded_of_row_.assign(static_cast<size_t>(dataset_->rows()), -1);
  for (int64_t e = 0; e < r.n; ++e) embedded_of_row_[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])] = e;
  if (!outcome_->preview) {
    progress_->setRange(0, 100);
    progress_->setValue(100);
  }
  QString how = outcome_->retimed ? tr("rescaled to t = %1 (no eigensolve)").arg(outcome_->params.diffusion.t)
                : outcome_->graph_reused
                    ? tr("graph reused (k = %1 of %2)").arg(outcome_->result->k).arg(outcome_->graph->k)
                    : tr("graph %1 on %2")
                          .arg(seconds_text(outcome_->knn_seconds), QString::fromStdString(outcome_->graph->backend));
  if (!outcome_->preview)
    progress_label_->setText(tr("done in %1 \u00b7 %2").arg(seconds_text(outcome_->total_seconds), how));
  status_->setText(tr("Embedded %1 points in %2; \u03b5 = %3.")
                       .arg(en_number(r.n),
                            r.m == 1 ? tr("one diffusion coordinate") : tr("%1 diffusion coordinates").arg(r.m))
                       .arg(r.epsilon, 0, 'g', 4));
  parameters_->showEpsilonResult(r.epsilon, r.bgh);
  show_diagnostics();
  if (first) update_colour_choices();
  update_axis_choices();
  update_spectrum();
  update_view(first);
  // The pinned image's caption shows its coordinates in this embedding.
  if (pinned_row_ >= 0) image_panel_->setPinned(pinned_row_, point_details(pinned_row_));
  if (!outcome_->preview) {
    update_sort_choices();
    trajectory_stale_ = true;
    update_trajectory();
    metadata_stale_ = true;
    update_metadata_table();
  }
  update_staleness();
  update_actions();
}

void MainWindow::show_diagnostics() {
  const EmbeddingDiagnostics& d = outcome_->result->diagnostics;
  QStringList lines;
  // The view draws only the embedded points; no point_index.npy is in sight.
  for (const std::string& w : diagnostic_warnings(*outcome_->result, d, EmbeddedPointsShown::DrawnInView))
    lines << QStringLiteral("\u26a0 ") + guiWords(QString::fromStdString(w));
  warning_text_->setText(lines.join('\n'));
  warning_bar_->setVisible(!lines.isEmpty());
  QStringList localised;
  for (int c : d.localised) localised << QStringLiteral("\u03c8%1").arg(c);
  hide_localised_->setEnabled(!localised.isEmpty());
  hide_localised_
      ->setToolTip(localised.isEmpty()
                       ? tr("No coordinate of this embedding is localised (carried by only a few points).")
                       : tr("Leave %1 off the axes: each is carried by fewer than %2 points, so it singles out "
                            "a few outliers rather than the shape of the data.")
                             .arg(localised.join(QStringLiteral(", ")))
                             .arg(d.localised_below, 0, 'g', 3));
}

void MainWindow::on_failed(const QString& message) {
  // A warm-start preview on show is an unconverged iterate of the very solve
  // that failed: the view goes back to the last converged embedding.
  if (outcome_ && outcome_->preview && runner_->current() && runner_->current()->dataset == dataset_)
    show_outcome(runner_->current());
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_label_->setText(outcome_ ? tr("failed \u00b7 the previous embedding is kept") : tr("failed"));
  show_error(guiWords(message));
}

void MainWindow::on_cancelled() {
  progress_->setRange(0, 100);
  progress_->setValue(0);
  const double latency = runner_->lastCancelLatency();
  progress_label_->setText(latency >= 0 ? tr("cancelled (stopped after %1)").arg(seconds_text(latency))
                                        : tr("cancelled"));
  status_->setText(!outcome_           ? tr("Cancelled: nothing was computed.")
                   : outcome_->preview ? tr("Cancelled: showing the warm-start preview (residual %1); press Run "
                                            "for the exact embedding.")
                                             .arg(outcome_->residual, 0, 'g', 2)
                                       : tr("Cancelled: the previous embedding is unchanged."));
}

}  // namespace manifold::ui
