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

#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "manifold/session.h"
#include "manifold/ui/exporters.h"

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
    if (dataset_) runner_->run(parameters_->parameters());
  });

  connect(runner_, &JobRunner::started, this, &MainWindow::on_run_started);
  connect(runner_, &JobRunner::progressed, this, &MainWindow::on_progress);
  connect(runner_, &JobRunner::finished, this, &MainWindow::on_finished);
  connect(runner_, &JobRunner::previewReady, this, &MainWindow::on_preview);
  connect(runner_, &JobRunner::failed, this, &MainWindow::on_failed);
  connect(runner_, &JobRunner::cancelled, this, &MainWindow::on_cancelled);
  connect(runner_, &JobRunner::busyChanged, this, &MainWindow::on_busy);
  connect(parameters_, &ParameterPanel::changed, this, &MainWindow::on_parameters_changed);
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
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open dataset"), QString(),
        tr("Datasets (*.npy *idx3-ubyte *idx3-ubyte.gz *.idx *.tif *.tiff *.mrc *.mrcs *.h5 *.hdf5 *.cxi);;"
           "All files (*)"));
    if (!path.isEmpty()) openFile(path);
  });
  connect(dataset_panel_, &DatasetPanel::demoRequested, this, [this] { openDemo(true); });
  connect(dataset_panel_, &DatasetPanel::imageActivated, this, [this](qint64 row) { pin_row(row); });
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

