// The job runner: k-NN graph and diffusion map off the GUI thread, with the
// results equal to core's (and the CLI's), the graph cache, and cancellation
// that leaves nothing half-done.
#include <QDir>
#include <QProcess>
#include <QStandardPaths>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <random>

#include "manifold/embedding_io.h"
#include "manifold/error.h"
#include "manifold/session.h"
#include "manifold/ui/job_runner.h"
#include "manifold/ui/loaded_dataset.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// Coordinates equal up to the sign of each column (an eigenvector's sign is
/// a convention; two solvers may pick either).
double max_abs_diff_up_to_sign(const std::vector<double>& a, const std::vector<double>& b, int m) {
  if (a.size() != b.size() || m <= 0) return INFINITY;
  const size_t n = a.size() / static_cast<size_t>(m);
  double worst = 0;
  for (int c = 0; c < m; ++c) {
    double same = 0, flipped = 0;
    for (size_t i = 0; i < n; ++i) {
      same = std::max(same, std::abs(a[i * m + c] - b[i * m + c]));
      flipped = std::max(flipped, std::abs(a[i * m + c] + b[i * m + c]));
    }
    worst = std::max(worst, std::min(same, flipped));
  }
  return worst;
}

std::shared_ptr<const EmbeddingOutcome> wait_for_outcome(JobRunner& runner, QSignalSpy& finished, QSignalSpy& failed) {
  if (!finished.wait(60000)) {
    qWarning("no result; failures: %s", failed.isEmpty() ? "none" : qPrintable(failed.last().at(0).toString()));
    return nullptr;
  }
  Q_UNUSED(runner);
  return finished.last().at(0).value<std::shared_ptr<const EmbeddingOutcome>>();
}

/// |cos| of the angle between column c of two n x m row-major matrices.
double column_cosine(const std::vector<double>& a, const std::vector<double>& b, int m, int c) {
  const size_t n = a.size() / static_cast<size_t>(m);
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += a[i * m + c] * b[i * m + c];
    aa += a[i * m + c] * a[i * m + c];
    bb += b[i * m + c] * b[i * m + c];
  }
  return std::abs(ab) / std::sqrt(aa * bb);
}

/// A smooth 2-D strip, 5 long and 1 wide, bent in 3-D: its first diffusion
/// coordinates are well separated (no repeated eigenvalues).
std::shared_ptr<const LoadedDataset> bent_strip(int64_t n) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> v(static_cast<size_t>(n) * 3);
  for (int64_t i = 0; i < n; ++i) {
    const double x = 5 * u(rng), y = u(rng);
    v[3 * i] = static_cast<float>(x);
    v[3 * i + 1] = static_cast<float>(y);
    v[3 * i + 2] = static_cast<float>(0.5 * std::sin(x));
  }
  Dataset data(n, 3, std::move(v));
  data.source = "bent strip";
  data.format = "generated";
  return adoptDataset(std::move(data), "bent strip", "generated", false);
}

}  // namespace

