// k-means with k-means++ seeding, the eigengap rule and the agreement with
// true classes (see clustering.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include "manifold/clustering.h"
#include "manifold/error.h"

namespace manifold {

namespace {

double distance2(const double* a, const double* b, int m) {
  double s = 0;
  for (int j = 0; j < m; ++j) s += (a[j] - b[j]) * (a[j] - b[j]);
  return s;
}

/// k-means++: the first centre uniform, each next one a point drawn with
/// probability proportional to its squared distance to the nearest centre.
std::vector<double> seed_centres(const double* x, int64_t n, int m, int k, std::mt19937_64& rng) {
  std::vector<double> centres(static_cast<size_t>(k) * m);
  std::vector<double> d2(static_cast<size_t>(n), std::numeric_limits<double>::infinity());
  int64_t pick = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
  for (int c = 0; c < k; ++c) {
    std::copy(x + pick * m, x + (pick + 1) * m, centres.begin() + static_cast<ptrdiff_t>(c) * m);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      d2[static_cast<size_t>(i)] = std::min(d2[static_cast<size_t>(i)],
                                            distance2(x + i * m, &centres[static_cast<size_t>(c) * m], m));
      total += d2[static_cast<size_t>(i)];
    }
    if (c + 1 == k) break;
    if (!(total > 0)) {  // fewer distinct points than clusters: any point will do
      pick = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      continue;
    }
    double r = std::uniform_real_distribution<double>(0, total)(rng);
    pick = n - 1;
    for (int64_t i = 0; i < n; ++i) {
      r -= d2[static_cast<size_t>(i)];
      if (r < 0) {
        pick = i;
        break;
      }
    }
  }
  return centres;
}

/// Lloyd's iterations from `centres` until no label changes.
KMeansResult lloyd(const double* x, int64_t n, int m, int k, std::vector<double> centres, int max_iterations) {
  KMeansResult r;
  r.labels.assign(static_cast<size_t>(n), -1);
  std::vector<double> d2(static_cast<size_t>(n));
  for (r.iterations = 1; r.iterations <= max_iterations; ++r.iterations) {
    bool changed = false;
    for (int64_t i = 0; i < n; ++i) {
      int best = 0;
      double bd = std::numeric_limits<double>::infinity();
      for (int c = 0; c < k; ++c) {
        const double d = distance2(x + i * m, &centres[static_cast<size_t>(c) * m], m);
        if (d < bd) bd = d, best = c;
      }
      d2[static_cast<size_t>(i)] = bd;
      if (r.labels[static_cast<size_t>(i)] != best) r.labels[static_cast<size_t>(i)] = best, changed = true;
    }
    std::vector<double> sum(static_cast<size_t>(k) * m, 0.0);
    std::vector<int64_t> count(static_cast<size_t>(k), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int c = r.labels[static_cast<size_t>(i)];
      ++count[static_cast<size_t>(c)];
      for (int j = 0; j < m; ++j) sum[static_cast<size_t>(c) * m + j] += x[i * m + j];
    }
    for (int c = 0; c < k; ++c) {
      if (count[static_cast<size_t>(c)] == 0) {
        // An emptied cluster restarts at the point worst served by its centre.
        const int64_t far = std::max_element(d2.begin(), d2.end()) - d2.begin();
        std::copy(x + far * m, x + (far + 1) * m, centres.begin() + static_cast<ptrdiff_t>(c) * m);
        d2[static_cast<size_t>(far)] = 0;
        changed = true;
        continue;
      }
      for (int j = 0; j < m; ++j)
        centres[static_cast<size_t>(c) * m + j] = sum[static_cast<size_t>(c) * m + j] /
                                                  static_cast<double>(count[static_cast<size_t>(c)]);
    }
    if (!changed) break;
  }
  r.iterations = std::min(r.iterations, max_iterations);
  r.inertia = 0;
  for (int64_t i = 0; i < n; ++i)
    r.inertia += distance2(x + i * m, &centres[static_cast<size_t>(r.labels[static_cast<size_t>(i)]) * m], m);
  r.centres = std::move(centres);
  return r;
}

/// Clusters renumbered in the order of their first point, so equal
/// partitions get equal labels whatever the start.
void renumber(KMeansResult& r, int k, int m) {
  std::vector<int> order(static_cast<size_t>(k), -1);
  int next = 0;
  for (int32_t l : r.labels)
    if (order[static_cast<size_t>(l)] < 0) order[static_cast<size_t>(l)] = next++;
  for (int c = 0; c < k; ++c)
    if (order[static_cast<size_t>(c)] < 0) order[static_cast<size_t>(c)] = next++;
  std::vector<double> centres(r.centres.size());
  for (int c = 0; c < k; ++c)
    std::copy(r.centres.begin() + static_cast<ptrdiff_t>(c) * m, r.centres.begin() + static_cast<ptrdiff_t>(c + 1) * m,
              centres.begin() + static_cast<ptrdiff_t>(order[static_cast<size_t>(c)]) * m);
  r.centres = std::move(centres);
  r.sizes.assign(static_cast<size_t>(k), 0);
  for (int32_t& l : r.labels) l = order[static_cast<size_t>(l)], ++r.sizes[static_cast<size_t>(l)];
}

}  // namespace

