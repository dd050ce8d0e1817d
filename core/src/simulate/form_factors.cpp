// Cromer-Mann coefficients of the atomic scattering factors, entered from
// International Tables for Crystallography Vol. C, Table 6.1.1.4 (neutral
// atoms). f(0) = sum a + c equals the atomic number to within 0.02.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "manifold/simulate.h"

namespace manifold {

double CromerMann::operator()(double s) const {
  const double s2 = s * s;
  return a[0] * std::exp(-b[0] * s2) + a[1] * std::exp(-b[1] * s2) + a[2] * std::exp(-b[2] * s2) +
         a[3] * std::exp(-b[3] * s2) + c;
}

const std::vector<CromerMann>& cromer_mann_table() {
  //                    a1       a2       a3       a4        b1        b2        b3        b4        c
  static const std::vector<CromerMann> table = {
      {"H", {0.493002, 0.322912, 0.140191, 0.040810}, {10.5109, 26.1257, 3.14236, 57.7997}, 0.003038},
      {"C", {2.31000, 1.02000, 1.58860, 0.865000}, {20.8439, 10.2075, 0.568700, 51.6512}, 0.215600},
      {"N", {12.2126, 3.13220, 2.01250, 1.16630}, {0.005700, 9.89330, 28.9975, 0.582600}, -11.5290},
      {"O", {3.04850, 2.28680, 1.54630, 0.867000}, {13.2771, 5.70110, 0.323900, 32.9089}, 0.250800},
      {"Na", {4.76260, 3.17360, 1.26740, 1.11280}, {3.28500, 8.84220, 0.313600, 129.424}, 0.676000},
      {"Mg", {5.42040, 2.17350, 1.22690, 2.30730}, {2.82750, 79.2611, 0.380800, 7.19370}, 0.858400},
      {"P", {6.43450, 4.17910, 1.78000, 1.49080}, {1.90670, 27.1570, 0.526000, 68.1645}, 1.11490},
      {"S", {6.90530, 5.20340, 1.43790, 1.58630}, {1.46790, 22.2151, 0.253600, 56.1720}, 0.866900},
      {"Cl", {11.4604, 7.19640, 6.25560, 1.64550}, {0.010400, 1.16620, 18.5194, 47.7784}, -9.55740},
      {"K", {8.21860, 7.43980, 1.05190, 0.865900}, {12.7949, 0.774800, 213.187, 41.6841}, 1.42280},
      {"Ca", {8.62660, 7.38730, 1.58990, 1.02110}, {10.4421, 0.659900, 85.7484, 178.437}, 1.37510},
      {"Mn", {11.2819, 7.35730, 3.01930, 2.24410}, {5.34090, 0.343200, 17.8674, 83.7543}, 1.08960},
      {"Fe", {11.7695, 7.35730, 3.52220, 2.30450}, {4.76110, 0.307200, 15.3535, 76.8805}, 1.03690},
      {"Co", {12.2841, 7.34090, 4.00340, 2.34880}, {4.27910, 0.278400, 13.5359, 71.1692}, 1.01180},
      {"Ni", {12.8376, 7.29200, 4.44380, 2.38000}, {3.87850, 0.256500, 12.1763, 66.3421}, 1.03410},
      {"Cu", {13.3380, 7.16760, 5.61580, 1.67350}, {3.58280, 0.247000, 11.3966, 64.8126}, 1.19100},
      {"Zn", {14.0743, 7.03180, 5.16520, 2.41000}, {3.26550, 0.233300, 10.3163, 58.7097}, 1.30410},
      {"Se", {17.0006, 5.81960, 3.97310, 4.35430}, {2.40980, 0.272600, 15.2372, 43.8163}, 2.84090},
  };
  return table;
}

const CromerMann* cromer_mann(const std::string& element) {
  std::string e = element;
  for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!e.empty()) e[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(e[0])));
  // Deuterium scatters X-rays as hydrogen.
  if (e == "D") e = "H";
  const auto& t = cromer_mann_table();
  auto it = std::find_if(t.begin(), t.end(), [&](const CromerMann& c) { return e == c.element; });
  return it == t.end() ? nullptr : &*it;
}

}  // namespace manifold
