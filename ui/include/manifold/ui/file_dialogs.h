#pragma once
// The explorer's file dialogs remember the last folder of each kind of file
// (datasets, sessions, exports) across runs, and a save dialog suggests a
// file name in a folder the user can write: never a read-only dataset folder.
#include <QString>

class QWidget;

namespace manifold::ui {

/// The folder a dialog of kind `key` starts in: the last one used when it
/// still exists (and, for saving, can be written), else the user's documents
/// or home folder.
QString startFolder(const QString& key, bool for_saving);
/// Records the folder of `path` (or `path` itself when it is a folder) for `key`.
void rememberFolder(const QString& key, const QString& path);
/// Where a save dialog of kind `key` starts: startFolder(key, true) joined
/// with `file_name`.
QString suggestedSavePath(const QString& key, const QString& file_name);

/// The dialogs themselves; each returns "" when cancelled and remembers the
/// folder otherwise. askSavePath appends `suffix` to a name without one.
QString askOpenFile(QWidget* parent, const QString& title, const QString& filter, const QString& key);
QString askFolder(QWidget* parent, const QString& title, const QString& key, bool for_saving);
QString askSavePath(QWidget* parent, const QString& title, const QString& filter, const QString& suffix,
                    const QString& key, const QString& file_name);

}  // namespace manifold::ui
