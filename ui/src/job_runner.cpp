#include "manifold/ui/job_runner.h"

#include <QLocale>
#include <QStringList>
#include <QtConcurrent/QtConcurrent>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <new>

#include "manifold/cluster.h"
#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/progress.h"

namespace fs = std::filesystem;

namespace manifold::ui {

namespace {
constexpr size_t kCachedGraphs = 4;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The graph built by a cluster job (local mpirun or Slurm, as the profile
/// says), followed through its progress file. Data made in memory (the demo,
/// a selection, a transformed file) go to the profile's work folder first,
/// where the nodes can read them: the features, already masked. A file read
/// as it is goes with the mask the explorer applied, so the job uses that one.
KnnGraph build_on_cluster(const LoadedDataset& ds, const RunParameters& p, const std::string& cli, Progress& progress) {
  if (p.cluster_profile.empty()) throw UsageError("cluster backend: choose a cluster profile first");
  cluster::Profile profile = cluster::load_profile(p.cluster_profile);
  if (profile.manifold.empty() && !cli.empty()) profile.manifold = cli;
  const fs::path work = profile.work_dir.empty() ? fs::temp_directory_path() : fs::path(profile.work_dir);
  fs::create_directories(work);
  const std::string stamp = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string data = ds.path.toStdString();
  std::string mask = ds.maskOption();
  fs::path temp_data;
  if (data.empty() || ds.transform != "none" || !ds.hdf5_dataset.empty()) {
    temp_data = work / ("explorer-data-" + stamp + ".npy");
    npy::write(temp_data.string(), ds.features.data(), {ds.features.rows(), ds.features.cols()});
    data = temp_data.string();
    mask = "none";
  }
  const fs::path out = work / ("explorer-graph-" + stamp);
  struct Cleanup {
    fs::path a, b;
    ~Cleanup() {
      std::error_code ec;
      if (!a.empty()) fs::remove(a, ec);
      if (!b.empty()) fs::remove_all(b, ec);
    }
  } cleanup{temp_data, out};
  std::vector<std::string> args = {"-k", std::to_string(p.knn.k), "--metric", to_string(p.knn.metric)};
  args.insert(args.end(), {"--mask", mask});
  if (p.knn.keep_self) args.push_back("--keep-self");
  auto job = cluster::Job::submit(profile, {data, out.string(), args});
  return cluster::follow(*job, progress);
}

QString duration_text(double s) {
  if (s < 0) return {};
  if (s < 60) return QObject::tr("%1 s").arg(static_cast<int>(std::ceil(s)));
  if (s < 3600) return QObject::tr("%1 min %2 s").arg(static_cast<int>(s) / 60).arg(static_cast<int>(s) % 60);
  return QObject::tr("%1 h %2 min").arg(static_cast<int>(s) / 3600).arg((static_cast<int>(s) % 3600) / 60);
}
}  // namespace

int ProgressInfo::percent() const {
  if (total == 0 || total_is_limit) return -1;
  return static_cast<int>(std::min<quint64>(100, done * 100 / total));
}

QString ProgressInfo::text() const {
  const QLocale locale(QLocale::English);
  QString s = stage;
  if (total_is_limit) {
    // A share of the budget is no share of the work (the default budget is
    // ten times what a hard spectrum needs, so most solves end far short of
    // it): the count, with the budget as the bound it is.
    s += QStringLiteral(": %1 %2").arg(locale.toString(static_cast<qulonglong>(done)), unit);
    QStringList bounds;
    if (total > 0) bounds << QObject::tr("budget %1").arg(locale.toString(static_cast<qulonglong>(total)));
    if (eta_s >= 0 && !finished) bounds << QObject::tr("at most %1 left").arg(duration_text(eta_s));
    if (!bounds.isEmpty()) s += QStringLiteral(" (%1)").arg(bounds.join(QStringLiteral(", ")));
    return s;
  }
  if (percent() >= 0) s += QStringLiteral(": %1%").arg(percent());
  else if (done > 0)
    s += QStringLiteral(": %1 %2").arg(locale.toString(static_cast<qulonglong>(done)), unit);
  if (rate > 0) s += QStringLiteral(" \u00b7 %1 %2/s").arg(locale.toString(rate, 'f', rate < 10 ? 1 : 0), unit);
  if (eta_s >= 0 && !finished) s += QObject::tr(" \u00b7 %1 left").arg(duration_text(eta_s));
  return s;
}

/// Forwards core's progress events to the GUI thread. Events of a job that
/// has been superseded are dropped there.
class JobProgressSink final : public ProgressSink {
 public:
  JobProgressSink(JobRunner* runner, uint64_t job) : runner_(runner), job_(job) {}
  void report(const ProgressEvent& e) override {
    ProgressInfo info;
    info.stage = QString::fromStdString(e.stage);
    info.unit = QString::fromStdString(e.unit);
    info.done = e.done;
    info.total = e.total;
    info.elapsed_s = e.elapsed_s;
    info.rate = e.rate;
    info.eta_s = e.eta_s;
    info.total_is_limit = e.total_is_limit;
    info.finished = e.finished;
    JobRunner* runner = runner_;
    const uint64_t job = job_;
    // The runner waits for its job in its destructor, so it outlives this call.
    QMetaObject::invokeMethod(
        runner,
        [runner, job, info] {
      if (runner->job_ == job && runner->running_) Q_EMIT runner->progressed(info);
        },
        Qt::QueuedConnection);
  }

