// Correlation of metadata columns with the diffusion coordinates: Pearson,
// the correlation ratio, circular-linear and Fisher-Lee (see metadata.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "manifold/diffusion_map.h"
#include "manifold/metadata.h"

namespace manifold {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Pairs atan2(psi_j, psi_i) are tried among the first coordinates only: a
/// ring drawn by two later ones is rarely what the angle follows.
constexpr int kPairCoordinates = 6;

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 2) return kNaN;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= static_cast<double>(n), my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double a = x[i] - mx, b = y[i] - my;
    sxy += a * b, sxx += a * a, syy += b * b;
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : kNaN;
}

/// Categories must hold this many points on average for eta to mean
/// anything: with one point each, eta is 1 whatever psi does (under no
/// relation E[eta^2] = (K - 1) / (N - 1)).
constexpr double kPointsPerCategory = 10;

/// sqrt(SS_between / SS_total) of y grouped by code; NaN when the
/// categories present are too many for the points.
double correlation_ratio(const std::vector<int32_t>& code, const std::vector<double>& y, int categories) {
  const size_t n = y.size();
  if (n < 2) return kNaN;
  {
    std::vector<char> present(static_cast<size_t>(categories), 0);
    int k = 0;
    for (int32_t c : code) k += !present[static_cast<size_t>(c)]++;
    if (k < 2 || static_cast<double>(k) * kPointsPerCategory > static_cast<double>(n)) return kNaN;
  }
  std::vector<double> sum(static_cast<size_t>(categories), 0.0);
  std::vector<int64_t> count(static_cast<size_t>(categories), 0);
  double mean = 0;
  for (size_t i = 0; i < n; ++i) {
    sum[static_cast<size_t>(code[i])] += y[i];
    ++count[static_cast<size_t>(code[i])];
    mean += y[i];
  }
  mean /= static_cast<double>(n);
  double total = 0, between = 0;
  for (size_t i = 0; i < n; ++i) total += (y[i] - mean) * (y[i] - mean);
  for (size_t k = 0; k < sum.size(); ++k)
    if (count[k]) {
      const double d = sum[k] / static_cast<double>(count[k]) - mean;
      between += static_cast<double>(count[k]) * d * d;
    }
  return total > 0 ? std::sqrt(std::min(1.0, between / total)) : kNaN;
}

/// cos and sin of an angle sample and their correlation, computed once per column.
struct AngleSample {
  std::vector<double> c, s;
  double rcs = 0;
  explicit AngleSample(const std::vector<double>& a) : c(a.size()), s(a.size()) {
    for (size_t i = 0; i < a.size(); ++i) c[i] = std::cos(a[i]), s[i] = std::sin(a[i]);
    rcs = pearson(c, s);
  }
};

/// Mardia's circular-linear correlation of an angle with x, in [0, 1].
double circular_linear(const AngleSample& a, const std::vector<double>& x) {
  const double rxc = pearson(x, a.c), rxs = pearson(x, a.s), rcs = a.rcs;
  if (std::isnan(rxc) || std::isnan(rxs) || std::isnan(rcs) || rcs * rcs >= 1) return kNaN;
  const double r2 = (rxc * rxc + rxs * rxs - 2 * rxc * rxs * rcs) / (1 - rcs * rcs);
  return std::sqrt(std::clamp(r2, 0.0, 1.0));
}

/// Column k of the coordinates standardised to zero mean and unit variance.
std::vector<double> standardised(const std::vector<double>& x) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / static_cast<double>(x.size()));
  std::vector<double> z(x.size());
  for (size_t i = 0; i < x.size(); ++i) z[i] = sd > 0 ? (x[i] - mean) / sd : 0.0;
  return z;
}

void pick_best(MetadataCorrelation& r) {
  double best = -1;
  for (size_t k = 0; k < r.per_coordinate.size(); ++k)
    if (!std::isnan(r.per_coordinate[k]) && std::abs(r.per_coordinate[k]) > best)
      best = std::abs(r.per_coordinate[k]), r.best = static_cast<int>(k);
}

