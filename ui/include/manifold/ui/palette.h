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
/// 9 (most label sets) take ten hues evenly spaced in OKLCh over the circle
/// less 300-345 degrees (the selection magenta's hue is 328), lightness
/// alternating 0.80 and 0.62 so neighbouring hues differ in brightness too,
/// chroma 0.14, clamped into sRGB: any two at least 0.126 apart in OKLab and
/// 0.21 from the magenta. They are listed so that each is the farthest from
/// those before it: a few clusters or classes get the most distinct colours
/// (the first four at least 0.19 apart), not neighbouring hues. Other values step the hue by the golden angle, so any
/// number of categories stay apart, over the hue circle less a band of 70 degrees around the selection's magenta (300
/// degrees). No category can be mistaken for selected points.
inline QColor categoryColour(int value) {
  static const QColor kTen[10] = {{204, 94, 104},  {56, 219, 183}, {99, 128, 218}, {78, 155, 73},  {253, 151, 210},
                                  {255, 160, 106}, {194, 198, 80}, {178, 122, 0},  {85, 202, 255}, {0, 156, 175}};
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
