// Help ▸ Manual and Help ▸ Keyboard Shortcuts, and Run ▸ Cluster Profile.
#include <QAction>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QMenuBar>
#include <QTableWidget>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QVBoxLayout>

#include "manifold/ui/cluster_profile_dialog.h"
#include "manifold/ui/main_window.h"

namespace manifold::ui {
namespace {

/// Scales the document's images (the window screenshots) to at most `width`
/// pixels wide, so the manual reads without scrolling sideways.
void fit_images(QTextDocument* document, int width) {
  for (QTextBlock block = document->begin(); block.isValid(); block = block.next())
    for (auto it = block.begin(); !it.atEnd(); ++it) {
      const QTextFragment fragment = it.fragment();
      if (!fragment.charFormat().isImageFormat()) continue;
      QTextImageFormat image = fragment.charFormat().toImageFormat();
      const QImage source = document->resource(QTextDocument::ImageResource, QUrl(image.name())).value<QImage>();
      if (source.isNull() || source.width() <= width) continue;
      image.setWidth(width);
      image.setHeight(static_cast<double>(source.height()) * width / source.width());
      QTextCursor cursor(document);
      cursor.setPosition(fragment.position());
      cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
      cursor.setCharFormat(image);
    }
}

}  // namespace

QString MainWindow::manualPath() {
  // Installed: <prefix>/bin/manifold-explorer and <prefix>/share/doc/manifold/ui.md.
  // In a build tree: <build>/app/manifold-explorer and <source>/docs/ui.md,
  // with the build folder inside the source folder as the README builds it.
  const QDir bin(QCoreApplication::applicationDirPath());
  for (const QString& candidate : {QStringLiteral("../share/doc/manifold/ui.md"), QStringLiteral("../../docs/ui.md"),
                                   QStringLiteral("../docs/ui.md")}) {
    const QFileInfo info(bin.filePath(candidate));
    if (info.isFile()) return info.canonicalFilePath();
  }
  // The copy built into the program (text only: its screenshots live beside the file).
  return QStringLiteral(":/docs/ui.md");
}

void MainWindow::showManual() {
  auto* dialog = findChild<QDialog*>(QStringLiteral("manualDialog"));
  if (!dialog) {
    dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("manualDialog"));
    dialog->setWindowTitle(tr("Manifold Explorer manual"));
    dialog->resize(820, 760);
    auto* layout = new QVBoxLayout(dialog);
    auto* browser = new QTextBrowser(dialog);
    browser->setOpenExternalLinks(true);
    const QString path = manualPath();
    QFile file(path);
    if (file.open(QIODevice::ReadOnly)) {
      // Images and links are relative to the manual's folder.
      if (!path.startsWith(QLatin1Char(':'))) browser->setSearchPaths({QFileInfo(path).absolutePath()});
      browser->setMarkdown(QString::fromUtf8(file.readAll()));
      fit_images(browser->document(), 760);
    } else {
      browser->setPlainText(tr("The manual (docs/ui.md) is not installed with this program."));
    }
    layout->addWidget(browser);
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    connect(close, &QDialogButtonBox::rejected, dialog, &QDialog::hide);
    layout->addWidget(close);
  }
  dialog->show();
  dialog->raise();
}

QList<QPair<QString, QString>> MainWindow::shortcutList() const {
  QList<QPair<QString, QString>> rows;
  // Every menu action with a shortcut, as the menus say it (so the list
  // cannot drift from what the keys do).
  for (QAction* menu : menuBar()->actions()) {
    if (!menu->menu()) continue;
    const QString menu_name = menu->text().remove(QLatin1Char('&'));
    std::function<void(QMenu*, const QString&)> walk = [&](QMenu* m, const QString& where) {
      for (QAction* a : m->actions()) {
        if (a->menu()) {
          walk(a->menu(), where + QStringLiteral(" \u25b8 ") + a->text().remove(QLatin1Char('&')));
          continue;
        }
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        if (!keys.isEmpty())
          rows.append({keys.join(QStringLiteral(", ")),
                       where + QStringLiteral(" \u25b8 ") + a->text().remove(QLatin1Char('&')).remove(QChar(0x2026))});
      }
    };
    walk(menu->menu(), menu_name);
  }
  // The view's own keys and the mouse.
  rows.append({tr("Left drag"), tr("View: rotate (pan in 2-D); with Rectangle or Lasso, select")});
  rows.append({tr("Middle drag"), tr("View: pan")});
  rows.append({tr("Wheel, right drag"), tr("View: zoom")});
  rows.append({tr("Shift / Ctrl + select"), tr("View: add to / remove from the selection")});
  rows.append({tr("Click"), tr("View: pin the image of the point")});
  rows.append({tr("\u2190 \u2192 \u2191 \u2193"), tr("View: move the pin to the nearest point that way on screen")});
  rows.append({tr("Esc (selecting)"), tr("View: drop the outline being drawn")});
  return rows;
}

void MainWindow::showShortcuts() {
  auto* dialog = findChild<QDialog*>(QStringLiteral("shortcutsDialog"));
  if (!dialog) {
    dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("shortcutsDialog"));
    dialog->setWindowTitle(tr("Keyboard shortcuts"));
    dialog->resize(560, 520);
    auto* layout = new QVBoxLayout(dialog);
    const auto rows = shortcutList();
    auto* table = new QTableWidget(static_cast<int>(rows.size()), 2, dialog);
    table->setHorizontalHeaderLabels({tr("Keys"), tr("Does")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    for (int i = 0; i < rows.size(); ++i) {
      table->setItem(i, 0, new QTableWidgetItem(rows[i].first));
      table->setItem(i, 1, new QTableWidgetItem(rows[i].second));
    }
    table->resizeColumnToContents(0);
    table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(table);
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    connect(close, &QDialogButtonBox::rejected, dialog, &QDialog::hide);
    layout->addWidget(close);
  }
  dialog->show();
  dialog->raise();
}

void MainWindow::editClusterProfile() {
  auto* dialog = new ClusterProfileDialog(this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  const QString current = parameters_->clusterProfileEditor()->text().trimmed();
  if (!current.isEmpty() && QFileInfo(current).isFile()) dialog->load(current);
  // A saved profile becomes the panel's, ready for the Cluster backend.
  connect(dialog, &QDialog::accepted, this, [this, dialog] {
    parameters_->clusterProfileEditor()->setText(dialog->path());
    Q_EMIT parameters_->clusterProfileEditor()->editingFinished();
  });
  dialog->open();
}

}  // namespace manifold::ui
