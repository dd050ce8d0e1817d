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

/// Asks for huge pages and faults in the pages of rows [0, n) of the two
/// arrays (row_bytes[i] each), a piece of rows at a time in row order, on a
/// few threads; tells `rows_ready` each time the leading rows are in. A
/// hint: where the kernel refuses (older than 5.14, not Linux), the first
/// writes fault as before. The threads are this call's own, not the loop
/// pool: the GPU backend calls this beside its first uploads, whose staging
/// copy takes the pool. Pieces of about 32 MB: each MADV_POPULATE_WRITE call
/// holds the address space's lock, which a thread or a mapping made
/// meanwhile waits for, so the lock is let go every few milliseconds.
void populate_rows(int64_t n, void* const base[2], const size_t row_bytes[2],
                   const std::function<void(int64_t)>& rows_ready) {
  const size_t total = static_cast<size_t>(n) * (row_bytes[0] + row_bytes[1]);
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  constexpr uintptr_t kPage = 4096;
  if (total >= (size_t{96} << 20)) {
    for (int a = 0; a < 2; ++a) {
      const uintptr_t p = reinterpret_cast<uintptr_t>(base[a]);
      const uintptr_t begin = (p + kPage - 1) & ~(kPage - 1), end = (p + n * row_bytes[a]) & ~(kPage - 1);
      if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    const int64_t piece = std::max<int64_t>(1,
                                            static_cast<int64_t>((size_t{32} << 20) / (row_bytes[0] + row_bytes[1])));
    const int64_t pieces = (n + piece - 1) / piece;
    std::atomic<int64_t> next{0};
    std::mutex m;
    std::vector<char> done(static_cast<size_t>(pieces), 0);
    int64_t leading = 0;  // pieces [0, leading) are in (guarded by m)
    auto work = [&] {
      for (int64_t c = next++; c < pieces; c = next++) {
        const int64_t r0 = c * piece, r1 = std::min(n, r0 + piece);
        for (int a = 0; a < 2; ++a) {
          // Whole pages over the rows' bytes (the neighbours' pages too:
          // faulting a page twice is free, and every page stays inside
          // the array's mapping).
          const uintptr_t p = reinterpret_cast<uintptr_t>(base[a]);
          const uintptr_t begin = (p + r0 * row_bytes[a]) & ~(kPage - 1);
          const uintptr_t end = (p + r1 * row_bytes[a] + kPage - 1) & ~(kPage - 1);
          madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
        }
        std::lock_guard lock(m);
        done[static_cast<size_t>(c)] = 1;
        const int64_t before = leading;
        while (leading < pieces && done[static_cast<size_t>(leading)]) ++leading;
        if (rows_ready && leading > before) rows_ready(std::min(n, leading * piece));
      }
    };
    std::vector<std::thread> workers;
    for (int t = 1; t < std::min(4, hardware_threads()); ++t) workers.emplace_back(work);
    work();
    for (auto& w : workers) w.join();
    return;
  }
#else
  (void)base, (void)total;
#endif
  if (rows_ready) rows_ready(n);
}

}  // namespace

void KnnGraph::allocate_result(const std::function<void(int64_t)>& rows_ready) {
  const size_t nk = static_cast<size_t>(n) * static_cast<size_t>(k);
  indices.clear();
  distances.clear();
  indices.resize(nk);
  distances.resize(nk);
  void* const base[2] = {indices.data(), distances.data()};
  const size_t row_bytes[2] = {static_cast<size_t>(k) * sizeof(int64_t), static_cast<size_t>(k) * sizeof(float)};
  populate_rows(n, base, row_bytes, rows_ready);
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

std::string certificate_note(const KnnGraph& graph) {
  const int64_t rescanned = graph.extra.value("rescanned_rows", int64_t{0});
  const int64_t fallback = graph.extra.value("fallback_rows", int64_t{0});
  if (rescanned <= 0 && fallback <= 0) return "";
  std::string note = "note: " + std::to_string(rescanned) + " rows rescanned and " + std::to_string(fallback) +
                     " rows ranked by a full exact scan (dense neighbourhoods)";
  const bool fast = graph.extra.value("precision", std::string()) == "fast-exact";
  if (fast && (rescanned + fallback) * 10 >= graph.n)
    note += "; --precision exact (a narrower bound: more rows settle from their lists) may be faster here";
  return note;
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
