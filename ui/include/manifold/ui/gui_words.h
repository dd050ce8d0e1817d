#pragma once
// The core's messages name the command line's options ("try --epsilon 12.5
// (10x) or a larger --k"); the window shows them with the names of its own
// fields ("try ε = 12.5 (10x) or a larger k"). The core's text stays as it is.
#include <QString>

namespace manifold::ui {

/// `message` with every command-line option the parameter panel edits
/// replaced by that field's label; other text is unchanged.
QString guiWords(const QString& message);

}  // namespace manifold::ui
