#pragma once
// The k-nearest-neighbour graph: parameters, result, and the backend
// interface every engine (CPU, GPU, MPI) implements.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/dataset.h"
#include "manifold/progress.h"
#include "manifold/result_vector.h"

namespace manifold {

/// All metrics run as squared Euclidean distances on prepared rows:
/// cosine on unit-norm rows, Pearson on zero-mean unit-norm rows.
enum class Metric { Euclidean, Cosine, Pearson };

std::string to_string(Metric m);
/// Throws UsageError for an unknown name.
Metric parse_metric(const std::string& name);

/// The GPU's selection strategy (--select): `auto` picks from a measured
/// table; warp and merge are the engine's own, the others the papers'
/// (gpu/select/paper_strategies.h). The CPU backend has one selection.
enum class Select { Auto, Warp, Quick, Sort, Heap, Merge, Bitonic };
/// Every strategy, in the order the help and the errors list them.
inline constexpr Select kSelects[] = {Select::Auto, Select::Warp,  Select::Quick,  Select::Sort,
                                      Select::Heap, Select::Merge, Select::Bitonic};

std::string to_string(Select s);
/// Throws UsageError for an unknown name.
Select parse_select(const std::string& name);

/// --precision: fast-exact lets the GPU compute its candidate distances at
/// lower precision (tensor cores) before the exact ranking and distances;
/// both give the exact graph. The CPU backend computes exact.
enum class Precision { Exact, FastExact };

std::string to_string(Precision p);
/// Throws UsageError for an unknown name.
Precision parse_precision(const std::string& name);

struct KnnParams {
  int k = 10;  ///< neighbours per point, 1..N-1 (N with keep_self)
  Metric metric = Metric::Euclidean;
  bool keep_self = false;                  ///< a point is its own neighbour only if set
  Select select = Select::Auto;            ///< GPU selection strategy
  std::vector<int> devices;                ///< GPU ordinals; empty = all visible
  uint64_t gpu_memory = 0;                 ///< device memory budget in bytes; 0 = from free memory
  int threads = 0;                         ///< CPU threads; 0 = all cores
  Precision precision = Precision::Exact;  ///< how the GPU computes distances
};

/// Rejects bad parameters for `n` points with one line (UsageError).
void validate(const KnnParams& params, int64_t n);

/// Per-stage wall time in seconds, in the order the stages ran.
using Timings = std::vector<std::pair<std::string, double>>;

struct KnnGraph {
  int64_t n = 0;  ///< points
  int64_t d = 0;  ///< dimension of the input
  int k = 0;      ///< neighbours per point
  Metric metric = Metric::Euclidean;
  bool keep_self = false;
  ResultVector<int64_t> indices;  ///< n*k, row-major; each row ascending by (distance, index)
  ResultVector<float> distances;  ///< n*k true distances (Euclidean, 1-cos, 1-r)
  std::string backend;            ///< "cpu", "gpu", "mpi"
  std::string strategy;           ///< selection strategy that ran
  std::string fingerprint;        ///< Dataset::fingerprint() of the input
  Timings timings;
  nlohmann::json extra = nlohmann::json::object();  ///< backend-specific facts (devices, TFLOP/s, ranks...)
  /// False on the MPI ranks other than 0: they hold no result and must not
  /// write output or print a summary.
  bool output_rank = true;

  const int64_t* row_indices(int64_t i) const { return indices.data() + i * k; }
  const float* row_distances(int64_t i) const { return distances.data() + i * k; }
  /// The graph restricted to its first k2 <= k neighbours (no recomputation).
  KnnGraph sliced(int k2) const;
  /// Sizes indices and distances to n*k (n and k set; sizing writes
  /// nothing). Large results are fresh memory whose page faults dominated
  /// the GPU backend's host time at large k (4.9 GB at n = 1e5, k = 4096);
  /// the pages are asked for as transparent huge pages and faulted in by the
  /// kernel (MADV_POPULATE_WRITE) on a few threads, in row order, where
  /// Linux allows. `rows_ready(r)` (if given) is told each time rows [0, r)
  /// of both arrays are in, last with r = n; a producer may write the rows
  /// before that (they fault in as they are written).
  void allocate_result(const std::function<void(int64_t)>& rows_ready = {});
};

class KnnBackend {
 public:
  virtual ~KnnBackend() = default;
  virtual std::string name() const = 0;
  /// Builds the exact k-NN graph. Throws Error / UsageError / Cancelled.
  virtual KnnGraph build(const Dataset& data, const KnnParams& params, Progress& progress) = 0;
};

using BackendFactory = std::function<std::unique_ptr<KnnBackend>()>;

/// Registers a backend by name; `available` says whether it can run here
/// (e.g. a GPU is present). Re-registering a name replaces it.
void register_backend(
    const std::string& name, BackendFactory factory, std::function<bool()> available = [] { return true; });
/// "auto" picks "gpu" when registered and available, else "cpu".
/// Throws UsageError for an unknown or unavailable name.
std::unique_ptr<KnnBackend> make_backend(const std::string& name);
std::vector<std::string> backend_names();
bool backend_available(const std::string& name);

/// Registers the CPU backend (called by executables at start-up).
void register_cpu_backend();

/// What a build's certificate could not settle from the candidate lists
/// (`rescanned_rows`, `fallback_rows` in graph.extra: still exact, but a
/// cost worth knowing), as a one-line note; "" when every row settled. A
/// fast-exact build that rescanned a tenth of its rows or more adds that
/// exact precision, whose bound is narrower, may be faster on such data.
std::string certificate_note(const KnnGraph& graph);

// ---- helpers shared by the backends -------------------------------------

/// The graph every backend starts from: data's n and d, params' k, metric
/// and keep_self, and the backend's name; the lists, strategy and
/// fingerprint are the backend's to fill (it computes the fingerprint when it
/// can overlap it with other work).
KnnGraph empty_graph(const Dataset& data, const KnnParams& params, const std::string& backend);

/// Rows prepared for the metric as squared-Euclidean input: a copy for cosine
/// and Pearson (normalised), or a view of the data for Euclidean.
/// Throws Error naming the row when a row cannot be normalised (zero norm).
struct PreparedRows {
  const float* data = nullptr;
  int64_t rows = 0, cols = 0;
  /// Used when normalised or moved (exact::translate_rows); left unset when
  /// sized (the rows are written whole, in parallel: a zero fill on one
  /// thread took most of a cosine graph's preparation at 800 MB).
  ResultVector<float> storage;
};
PreparedRows prepare_rows(const Dataset& data, Metric metric);

/// Converts a squared Euclidean distance of prepared rows into the metric's
/// true distance (sqrt for Euclidean, d2/2 for cosine and Pearson).
inline float to_true_distance(float d2, Metric m) {
  if (d2 < 0.f) d2 = 0.f;
  if (m == Metric::Euclidean) return __builtin_sqrtf(d2);
  return 0.5f * d2;
}

/// The exact true distance of two prepared rows: squared differences summed
/// in double in one fixed order (exact::exact_sum_sq_diff), rounded to float,
/// converted to the metric's distance. Every backend ranks by exactly this.
float refined_distance(const float* x, const float* y, int64_t d, Metric metric);

/// Recomputes the selected neighbours' squared distances directly (sum of
/// squared differences in double, free of the GEMM cancellation error),
/// converts them to true distances and re-sorts each row by (distance, index).
void refine_graph(const PreparedRows& rows, KnnGraph& graph, int threads);

}  // namespace manifold
