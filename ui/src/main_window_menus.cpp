// The main window's menus and the actions they enable (split from
// main_window.cpp: the window is built in phases, one file each).
#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QDockWidget>
#include <QRegularExpression>

#include "manifold/ui/file_dialogs.h"
#include "manifold/ui/main_window.h"

namespace manifold::ui {

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open Dataset\u2026"), this, [this] { Q_EMIT dataset_panel_->openRequested(); });
  open->setShortcut(QKeySequence::Open);
  auto* open_folder = file->addAction(tr("Open &Folder\u2026"), this, [this] {
    const QString dir = askFolder(this, tr("Open a folder of PNG or TIFF images, or one `manifold run` or `knn` wrote"),
                                  QStringLiteral("datasets"), false);
    if (!dir.isEmpty()) openFile(dir);
  });
  open_folder->setObjectName(QStringLiteral("openFolderAction"));
  open_folder->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
  open_folder
      ->setToolTip(tr("A folder of same-sized images (*.png, *.tif, *.tiff) is one dataset, one row per image; "
                      "a folder `manifold run` or `knn` wrote opens with the graph it holds"));
  file->addAction(QIcon(QStringLiteral(":/icons/demo.png")), tr("Open &Demo"), this, [this] { openDemo(true); });
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::fill_recent_menu);
  file->addSeparator();
  load_metadata_action_ = file->addAction(tr("Load &Metadata\u2026"), this, &MainWindow::chooseMetadataFile);
  load_metadata_action_->setObjectName(QStringLiteral("loadMetadataAction"));
  load_metadata_action_
      ->setToolTip(tr("Add per-image columns (angles, classes, run numbers) from a file anywhere: "
                      ".npy, .csv/.tsv, a dataset of an HDF5/CXI file, MNIST labels"));
  file->addAction(tr("Open &Session\u2026"), this, [this] {
    const QString path = askOpenFile(this, tr("Open session"), tr("Sessions (*.json);;All files (*)"),
                                     QStringLiteral("sessions"));
    if (!path.isEmpty()) openSession(path);
  });
  save_session_action_ = file->addAction(tr("Save Session\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Save session"), tr("Sessions (*.json)"), ".json", QStringLiteral("sessions"),
                                       QStringLiteral("session.json"));
    if (!path.isEmpty()) saveSession(path);
  });
  build_export_menu(file->addMenu(tr("&Export")));
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  auto* run_action = run->addAction(tr("&Run"), this, &MainWindow::runNow);
  run_action->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_R), QKeySequence(Qt::Key_F5)});
  auto* cancel_action = run->addAction(tr("&Cancel"), this, &MainWindow::cancelRun);
  cancel_action->setShortcut(QKeySequence(Qt::Key_Escape));
  run->addSeparator();
  run->addAction(tr("Cluster &Profile\u2026"), this, &MainWindow::editClusterProfile);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  auto* reset = view->addAction(tr("Reset Camera"), view_, &EmbeddingView::resetCamera);
  reset->setShortcut(QKeySequence(Qt::Key_R));
  reset->setShortcutContext(Qt::WidgetShortcut);  // the view handles R itself; listed for the shortcuts list
  // Fewer than three coordinates are flat either way (the switch is disabled).
  view->addAction(tr("2-D / 3-D"), this, [this] {
    if (planar_->isEnabled()) planar_->toggle();
  });
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  auto* manual = help->addAction(tr("&Manual"), this, &MainWindow::showManual);
  manual->setShortcut(QKeySequence::HelpContents);
  help->addAction(tr("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
  help->addSeparator();
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About Manifold Explorer"),
                       tr("<b>Manifold Explorer</b><p>Exact k-nearest-neighbour graphs of image stacks and "
                          "their diffusion maps.</p><p>Help \u25b8 Manual explains every panel; Help \u25b8 "
                          "Keyboard Shortcuts lists the keys and the mouse.</p>"));
  });
}

void MainWindow::build_export_menu(QMenu* exp) {
  // Each export suggests a file name after the dataset, in the folder the
  // last export went to (never the dataset's own folder, which may be read-only).
  export_graph_action_ = exp->addAction(tr("Graph (NumPy folder)\u2026"), this, [this] {
    const QString dir = ask_save_path(tr("Export graph into a new folder"), tr("Folder (*)"), QString(),
                                      QStringLiteral("exports"), suggested_name(QStringLiteral("-graph")));
    if (!dir.isEmpty()) exportGraph(dir);
  });
  export_mtx_action_ = exp->addAction(tr("Graph (MatrixMarket)\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Export graph"), tr("MatrixMarket (*.mtx)"), ".mtx",
                                       QStringLiteral("exports"), suggested_name(QStringLiteral("-graph.mtx")));
    if (!path.isEmpty()) exportGraph(path);
  });
  export_embedding_action_ = exp->addAction(tr("Embedding\u2026"), this, [this] {
    const QString path =
        ask_save_path(tr("Export embedding"),
                      tr("NumPy (*.npy);;CSV (*.csv);;VTK PolyData (*.vtp);;Folder with every format (*)"), QString(),
                      QStringLiteral("exports"), suggested_name(QStringLiteral("-embedding.npy")));
    if (!path.isEmpty()) exportEmbedding(path);
  });
  export_selection_action_ = exp->addAction(tr("Selection (indices)\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Export selected indices"), tr("NumPy (*.npy)"), ".npy",
                                       QStringLiteral("exports"), suggested_name(QStringLiteral("-selection.npy")));
    if (!path.isEmpty()) exportSelectionIndices(path);
  });
  export_images_action_ = exp->addAction(tr("Selected images\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Export selected images"), tr("NumPy (*.npy)"), ".npy",
                                       QStringLiteral("exports"),
                                       suggested_name(QStringLiteral("-selected-images.npy")));
    if (!path.isEmpty()) exportSelectionImages(path);
  });
  export_screenshot_action_ = exp->addAction(tr("Screenshot of the view\u2026"), this, [this] {
    const QString path = ask_save_path(tr("Save screenshot"), tr("PNG image (*.png)"), ".png",
                                       QStringLiteral("exports"), suggested_name(QStringLiteral("-view.png")));
    if (!path.isEmpty()) exportScreenshot(path);
  });
}

QString MainWindow::suggested_name(const QString& ending) const {
  QString stem = dataset_ ? QFileInfo(dataset_->name).completeBaseName() : QStringLiteral("manifold");
  // A name made in memory ("Demo: ubiquitin diffraction") becomes a plain file name.
  stem.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]+")), QStringLiteral("-"));
  stem = stem.section(QLatin1Char('-'), 0, -1, QString::SectionSkipEmpty);
  if (stem.isEmpty()) stem = QStringLiteral("manifold");
  return stem + ending;
}

void MainWindow::fill_recent_menu() {
  recent_menu_->clear();
  const QStringList files = recentFiles();
  if (files.isEmpty()) recent_menu_->addAction(tr("(none)"))->setEnabled(false);
  for (const QString& f : files) recent_menu_->addAction(f, this, [this, f] { openFile(f); });
}

QString MainWindow::ask_save_path(const QString& title, const QString& filter, const QString& suffix,
                                  const QString& key, const QString& file_name) {
  return askSavePath(this, title, filter, suffix, key, file_name);
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
  load_metadata_action_->setEnabled(dataset_ != nullptr);
  run_button_->setEnabled(dataset_ != nullptr && !load_watcher_.isRunning());
}

}  // namespace manifold::ui