QWidget* MainWindow::build_view_area() {
  auto* area = new QWidget(this);
  auto* layout = new QVBoxLayout(area);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(3);

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
  layout->addWidget(message_bar_);

  // View controls: axes, 2-D/3-D, colouring, point size, tools. A tool bar
  // folds what does not fit behind its extension button instead of
  // widening the window.
  auto* controls = new QToolBar(area);
  controls->setIconSize(QSize(18, 18));
  auto spacing = [controls, area](int px) {
    auto* gap = new QWidget(area);
    gap->setFixedWidth(px);
    controls->addWidget(gap);
  };
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
  connect(planar_, &QCheckBox::toggled, this, [this](bool on) {
    axis_[2]->setEnabled(!on);
    if (!updating_controls_) update_view(true);
  });
  spacing(8);
  controls->addWidget(new QLabel(tr("Colour"), area));
  colour_by_ = new QComboBox(area);
  colour_by_->setToolTip(tr("Colour the points by a diffusion coordinate, the dataset's labels or other "
                            "per-image values"));
  colour_by_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  colour_by_->setMinimumContentsLength(16);
  controls->addWidget(colour_by_);
  connect(colour_by_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_controls_) return;
    colour_key_ = colour_by_->currentData().toString();
    update_colours();
  });
  controls->addWidget(new QLabel(tr("Size"), area));
  point_size_ = new QDoubleSpinBox(area);
  point_size_->setRange(1, 20);
  point_size_->setDecimals(0);
  point_size_->setValue(3);
  point_size_->setToolTip(tr("Point size in pixels"));
  controls->addWidget(point_size_);
  connect(point_size_, &QDoubleSpinBox::valueChanged, view_, &EmbeddingView::setPointSize);
  view_->setPointSize(3);
  spacing(8);
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
  tool_navigate_ = make_tool(tr("Rotate"), QStringLiteral(":/icons/rotate.png"), tr("Rotate (left drag), pan (middle drag), zoom (wheel or right "
                                              "drag); hover a point to see its image, click to pin it"),
                             EmbeddingView::Tool::Navigate);
  tool_rectangle_ = make_tool(tr("Rectangle"), QStringLiteral(":/icons/select-rectangle.png"), tr("Select the points in a rectangle (Shift adds, Ctrl removes)"),
                              EmbeddingView::Tool::RectangleSelect);
  tool_lasso_ = make_tool(tr("Lasso"), QStringLiteral(":/icons/select-lasso.png"), tr("Select the points inside a free-hand outline (Shift adds, Ctrl removes)"),
                          EmbeddingView::Tool::LassoSelect);
  tool_navigate_->setChecked(true);
  auto* reset = new QToolButton(area);
  reset->setText(tr("Reset view"));
  reset->setIcon(QIcon(QStringLiteral(":/icons/reset-view.png")));
  reset->setToolButtonStyle(Qt::ToolButtonIconOnly);
  reset->setToolTip(tr("Fit every point in the view (R)"));
  connect(reset, &QToolButton::clicked, view_, &EmbeddingView::resetCamera);
  controls->addWidget(reset);
  layout->addWidget(controls);

  // The shown embedding's diagnostics, right above it: they say how far to
  // trust what is drawn, so they stay while it does (a failed run after it
  // included) and go when it goes. The remedy for localised coordinates sits
  // beside them (the tool bar above is full).
  warning_bar_ = new QFrame(area);
  warning_bar_->setObjectName(QStringLiteral("warningBar"));
  warning_bar_->setAutoFillBackground(true);
  {
    QPalette pal = warning_bar_->palette();
    pal.setColor(QPalette::Window, QColor(250, 240, 200));
    pal.setColor(QPalette::WindowText, QColor(80, 60, 0));
    warning_bar_->setPalette(pal);
  }
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
  warning_bar_->hide();
  layout->addWidget(warning_bar_);

  layout->addWidget(view_, 1);

  // Run bar.
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
  layout->addLayout(run_bar);
  connect(run_button_, &QPushButton::clicked, this, &MainWindow::runNow);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancelRun);
  return area;
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
  dock(tr("Spectrum"), QStringLiteral("spectrumDock"), spectrum_, Qt::RightDockWidgetArea);
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
  auto* buttons = new QHBoxLayout;
  auto* as_dataset = new QPushButton(tr("Embed selection"), selection);
  as_dataset->setToolTip(tr("Open the selected images as a dataset of their own and embed them"));
  auto* clear = new QPushButton(tr("Clear"), selection);
  buttons->addWidget(as_dataset);
  buttons->addWidget(clear);
  buttons->addStretch();
  layout->addLayout(buttons);
  connect(clear, &QPushButton::clicked, this, [this] { setSelectedRows({}); });
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
                              tr("%1 selected images of %2").arg(rows.size()).arg(source->name), false,
                              std::move(meta));
        },
        tr("the selection"), true);
  });
  dock(tr("Selection"), QStringLiteral("selectionDock"), selection, Qt::RightDockWidgetArea);
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open Dataset\u2026"), this, [this] { Q_EMIT dataset_panel_->openRequested(); });
  open->setShortcut(QKeySequence::Open);
  file->addAction(QIcon(QStringLiteral(":/icons/demo.png")), tr("Open &Demo"), this, [this] { openDemo(true); });
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::fill_recent_menu);
  file->addSeparator();
  file->addAction(tr("Open &Session\u2026"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), QString(),
                                                      tr("Sessions (*.json);;All files (*)"));
    if (!path.isEmpty()) openSession(path);
  });
  save_session_action_ = file->addAction(tr("Save Session\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Save session"), tr("Sessions (*.json)"), ".json");
    if (!path.isEmpty()) saveSession(path);
  });
  QMenu* exp = file->addMenu(tr("&Export"));
  export_graph_action_ = exp->addAction(tr("Graph (NumPy folder)\u2026"), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export graph into folder"));
    if (!dir.isEmpty()) exportGraph(dir);
  });
  export_mtx_action_ = exp->addAction(tr("Graph (MatrixMarket)\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Export graph"), tr("MatrixMarket (*.mtx)"), ".mtx");
    if (!path.isEmpty()) exportGraph(path);
  });
  export_embedding_action_ = exp->addAction(tr("Embedding\u2026"), this, [this] {
    QString filter;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export embedding"), QString(),
        tr("NumPy (*.npy);;CSV (*.csv);;VTK PolyData (*.vtp);;Folder with every format (*)"), &filter);
    if (!path.isEmpty()) exportEmbedding(path);
  });
  export_selection_action_ = exp->addAction(tr("Selection (indices)\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Export selected indices"), tr("NumPy (*.npy)"), ".npy");
    if (!path.isEmpty()) exportSelectionIndices(path);
  });
  export_images_action_ = exp->addAction(tr("Selected images\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Export selected images"), tr("NumPy (*.npy)"), ".npy");
    if (!path.isEmpty()) exportSelectionImages(path);
  });
  export_screenshot_action_ = exp->addAction(tr("Screenshot of the view\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Save screenshot"), tr("PNG image (*.png)"), ".png");
    if (!path.isEmpty()) exportScreenshot(path);
  });
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  auto* run_action = run->addAction(tr("&Run"), this, &MainWindow::runNow);
  run_action->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_R), QKeySequence(Qt::Key_F5)});
  auto* cancel_action = run->addAction(tr("&Cancel"), this, &MainWindow::cancelRun);
  cancel_action->setShortcut(QKeySequence(Qt::Key_Escape));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("Reset Camera"), view_, &EmbeddingView::resetCamera);
  view->addAction(tr("2-D / 3-D"), this, [this] { planar_->toggle(); });
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About Manifold Explorer"),
                       tr("<b>Manifold Explorer</b><p>Exact k-nearest-neighbour graphs of image stacks and "
                          "their diffusion maps.</p><p>Mouse: left drag rotates (pans in 2-D), middle drag "
                          "pans, wheel or right drag zooms, R resets. Hover a point to see its image, "
                          "click to pin it.</p>"));
  });
}

