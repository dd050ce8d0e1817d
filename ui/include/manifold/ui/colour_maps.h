#pragma once
// Colour maps for metadata columns, defined by formulas in the OKLab colour
// space (Ottosson 2020; Euclidean distances there track perceived
// differences):
//   cyclicColour      angles: constant lightness 0.75 and chroma 0.12, the
//                     hue turning once, so equal angle steps are equal
//                     colour steps and 0 meets 2 pi without a seam; every
//                     colour lies inside sRGB (no clipping)
//   categoricalColour categories: palette.h's categoryColour (the view's),
//                     grey for a missing code — a colour depends only on the
//                     code, so a category keeps its colour in every subset
#include <QColor>
#include <vector>

#include "manifold/ui/palette.h"

namespace manifold::ui {

/// OKLab coordinates (L, a, b) of an sRGB colour.
struct OkLab {
  double L = 0, a = 0, b = 0;
};
OkLab toOkLab(const QColor& colour);
/// The sRGB colour of OKLab (L, a, b), clamped into the gamut; `in_gamut`
/// (optional) says whether it needed no clamping.
QColor fromOkLab(const OkLab& lab, bool* in_gamut = nullptr);
/// Euclidean distance in OKLab (about 0.02 is just noticeable).
double colourDistance(const QColor& x, const QColor& y);

/// The cyclic map at `turns` (wraps: 0 and 1 are the same colour).
QColor cyclicColour(double turns);
/// An angle in radians on the cyclic map (one turn = 2 pi).
QColor angleColour(double radians);
/// `count` colours of the cyclic map at 0, 1/count, ... (a lookup table
/// for an angle range [0, 2 pi) or [0, 360)).
std::vector<QColor> cyclicTable(int count);

/// The colour of category `code`; grey for a missing value (code < 0).
QColor categoricalColour(int code);

}  // namespace manifold::ui