 private:
  JobRunner* runner_;
  uint64_t job_;
};

JobRunner::JobRunner(QObject* parent) : QObject(parent) {
  qRegisterMetaType<ProgressInfo>();
  qRegisterMetaType<std::shared_ptr<const EmbeddingOutcome>>();
  connect(&watcher_, &QFutureWatcher<Output>::finished, this, &JobRunner::on_finished);
}

JobRunner::~JobRunner() {
  if (cancel_flag_) cancel_flag_->store(true);
  pending_.reset();
  watcher_.waitForFinished();
}

void JobRunner::setDataset(std::shared_ptr<const LoadedDataset> dataset) {
  if (running_) cancel();
  dataset_ = std::move(dataset);
  current_.reset();
}

std::string graphSource(const RunParameters& p) {
  return p.backend == "cluster" ? "cluster:" + p.cluster_profile : p.backend;
}

std::shared_ptr<const KnnGraph> JobRunner::cachedGraph(const RunParameters& p) const {
  if (!dataset_) return nullptr;
  const std::string source = graphSource(p);
  for (const auto& e : cache_)
    if (e.fingerprint == dataset_->fingerprint && e.source == source && e.metric == p.knn.metric &&
        e.keep_self == p.knn.keep_self && e.graph->k >= p.knn.k)
      return e.graph;
  return nullptr;
}

void JobRunner::clearCache() { cache_.clear(); }

void JobRunner::adoptGraph(std::shared_ptr<const KnnGraph> graph, const RunParameters& params) {
  if (dataset_ && graph) remember(dataset_->fingerprint, graphSource(params), std::move(graph));
}

void JobRunner::remember(const std::string& fingerprint, const std::string& source,
                         std::shared_ptr<const KnnGraph> graph) {
  // A larger graph of the same family serves every smaller k: keep only it.
  cache_.remove_if([&](const CacheEntry& e) {
    return e.fingerprint == fingerprint && e.source == source && e.metric == graph->metric &&
           e.keep_self == graph->keep_self && e.graph->k <= graph->k;
  });
  cache_.push_front({fingerprint, source, graph->metric, graph->keep_self, std::move(graph)});
  while (cache_.size() > kCachedGraphs) cache_.pop_back();
}

void JobRunner::run(const RunParameters& params) {
  if (!dataset_) {
    Q_EMIT failed(tr("Open a dataset first."));
    return;
  }
  if (running_) {
    pending_ = params;
    if (cancel_flag_) cancel_flag_->store(true);
    return;
  }
  start(params);
}

void JobRunner::cancel() {
  pending_.reset();
  if (!running_) return;
  user_cancelled_ = true;
  cancel_clock_.start();
  if (cancel_flag_) cancel_flag_->store(true);
}

namespace {

/// What one job works from, copied for its worker thread.
struct JobInput {
  std::shared_ptr<const LoadedDataset> dataset;
  RunParameters params;
  std::shared_ptr<const KnnGraph> cached;            ///< the graph to reuse, if any
  std::shared_ptr<const EmbeddingOutcome> previous;  ///< the result shown when the job started
  bool retime = false;                               ///< only t changed: rescale the previous result
  bool warm = false;                                 ///< re-embed from the previous result, with a preview
  std::string cli;                                   ///< the manifold command, for cluster jobs
  /// Hands a preview to the GUI thread, which drops it once superseded.
  std::function<void(std::shared_ptr<const EmbeddingOutcome>)> post_preview;
};

using Clock = std::chrono::steady_clock;

/// The job's graph: the cached one, else built here or on a cluster (then
/// also in `built`, for the cache).
std::shared_ptr<const KnnGraph> job_graph(const JobInput& in, Progress& progress, EmbeddingOutcome& outcome,
                                          std::shared_ptr<const KnnGraph>* built, Clock::time_point t0) {
  if (in.cached) {
    outcome.graph_reused = true;
    return in.cached;
  }
  std::shared_ptr<KnnGraph> graph;
  if (in.params.backend == "cluster")
    graph = std::make_shared<KnnGraph>(build_on_cluster(*in.dataset, in.params, in.cli, progress));
  else
    graph = std::make_shared<KnnGraph>(make_backend(in.params.backend)
                                           ->build(in.dataset->features, in.params.knn, progress));
  *built = graph;
  outcome.knn_seconds = seconds_since(t0);
  return graph;
}

/// The exact embedding of `graph`: warm from the previous result when that
/// converges, else cold, with the warm iterate shown as a preview meanwhile.
std::shared_ptr<DiffusionResult> job_embedding(const JobInput& in, const KnnGraph& graph, const DiffusionParams& dp,
                                               Progress& progress, const EmbeddingOutcome& outcome,
                                               Clock::time_point t0, Clock::time_point t1) {
  // Shows an unconverged embedding while this job goes on refining it.
  auto show_preview = [&](DiffusionResult&& r) {
    auto preview = std::make_shared<EmbeddingOutcome>(outcome);
    preview->preview = true;
    if (r.solver["max_residual"].is_number()) preview->residual = r.solver["max_residual"].get<double>();
    preview->result = std::make_shared<DiffusionResult>(std::move(r));
    preview->embed_seconds = seconds_since(t1);
    preview->total_seconds = seconds_since(t0);
    in.post_preview(std::move(preview));
  };
  if (in.warm) {
    // A solve that runs long enough shows its 1e-6 iterate on the way
    // (bench/diffusion/RESULTS.md, the re-embedding table: its
    // eigenvectors agree with the exact ones to |cos| within ~1e-9 of 1).
    RediffusePreview on_the_way;
    on_the_way.show = show_preview;
    DiffusionResult r = rediffuse(graph, dp, *in.previous->result, progress, 0, &on_the_way);
    // rediffuse() reached the solver tolerance (or solved in full: another
    // point set, too small a component): that is the exact result.
    if (r.solver.value("converged", false)) return std::make_shared<DiffusionResult>(std::move(r));
    show_preview(std::move(r));
  }
  // The exact solve starts cold, as the CLI's does, so the two agree to the
  // last bit.
  return std::make_shared<DiffusionResult>(diffusion_map(graph, dp, progress));
}

/// The whole job on the worker thread: a rescaled previous result when only
/// t changed, else the graph, then the embedding.
std::shared_ptr<EmbeddingOutcome> run_job(const JobInput& in, Progress& progress,
                                          std::shared_ptr<const KnnGraph>* built) {
  const auto t0 = Clock::now();
  auto outcome = std::make_shared<EmbeddingOutcome>();
  outcome->dataset = in.dataset;
  outcome->params = in.params;
  if (in.retime) {
    outcome->graph = in.previous->graph;
    outcome->graph_reused = true;
    outcome->retimed = true;
    outcome->result = withDiffusionTime(*in.previous->result, in.params.diffusion.t);
    outcome->embed_seconds = seconds_since(t0);
  } else {
    std::shared_ptr<const KnnGraph> graph = job_graph(in, progress, *outcome, built, t0);
    const auto t1 = Clock::now();
    DiffusionParams dp = in.params.diffusion;
    dp.k = dp.k > 0 ? std::min(dp.k, in.params.knn.k) : in.params.knn.k;
    validate(dp, *graph);
    outcome->graph = graph;
    outcome->result = job_embedding(in, *graph, dp, progress, *outcome, t0, t1);
    outcome->embed_seconds = seconds_since(t1);
  }
  outcome->total_seconds = seconds_since(t0);
  return outcome;
}

}  // namespace

void JobRunner::start(const RunParameters& params) {
  JobInput in;
  in.dataset = dataset_;
  in.params = params;
  in.cached = cachedGraph(params);
  in.previous = current_;
  in.retime = in.previous && in.cached && in.previous->dataset == in.dataset && in.previous->graph == in.cached &&
              params.differsOnlyInTime(in.previous->params);
  // A warm-start preview first when the graph is cached and the previous
  // result embedded this dataset (rediffuse() itself checks the point set).
  in.warm = preview_enabled_ && !in.retime && in.cached && in.previous && in.previous->dataset == in.dataset &&
            in.previous->result && in.previous->result->graph_points == in.cached->n;
  in.cli = cli_path_;
  auto flag = std::make_shared<std::atomic<bool>>(false);
  cancel_flag_ = flag;
  const uint64_t job = ++job_;
  running_ = true;
  user_cancelled_ = false;
  auto sink = std::make_shared<JobProgressSink>(this, job);
  JobRunner* runner = this;
  in.post_preview = [runner, job](std::shared_ptr<const EmbeddingOutcome> shown) {
    // The runner waits for its job in its destructor, so it outlives this call.
    QMetaObject::invokeMethod(
        runner,
        [runner, job, shown] {
      if (runner->job_ == job && runner->running_ && !runner->pending_ && shown->dataset == runner->dataset_)
        Q_EMIT runner->previewReady(shown);
        },
        Qt::QueuedConnection);
  };
  const bool builds_graph = !in.cached;

  QFuture<Output> future = QtConcurrent::run([in = std::move(in), flag, sink]() -> Output {
    Output out;
    out.fingerprint = in.dataset->fingerprint;
    out.source = graphSource(in.params);
    try {
      Progress progress(sink.get(), flag.get(), 0.1);
      out.outcome = run_job(in, progress, &out.built_graph);
    } catch (const Cancelled&) {
      out.cancelled = true;
    } catch (const std::bad_alloc&) {
      out.error = QObject::tr(
          "Out of memory: the dataset or the graph does not fit. Try a smaller k, "
          "fewer components, or a subset of the data.");
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  });
  watcher_.setFuture(future);
  Q_EMIT busyChanged(true);
  Q_EMIT started(builds_graph);
}

void JobRunner::on_finished() {
  Output out = watcher_.result();
  running_ = false;
  const bool superseded = pending_.has_value();
  if (out.built_graph) remember(out.fingerprint, out.source, out.built_graph);
  if (out.cancelled && user_cancelled_) cancel_latency_s_ = cancel_clock_.nsecsElapsed() / 1e9;
  if (superseded) {
    // A newer request replaced this job; its result (if any) is stale.
    RunParameters next = *pending_;
    pending_.reset();
    start(next);
    return;
  }
  Q_EMIT busyChanged(false);
  if (out.cancelled) {
    Q_EMIT cancelled();
  } else if (!out.error.isEmpty()) {
    Q_EMIT failed(out.error);
  } else if (out.outcome && out.outcome->dataset == dataset_) {
    current_ = out.outcome;
    Q_EMIT finished(out.outcome);
  }
}

}  // namespace manifold::ui