void MainWindow::fill_recent_menu() {
  recent_menu_->clear();
  const QStringList files = recentFiles();
  if (files.isEmpty()) recent_menu_->addAction(tr("(none)"))->setEnabled(false);
  for (const QString& f : files) recent_menu_->addAction(f, this, [this, f] { openFile(f); });
}

QString MainWindow::ask_save_path(const QString& title, const QString& filter, const QString& suffix) {
  QString path = QFileDialog::getSaveFileName(this, title, QString(), filter);
  if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty()) path += suffix;
  return path;
}

void MainWindow::update_actions() {
  const bool has_result = outcome_ != nullptr;
  const bool has_selection = !selected_rows_.empty();
  export_graph_action_->setEnabled(has_result);
  export_mtx_action_->setEnabled(has_result);
  export_embedding_action_->setEnabled(has_result);
  export_screenshot_action_->setEnabled(has_result);
  export_selection_action_->setEnabled(has_selection);
  export_images_action_->setEnabled(has_selection);
  save_session_action_->setEnabled(dataset_ != nullptr);
  run_button_->setEnabled(dataset_ != nullptr && !load_watcher_.isRunning());
}

bool MainWindow::messageBarVisible() const { return message_bar_->isVisible(); }

QString MainWindow::warningText() const { return warning_bar_->isHidden() ? QString() : warning_text_->text(); }

void MainWindow::show_error(const QString& message) {
  last_error_ = message;
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
  QPalette pal = message_bar_->palette();
  pal.setColor(QPalette::Window, QColor(250, 240, 200));
  pal.setColor(QPalette::WindowText, QColor(80, 60, 0));
  message_bar_->setPalette(pal);
  message_text_->setText(message);
  message_bar_->show();
}

// ---- opening ---------------------------------------------------------------------

void MainWindow::start_load(std::function<std::shared_ptr<const LoadedDataset>()> load, const QString& what,
                            bool run) {
  if (load_watcher_.isRunning()) {
    show_error(tr("Still opening the previous dataset; try again in a moment."));
    return;
  }
  run_after_load_ = run;
  message_bar_->hide();
  status_->setText(tr("Opening %1\u2026").arg(what));
  progress_->setRange(0, 0);
  progress_label_->setText(tr("reading %1").arg(what));
  load_watcher_.setFuture(QtConcurrent::run([load, what]() -> LoadResult {
    LoadResult r;
    try {
      r.dataset = load();
    } catch (const std::bad_alloc&) {
      r.error = tr("%1: out of memory while reading it").arg(what);
    } catch (const std::exception& e) {
      r.error = QString::fromStdString(e.what());
    }
    return r;
  }));
  update_actions();
}

void MainWindow::openFile(const QString& path) {
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
  if (!r.dataset) {
    pending_session_.reset();
    update_actions();
    show_error(r.error.isEmpty() ? tr("The dataset could not be read.") : r.error);
    return;
  }
  if (!r.dataset->path.isEmpty()) addRecentFile(r.dataset->path);
  openDataset(r.dataset, run_after_load_);
}

void MainWindow::openDataset(std::shared_ptr<const LoadedDataset> ds, bool run) {
  dataset_ = std::move(ds);
  outcome_.reset();
  embedded_of_row_.clear();
  selected_rows_.clear();
  pinned_row_ = -1;
  runner_->setDataset(dataset_);
  dataset_panel_->setDataset(dataset_);
  image_panel_->setDataset(dataset_);
  selection_model_->setDataset(dataset_);
  selection_model_->setRows({});
  selection_label_->setText(tr("No points selected. Use the Rectangle or Lasso tool in the view."));
  parameters_->setPointCount(dataset_ ? dataset_->rows() : 0);
  view_->clearPoints();
  view_->setSelection({});
  view_->setPinned(-1);
  spectrum_->clear(tr("No embedding yet: press Run."));
  warning_bar_->hide();
  hide_localised_->setEnabled(false);
  setWindowTitle(dataset_ ? tr("%1 \u2014 Manifold Explorer").arg(dataset_->name) : tr("Manifold Explorer"));
  update_colour_choices();
  update_axis_choices();
  if (dataset_ && dataset_->suggested && !pending_session_) parameters_->setParameters(*dataset_->suggested);
  if (dataset_) {
    status_->setText(tr("%1: %2 items of %3 values. Press Run to embed.")
                         .arg(dataset_->name, en_number(dataset_->rows()), en_number(dataset_->data.cols())));
    if (dataset_->demo) show_notice(dataset_->origin);
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
    // of k where neighbours are equidistant within rounding.
    message_bar_->hide();
    runner_->run(p);
    return;
  }
  if (run) runNow();
}