void validate(const KMeansParams& p, int64_t n) {
  if (p.clusters < 1) throw UsageError("--clusters " + std::to_string(p.clusters) + ": must be at least 1");
  if (p.clusters > n)
    throw UsageError("--clusters " + std::to_string(p.clusters) + ": more clusters than the " + std::to_string(n) +
                     " points");
  if (p.restarts < 1) throw UsageError("--restarts: must be at least 1");
  if (p.max_iterations < 1) throw UsageError("k-means: max_iterations must be at least 1");
}

KMeansResult kmeans(const double* x, int64_t n, int m, const KMeansParams& p) {
  validate(p, n);
  if (m < 1) throw UsageError("k-means: needs at least one coordinate");
  std::mt19937_64 rng(p.seed);
  KMeansResult best;
  best.inertia = std::numeric_limits<double>::infinity();
  for (int s = 0; s < p.restarts; ++s) {
    KMeansResult r = lloyd(x, n, m, p.clusters, seed_centres(x, n, m, p.clusters, rng), p.max_iterations);
    if (r.inertia < best.inertia) best = std::move(r);
  }
  renumber(best, p.clusters, m);
  return best;
}

KnnGraph embedded_graph(KnnGraph g, int k, const std::string& symmetrize) {
  if (k > 0 && k < g.k) g = g.sliced(k);
  if (symmetrize != "and") return g;
  const size_t k_used = static_cast<size_t>(g.k);
  std::vector<int64_t> sorted(g.indices.begin(), g.indices.end());
  for (int64_t i = 0; i < g.n; ++i)
    std::sort(sorted.begin() + static_cast<ptrdiff_t>(i * g.k), sorted.begin() + static_cast<ptrdiff_t>((i + 1) * g.k));
  auto lists = [&](int64_t i, int64_t j) {
    const auto row = sorted.begin() + static_cast<ptrdiff_t>(i * g.k);
    return std::binary_search(row, row + static_cast<ptrdiff_t>(k_used), j);
  };
  for (int64_t i = 0; i < g.n; ++i)
    for (size_t j = 0; j < k_used; ++j) {
      int64_t& nb = g.indices[static_cast<size_t>(i) * k_used + j];
      if (nb >= 0 && nb < g.n && !lists(nb, i)) nb = -1;
    }
  return g;
}

