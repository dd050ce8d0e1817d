// What makes a diffusion map degenerate, and the one line for a solve that
// spent its budget. Both look at the same facts: how strongly the kernel
// joins each point to the rest (its escape probability 1 - P_ii; a point
// with escape e carries an eigenvalue near 1 - e) and how many points carry
// each eigenvector.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "manifold/diffusion_map.h"

namespace manifold {

namespace {

/// Escape probabilities below this mark a point the kernel barely joins: a
/// healthy kernel keeps them above ~1e-2 (every Fashion-MNIST cell with the
/// default epsilon, bench/diffusion/stall/RESULTS.md).
constexpr double kWeakEscape = 1e-3;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

/// "1 point", "317 points".
std::string points(int64_t count) { return with_commas(count) + (count == 1 ? " point" : " points"); }

std::string list(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

/// "700, 200 and 100 points", "700, 200, 100 and 4 more pieces": the
/// largest components' sizes, which tell blank frames or a second species
/// from scattered outliers.
std::string sizes(const std::vector<int64_t>& largest, int components) {
  std::string s;
  const size_t listed = largest.size();
  for (size_t i = 0; i < listed; ++i)
    s += (i == 0 ? "" : (i + 1 == listed && static_cast<int>(listed) == components ? " and " : ", ")) +
         with_commas(largest[i]);
  if (static_cast<int>(listed) < components)
    s += " and " + std::to_string(components - static_cast<int>(listed)) + " more pieces";
  else
    s += " points";
  return s;
}

/// "try --epsilon Y (10x) or a larger --k": what joins weakly joined points.
std::string wider_kernel_hint(double epsilon) {
  return "try --epsilon " + number(10 * epsilon) + " (10x) or a larger --k";
}

/// What joins a disconnected graph's other components: a larger k, except
/// for groups of identical images (blank frames), which no k joins.
std::string joining_hint(const DiffusionResult& r) {
  const int others = r.graph_components - 1, identical = r.identical_components;
  if (identical == 0) return "a larger k joins them";
  const std::string images = with_commas(r.identical_component_points) + " identical images";
  const std::string groups = identical == 1 ? images : std::to_string(identical) + " groups of " + images;
  const std::string why = " (duplicates, such as blank frames), which no k joins";
  if (identical == others) return (others == 1 ? "the other is " : "the others are ") + groups + why;
  return "of the others, " + groups + why + "; a larger k joins the rest";
}

/// Where the points embedded are to be seen, for the line about a
/// disconnected graph: "point_index.npy lists them" beside the files, "the
/// other 60 are not drawn" in the view.
std::string embedded_points_note(const DiffusionResult& r, EmbeddedPointsShown where) {
  if (where == EmbeddedPointsShown::ListedInPointIndex) return "point_index.npy lists them";
  const int64_t others = r.graph_points - r.n;
  return others == 1 ? "the other point is not drawn" : "the other " + with_commas(others) + " are not drawn";
}

}  // namespace

nlohmann::json EmbeddingDiagnostics::to_json() const {
  return {{"participation", participation},     {"localised_coordinates", localised},
          {"localised_below", localised_below}, {"near_one_coordinates", near_one},
          {"near_one_tolerance", kNearOne},     {"warnings", warnings}};
}

EmbeddingDiagnostics diagnose(const DiffusionResult& r, const std::vector<double>& degree) {
  EmbeddingDiagnostics d;
  const int nev = r.m + 1;
  // Participation of the orthonormal eigenvector v = sqrt(d) psi of A:
  // (sum v^2)^2 / sum v^4 is n for a vector spread evenly, 1 for one point.
  for (int c = 1; c < nev; ++c) {
    double s2 = 0, s4 = 0;
    for (int64_t i = 0; i < r.n; ++i) {
      const double v = std::sqrt(degree[static_cast<size_t>(i)]) * r.psi[static_cast<size_t>(i * nev + c)];
      s2 += v * v;
      s4 += v * v * v * v;
    }
    d.participation.push_back(s4 > 0 ? s2 * s2 / s4 : 0);
  }
  d.localised_below = std::max(10.0, std::ceil(0.002 * static_cast<double>(r.n)));
  // Below 5 x that many points every coordinate is carried by "few" points.
  const bool can_localise = static_cast<double>(r.n) >= 5 * d.localised_below;
  for (int c = 1; c < nev; ++c) {
    if (can_localise && d.participation[static_cast<size_t>(c - 1)] < d.localised_below) d.localised.push_back(c);
    if (1 - r.eigenvalues[static_cast<size_t>(c)] < kNearOne) d.near_one.push_back(c);
  }

  d.warnings = diagnostic_warnings(r, d, EmbeddedPointsShown::ListedInPointIndex);
  return d;
}

std::vector<std::string> diagnostic_warnings(const DiffusionResult& r, const EmbeddingDiagnostics& d,
                                             EmbeddedPointsShown where) {
  std::vector<std::string> warnings;
  if (r.graph_components > 1) {
    warnings.push_back("the k-NN graph has " + std::to_string(r.graph_components) + " connected components (" +
                       sizes(r.largest_graph_components, r.graph_components) + "); embedded the largest piece (" +
                       with_commas(r.n) + " of " + with_commas(r.graph_points) + " points; " +
                       embedded_points_note(r, where) + "); " + joining_hint(r));
  }
  if (r.duplicate_scaled_points > 0)
    warnings.push_back(points(r.duplicate_scaled_points) + " of " + with_commas(r.graph_points) +
                       (r.duplicate_scaled_points == 1 ? " is at distance 0 from its "
                                                       : " are at distance 0 from their ") +
                       std::to_string(r.local_scaling) +
                       "-th neighbour (duplicate images): local scaling took the distance to the nearest "
                       "distinct neighbour instead");
  if (r.weakly_joined_points > 0)
    warnings.push_back("at epsilon = " + number(r.epsilon) + ", " + points(r.weakly_joined_points) +
                       (r.weakly_joined_points == 1 ? " is" : " are") +
                       " joined to the rest only by kernel weights below " + number(kNegligibleWeight) +
                       " and were left out (" + with_commas(r.n) + " of " + with_commas(r.graph_points) +
                       " embedded); " + wider_kernel_hint(r.epsilon));
  if (!d.near_one.empty())
    warnings.push_back("eigenvalues of coordinates " + list(d.near_one) + " lie within " + number(kNearOne) +
                       " of 1: the kernel graph is nearly disconnected at epsilon = " + number(r.epsilon) + "; " +
                       wider_kernel_hint(r.epsilon));
  if (!d.localised.empty()) {
    std::string carried;
    for (int c : d.localised)
      carried += (carried.empty() ? "" : ", ") +
                 std::to_string(static_cast<int64_t>(std::lround(d.participation[static_cast<size_t>(c - 1)])));
    const bool one = d.localised.size() == 1;
    warnings.push_back(std::string(one ? "coordinate " : "coordinates ") + list(d.localised) + (one ? " is" : " are") +
                       " localised (carried by about " + carried + " of " + with_commas(r.n) + " points, fewer than " +
                       number(d.localised_below) + "): " + (one ? "it singles" : "they single") +
                       " out a few images, not the shape of the data; " +
                       (r.local_scaling > 0
                            ? wider_kernel_hint(r.epsilon)
                            : "try --local-scaling auto, or " + wider_kernel_hint(r.epsilon).substr(4)));
  }
  return warnings;
}

std::string budget_message(const DiffusionMatrix& a, int64_t matvecs, double seconds, const EigenOptions& o) {
  // A point's escape probability is 1 - P_ii = 1 - A_ii.
  int64_t weak = 0;
  double least = 1;
  for (int64_t i = 0; i < a.n; ++i) {
    const double escape = 1 - a.diag[static_cast<size_t>(i)];
    least = std::min(least, escape);
    weak += escape < kWeakEscape ? 1 : 0;
  }
  std::string spent = with_commas(matvecs) + " products with A in " + number(seconds) + " s";
  std::string limits;
  if (o.max_matvecs > 0) limits += "--max-matvecs " + with_commas(o.max_matvecs);
  if (o.time_limit_s > 0) limits += std::string(limits.empty() ? "" : ", ") + "--time-limit " + number(o.time_limit_s);
  std::string why = weak > 0 ? "the kernel barely joins " + points(weak) + " at epsilon = " + number(a.epsilon) +
                                   " (each puts less than " + number(kWeakEscape) +
                                   " of its weight on its neighbours, the least " + number(least) +
                                   "), so the top eigenvalues crowd at 1; " + wider_kernel_hint(a.epsilon)
                             : "the top of the spectrum is too tightly clustered at epsilon = " + number(a.epsilon) +
                                   "; " + wider_kernel_hint(a.epsilon) + ", fewer --components, or a larger budget";
  return "eigensolve: no convergence within the budget (" + limits + "; spent " + spent + "): " + why;
}

}  // namespace manifold