/// sin and cos of a sample of angles.
struct Circle {
  std::vector<double> s, c;
};

double fisher_lee_of(const Circle& a, const Circle& b) {
  return circular_correlation(a.s.data(), a.c.data(), b.s.data(), b.c.data(), a.s.size());
}

/// The best Fisher-Lee pair atan2(psi_j', psi_i') for the angle and twice
/// it. The sine and cosine of atan2(y, x) are y / r and x / r: no
/// trigonometry per pair.
void best_pair(MetadataCorrelation& r, const std::vector<double>& angle, const std::vector<std::vector<double>>& psi) {
  const int m = std::min<int>(static_cast<int>(psi.size()), kPairCoordinates);
  std::vector<std::vector<double>> z;
  for (int k = 0; k < m; ++k) z.push_back(standardised(psi[static_cast<size_t>(k)]));
  const size_t n = angle.size();
  Circle once{std::vector<double>(n), std::vector<double>(n)}, twice = once, phi = once;
  for (size_t i = 0; i < n; ++i) {
    once.s[i] = std::sin(angle[i]), once.c[i] = std::cos(angle[i]);
    twice.s[i] = 2 * once.s[i] * once.c[i], twice.c[i] = once.c[i] * once.c[i] - once.s[i] * once.s[i];
  }
  for (int i = 0; i < m; ++i)
    for (int j = i + 1; j < m; ++j) {
      const auto &x = z[static_cast<size_t>(i)], &y = z[static_cast<size_t>(j)];
      for (size_t e = 0; e < n; ++e) {
        const double len = std::sqrt(x[e] * x[e] + y[e] * y[e]);  // standardised: no overflow
        phi.s[e] = len > 0 ? y[e] / len : 0.0;                    // atan2(0, 0) = 0
        phi.c[e] = len > 0 ? x[e] / len : 1.0;
      }
      for (int h = 1; h <= 2; ++h) {
        const double rho = fisher_lee_of(phi, h == 1 ? once : twice);
        if (r.pair_i < 0 || std::abs(rho) > std::abs(r.pair_fisher_lee))
          r.pair_i = i, r.pair_j = j, r.pair_harmonic = h, r.pair_fisher_lee = rho;
      }
    }
}

std::string psi_name(int k) { return "psi" + std::to_string(k + 1); }

