// Stages 1-6 of the diffusion map: from the k-NN graph to the symmetric
// conjugate A = D^-1/2 K^a D^-1/2 in CSR. Every stage is linear in the number
// of edges, so changing k' or epsilon re-runs all of it interactively.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "manifold/diffusion_map.h"
#include "manifold/error.h"
#include "manifold/printable.h"
#include "manifold/parallel.h"
#include "manifold/result_vector.h"

namespace manifold {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kBlock = 1024;  // rows per progress/parallel block

int64_t blocks_of(int64_t n) { return (n + kBlock - 1) / kBlock; }

/// The symmetrised pattern. For an edge present in both directions s_near
/// and s_far are the smaller and larger of the two scaled squared distances
/// (equal for exact distances); for a one-sided edge s_far = inf.
struct Pattern {
  int64_t n = 0;
  std::vector<int64_t> ptr;
  // Sized, then written whole by parallel loops: a zero fill first would be
  // a pass over all of it on one thread.
  ResultVector<int32_t> col;
  ResultVector<double> s_near, s_far;
};

enum class Sym { Or, And, Average };

Sym parse_sym(const std::string& s) {
  if (s == "or") return Sym::Or;
  if (s == "and") return Sym::And;
  return Sym::Average;
}

// Kernel value of a pattern entry under the symmetrisation rule.
inline double edge_weight(double near, double far, double inv_eps, Sym sym) {
  switch (sym) {
    case Sym::Or: return std::exp(-near * inv_eps);
    case Sym::And: return std::exp(-far * inv_eps);
    case Sym::Average: return 0.5 * (std::exp(-near * inv_eps) + (far < kInf ? std::exp(-far * inv_eps) : 0.0));
  }
  return 0;
}

/// Rows of the directed k'-graph as scaled squared distances, each row
/// sorted by column: row i holds count[i] entries at [i * kp, i * kp + count[i]).
struct DirectedRows {
  int kp = 0;
  ResultVector<int32_t> col;  ///< row i's first count[i] of its kp slots (the rest unset)
  ResultVector<double> s;
  std::vector<int32_t> count;
};

/// The first kp neighbours of every row, self entries dropped (the
/// self-affinity is added as the diagonal), scaled by sigma_i sigma_j when
/// sigma is given. A neighbour listed twice is a corrupt graph (Error).
DirectedRows directed_rows(const KnnGraph& g, int kp, const std::vector<double>& sigma, int threads,
                           Progress& progress) {
  const Metric metric = g.metric;
  const int64_t n = g.n;
  const int k = g.k;
  DirectedRows d;
  d.kp = kp;
  d.col.resize(static_cast<size_t>(n * kp));
  d.s.resize(static_cast<size_t>(n * kp));
  d.count.resize(static_cast<size_t>(n));
  progress.stage("kernel graph", static_cast<uint64_t>(n), "rows");
  parallel_for(0, blocks_of(n), threads, [&](int64_t b) {
    std::vector<std::pair<int32_t, double>> row(static_cast<size_t>(kp));
    const int64_t r1 = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < r1; ++i) {
      const int64_t* idx = g.indices.data() + i * k;
      const float* dist = g.distances.data() + i * k;
      int m = 0;
      for (int e = 0; e < kp; ++e) {
        const int64_t j = idx[e];
        if (j == i) continue;
        double s = kernel_distance2(dist[e], metric);
        if (!sigma.empty()) s /= sigma[static_cast<size_t>(i)] * sigma[static_cast<size_t>(j)];
        row[static_cast<size_t>(m++)] = {static_cast<int32_t>(j), s};
      }
      std::sort(row.begin(), row.begin() + m, [](auto& a, auto& b) { return a.first < b.first; });
      for (int e = 1; e < m; ++e)
        if (row[static_cast<size_t>(e)].first == row[static_cast<size_t>(e - 1)].first)
          throw Error("graph row " + std::to_string(i) + " lists neighbour " +
                      std::to_string(row[static_cast<size_t>(e)].first) + " twice (corrupt indices.npy?)");
      for (int e = 0; e < m; ++e) {
        d.col[static_cast<size_t>(i * kp + e)] = row[static_cast<size_t>(e)].first;
        d.s[static_cast<size_t>(i * kp + e)] = row[static_cast<size_t>(e)].second;
      }
      d.count[static_cast<size_t>(i)] = m;
    }
    progress.advance(static_cast<uint64_t>(r1 - b * kBlock));
  });
  return d;
}

/// The transpose of the directed rows in CSR (ptr, col, s).
struct TransposedRows {
  std::vector<int64_t> ptr;
  ResultVector<int32_t> col;
  ResultVector<double> s;
};

