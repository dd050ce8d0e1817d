// Colour maps from formulas in OKLab (see colour_maps.h).
#include "manifold/ui/colour_maps.h"

#include "manifold/ui/palette.h"

#include <algorithm>
#include <cmath>

namespace manifold::ui {

namespace {

constexpr double kTwoPi = 6.283185307179586;
// The cyclic map: the largest constant lightness and chroma whose whole hue
// circle stays inside sRGB.
constexpr double kCyclicLightness = 0.75, kCyclicChroma = 0.12;

double toLinear(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
double toGamma(double c) { return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1 / 2.4) - 0.055; }

/// Linear sRGB of OKLab (Ottosson's matrices).
void linearRgb(const OkLab& p, double rgb[3]) {
  const double l_ = p.L + 0.3963377774 * p.a + 0.2158037573 * p.b;
  const double m_ = p.L - 0.1055613458 * p.a - 0.0638541728 * p.b;
  const double s_ = p.L - 0.0894841775 * p.a - 1.2914855480 * p.b;
  const double l = l_ * l_ * l_, m = m_ * m_ * m_, s = s_ * s_ * s_;
  rgb[0] = 4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s;
  rgb[1] = -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s;
  rgb[2] = -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s;
}

OkLab lch(double L, double C, double hue_radians) { return {L, C * std::cos(hue_radians), C * std::sin(hue_radians)}; }

}  // namespace

OkLab toOkLab(const QColor& colour) {
  const double r = toLinear(colour.redF()), g = toLinear(colour.greenF()), b = toLinear(colour.blueF());
  const double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
          1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
          0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

QColor fromOkLab(const OkLab& lab, bool* in_gamut) {
  double rgb[3];
  linearRgb(lab, rgb);
  bool inside = true;
  for (double& c : rgb) {
    inside = inside && c >= -1e-9 && c <= 1 + 1e-9;
    c = toGamma(std::clamp(c, 0.0, 1.0));
  }
  if (in_gamut) *in_gamut = inside;
  return QColor::fromRgbF(static_cast<float>(rgb[0]), static_cast<float>(rgb[1]), static_cast<float>(rgb[2]));
}

double colourDistance(const QColor& x, const QColor& y) {
  const OkLab p = toOkLab(x), q = toOkLab(y);
  return std::sqrt((p.L - q.L) * (p.L - q.L) + (p.a - q.a) * (p.a - q.a) + (p.b - q.b) * (p.b - q.b));
}

QColor cyclicColour(double turns) {
  const double t = turns - std::floor(turns);
  return fromOkLab(lch(kCyclicLightness, kCyclicChroma, kTwoPi * t));
}

QColor angleColour(double radians) {
  if (!std::isfinite(radians)) return QColor(128, 128, 128);
  return cyclicColour(radians / kTwoPi);
}

std::vector<QColor> cyclicTable(int count) {
  std::vector<QColor> table;
  for (int i = 0; i < count; ++i) table.push_back(cyclicColour(static_cast<double>(i) / count));
  return table;
}

QColor categoricalColour(int code) {
  // One palette for the view, the legend and the metadata table (palette.h).
  return code < 0 ? QColor(150, 150, 150) : categoryColour(code);
}

}  // namespace manifold::ui
