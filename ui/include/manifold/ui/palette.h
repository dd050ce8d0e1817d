#pragma once
// Colours shared by the view, the plots and the gallery, so a label has the
// same colour everywhere.
#include <QColor>

#include <cmath>
#include <cstdlib>

namespace manifold::ui {

/// The colour of selected points (ParaView's selection magenta).
inline const QColor kSelectionColour(255, 0, 255);

/// The colour of category `value` (a label, a class): a function of the value
/// itself, so a class keeps its colour in any subset of the data. Values 0 to
/// 9 (most label sets) take Tableau's ten qualitative colours, chosen to be
/// told apart; other values step the hue by the golden angle, so any number
/// of categories stay apart, over the hue circle less a band of 70 degrees
/// around the selection's magenta (300 degrees). No category can be mistaken
/// for selected points.
inline QColor categoryColour(int value) {
  static const QColor kTen[10] = {{78, 121, 167}, {242, 142, 43}, {225, 87, 89},  {118, 183, 178}, {89, 161, 79},
                                  {237, 201, 72}, {176, 122, 161}, {255, 157, 167}, {156, 117, 95}, {186, 176, 172}};
  if (value >= 0 && value < 10) return kTen[value];
  constexpr double kBandStart = 265.0 / 360.0, kBandEnd = 335.0 / 360.0;
  double f = std::fmod(0.58 + 0.381966 * value, 1.0);
  if (f < 0) f += 1.0;
  double hue = f * (1.0 - (kBandEnd - kBandStart));
  if (hue >= kBandStart) hue += kBandEnd - kBandStart;
  const int i = std::abs(value);
  return QColor::fromHsvF(static_cast<float>(hue), i % 2 ? 0.55f : 0.75f, i % 3 == 2 ? 0.8f : 0.95f);
}

}  // namespace manifold::ui