/// Transpose by counting sort on `threads` threads, each over its own range
/// of columns: every thread reads all entries and counts, then places, those
/// in its range, in row order, so each transposed row is sorted by source
/// row as one thread's counting sort leaves it. Not atomic counters shared
/// by all threads: a locked add waits for its cache miss, so the scatter's
/// misses would no longer overlap.
TransposedRows transpose(const DirectedRows& d, int64_t n, int threads) {
  const int kp = d.kp;
  const int parts = static_cast<int>(std::min<int64_t>(hardware_threads(threads), std::max<int64_t>(1, n / kBlock)));
  // visit(i, src, c) for every entry (row i, slot src) whose column c is in
  // part's range, in row order.
  auto each_entry_of = [&](int64_t part, auto&& visit) {
    const int64_t c0 = n * part / parts, c1 = n * (part + 1) / parts;
    for (int64_t i = 0; i < n; ++i)
      for (int e = 0; e < d.count[static_cast<size_t>(i)]; ++e) {
        const size_t src = static_cast<size_t>(i * kp + e);
        const int64_t c = d.col[src];
        if (c >= c0 && c < c1) visit(i, src, c);
      }
  };
  TransposedRows t;
  t.ptr.assign(static_cast<size_t>(n + 1), 0);
  parallel_for(
      0, parts, parts,
      [&](int64_t part) {
    each_entry_of(part, [&](int64_t, size_t, int64_t c) { ++t.ptr[static_cast<size_t>(c + 1)]; });
      },
      1);
  for (int64_t i = 0; i < n; ++i) t.ptr[static_cast<size_t>(i + 1)] += t.ptr[static_cast<size_t>(i)];
  t.col.resize(static_cast<size_t>(t.ptr[static_cast<size_t>(n)]));
  t.s.resize(t.col.size());
  std::vector<int64_t> fill(t.ptr.begin(), t.ptr.end() - 1);
  parallel_for(
      0, parts, parts,
      [&](int64_t part) {
    each_entry_of(part, [&](int64_t i, size_t src, int64_t c) {
      const int64_t pos = fill[static_cast<size_t>(c)]++;
      t.col[static_cast<size_t>(pos)] = static_cast<int32_t>(i);
      t.s[static_cast<size_t>(pos)] = d.s[src];
    });
      },
      1);
  return t;
}

/// Row i of the directed graph merged with row i of its transpose: an edge
/// in both gets the smaller and larger distance, a one-sided one far = inf
/// (dropped under "and"). Writes the entries when out_col is given; returns
/// their number.
int64_t merge_row(const DirectedRows& d, const TransposedRows& t, Sym sym, int64_t i, int32_t* out_col,
                  double* out_near, double* out_far) {
  const int kp = d.kp;
  const int32_t* a = d.col.data() + i * kp;
  const double* as = d.s.data() + i * kp;
  const int64_t na = d.count[static_cast<size_t>(i)];
  const int32_t* b = t.col.data() + t.ptr[static_cast<size_t>(i)];
  const double* bs = t.s.data() + t.ptr[static_cast<size_t>(i)];
  const int64_t nb = t.ptr[static_cast<size_t>(i + 1)] - t.ptr[static_cast<size_t>(i)];
  int64_t p = 0, q = 0, m = 0;
  while (p < na || q < nb) {
    int32_t c;
    double near, far;
    if (q >= nb || (p < na && a[p] < b[q])) {
      c = a[p];
      near = as[p++];
      far = kInf;
    } else if (p >= na || b[q] < a[p]) {
      c = b[q];
      near = bs[q++];
      far = kInf;
    } else {
      c = a[p];
      near = std::min(as[p], bs[q]);
      far = std::max(as[p], bs[q]);
      ++p, ++q;
    }
    if (sym == Sym::And && far == kInf) continue;
    if (out_col) {
      out_col[m] = c;
      out_near[m] = near;
      out_far[m] = far;
    }
    ++m;
  }
  return m;
}

