#pragma once
// Colours shared by the view, the plots and the gallery, so a label has the
// same colour everywhere.
#include <QColor>

namespace manifold::ui {

/// A distinct colour for category `i`: hues stepped by the golden angle stay
/// apart however many categories there are.
inline QColor categoryColour(int i) {
  const double hue = 0.58 + 0.381966 * i;
  return QColor::fromHsvF(hue - static_cast<int>(hue), i % 2 ? 0.55 : 0.75, i % 3 == 2 ? 0.8 : 0.95);
}

}  // namespace manifold::ui