class TestJobRunner : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString data_path_;
  std::shared_ptr<const LoadedDataset> dataset_;

  /// What a runner reports, caught from its construction on.
  struct RunnerSpies {
    explicit RunnerSpies(JobRunner& r)
        : finished(&r, &JobRunner::finished), failed(&r, &JobRunner::failed), previews(&r, &JobRunner::previewReady) {}
    QSignalSpy finished, failed, previews;
  };

  // ---- the phases of reembedPreviewsThenRefines ----

  // A smaller k re-embeds the cached graph warm: the result alone when the
  // warm solve is exact, else a preview close to it first; either way the
  // result is core's diffusion_map() to the solver tolerance, and kept.
  void smaller_k_is_warm_or_previewed(JobRunner& runner, RunnerSpies& spies, const QStringList& order,
                                      const EmbeddingOutcome& first, const RunParameters& q) {
    runner.run(q);
    auto final_outcome = wait_for_outcome(runner, spies.finished, spies.failed);
    QVERIFY(final_outcome);
    QVERIFY(!final_outcome->preview);
    QVERIFY(final_outcome->graph_reused && final_outcome->graph == first.graph);
    if (final_outcome->result->solver.value("converged", false) &&
        final_outcome->result->solver.value("method", std::string()).find("LOBPCG") != std::string::npos) {
      // Warm and exact: nothing to refine afterwards; a solve that ran past
      // RediffusePreview::after_s showed its 1e-6 iterate on the way.
      QVERIFY2(order == QStringList({"final"}) || order == QStringList({"preview", "final"}),
               qPrintable(order.join(',')));
    } else {
      QCOMPARE(order, QStringList({"preview", "final"}));
    }
    if (!spies.previews.isEmpty()) {
      auto preview = spies.previews.last().at(0).value<std::shared_ptr<const EmbeddingOutcome>>();
      QVERIFY(preview && preview->preview);
      QVERIFY(preview->graph_reused && preview->graph == first.graph);
      QCOMPARE(preview->params.knn.k, 10);
      QVERIFY(preview->residual >= 0);
      QCOMPARE(preview->result->n, final_outcome->result->n);
      QCOMPARE(preview->result->m, 3);
      for (int c = 0; c < 3; ++c) {
        const double cs = column_cosine(preview->result->coordinates, final_outcome->result->coordinates, 3, c);
        QVERIFY2(cs > 0.99, qPrintable(QStringLiteral("column %1: |cos| = %2").arg(c + 1).arg(cs)));
      }
    }
    // The exact result is core's diffusion_map() to the solver tolerance
    // (residual 1e-10: eigenvalues to ~1e-13, eigenvectors to residual /
    // gap), and it is what the runner keeps.
    Progress quiet;
    DiffusionResult direct = diffusion_map(first.graph->sliced(10), q.diffusion, quiet);
    QVERIFY(max_abs_diff(final_outcome->result->coordinates, direct.coordinates) < 1e-6);
    QVERIFY(max_abs_diff(final_outcome->result->eigenvalues, direct.eigenvalues) < 1e-10);
    QVERIFY(runner.current() == final_outcome);
  }

  // A change that supersedes a re-embedding drops its preview: only the
  // newest job's (`b`'s) preview, if any, and result arrive.
  void only_the_newest_job_arrives(JobRunner& runner, RunnerSpies& spies, const EmbeddingOutcome& first,
                                   const RunParameters& q, const RunParameters& b,
                                   std::shared_ptr<const EmbeddingOutcome>* newest) {
    spies.previews.clear();
    spies.finished.clear();
    RunParameters a = q;
    a.diffusion.alpha = 0.5;
    runner.run(a);
    runner.run(b);
    auto last = wait_for_outcome(runner, spies.finished, spies.failed);
    QVERIFY(last);
    QCOMPARE(spies.finished.count(), 1);
    QCOMPARE(last->params.diffusion.alpha, 0.0);
    for (const auto& args : spies.previews)
      QCOMPARE(args.at(0).value<std::shared_ptr<const EmbeddingOutcome>>()->params.diffusion.alpha, 0.0);
    Progress quiet;
    DiffusionResult direct_b = diffusion_map(first.graph->sliced(12), b.diffusion, quiet);
    QVERIFY(max_abs_diff(last->result->coordinates, direct_b.coordinates) < 1e-6);
    *newest = last;
  }

  // Cancelling during the refinement of `c` keeps the last exact result.
  void cancel_while_refining_keeps_the_last_result(JobRunner& runner, RunnerSpies& spies, const RunParameters& c,
                                                   const std::shared_ptr<const EmbeddingOutcome>& last) {
    spies.previews.clear();
    QSignalSpy cancelled(&runner, &JobRunner::cancelled);
    connect(&runner, &JobRunner::previewReady, &runner, [&runner] { runner.cancel(); });
    runner.run(c);
    QTRY_VERIFY_WITH_TIMEOUT(cancelled.count() > 0 || spies.finished.count() > 1, 60000);
    QVERIFY(runner.current() == last || spies.finished.count() > 1);
    QVERIFY(!runner.busy());
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    data_path_ = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 900, 20, 20);
    dataset_ = loadDataset(data_path_);
    QCOMPARE(dataset_->rows(), int64_t(900));
    QCOMPARE(dataset_->image_height, 20);
    QVERIFY(dataset_->range.second > dataset_->range.first);
  }

  // A run through the runner equals diffusion_map() called directly on the
  // graph of the CPU backend with the same parameters.
  void runEqualsCore() {
    JobRunner runner;
    runner.setDataset(dataset_);
    QSignalSpy finished(&runner, &JobRunner::finished), failed(&runner, &JobRunner::failed),
        progressed(&runner, &JobRunner::progressed);
    RunParameters p;
    p.backend = "cpu";
    p.knn.k = 12;
    p.diffusion.k = 12;
    p.diffusion.components = 5;
    runner.run(p);
    QVERIFY(runner.busy());
    auto outcome = wait_for_outcome(runner, finished, failed);
    QVERIFY(outcome);
    QVERIFY(!runner.busy());
    QVERIFY(!outcome->graph_reused);
    QVERIFY(!progressed.isEmpty());
    bool saw_knn = false;
    for (const auto& args : progressed) saw_knn |= args.at(0).value<ProgressInfo>().stage == "knn";
    QVERIFY2(saw_knn, "the k-NN stage reported no progress");

    Progress quiet;
    KnnGraph graph = make_backend("cpu")->build(dataset_->data, p.knn, quiet);
    QCOMPARE(outcome->graph->indices, graph.indices);
    QCOMPARE(outcome->graph->distances, graph.distances);
    DiffusionResult direct = diffusion_map(graph, p.diffusion, quiet);
    QCOMPARE(outcome->result->m, 5);
    QCOMPARE(outcome->result->n, direct.n);
    QVERIFY(max_abs_diff(outcome->result->eigenvalues, direct.eigenvalues) < 1e-12);
    QVERIFY(max_abs_diff(outcome->result->coordinates, direct.coordinates) < 1e-12);
    QCOMPARE(outcome->result->epsilon, direct.epsilon);
  }

  // Lowering k, or changing epsilon, alpha or t, re-embeds from the cached
  // graph (no new k-NN run) and matches a direct computation; a new metric
  // or a larger k rebuilds the graph.
  void reembedUsesCachedGraph() {
    JobRunner runner;
    runner.setDataset(dataset_);
    QSignalSpy finished(&runner, &JobRunner::finished), failed(&runner, &JobRunner::failed),
        started(&runner, &JobRunner::started);
    RunParameters p;
    p.backend = "cpu";
    p.knn.k = 15;
    p.diffusion.k = 15;
    p.diffusion.components = 4;
    runner.run(p);
    auto first = wait_for_outcome(runner, finished, failed);
    QVERIFY(first);
    QCOMPARE(started.last().at(0).toBool(), true);

    RunParameters q = p;
    q.knn.k = 8;
    q.diffusion.k = 8;
    QVERIFY(runner.cachedGraph(q) == first->graph);
    runner.run(q);
    QCOMPARE(started.last().at(0).toBool(), false);  // no graph to build
    auto second = wait_for_outcome(runner, finished, failed);
    QVERIFY(second);
    QVERIFY(second->graph_reused);
    QVERIFY(second->graph == first->graph);
    QCOMPARE(second->knn_seconds, 0.0);
    Progress quiet;
    // The first 8 of 15 neighbours are the 8 nearest: the same distances as a
    // k = 8 graph (neighbours at equal distance may come in either order).
    KnnGraph direct_graph = make_backend("cpu")->build(dataset_->data, q.knn, quiet);
    const KnnGraph sliced = first->graph->sliced(8);
    for (size_t i = 0; i < sliced.distances.size(); ++i)
      QVERIFY(std::abs(sliced.distances[i] - direct_graph.distances[i]) <= 1e-5f * (1 + direct_graph.distances[i]));
    DiffusionResult direct = diffusion_map(sliced, q.diffusion, quiet);
    QCOMPARE(second->result->k, 8);
    // A re-embedding is solved warm (rediffuse) to the solver tolerance: the
    // full solve's result to residual / gap, not to the last bit.
    QVERIFY(max_abs_diff(second->result->coordinates, direct.coordinates) < 1e-6);
    QVERIFY(max_abs_diff(second->result->coordinates, first->result->coordinates) > 1e-6);

    // Epsilon and alpha: a new eigensolve on the same graph.
    RunParameters e = q;
    e.diffusion.epsilon = "auto";
    e.diffusion.alpha = 0.5;
    runner.run(e);
    auto third = wait_for_outcome(runner, finished, failed);
    QVERIFY(third && third->graph_reused && !third->retimed);
    DiffusionResult direct_e = diffusion_map(sliced, e.diffusion, quiet);
    QCOMPARE(third->result->epsilon, direct_e.epsilon);
    QVERIFY(max_abs_diff(third->result->coordinates, direct_e.coordinates) < 1e-6);
    QVERIFY(third->result->bgh.contains("slope"));

    // Only t: coordinates rescaled from the eigenvectors, no eigensolve.
    RunParameters tt = e;
    tt.diffusion.t = 2.5;
    runner.run(tt);
    auto fourth = wait_for_outcome(runner, finished, failed);
    QVERIFY(fourth && fourth->retimed);
    DiffusionResult direct_t = diffusion_map(sliced, tt.diffusion, quiet);
    QVERIFY(max_abs_diff(fourth->result->coordinates, direct_t.coordinates) < 1e-6);

    // A larger k or another metric needs a new graph.
    RunParameters bigger = p;
    bigger.knn.k = 20;
    bigger.diffusion.k = 20;
    QVERIFY(!runner.cachedGraph(bigger));
    RunParameters cosine = q;
    cosine.knn.metric = Metric::Cosine;
    QVERIFY(!runner.cachedGraph(cosine));
    runner.run(cosine);
    QCOMPARE(started.last().at(0).toBool(), true);
    auto fifth = wait_for_outcome(runner, finished, failed);
    QVERIFY(fifth && !fifth->graph_reused);
    QCOMPARE(fifth->graph->metric, Metric::Cosine);
    // Both graphs stay cached.
    QVERIFY(runner.cachedGraph(q) == first->graph);
    QVERIFY(runner.cachedGraph(cosine) == fifth->graph);
  }

  // A re-embedding on the cached graph is solved warm (core's rediffuse());
  // when that reaches the solver tolerance it is the result, with no preview
  // and no second solve, equal to core's diffusion_map() to the tolerance;
  // otherwise it is shown as a preview first, then the exact result.
  // Previews of superseded jobs are dropped; a t-only change needs none.
  void reembedPreviewsThenRefines() {
    auto strip = bent_strip(3000);
    JobRunner runner;
    runner.setDataset(strip);
    QVERIFY(runner.previewEnabled());
    RunnerSpies spies(runner);
    QStringList order;
    connect(&runner, &JobRunner::previewReady, this, [&order] { order << "preview"; });
    connect(&runner, &JobRunner::finished, this, [&order] { order << "final"; });
    RunParameters p;
    p.backend = "cpu";
    p.knn.k = 16;
    p.diffusion.k = 16;
    p.diffusion.components = 3;
    runner.run(p);
    auto first = wait_for_outcome(runner, spies.finished, spies.failed);
    QVERIFY(first);
    QVERIFY(spies.previews.isEmpty());  // a new graph: nothing to start from
    QVERIFY(!first->preview);

    RunParameters q = p;
    q.knn.k = 10;
    q.diffusion.k = 10;
    order.clear();
    TEST_PHASE(smaller_k_is_warm_or_previewed(runner, spies, order, *first, q));
    RunParameters b = q;
    b.diffusion.alpha = 0.0;
    b.knn.k = b.diffusion.k = 12;
    std::shared_ptr<const EmbeddingOutcome> last;
    TEST_PHASE(only_the_newest_job_arrives(runner, spies, *first, q, b, &last));
    RunParameters c = b;
    c.diffusion.alpha = 1.0;
    TEST_PHASE(cancel_while_refining_keeps_the_last_result(runner, spies, c, last));

    // Only t: rescaled at once, no preview.
    const bool c_finished = spies.finished.count() > 1;  // c converged warm before any preview could cancel it
    spies.previews.clear();
    spies.finished.clear();
    RunParameters tt = c_finished ? c : b;
    tt.diffusion.t = 2;
    runner.run(tt);
    auto retimed = wait_for_outcome(runner, spies.finished, spies.failed);
    QVERIFY(retimed && retimed->retimed);
    QVERIFY(spies.previews.isEmpty());
  }

  // Cancelling a long k-NN run stops it, reports `cancelled`, and keeps the
  // previous embedding and nothing of the cancelled one.
  void cancelLeavesNothingHalfDone() {
    // Large enough that the k-NN stage runs for several seconds on two cores.
    const int n = 24000, d = 784;
    std::vector<float> v(static_cast<size_t>(n) * d);
    std::mt19937 rng(3);
    std::normal_distribution<float> g(0.f, 1.f);
    for (auto& x : v) x = g(rng);
    Dataset big(n, d, std::move(v));
    big.source = "generated";
    auto ds = adoptDataset(std::move(big), "big", "generated noise", false);

    JobRunner runner;
    runner.setDataset(dataset_);
    QSignalSpy finished(&runner, &JobRunner::finished), failed(&runner, &JobRunner::failed),
        cancelled(&runner, &JobRunner::cancelled), progressed(&runner, &JobRunner::progressed);
    RunParameters p;
    p.backend = "cpu";
    p.knn.k = 10;
    p.diffusion.k = 10;
    p.diffusion.components = 3;
    runner.run(p);
    auto before = wait_for_outcome(runner, finished, failed);
    QVERIFY(before);

    runner.setDataset(ds);
    QVERIFY(!runner.current());  // a new dataset has no embedding yet
    const int finished_before = finished.size();
    progressed.clear();
    runner.run(p);
    // Wait until the k-NN stage is under way, then cancel.
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
      for (const auto& a : progressed) {
        const auto info = a.at(0).value<ProgressInfo>();
        if (info.stage == "knn" && info.done > 0) return true;
      }
      return false;
        }(),
        60000);
    runner.cancel();
    QVERIFY(cancelled.wait(30000));
    qInfo("cancel took effect after %.3f s", runner.lastCancelLatency());
    QVERIFY(runner.lastCancelLatency() >= 0);
    QVERIFY(!runner.busy());
    QCOMPARE(finished.size(), finished_before);
    QVERIFY(failed.isEmpty());
    QVERIFY(!runner.current());
    QVERIFY2(!runner.cachedGraph(p), "a cancelled graph was cached");

    // The first dataset's graph is still cached and serves a re-embedding.
    runner.setDataset(dataset_);
    QVERIFY(runner.cachedGraph(p) == before->graph);
  }

  // Errors come back as one clear message, not an exception or a crash.
  void errorsAreMessages() {
    const QString bad = dir_.filePath("broken.npy");
    {
      QFile f(bad);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("\x93NUMPY\x01\x00garbage that is not a header");
    }
    try {
      loadDataset(bad);
      QFAIL("a broken file was accepted");
    } catch (const Error& e) {
      const QString msg = QString::fromUtf8(e.what());
      QVERIFY2(msg.contains("broken.npy"), qPrintable(msg));
    }
    try {
      loadDataset(dir_.filePath("missing.npy"));
      QFAIL("a missing file was accepted");
    } catch (const Error& e) {
      QVERIFY(QString::fromUtf8(e.what()).contains("missing.npy"));
    }

    JobRunner runner;
    QSignalSpy failed(&runner, &JobRunner::failed);
    runner.setDataset(dataset_);
    RunParameters p;
    p.backend = "cpu";
    p.knn.k = 5000;  // more neighbours than points
    runner.run(p);
    QVERIFY(failed.wait(30000));
    const QString msg = failed.last().at(0).toString();
    QVERIFY2(msg.contains("k") && !msg.isEmpty(), qPrintable(msg));
    QVERIFY(!runner.busy());
  }

  // The cluster backend: the graph is built by `manifold knn --backend mpi`
  // under a real local mpirun (two ranks), followed through its progress
  // file, and equals the CPU backend's.
  void clusterBackend() {
    const QByteArray cli = qgetenv("MANIFOLD_CLI");
    if (cli.isEmpty()) QSKIP("MANIFOLD_CLI is not set (run through CTest)");
    if (QStandardPaths::findExecutable("mpirun").isEmpty()) QSKIP("mpirun is not installed");
    const QString profile_path = dir_.filePath("local-mpi.json");
    {
      const nlohmann::json profile = {{"kind", "mpirun"},
                                      {"ranks", 2},
                                      {"mpirun_args", {"--oversubscribe"}},
                                      // OpenMPI refuses root (CI runs as root) unless told otherwise.
                                      {"env",
                                       {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}}},
                                      {"manifold", cli.toStdString()},
                                      {"work_dir", dir_.filePath("jobs").toStdString()}};
      QFile f(profile_path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(profile.dump(2)));
    }
    JobRunner runner;
    runner.setDataset(dataset_);
    QSignalSpy finished(&runner, &JobRunner::finished), failed(&runner, &JobRunner::failed),
        progressed(&runner, &JobRunner::progressed);
    RunParameters p;
    p.backend = "cluster";
    p.cluster_profile = profile_path.toStdString();
    p.knn.k = 9;
    p.diffusion.k = 9;
    p.diffusion.components = 3;
    runner.run(p);
    auto outcome = wait_for_outcome(runner, finished, failed);
    QVERIFY2(outcome, failed.isEmpty() ? "no result" : qPrintable(failed.last().at(0).toString()));
    QCOMPARE(QString::fromStdString(outcome->graph->backend), QString("mpi"));
    QVERIFY(!progressed.isEmpty());
    Progress quiet;
    KnnGraph cpu = make_backend("cpu")->build(dataset_->data, p.knn, quiet);
    QCOMPARE(outcome->graph->indices, cpu.indices);
    QCOMPARE(outcome->graph->distances, cpu.distances);
    // The job's folders are cleaned up; only job records stay in the work folder.
    for (const QString& name : QDir(dir_.filePath("jobs")).entryList(QDir::NoDotAndDotDot | QDir::AllEntries))
      QVERIFY2(!name.startsWith("explorer-graph-"), qPrintable(name));

    // A profile that cannot be read is an error message.
    RunParameters bad = p;
    bad.cluster_profile = dir_.filePath("missing-profile.json").toStdString();
    bad.knn.k = 11;  // not cached
    bad.diffusion.k = 11;
    runner.run(bad);
    QVERIFY(failed.wait(30000));
    QVERIFY2(failed.last().at(0).toString().contains("missing-profile.json"),
             qPrintable(failed.last().at(0).toString()));
  }

  // The GUI's embedding equals what `manifold run --session` writes for the
  // same data and parameters.
  void equalsCli() {
    const QByteArray cli = qgetenv("MANIFOLD_CLI");
    if (cli.isEmpty()) QSKIP("MANIFOLD_CLI is not set (run through CTest)");
    JobRunner runner;
    runner.setDataset(dataset_);
    QSignalSpy finished(&runner, &JobRunner::finished), failed(&runner, &JobRunner::failed);
    RunParameters p;
    p.backend = "cpu";
    p.knn.k = 10;
    p.diffusion.k = 10;
    p.diffusion.components = 4;
    p.diffusion.alpha = 0.5;
    p.diffusion.epsilon = "auto";
    runner.run(p);
    auto outcome = wait_for_outcome(runner, finished, failed);
    QVERIFY(outcome);

    Session s;
    s.data = data_path_.toStdString();
    s.backend = p.backend;
    s.knn = p.knn;
    s.diffusion = p.diffusion;
    const QString session = dir_.filePath("run.session.json");
    write_session(session.toStdString(), s);
    const QString out = dir_.filePath("cli-out");
    QProcess proc;
    proc.start(QString::fromLocal8Bit(cli), {"run", "--session", session, "-o", out, "--quiet"});
    QVERIFY(proc.waitForFinished(120000));
    QVERIFY2(proc.exitCode() == 0, proc.readAllStandardError().constData());
    Embedding e = read_embedding(out.toStdString());
    QCOMPARE(e.n, outcome->result->n);
    QCOMPARE(e.m, outcome->result->m);
    QVERIFY(max_abs_diff(e.eigenvalues, outcome->result->eigenvalues) < 1e-10);
    const double diff = max_abs_diff_up_to_sign(e.coordinates, outcome->result->coordinates, e.m);
    qInfo("GUI vs CLI: largest coordinate difference %.3g", diff);
    QVERIFY(diff < 1e-9);
  }
};

QTEST_MAIN(TestJobRunner)
#include "test_job_runner.moc"