Pattern build_pattern(const KnnGraph& g, int kp, const std::vector<double>& sigma, Sym sym, int threads,
                      Progress& progress) {
  const int64_t n = g.n;
  const DirectedRows directed = directed_rows(g, kp, sigma, threads, progress);
  const TransposedRows transposed = transpose(directed, n, threads);
  progress.check_cancel();
  // Two passes over the merged rows: their lengths, then their entries.
  Pattern pat;
  pat.n = n;
  pat.ptr.assign(static_cast<size_t>(n + 1), 0);
  parallel_for(0, n, threads, [&](int64_t i) {
    pat.ptr[static_cast<size_t>(i + 1)] = merge_row(directed, transposed, sym, i, nullptr, nullptr, nullptr);
  });
  for (int64_t i = 0; i < n; ++i) pat.ptr[static_cast<size_t>(i + 1)] += pat.ptr[static_cast<size_t>(i)];
  const size_t nnz = static_cast<size_t>(pat.ptr[static_cast<size_t>(n)]);
  pat.col.resize(nnz);
  pat.s_near.resize(nnz);
  pat.s_far.resize(nnz);
  parallel_for(0, n, threads, [&](int64_t i) {
    const size_t o = static_cast<size_t>(pat.ptr[static_cast<size_t>(i)]);
    merge_row(directed, transposed, sym, i, pat.col.data() + o, pat.s_near.data() + o, pat.s_far.data() + o);
  });
  progress.finish();
  return pat;
}

/// Connected components by union-find; returns the component label (0..c-1,
/// numbered by smallest member) of every row. With `weight` (one value per
/// pattern entry), entries below `least` join nothing.
std::vector<int32_t> components(const Pattern& p, int* count, const double* weight = nullptr, double least = 0) {
  std::vector<int64_t> parent(static_cast<size_t>(p.n));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int64_t x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  };
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t e = p.ptr[static_cast<size_t>(i)]; e < p.ptr[static_cast<size_t>(i + 1)]; ++e) {
      const int64_t j = p.col[static_cast<size_t>(e)];
      if (j <= i || (weight && !(weight[e] >= least))) continue;
      int64_t a = find(i), b = find(j);
      if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
  std::vector<int32_t> label(static_cast<size_t>(p.n), -1);
  std::vector<int32_t> root_label(static_cast<size_t>(p.n), -1);
  int c = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const int64_t r = find(i);
    if (root_label[static_cast<size_t>(r)] < 0) root_label[static_cast<size_t>(r)] = c++;
    label[static_cast<size_t>(i)] = root_label[static_cast<size_t>(r)];
  }
  *count = c;
  return label;
}

/// The pattern restricted to the rows `keep` (sorted), renumbered; edges to
/// rows outside `keep` are dropped.
Pattern restrict(const Pattern& p, const std::vector<int64_t>& keep) {
  std::vector<int32_t> renumber(static_cast<size_t>(p.n), -1);
  for (size_t r = 0; r < keep.size(); ++r) renumber[static_cast<size_t>(keep[r])] = static_cast<int32_t>(r);
  Pattern q;
  q.n = static_cast<int64_t>(keep.size());
  q.ptr.push_back(0);
  for (int64_t i : keep) {
    for (int64_t e = p.ptr[static_cast<size_t>(i)]; e < p.ptr[static_cast<size_t>(i + 1)]; ++e) {
      const int32_t c = renumber[static_cast<size_t>(p.col[static_cast<size_t>(e)])];
      if (c < 0) continue;
      q.col.push_back(c);
      q.s_near.push_back(p.s_near[static_cast<size_t>(e)]);
      q.s_far.push_back(p.s_far[static_cast<size_t>(e)]);
    }
    q.ptr.push_back(static_cast<int64_t>(q.col.size()));
  }
  return q;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  double hi = v[m];
  if (v.size() % 2) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return 0.5 * (lo + hi);
}