std::vector<int32_t> graph_components(const KnnGraph& g) {
  // Union-find with path halving over the n x k edges.
  std::vector<int64_t> parent(static_cast<size_t>(g.n));
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int64_t a) {
    while (parent[static_cast<size_t>(a)] != a)
      a = parent[static_cast<size_t>(a)] = parent[static_cast<size_t>(parent[static_cast<size_t>(a)])];
    return a;
  };
  for (int64_t i = 0; i < g.n; ++i)
    for (int j = 0; j < g.k; ++j) {
      const int64_t nb = g.indices[static_cast<size_t>(i * g.k + j)];
      if (nb < 0 || nb >= g.n) continue;
      const int64_t a = find(i), b = find(nb);
      if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
  std::map<int64_t, std::pair<int64_t, int64_t>> roots;  // root -> (size, first point)
  for (int64_t i = 0; i < g.n; ++i) {
    auto [it, fresh] = roots.try_emplace(find(i), 0, i);
    ++it->second.first;
  }
  std::vector<std::pair<std::pair<int64_t, int64_t>, int64_t>> order;  // ((-size, first), root)
  for (auto& [root, sf] : roots) order.push_back({{-sf.first, sf.second}, root});
  std::sort(order.begin(), order.end());
  std::map<int64_t, int32_t> label;
  for (size_t c = 0; c < order.size(); ++c) label[order[c].second] = static_cast<int32_t>(c);
  std::vector<int32_t> out(static_cast<size_t>(g.n));
  for (int64_t i = 0; i < g.n; ++i) out[static_cast<size_t>(i)] = label[find(i)];
  return out;
}

int eigengap_clusters(const std::vector<double>& ev, int max_clusters) {
  if (ev.size() < 3) throw UsageError("eigengap: needs at least 3 eigenvalues (lambda_0 and two more)");
  const int top = std::min<int>(max_clusters, static_cast<int>(ev.size()) - 1);
  int best = 2;
  for (int k = 3; k <= top; ++k)
    if (ev[static_cast<size_t>(k - 1)] - ev[static_cast<size_t>(k)] >
        ev[static_cast<size_t>(best - 1)] - ev[static_cast<size_t>(best)])
      best = k;
  return best;
}

Agreement cluster_agreement(const std::vector<int32_t>& classes, const std::vector<int32_t>& clusters) {
  if (classes.size() != clusters.size()) throw Error("cluster agreement: labels of different lengths");
  const int nc = classes.empty() ? 0 : *std::max_element(classes.begin(), classes.end()) + 1;
  const int nk = clusters.empty() ? 0 : *std::max_element(clusters.begin(), clusters.end()) + 1;
  if (nk > 8) throw UsageError("cluster agreement: at most 8 clusters (exhaustive matching)");
  Agreement a;
  a.confusion.assign(static_cast<size_t>(nc), std::vector<int64_t>(static_cast<size_t>(nk), 0));
  for (size_t i = 0; i < classes.size(); ++i)
    if (classes[i] >= 0 && clusters[i] >= 0)
      ++a.confusion[static_cast<size_t>(classes[i])][static_cast<size_t>(clusters[i])];
  // Every injective assignment of clusters to classes (or none): try all
  // orders of max(nc, nk) slots.
  const int slots = std::max(nc, nk);
  std::vector<int> perm(static_cast<size_t>(slots));
  std::iota(perm.begin(), perm.end(), 0);
  int64_t best = -1;
  do {
    int64_t right = 0;
    for (int c = 0; c < nk; ++c)
      if (perm[static_cast<size_t>(c)] < nc)
        right += a.confusion[static_cast<size_t>(perm[static_cast<size_t>(c)])][static_cast<size_t>(c)];
    if (right > best) {
      best = right;
      a.class_of_cluster.assign(static_cast<size_t>(nk), -1);
      for (int c = 0; c < nk; ++c)
        if (perm[static_cast<size_t>(c)] < nc)
          a.class_of_cluster[static_cast<size_t>(c)] = perm[static_cast<size_t>(c)];
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  a.accuracy = classes.empty() ? 0 : static_cast<double>(best) / static_cast<double>(classes.size());
  return a;
}

}  // namespace manifold
