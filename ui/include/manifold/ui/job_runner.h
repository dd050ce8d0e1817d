#pragma once
// Runs the k-NN graph and the diffusion map off the GUI thread (QtConcurrent)
// and reports through core's Qt-free progress interface, forwarded to the GUI
// thread as signals. Graphs are cached per dataset, metric, k and where they
// were built (the backend, and for a cluster the profile): a run whose k is at
// most a cached graph's k slices that graph instead of rebuilding it, and a
// run on another backend (a cluster job above all) builds its own.
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>

#include "manifold/diffusion_map.h"
#include "manifold/knn.h"
#include "manifold/ui/loaded_dataset.h"
#include "manifold/ui/run_parameters.h"

namespace manifold::ui {

/// One progress report, copied out of core's ProgressEvent.
struct ProgressInfo {
  QString stage, unit;
  quint64 done = 0, total = 0;
  double elapsed_s = 0, rate = 0, eta_s = -1;
  /// `total` is a budget the stage may stop well short of (the eigensolve's
  /// mat-vecs), not the work: eta_s is then the most time left.
  bool total_is_limit = false;
  bool finished = false;
  /// Percent done, or -1 when there is no amount of work to measure against
  /// (the total is unknown, or only a budget).
  int percent() const;
  /// "knn: 42% · 1,234 tiles/s · 3 s left", or against a budget
  /// "eigensolve: 1,234 mat-vecs (budget 20,000, at most 12 s left)".
  QString text() const;
};

/// Where a run's graph is built, as the cache keys it: the backend, and for
/// the cluster backend the profile ("cluster:/path/profile.json").
std::string graphSource(const RunParameters& params);

/// What a finished job hands the window. Immutable once emitted.
struct EmbeddingOutcome {
  std::shared_ptr<const LoadedDataset> dataset;
  std::shared_ptr<const KnnGraph> graph;  ///< as cached: its k may exceed params.knn.k
  std::shared_ptr<const DiffusionResult> result;
  RunParameters params;
  bool graph_reused = false;  ///< taken from the cache, not rebuilt
  bool retimed = false;       ///< only t changed: coordinates rescaled, no eigensolve
  /// A warm-start preview (core's rediffuse() from the previous result),
  /// shown while the exact diffusion_map() runs; `finished` replaces it.
  bool preview = false;
  /// The preview's largest eigen-residual (result->solver["max_residual"]), or -1.
  double residual = -1;
  double knn_seconds = 0, embed_seconds = 0, total_seconds = 0;
};

class JobRunner : public QObject {
  Q_OBJECT

 public:
  explicit JobRunner(QObject* parent = nullptr);
  ~JobRunner() override;

  /// Cancels any running job. The cache is kept (it is keyed by fingerprint).
  void setDataset(std::shared_ptr<const LoadedDataset> dataset);
  std::shared_ptr<const LoadedDataset> dataset() const { return dataset_; }

  /// Builds the graph unless the cache serves it, then embeds. A job already
  /// running is cancelled and this one starts as soon as it has stopped, so
  /// dragging a parameter never queues a backlog.
  void run(const RunParameters& params);
  /// Stops the running job (within one progress step) and drops any queued one.
  void cancel();
  bool busy() const { return running_; }

  /// The cached graph that serves `params` (same dataset, metric and
  /// backend, k at least params.knn.k), or null.
  std::shared_ptr<const KnnGraph> cachedGraph(const RunParameters& params) const;
  /// Caches a graph built elsewhere (a results folder's) as the current
  /// dataset's graph from params' backend, as if built here.
  void adoptGraph(std::shared_ptr<const KnnGraph> graph, const RunParameters& params);
  std::shared_ptr<const EmbeddingOutcome> current() const { return current_; }
  void clearCache();
  /// The `manifold` program cluster jobs run (default: the profile's, else
  /// the one beside this program).
  void setCliPath(const std::string& path) { cli_path_ = path; }
  /// Seconds from the last cancel() to the job actually stopping.
  double lastCancelLatency() const { return cancel_latency_s_; }
  /// Whether re-embeddings on a cached graph show a warm-start preview first
  /// (default on).
  void setPreviewEnabled(bool on) { preview_enabled_ = on; }
  bool previewEnabled() const { return preview_enabled_; }

 Q_SIGNALS:
  void started(bool builds_graph);
  void progressed(const manifold::ui::ProgressInfo& info);
  /// A re-embedding on a cached graph first delivers a warm-start preview
  /// (approximate, outcome->preview set), then refines it; `finished` follows
  /// with the exact result unless the job is cancelled or superseded. Previews
  /// of superseded jobs are dropped.
  void previewReady(std::shared_ptr<const manifold::ui::EmbeddingOutcome> outcome);
  void finished(std::shared_ptr<const manifold::ui::EmbeddingOutcome> outcome);
  void failed(const QString& message);
  void cancelled();
  void busyChanged(bool busy);

 private:
  struct Output {
    std::shared_ptr<const EmbeddingOutcome> outcome;
    std::shared_ptr<const KnnGraph> built_graph;  ///< a graph built to completion, to cache
    std::string fingerprint;                      ///< of the dataset the job ran on
    std::string source;                           ///< graphSource() of the job's parameters
    QString error;
    bool cancelled = false;
  };
  struct CacheEntry {
    std::string fingerprint;
    std::string source;
    Metric metric;
    bool keep_self;
    std::shared_ptr<const KnnGraph> graph;
  };

  void start(const RunParameters& params);
  void on_finished();
  void remember(const std::string& fingerprint, const std::string& source, std::shared_ptr<const KnnGraph> graph);

  std::shared_ptr<const LoadedDataset> dataset_;
  std::shared_ptr<const EmbeddingOutcome> current_;
  std::list<CacheEntry> cache_;  // most recent first
  QFutureWatcher<Output> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_flag_;
  std::optional<RunParameters> pending_;
  bool running_ = false;
  bool user_cancelled_ = false;
  uint64_t job_ = 0;
  QElapsedTimer cancel_clock_;
  double cancel_latency_s_ = -1;
  std::string cli_path_;
  bool preview_enabled_ = true;

  friend class JobProgressSink;
};

}  // namespace manifold::ui

Q_DECLARE_METATYPE(manifold::ui::ProgressInfo)
Q_DECLARE_METATYPE(std::shared_ptr<const manifold::ui::EmbeddingOutcome>)