/// Berry-Giannakis-Harlim: S(eps) = sum_ij K_ij over a log grid with four
/// points per octave; the slope d log S / d log eps peaks where the kernel
/// resolves the manifold, at d/2 for a d-dimensional manifold.
nlohmann::json bgh_sweep(const Pattern& p, Sym sym, int threads, Progress& progress, double* chosen) {
  // Range of the grid: from well below the smallest positive s to well above
  // the largest, so S(eps) runs from its floor (n) to its ceiling (n + nnz).
  double lo = kInf, hi = 0;
  for (size_t e = 0; e < p.s_near.size(); ++e) {
    const double a = p.s_near[e];
    const double b = sym == Sym::Or ? a : p.s_far[e];
    if (a > 0) lo = std::min(lo, a);
    if (b < kInf) hi = std::max(hi, b);
    else
      hi = std::max(hi, a);
  }
  if (!(lo < kInf) || !(hi > 0))
    throw Error("epsilon auto: every neighbour distance is 0 (duplicate points?); give --epsilon VALUE");
  constexpr int kPerOctave = 4;
  const double e_min = lo / 16, e_max = hi * 16;
  int L = static_cast<int>(std::ceil(kPerOctave * std::log2(e_max / e_min))) + 1;
  L = std::clamp(L, 8, 400);
  L = (L + kPerOctave - 1) / kPerOctave * kPerOctave;  // whole octaves: chains of squarings
  std::vector<double> eps(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l) eps[static_cast<size_t>(l)] = e_min * std::exp2(static_cast<double>(l) / kPerOctave);

  // exp(-s/eps_l) = exp(-s/eps_{l+4})^2: one exp per chain of four, then squarings.
  std::vector<std::vector<double>> partial(static_cast<size_t>(blocks_of(p.n)));
  progress.stage("epsilon sweep", static_cast<uint64_t>(p.n), "rows");
  parallel_for(0, blocks_of(p.n), threads, [&](int64_t b) {
    std::vector<double> acc(static_cast<size_t>(L), 0.0);
    auto add = [&](double s, double weight) {
      if (!(s < kInf)) return;
      for (int c = 0; c < kPerOctave; ++c) {
        int l = L - 1 - c;
        double v = std::exp(-s / eps[static_cast<size_t>(l)]);
        for (; l >= 0; l -= kPerOctave) {
          if (v < 1e-150) break;  // the rest underflows; keep denormals out
          acc[static_cast<size_t>(l)] += weight * v;
          v *= v;
        }
      }
    };
    const int64_t r1 = std::min(p.n, (b + 1) * kBlock);
    for (int64_t e = p.ptr[static_cast<size_t>(b * kBlock)]; e < p.ptr[static_cast<size_t>(r1)]; ++e) {
      switch (sym) {
        case Sym::Or: add(p.s_near[static_cast<size_t>(e)], 1.0); break;
        case Sym::And: add(p.s_far[static_cast<size_t>(e)], 1.0); break;
        case Sym::Average:
          add(p.s_near[static_cast<size_t>(e)], 0.5);
          add(p.s_far[static_cast<size_t>(e)], 0.5);
          break;
      }
    }
    partial[static_cast<size_t>(b)] = std::move(acc);
    progress.advance(static_cast<uint64_t>(r1 - b * kBlock));
  });
  std::vector<double> log_sum(static_cast<size_t>(L));
  for (int l = 0; l < L; ++l) {
    double s = static_cast<double>(p.n);  // self-affinities
    for (auto& v : partial) s += v[static_cast<size_t>(l)];
    log_sum[static_cast<size_t>(l)] = std::log(s);
  }
  std::vector<double> slope(static_cast<size_t>(L), 0.0);
  int best = 1;
  for (int l = 1; l + 1 < L; ++l) {
    slope[static_cast<size_t>(l)] = (log_sum[static_cast<size_t>(l + 1)] - log_sum[static_cast<size_t>(l - 1)]) /
                                    std::log(eps[static_cast<size_t>(l + 1)] / eps[static_cast<size_t>(l - 1)]);
    if (slope[static_cast<size_t>(l)] > slope[static_cast<size_t>(best)]) best = l;
  }
  progress.finish();
  *chosen = eps[static_cast<size_t>(best)];
  nlohmann::json j;
  j["epsilon"] = eps;
  j["log_sum"] = log_sum;
  j["slope"] = slope;
  j["epsilon_chosen"] = *chosen;
  j["max_slope"] = slope[static_cast<size_t>(best)];
  j["dimension"] = 2 * slope[static_cast<size_t>(best)];
  return j;
}

}  // namespace

std::string epsilon_rule(const DiffusionParams& p) {
  if (p.epsilon == "median" || p.epsilon == "auto") return p.epsilon;
  return "value";
}

int parse_local_scaling(const std::string& text) {
  if (text == "auto") return kLocalScalingAuto;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 0 || v > (1 << 20))
    throw UsageError("--local-scaling: '" + text + "' is not auto, 0 (off) or a neighbour number");
  return static_cast<int>(v);
}

nlohmann::json local_scaling_json(int local_scaling) {
  if (local_scaling == kLocalScalingAuto) return "auto";
  return local_scaling;
}

int local_scaling_neighbour(const DiffusionParams& p, int kp) {
  return p.local_scaling == kLocalScalingAuto ? std::min(kLocalScalingAutoNeighbour, kp) : p.local_scaling;
}

double kernel_distance2(double d, Metric metric) { return metric == Metric::Euclidean ? d * d : 2 * d; }

