#include "manifold/ui/file_dialogs.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>

namespace manifold::ui {
namespace {

QString settings_key(const QString& key) { return QStringLiteral("folders/") + key; }

bool usable(const QString& folder, bool for_saving) {
  const QFileInfo info(folder);
  return !folder.isEmpty() && info.isDir() && (!for_saving || info.isWritable());
}

}  // namespace

QString startFolder(const QString& key, bool for_saving) {
  const QString last = QSettings().value(settings_key(key)).toString();
  if (usable(last, for_saving)) return last;
  const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  if (usable(documents, for_saving)) return documents;
  return QDir::homePath();
}

void rememberFolder(const QString& key, const QString& path) {
  if (path.isEmpty()) return;
  const QFileInfo info(path);
  QSettings().setValue(settings_key(key), info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

QString suggestedSavePath(const QString& key, const QString& file_name) {
  return QDir(startFolder(key, true)).filePath(file_name);
}

QString askOpenFile(QWidget* parent, const QString& title, const QString& filter, const QString& key) {
  const QString path = QFileDialog::getOpenFileName(parent, title, startFolder(key, false), filter);
  rememberFolder(key, path);
  return path;
}

QString askFolder(QWidget* parent, const QString& title, const QString& key, bool for_saving) {
  const QString path = QFileDialog::getExistingDirectory(parent, title, startFolder(key, for_saving));
  rememberFolder(key, path);
  return path;
}

QString askSavePath(QWidget* parent, const QString& title, const QString& filter, const QString& suffix,
                    const QString& key, const QString& file_name) {
  QString path = QFileDialog::getSaveFileName(parent, title, suggestedSavePath(key, file_name), filter);
  if (!path.isEmpty() && !suffix.isEmpty() && QFileInfo(path).suffix().isEmpty()) path += suffix;
  rememberFolder(key, path);
  return path;
}

}  // namespace manifold::ui