std::string fixed(double v, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

double fisher_lee(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> x, y;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (!std::isnan(a[i]) && !std::isnan(b[i])) x.push_back(a[i]), y.push_back(b[i]);
  return x.size() < 2 ? kNaN : circular_correlation(x, y);
}

std::vector<MetadataCorrelation> correlate_metadata(const MetadataTable& table, const double* coordinates, int64_t n,
                                                    int m, const int64_t* point_index) {
  std::vector<MetadataCorrelation> out;
  for (const MetadataColumn& col : table.columns()) {
    MetadataCorrelation r;
    r.name = col.name;
    r.kind = col.kind;
    r.statistic = col.kind == MetadataKind::Numeric       ? "pearson"
                  : col.kind == MetadataKind::Categorical ? "correlation_ratio"
                                                          : "circular_linear";
    // The embedded points with a value, in embedding order.
    std::vector<int64_t> rows;
    std::vector<double> value;
    std::vector<int32_t> code;
    for (int64_t e = 0; e < n; ++e) {
      const int64_t row = point_index ? point_index[e] : e;
      if (row < 0 || row >= table.rows()) continue;
      if (col.kind == MetadataKind::Categorical) {
        if (col.codes[static_cast<size_t>(row)] < 0) continue;
        code.push_back(col.codes[static_cast<size_t>(row)]);
      } else {
        const double v = col.kind == MetadataKind::Angle ? col.radians(row) : col.values[static_cast<size_t>(row)];
        if (std::isnan(v)) continue;
        value.push_back(v);
      }
      rows.push_back(e);
    }
    r.rows_used = static_cast<int64_t>(rows.size());
    std::vector<std::vector<double>> psi(static_cast<size_t>(m));
    const AngleSample circle(col.kind == MetadataKind::Angle ? value : std::vector<double>());
    for (int k = 0; k < m; ++k) {
      auto& y = psi[static_cast<size_t>(k)];
      y.reserve(rows.size());
      for (int64_t e : rows) y.push_back(coordinates[e * m + k]);
      r.per_coordinate.push_back(col.kind == MetadataKind::Numeric ? pearson(value, y)
                                 : col.kind == MetadataKind::Categorical
                                     ? correlation_ratio(code, y, static_cast<int>(col.categories.size()))
                                     : circular_linear(circle, y));
    }
    pick_best(r);
    if (col.kind == MetadataKind::Angle && m >= 2 && rows.size() >= 2) best_pair(r, value, psi);
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json correlation_json(const MetadataTable& table, const std::vector<MetadataCorrelation>& corr) {
  nlohmann::json columns = nlohmann::json::array();
  for (size_t c = 0; c < corr.size(); ++c) {
    const MetadataCorrelation& r = corr[c];
    const MetadataColumn* col = table.find(r.name);
    nlohmann::json j = {{"name", r.name},
                        {"kind", to_string(r.kind)},
                        {"statistic", r.statistic},
                        {"rows_used", r.rows_used}};
    if (col) j["source"] = col->source;
    if (col && col->kind == MetadataKind::Angle) j["unit"] = col->unit == AngleUnit::Degrees ? "degrees" : "radians";
    if (col && col->kind == MetadataKind::Categorical) j["categories"] = col->categories;
    nlohmann::json per = nlohmann::json::array();
    for (double v : r.per_coordinate) per.push_back(number_or_null(v));
    j["per_coordinate"] = per;
    if (r.best >= 0) j["best"] = {{"coordinate", r.best + 1}, {"value", r.per_coordinate[static_cast<size_t>(r.best)]}};
    if (r.pair_i >= 0)
      j["pair"] = {{"coordinates", {r.pair_i + 1, r.pair_j + 1}},
                   {"harmonic", r.pair_harmonic},
                   {"fisher_lee", r.pair_fisher_lee}};
    columns.push_back(j);
  }
  return {{"coordinates", "psi_1..psi_m, the Markov eigenvectors of the embedding (point_index order)"},
          {"definitions",
           {{"pearson", "Pearson's r of a numeric column with psi_k"},
            {"correlation_ratio", "eta = sqrt(SS_between / SS_total) of psi_k grouped by category"},
            {"circular_linear", "Mardia's circular-linear correlation R of an angle with psi_k, in [0, 1]"},
            {"pair",
             "Fisher-Lee circular correlation of the angle (harmonic 1) or twice the angle (harmonic 2) "
             "with atan2(psi_j', psi_i'), psi' standardised; the largest |rho| over pairs of the first 6"}}},
          {"columns", columns}};
}

std::string correlation_summary(const std::vector<MetadataCorrelation>& corr) {
  std::string line;
  int undefined = 0;
  for (const MetadataCorrelation& r : corr) {
    std::string part = r.name + " ~ ";
    if (r.pair_i >= 0) {
      part += "atan2(" + psi_name(r.pair_j) + ", " + psi_name(r.pair_i) + ")" +
              (r.pair_harmonic == 2 ? " (twice the angle)" : "") + " circular " + fixed(r.pair_fisher_lee);
    } else if (r.best >= 0) {
      const char* stat = r.kind == MetadataKind::Numeric ? "r" : r.kind == MetadataKind::Categorical ? "eta" : "R";
      part += psi_name(r.best) + " " + stat + " " + fixed(r.per_coordinate[static_cast<size_t>(r.best)]);
    } else {
      ++undefined;  // constant, or too many categories: counted, not listed
      continue;
    }
    line += (line.empty() ? "" : "; ") + part;
  }
  if (undefined)
    line += (line.empty() ? "" : "; ") + std::to_string(undefined) + (undefined == 1 ? " column" : " columns") +
            " without a defined correlation (constant, or too many categories)";
  return line.empty() ? line : "metadata: " + line;
}

}  // namespace manifold