void validate(const DiffusionParams& p, int64_t n, int graph_k) {
  if (n < 3) throw UsageError("graph has " + std::to_string(n) + " points; a diffusion map needs at least 3");
  if (graph_k < 1) throw Error("graph has k = " + std::to_string(graph_k) + " neighbours per point");
  if (n > std::numeric_limits<int32_t>::max())
    throw Error("graph has " + std::to_string(n) + " points; the diffusion map supports up to 2^31 - 1");
  if (p.k < 0 || p.k > graph_k)
    throw UsageError("--k " + std::to_string(p.k) +
                     ": must be between 0 (all of the graph's neighbours) and the graph's k = " +
                     std::to_string(graph_k));
  const int kp = p.k == 0 ? graph_k : p.k;
  if (epsilon_rule(p) == "value") {
    char* end = nullptr;
    double v = std::strtod(p.epsilon.c_str(), &end);
    if (p.epsilon.empty() || end == p.epsilon.c_str() || *end)
      throw UsageError("--epsilon: '" + p.epsilon + "' is not a number, 'median' or 'auto'");
    if (!(v > 0) || !std::isfinite(v)) throw UsageError("--epsilon " + p.epsilon + ": must be positive");
  }
  if (!(p.alpha >= 0 && p.alpha <= 1)) throw UsageError("--alpha " + printable_number(p.alpha) + ": must be in [0, 1]");
  if (!(p.t >= 0) || !std::isfinite(p.t)) throw UsageError("--t " + printable_number(p.t) + ": must be >= 0");
  if (p.components < 1 || static_cast<int64_t>(p.components) > n - 2)
    throw UsageError("--components " + std::to_string(p.components) + ": must be between 1 and N - 2 = " +
                     std::to_string(n - 2) + " for " + std::to_string(n) + " points");
  if (p.symmetrize != "or" && p.symmetrize != "and" && p.symmetrize != "average")
    throw UsageError("--symmetrize: unknown rule '" + p.symmetrize + "' (or, and, average)");
  if (p.local_scaling != kLocalScalingAuto && (p.local_scaling < 0 || p.local_scaling > kp))
    throw UsageError("--local-scaling " + std::to_string(p.local_scaling) +
                     ": must be auto, 0 (off) or between 1 and k = " + std::to_string(kp));
  if (p.max_matvecs < 0) throw UsageError("--max-matvecs: must be >= 0 (0: no limit)");
  if (!(p.time_limit_s >= 0) || !std::isfinite(p.time_limit_s))
    throw UsageError("--time-limit: must be a number of seconds >= 0 (0: no limit)");
  if (!(p.tolerance > 0) || !(p.tolerance < 1)) throw UsageError("--tolerance: must be in (0, 1)");
  if (p.ncv != 0 && (p.ncv <= p.components + 1 || p.ncv > n))
    throw UsageError("--ncv " + std::to_string(p.ncv) +
                     ": must be between M + 2 = " + std::to_string(p.components + 2) + " and N = " + std::to_string(n));
  if (p.threads < 0) throw UsageError("--threads: must be >= 0");
  if (p.eigensolver != "auto" && p.eigensolver != "cpu" && p.eigensolver != "gpu")
    throw UsageError("--eigensolver: unknown solver '" + p.eigensolver + "' (auto, cpu, gpu)");
  if (p.eigensolver == "gpu" && !(device_eigensolver() && device_eigensolver()->available()))
    throw UsageError(device_eigensolver() ? "--eigensolver gpu: no CUDA device is present"
                                          : "--eigensolver gpu: this build has no GPU support (built without CUDA)");
}

void validate(const DiffusionParams& p, const KnnGraph& g) {
  if (g.k >= 1 && static_cast<int64_t>(g.indices.size()) != g.n * g.k)
    throw Error("graph indices hold " + std::to_string(g.indices.size()) +
                " values, expected N x k = " + std::to_string(g.n) + " x " + std::to_string(g.k));
  if (g.k >= 1 && static_cast<int64_t>(g.distances.size()) != g.n * g.k)
    throw Error("graph distances hold " + std::to_string(g.distances.size()) +
                " values, expected N x k = " + std::to_string(g.n) + " x " + std::to_string(g.k));
  validate(p, g.n, g.k);
  for (int64_t i = 0; i < g.n * g.k; ++i) {
    if (g.indices[static_cast<size_t>(i)] < 0 || g.indices[static_cast<size_t>(i)] >= g.n)
      throw Error("graph index " + std::to_string(g.indices[static_cast<size_t>(i)]) + " at row " +
                  std::to_string(i / g.k) + " is out of range for " + std::to_string(g.n) + " points");
    const float d = g.distances[static_cast<size_t>(i)];
    if (!(d >= 0) || !std::isfinite(d))
      throw Error("graph distance at row " + std::to_string(i / g.k) + " is negative or not finite");
  }
}