void MainWindow::openSession(const QString& path) {
  try {
    Session s = read_session(path.toStdString());
    pending_session_ = s;
    OpenOptions options;
    options.hdf5_dataset = s.dataset;
    options.transform = s.transform;
    const QString data = QString::fromStdString(s.data);
    start_load([data, options] { return loadDataset(data, options); }, data, false);
  } catch (const std::exception& e) {
    show_error(QString::fromStdString(e.what()));
  }
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
  s.view = view_settings();
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
      if (d.item_shape.size() >= 2)
        shape.insert(shape.end(), d.item_shape.begin(), d.item_shape.end());
      else
        shape.push_back(d.cols());
      npy::write(info.dir().filePath(data_name).toStdString(), d.data(), shape);
      s.data = data_name.toStdString();
      s.transform = "none";
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
  const QString path = urls.first().toLocalFile();
  if (path.endsWith(".json", Qt::CaseInsensitive))
    openSession(path);
  else
    openFile(path);
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
  runner_->run(parameters_->parameters());
}

void MainWindow::cancelRun() {
  reembed_timer_.stop();
  if (!runner_->busy()) return;
  runner_->cancel();
  progress_label_->setText(tr("cancelling\u2026"));
}

void MainWindow::on_parameters_changed() {
  if (!dataset_) return;
  const RunParameters p = parameters_->parameters();
  const bool reusable = outcome_ && outcome_->dataset == dataset_ && runner_->cachedGraph(p);
  if (parameters_->autoReembed() && reusable) {
    reembed_timer_.start();
  } else if (outcome_) {
    status_->setText(reusable ? tr("Parameters changed: press Run to re-embed.")
                              : tr("Parameters changed: press Run to rebuild the graph and re-embed."));
  }
}

void MainWindow::on_run_started(bool builds_graph) {
  progress_->setRange(0, 100);
  progress_->setValue(0);
  progress_label_->setText(builds_graph ? tr("building the k-NN graph\u2026") : tr("re-embedding\u2026"));
}

void MainWindow::on_progress(const ProgressInfo& info) {
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
  const bool first = !outcome_ || outcome_->dataset != outcome->dataset ||
                     outcome_->result->m != outcome->result->m;
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
                    : tr("graph %1 on %2").arg(seconds_text(outcome_->knn_seconds),
                                               QString::fromStdString(outcome_->graph->backend));
  if (!outcome_->preview)
    progress_label_->setText(tr("done in %1 \u00b7 %2").arg(seconds_text(outcome_->total_seconds), how));
  status_->setText(tr("Embedded %1 points in %2 diffusion coordinates; \u03b5 = %3.")
                       .arg(en_number(r.n))
                       .arg(r.m)
                       .arg(r.epsilon, 0, 'g', 4));
  parameters_->showEpsilonResult(r.epsilon, r.bgh);
  show_diagnostics();
  if (first) update_colour_choices();
  update_axis_choices();
  update_spectrum();
  update_view(first);
  update_actions();
}

