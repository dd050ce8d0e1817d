#include "manifold/knn.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/parallel.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace manifold {

namespace {

/// Asks for huge pages and faults in the whole pages inside [p, p + bytes)
/// on a few threads, before anything is written there. A hint: where the
/// kernel refuses (older than 5.14, not Linux), the first writes fault as
/// before. The threads are this call's own, not the loop pool: the GPU
/// backend calls this beside its first uploads, whose staging copy takes
/// the pool, and a copy that found the pool busy would start threads whose
/// stacks wait on the address-space lock each populate call holds.
void populate_pages(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  constexpr uintptr_t kPage = 4096, kHuge = uintptr_t{2} << 20;
  if (bytes < (size_t{64} << 20)) return;
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  madvise(reinterpret_cast<void*>(a), e - a, MADV_HUGEPAGE);
  const int threads = std::min(4, hardware_threads());
  const uintptr_t chunk = ((e - a) / threads + kHuge - 1) & ~(kHuge - 1);
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    const uintptr_t b = a + static_cast<uintptr_t>(t) * chunk;
    if (b < e)
      workers.emplace_back([b, e, chunk] {
        madvise(reinterpret_cast<void*>(b), std::min(e, b + chunk) - b, MADV_POPULATE_WRITE);
      });
  }
  madvise(reinterpret_cast<void*>(a), std::min(e, a + chunk) - a, MADV_POPULATE_WRITE);
  for (auto& w : workers) w.join();
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace

void KnnGraph::allocate_result() {
  const size_t nk = static_cast<size_t>(n) * static_cast<size_t>(k);
  indices.clear();
  distances.clear();
  indices.reserve(nk);
  distances.reserve(nk);
  populate_pages(indices.data(), nk * sizeof(int64_t));
  populate_pages(distances.data(), nk * sizeof(float));
  indices.resize(nk);
  distances.resize(nk);
}

std::string to_string(Metric m) {
  switch (m) {
    case Metric::Euclidean: return "euclidean";
    case Metric::Cosine: return "cosine";
    case Metric::Pearson: return "pearson";
  }
  return "?";
}

Metric parse_metric(const std::string& name) {
  if (name == "euclidean") return Metric::Euclidean;
  if (name == "cosine") return Metric::Cosine;
  if (name == "pearson") return Metric::Pearson;
  throw UsageError("--metric: unknown metric '" + name + "' (euclidean, cosine, pearson)");
}

std::string to_string(Select s) {
  switch (s) {
    case Select::Auto: return "auto";
    case Select::Warp: return "warp";
    case Select::Quick: return "quick";
    case Select::Sort: return "sort";
    case Select::Heap: return "heap";
    case Select::Merge: return "merge";
    case Select::Bitonic: return "bitonic";
  }
  return "?";
}

Select parse_select(const std::string& name) {
  for (Select s : kSelects)
    if (name == to_string(s)) return s;
  throw UsageError("--select: unknown strategy '" + name + "' (auto, warp, quick, sort, heap, merge, bitonic)");
}

std::string to_string(Precision p) { return p == Precision::FastExact ? "fast-exact" : "exact"; }

Precision parse_precision(const std::string& name) {
  if (name == "exact") return Precision::Exact;
  if (name == "fast-exact") return Precision::FastExact;
  throw UsageError("--precision: unknown value '" + name + "' (exact, fast-exact)");
}

void validate(const KnnParams& p, int64_t n) {
  if (n < 2) throw UsageError("dataset has " + std::to_string(n) + " points; a k-NN graph needs at least 2");
  const int64_t kmax = p.keep_self ? n : n - 1;
  if (p.k < 1 || p.k > kmax)
    throw UsageError("-k " + std::to_string(p.k) + ": must be between 1 and " + std::to_string(kmax) + " for " +
                     std::to_string(n) + " points");
  if (p.threads < 0) throw UsageError("--threads: must be >= 0");
}

KnnGraph empty_graph(const Dataset& data, const KnnParams& params, const std::string& backend) {
  KnnGraph g;
  g.n = data.rows();
  g.d = data.cols();
  g.k = params.k;
  g.metric = params.metric;
  g.keep_self = params.keep_self;
  g.backend = backend;
  return g;
}

KnnGraph KnnGraph::sliced(int k2) const {
  if (k2 < 1 || k2 > k)
    throw UsageError("k " + std::to_string(k2) + ": must be between 1 and the graph's k = " + std::to_string(k));
  KnnGraph g = *this;
  g.k = k2;
  g.indices.resize(static_cast<size_t>(n * k2));
  g.distances.resize(static_cast<size_t>(n * k2));
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < k2; ++j) {
      g.indices[i * k2 + j] = indices[i * k + j];
      g.distances[i * k2 + j] = distances[i * k + j];
    }
  return g;
}