namespace {

/// sigma_i = the kernel distance to the j-th neighbour (1-based) of every
/// row. Explicit j refuses a zero one (duplicates or a self entry). Auto
/// (`nearest_distinct`) takes the first non-zero distance after the j-th
/// among the row's first kp (the nearest point that is not its duplicate),
/// and where all are zero (a point with kp duplicates or more, whose weights
/// to them are 1 whatever its scale) the median of the other points' scales;
/// `duplicate_scaled` counts the rows scaled either way.
std::vector<double> local_scales(const KnnGraph& g, int kp, int j, bool nearest_distinct, int64_t* duplicate_scaled) {
  std::vector<double> sigma(static_cast<size_t>(g.n));
  std::vector<int64_t> unscaled;  // rows with no non-zero distance among their first kp
  *duplicate_scaled = 0;
  for (int64_t i = 0; i < g.n; ++i) {
    const float* dist = g.distances.data() + i * g.k;
    double s = std::sqrt(kernel_distance2(dist[j - 1], g.metric));
    if (!(s > 0) && !nearest_distinct)
      throw Error("--local-scaling " + std::to_string(j) + ": point " + std::to_string(i) +
                  " is at distance 0 from its " + std::to_string(j) +
                  "-th neighbour (duplicates or a self entry); choose a larger value, auto, or 0 (off)");
    if (!(s > 0)) {
      ++*duplicate_scaled;
      for (int e = j; e < kp && !(s > 0); ++e) s = std::sqrt(kernel_distance2(dist[e], g.metric));
      if (!(s > 0)) unscaled.push_back(i);
    }
    sigma[static_cast<size_t>(i)] = s;
  }
  if (unscaled.empty()) return sigma;
  std::vector<double> scaled;
  for (double s : sigma)
    if (s > 0) scaled.push_back(s);
  if (scaled.empty())
    throw Error("every point is at distance 0 from its " + std::to_string(kp) +
                " nearest neighbours (identical images?): there is no scale to embed; a larger k reaches past them");
  const double median = median_of(std::move(scaled));
  for (int64_t i : unscaled) sigma[static_cast<size_t>(i)] = median;
  return sigma;
}

/// Epsilon by the rule of `p`, over the whole graph (so it does not depend
/// on which component is embedded).
double choose_epsilon(const KnnGraph& g, const DiffusionParams& p, int kp, const std::vector<double>& sigma,
                      const Pattern& pat, Sym sym, int threads, Progress& progress, nlohmann::json* bgh) {
  const std::string rule = epsilon_rule(p);
  if (rule == "value") return std::strtod(p.epsilon.c_str(), nullptr);
  if (rule == "auto") {
    double eps = 0;
    *bgh = bgh_sweep(pat, sym, threads, progress, &eps);
    return eps;
  }
  // Zero distances (a point's duplicates) weigh 1 at every epsilon: the
  // median is taken over the others.
  std::vector<double> last;
  last.reserve(static_cast<size_t>(g.n));
  for (int64_t i = 0; i < g.n; ++i) {
    double s = kernel_distance2(g.distances[static_cast<size_t>(i * g.k + kp - 1)], g.metric);
    if (!sigma.empty())
      s /= sigma[static_cast<size_t>(i)] * sigma[static_cast<size_t>(g.indices[static_cast<size_t>(i * g.k + kp - 1)])];
    if (s > 0) last.push_back(s);
  }
  if (last.empty())
    throw Error("epsilon median: every point is at distance 0 from its " + std::to_string(kp) +
                "-th neighbour (duplicate points?); give --epsilon VALUE or a larger --k");
  return median_of(std::move(last));
}

/// Stage 5-6 on `pat`: kernel weights, alpha-normalisation and the symmetric
/// conjugate, into a's n, row_ptr, col, val, diag, degree and density.
void normalise(const Pattern& pat, double epsilon, double alpha, Sym sym, int threads, Progress& progress,
               DiffusionMatrix& a) {
  const int64_t n = pat.n;
  a.n = n;
  a.row_ptr = pat.ptr;
  a.col.resize(pat.col.size());  // both written whole in the first loop
  a.val.resize(pat.col.size());
  a.diag.assign(static_cast<size_t>(n), 0.0);
  a.degree.assign(static_cast<size_t>(n), 0.0);
  a.density.assign(static_cast<size_t>(n), 0.0);
  const double inv_eps = 1.0 / epsilon;
  progress.stage("normalise", static_cast<uint64_t>(n), "rows");
  parallel_for(0, blocks_of(n), threads, [&](int64_t b) {
    const int64_t r1 = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < r1; ++i) {
      double q = 1.0;  // self-affinity
      for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e) {
        const double w = edge_weight(pat.s_near[static_cast<size_t>(e)], pat.s_far[static_cast<size_t>(e)], inv_eps,
                                     sym);
        a.col[static_cast<size_t>(e)] = pat.col[static_cast<size_t>(e)];
        a.val[static_cast<size_t>(e)] = w;
        q += w;
      }
      a.density[static_cast<size_t>(i)] = q;
    }
  });
  // q^-alpha, then K^a and its row sums d.
  std::vector<double> qa(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) qa[static_cast<size_t>(i)] = std::pow(a.density[static_cast<size_t>(i)], -alpha);
  parallel_for(0, blocks_of(n), threads, [&](int64_t b) {
    const int64_t r1 = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < r1; ++i) {
      const double qi = qa[static_cast<size_t>(i)];
      double d = qi * qi;
      a.diag[static_cast<size_t>(i)] = d;
      for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e) {
        double& w = a.val[static_cast<size_t>(e)];
        w *= qi * qa[static_cast<size_t>(a.col[static_cast<size_t>(e)])];
        d += w;
      }
      a.degree[static_cast<size_t>(i)] = d;
    }
  });
  std::vector<double> isd(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) isd[static_cast<size_t>(i)] = 1.0 / std::sqrt(a.degree[static_cast<size_t>(i)]);
  parallel_for(0, blocks_of(n), threads, [&](int64_t b) {
    const int64_t r1 = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < r1; ++i) {
      const double si = isd[static_cast<size_t>(i)];
      a.diag[static_cast<size_t>(i)] *= si * si;
      for (int64_t e = a.row_ptr[static_cast<size_t>(i)]; e < a.row_ptr[static_cast<size_t>(i + 1)]; ++e)
        a.val[static_cast<size_t>(e)] *= si * isd[static_cast<size_t>(a.col[static_cast<size_t>(e)])];
    }
    progress.advance(static_cast<uint64_t>(r1 - b * kBlock));
  });
  progress.finish();
}

}  // namespace