void MainWindow::show_diagnostics() {
  const EmbeddingDiagnostics& d = outcome_->result->diagnostics;
  QStringList lines;
  for (const std::string& w : d.warnings) lines << QStringLiteral("\u26a0 ") + QString::fromStdString(w);
  warning_text_->setText(lines.join('\n'));
  warning_bar_->setVisible(!lines.isEmpty());
  QStringList localised;
  for (int c : d.localised) localised << QStringLiteral("\u03c8%1").arg(c);
  hide_localised_->setEnabled(!localised.isEmpty());
  hide_localised_->setToolTip(
      localised.isEmpty() ? tr("No coordinate of this embedding is localised (carried by only a few points).")
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
  show_error(message);
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

// ---- the view ----------------------------------------------------------------------

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
  // An axis keeps its coordinate while that is still offered (the user's
  // choice); the others take the first offered ones not on an axis yet, in
  // order, repeating the last when fewer than three are offered.
  int previous[3];
  for (int i = 0; i < 3; ++i) previous[i] = axis_[i]->currentData().toInt();
  auto is_offered = [&](int c) { return std::find(offered.begin(), offered.end(), c) != offered.end(); };
  int chosen[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i)
    if (is_offered(previous[i]) && std::find(chosen, chosen + i, previous[i]) == chosen + i) chosen[i] = previous[i];
  for (int i = 0; i < 3 && !offered.empty(); ++i) {
    if (chosen[i] != 0) continue;
    auto free = std::find_if(offered.begin(), offered.end(),
                             [&](int c) { return std::find(chosen, chosen + 3, c) == chosen + 3; });
    chosen[i] = free != offered.end() ? *free : offered.back();
  }
  for (int i = 0; i < 3; ++i) {
    axis_[i]->clear();
    for (int c : offered) axis_[i]->addItem(QStringLiteral("\u03c8%1").arg(c), c);
    axis_[i]->setCurrentIndex(std::max(0, axis_[i]->findData(chosen[i])));
  }
  updating_controls_ = false;
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
    // Labels say most when a dataset has them, the known angle for the demo,
    // else the first diffusion coordinate.
    for (const QString& fallback : {tr("label"), tr("rotation angle (deg)"), QStringLiteral("dc1")})
      if ((idx = colour_by_->findData(fallback)) >= 0) break;
    if (idx < 0) idx = 0;
    if (m > 0) colour_key_ = colour_by_->itemData(idx).toString();
  }
  colour_by_->setCurrentIndex(idx);
  updating_controls_ = false;
}

void MainWindow::setAxes(int x, int y, int z, bool planar) {
  updating_controls_ = true;
  const int v[3] = {x, y, z};
  for (int i = 0; i < 3; ++i) {
    const int idx = axis_[i]->findData(v[i]);
    if (idx >= 0) axis_[i]->setCurrentIndex(idx);
  }
  planar_->setChecked(planar);
  axis_[2]->setEnabled(!planar);
  updating_controls_ = false;
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
  const int choices = axis_[0]->count();
  const bool planar = planar_->isChecked() || choices < 3;
  int ax[3];
  QStringList titles;
  for (int i = 0; i < 3; ++i) {
    ax[i] = std::clamp(axis_[i]->currentData().toInt(), 1, r.m);
    // VTK's built-in font has no Greek letters.
    titles << QStringLiteral("psi %1").arg(ax[i]);
  }
  std::vector<float> xyz(static_cast<size_t>(r.n) * 3);
  for (int64_t e = 0; e < r.n; ++e) {
    const double* c = r.coordinates.data() + e * r.m;
    xyz[3 * e] = static_cast<float>(c[ax[0] - 1]);
    xyz[3 * e + 1] = choices >= 2 ? static_cast<float>(c[ax[1] - 1]) : 0.f;
    xyz[3 * e + 2] = planar ? 0.f : static_cast<float>(c[ax[2] - 1]);
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
      for (int64_t e = 0; e < r.n; ++e) colours.values[static_cast<size_t>(e)] = static_cast<float>(r.coordinates[e * r.m + c - 1]);
      colours.title = QStringLiteral("psi %1").arg(c);
    }
  } else {
    for (const PointMetadata& meta : dataset_->metadata)
      if (meta.name == colour_key_) {
        colours.values.resize(static_cast<size_t>(r.n));
        for (int64_t e = 0; e < r.n; ++e)
          colours.values[static_cast<size_t>(e)] = meta.values[static_cast<size_t>(r.point_index[static_cast<size_t>(e)])];
        colours.title = meta.name;
        colours.categorical = meta.categorical;
      }
  }
  view_->setColours(colours);
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
  if (dataset_) rows.erase(std::remove_if(rows.begin(), rows.end(), [this](int64_t r) { return r < 0 || r >= dataset_->rows(); }), rows.end());
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
  selection_model_->setRows(selected_rows_);
  selection_label_->setText(selected_rows_.empty()
                                ? tr("No points selected. Use the Rectangle or Lasso tool in the view.")
                                : tr("%1 points selected (Shift adds, Ctrl removes).").arg(en_number(
                                      static_cast<int64_t>(selected_rows_.size()))));
  update_actions();
}