// ---- registry -------------------------------------------------------------

namespace {
struct Entry {
  BackendFactory factory;
  std::function<bool()> available;
};
std::mutex registry_mutex;
std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> r;
  return r;
}
}  // namespace

void register_backend(const std::string& name, BackendFactory factory, std::function<bool()> available) {
  std::lock_guard lock(registry_mutex);
  registry()[name] = Entry{std::move(factory), std::move(available)};
}

bool backend_available(const std::string& name) {
  std::lock_guard lock(registry_mutex);
  auto it = registry().find(name);
  return it != registry().end() && it->second.available();
}

std::vector<std::string> backend_names() {
  std::lock_guard lock(registry_mutex);
  std::vector<std::string> names;
  for (auto& [n, e] : registry()) names.push_back(n);
  return names;
}

std::unique_ptr<KnnBackend> make_backend(const std::string& name) {
  std::string chosen = name;
  if (name == "auto") chosen = backend_available("gpu") ? "gpu" : "cpu";
  std::lock_guard lock(registry_mutex);
  auto it = registry().find(chosen);
  if (it == registry().end()) {
    std::string known;
    for (auto& [n, e] : registry()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("--backend: '" + name + "' is not built into this program (available: auto, " + known + ")");
  }
  if (!it->second.available())
    throw Error("--backend " + chosen + ": not usable on this machine" +
                std::string(chosen == "gpu" ? " (no CUDA GPU found)" : ""));
  return it->second.factory();
}

// ---- shared helpers ---------------------------------------------------------

PreparedRows prepare_rows(const Dataset& data, Metric metric) {
  PreparedRows p;
  p.rows = data.rows();
  p.cols = data.cols();
  if (metric == Metric::Euclidean) {
    p.data = data.data();
    return p;
  }
  p.storage.resize(static_cast<size_t>(p.rows * p.cols));
  const int64_t d = p.cols;
  std::atomic<int64_t> first_bad{INT64_MAX}, bad_rows{0};
  parallel_for(0, p.rows, 0, [&](int64_t i) {
    const float* x = data.row(i);
    float* y = p.storage.data() + i * d;
    double mean = 0;
    if (metric == Metric::Pearson) {
      for (int64_t j = 0; j < d; ++j) mean += x[j];
      mean /= static_cast<double>(d);
    }
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) {
      double v = x[j] - mean;
      ss += v * v;
    }
    if (!(ss > 0) || !std::isfinite(ss)) {
      bad_rows.fetch_add(1, std::memory_order_relaxed);
      for (int64_t seen = first_bad.load(); i < seen && !first_bad.compare_exchange_weak(seen, i);) {
      }
      ss = 1;
    }
    double inv = 1.0 / std::sqrt(ss);
    for (int64_t j = 0; j < d; ++j) y[j] = static_cast<float>((x[j] - mean) * inv);
  });
  if (const int64_t bad = bad_rows.load(); bad > 0) {
    // Blank frames are the usual cause: say how many there are.
    const bool cosine = metric == Metric::Cosine;
    throw Error(data.source + (data.source.empty() ? "" : ": ") + "row " + std::to_string(first_bad.load()) +
                (bad > 1 ? " and " + std::to_string(bad - 1) + " more are " : " is ") +
                (cosine ? "all zero (or not finite): cosine distance is undefined"
                        : "constant (or not finite): Pearson distance is undefined") +
                "; leave them out or use --metric euclidean");
  }
  p.data = p.storage.data();
  return p;
}

float refined_distance(const float* x, const float* y, int64_t d, Metric metric) {
  return exact::key_of(exact::exact_sum_sq_diff(x, y, d), metric == Metric::Euclidean);
}

void refine_graph(const PreparedRows& rows, KnnGraph& g, int threads) {
  const int64_t d = rows.cols;
  const int k = g.k;
  parallel_for(0, g.n, threads, [&](int64_t i) {
    const float* x = rows.data + i * d;
    std::vector<std::pair<float, int64_t>> row(static_cast<size_t>(k));
    for (int j = 0; j < k; ++j) {
      int64_t nb = g.indices[i * k + j];
      row[j] = {refined_distance(x, rows.data + nb * d, d, g.metric), nb};
    }
    std::sort(row.begin(), row.end());
    for (int j = 0; j < k; ++j) {
      g.distances[i * k + j] = row[j].first;
      g.indices[i * k + j] = row[j].second;
    }
  });
}

}  // namespace manifold