double spectrum_lower_bound(const DiffusionMatrix& a) {
  double least = 1;
  for (double d : a.diag) least = std::min(least, d);
  // The margin covers the rounding of A_ii and of P's unit row sums.
  return std::max(-1.0, 2 * least - 1 - 1e-12);
}

namespace {

/// Components of a disconnected graph whose sizes the warning names.
constexpr int kListedComponents = 3;

/// The size of each labelled piece.
std::vector<int64_t> piece_sizes(const std::vector<int32_t>& label, int pieces) {
  std::vector<int64_t> size(static_cast<size_t>(pieces), 0);
  for (int32_t c : label) ++size[static_cast<size_t>(c)];
  return size;
}

/// The `count` largest of `sizes`, descending.
std::vector<int64_t> largest_sizes(std::vector<int64_t> sizes, int count) {
  const size_t listed = std::min(sizes.size(), static_cast<size_t>(count));
  std::partial_sort(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(listed), sizes.end(), std::greater<>());
  sizes.resize(listed);
  return sizes;
}

/// The largest labelled piece; ties: the one with the smallest member
/// (labels follow the smallest member, so max_element breaks ties toward it).
int32_t largest_piece(const std::vector<int64_t>& sizes) {
  return static_cast<int32_t>(std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
}

/// Counts the components other than `home` (`label`, `sizes`) in which
/// every listed neighbour of every member is at distance 0: identical
/// images, which no k joins to the rest.
void count_identical_components(const KnnGraph& g, int kp, const std::vector<int32_t>& label,
                                const std::vector<int64_t>& sizes, int32_t home, DiffusionMatrix& a) {
  std::vector<char> identical(sizes.size(), 1);
  for (int64_t i = 0; i < g.n; ++i) {
    const float* d = g.row_distances(i);
    for (int j = 0; j < kp; ++j)
      if (d[j] != 0) identical[static_cast<size_t>(label[static_cast<size_t>(i)])] = 0;
  }
  for (size_t c = 0; c < sizes.size(); ++c)
    if (c != static_cast<size_t>(home) && identical[c]) {
      ++a.identical_components;
      a.identical_component_points += sizes[c];
    }
}

/// The rows of the largest kernel piece (`kernel` labels) inside the
/// largest component `home` of the k-NN graph (`graph` labels); ties: the
/// one with the smallest member. Inside, because a kernel too narrow for
/// the data shreds the graph's main component into small pieces, and a smaller
/// component of duplicates (blank frames, weight 1 at any epsilon) would
/// otherwise be embedded in its place, with no word of the points left out.
std::vector<int64_t> largest_kernel_piece(const std::vector<int32_t>& graph, int32_t home,
                                          const std::vector<int32_t>& kernel, int kernel_count) {
  std::vector<int64_t> size(static_cast<size_t>(kernel_count), 0);
  for (size_t i = 0; i < kernel.size(); ++i)
    if (graph[i] == home) ++size[static_cast<size_t>(kernel[i])];
  const int32_t big = largest_piece(size);
  std::vector<int64_t> rows;
  for (size_t i = 0; i < kernel.size(); ++i)
    if (kernel[i] == big) rows.push_back(static_cast<int64_t>(i));
  return rows;
}

}  // namespace

DiffusionMatrix diffusion_matrix(const KnnGraph& g, const DiffusionParams& p, Progress& progress) {
  validate(p, g);
  const auto t_start = Clock::now();
  const int threads = hardware_threads(p.threads);
  const int kp = p.k == 0 ? g.k : p.k;
  const Sym sym = parse_sym(p.symmetrize);
  DiffusionMatrix a;
  a.graph_points = g.n;
  a.k = kp;
  a.local_scaling = local_scaling_neighbour(p, kp);
  a.metric = g.metric;

  auto t = Clock::now();
  std::vector<double> sigma;
  if (a.local_scaling > 0)
    sigma = local_scales(g, kp, a.local_scaling, p.local_scaling == kLocalScalingAuto, &a.duplicate_scaled_points);
  Pattern pat = build_pattern(g, kp, sigma, sym, threads, progress);
  a.timings.emplace_back("kernel graph", seconds_since(t));

  t = Clock::now();
  a.epsilon = choose_epsilon(g, p, kp, sigma, pat, sym, threads, progress, &a.bgh);
  a.timings.emplace_back("epsilon", seconds_since(t));

  t = Clock::now();
  const std::vector<int32_t> graph_label = components(pat, &a.graph_components);
  const std::vector<int64_t> graph_sizes = piece_sizes(graph_label, a.graph_components);
  a.largest_graph_components = largest_sizes(graph_sizes, kListedComponents);
  const int32_t home = largest_piece(graph_sizes);
  if (a.graph_components > 1) count_identical_components(g, kp, graph_label, graph_sizes, home, a);
  a.timings.emplace_back("components", seconds_since(t));

  // Kernel, alpha-normalisation and the symmetric conjugate; then the
  // components joined by weights of at least kNegligibleWeight. When there
  // are several, the largest is normalised again on its own.
  t = Clock::now();
  normalise(pat, a.epsilon, p.alpha, sym, threads, progress, a);
  std::vector<int32_t> label = components(pat, &a.kernel_components, a.val.data(), kNegligibleWeight);
  if (a.kernel_components > 1) {
    a.point_index = largest_kernel_piece(graph_label, home, label, a.kernel_components);
    // The points of the embedded piece's graph component that the kernel leaves out.
    a.weakly_joined_points = graph_sizes[static_cast<size_t>(home)] - static_cast<int64_t>(a.point_index.size());
    pat = restrict(pat, a.point_index);
    if (!sigma.empty()) {
      std::vector<double> s2;
      for (int64_t i : a.point_index) s2.push_back(sigma[static_cast<size_t>(i)]);
      sigma.swap(s2);
    }
    normalise(pat, a.epsilon, p.alpha, sym, threads, progress, a);
  } else {
    a.point_index.resize(static_cast<size_t>(g.n));
    std::iota(a.point_index.begin(), a.point_index.end(), 0);
  }
  a.sigma = std::move(sigma);
  a.timings.emplace_back("normalise", seconds_since(t));
  a.timings.emplace_back("matrix total", seconds_since(t_start));
  return a;
}

void DiffusionMatrix::multiply(const double* x, double* y, int threads) const {
  const double* dg = diag.data();
  const int64_t* rp = row_ptr.data();
  const int32_t* cl = col.data();
  const double* vl = val.data();
  auto rows = [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      double s = dg[i] * x[i];
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e) s += vl[e] * x[cl[e]];
      y[i] = s;
    }
  };
  // Below ~50k entries a thread costs more than the rows it would take.
  const int t = nnz() < 50000 ? 1 : hardware_threads(threads);
  if (t == 1) {
    rows(0, n);
    return;
  }
  // Row ranges of about equal entries, several per thread, handed out
  // dynamically: on a busy machine a descheduled thread must not hold up the
  // whole product (every Lanczos step waits for it).
  const int64_t parts = static_cast<int64_t>(t) * 16;
  const int64_t total = row_ptr[static_cast<size_t>(n)];
  auto bound = [&](int64_t part) {
    if (part >= parts) return n;
    const int64_t target = total * part / parts;
    return static_cast<int64_t>(std::lower_bound(row_ptr.begin(), row_ptr.end(), target) - row_ptr.begin());
  };
  parallel_for(
      0, parts, t, [&](int64_t c) { rows(bound(c), bound(c + 1)); }, 1);
}

}  // namespace manifold