nlohmann::json MainWindow::view_settings() const {
  return {{"axes", {axis_[0]->currentData().toInt(), axis_[1]->currentData().toInt(), axis_[2]->currentData().toInt()}},
          {"planar", planar_->isChecked()},
          {"hide_localised", hide_localised_->isChecked()},
          {"colour_by", colour_key_.toStdString()},
          {"point_size", point_size_->value()}};
}

void MainWindow::apply_view_settings(const nlohmann::json& v) {
  if (!v.is_object()) return;
  updating_controls_ = true;
  if (v.contains("planar") && v["planar"].is_boolean()) planar_->setChecked(v["planar"].get<bool>());
  if (v.contains("hide_localised") && v["hide_localised"].is_boolean())
    hide_localised_->setChecked(v["hide_localised"].get<bool>());
  if (v.contains("point_size") && v["point_size"].is_number()) point_size_->setValue(v["point_size"].get<double>());
  if (v.contains("colour_by") && v["colour_by"].is_string()) colour_key_ = QString::fromStdString(v["colour_by"].get<std::string>());
  updating_controls_ = false;
  if (v.contains("axes") && v["axes"].is_array() && v["axes"].size() == 3) {
    // The axis lists fill once the embedding exists; keep the wish until then.
    const auto axes = v["axes"].get<std::vector<int>>();
    auto apply = std::make_shared<QMetaObject::Connection>();
    *apply = connect(this, &MainWindow::embeddingShown, this, [this, axes, apply] {
      disconnect(*apply);
      setAxes(axes[0], axes[1], axes[2], planar_->isChecked());
    });
  }
}

// ---- exports ---------------------------------------------------------------------

void MainWindow::start_export(const QString& what, std::function<QStringList()> work) {
  if (export_watcher_.isRunning()) {
    show_error(tr("An export is still running; try again when it has finished."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  status_->setText(tr("Exporting %1\u2026").arg(what));
  export_watcher_.setFuture(QtConcurrent::run([work]() -> ExportResult {
    ExportResult r;
    try {
      r.files = work();
      r.ok = true;
    } catch (const std::bad_alloc&) {
      r.error = tr("Out of memory while exporting.");
    } catch (const std::exception& e) {
      r.error = QString::fromStdString(e.what());
    }
    return r;
  }));
}

void MainWindow::exportGraph(const QString& path) {
  if (!outcome_) {
    show_error(tr("Run first: there is no graph to export."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  auto graph = outcome_->graph;
  const int k = outcome_->result->k;  // the neighbours the embedding used
  if (path.endsWith(".mtx", Qt::CaseInsensitive))
    start_export(tr("the graph"), [graph, k, path] {
      exportGraphMatrixMarket(path, *graph, k);
      return QStringList{path};
    });
  else
    start_export(tr("the graph"), [graph, k, path] {
      exportGraphDirectory(path, *graph, k);
      return QStringList{path + "/indices.npy", path + "/distances.npy", path + "/graph.json"};
    });
}

void MainWindow::exportEmbedding(const QString& path) {
  if (!outcome_) {
    show_error(tr("Run first: there is no embedding to export."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  auto outcome = outcome_;
  start_export(tr("the embedding"), [outcome, path] {
    DiffusionParams dp = outcome->params.diffusion;
    dp.k = outcome->result->k;
    nlohmann::json graph_meta = graph_metadata(*outcome->graph);
    return ui::exportEmbedding(path, *outcome->result, dp, graph_meta);
  });
}

void MainWindow::exportSelectionIndices(const QString& path) {
  auto rows = selected_rows_;
  start_export(tr("the selection"), [rows, path] {
    ui::exportSelectionIndices(path, rows);
    return QStringList{path};
  });
}

void MainWindow::exportSelectionImages(const QString& path) {
  if (!dataset_) {
    show_error(tr("Open a dataset first."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  auto rows = selected_rows_;
  auto ds = dataset_;
  start_export(tr("the selected images"), [rows, ds, path] {
    ui::exportSelectionImages(path, *ds, rows);
    return QStringList{path};
  });
}

void MainWindow::exportScreenshot(const QString& path) {
  if (view_->pointCount() == 0) {
    show_error(tr("Nothing to capture: the view is empty."));
    Q_EMIT exportFinished(false, {last_error_});
    return;
  }
  const QImage frame = view_->renderFrame();
  start_export(tr("the screenshot"), [frame, path] {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !frame.save(&file, "PNG") || !file.commit())
      throw Error(path.toStdString() + ": cannot write the PNG (" + file.errorString().toStdString() + ")");
    return QStringList{path};
  });
}

}  // namespace manifold::ui
