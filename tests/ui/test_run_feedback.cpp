// What the window says about a run, on real images (Fashion-MNIST t10k):
// progress against the eigensolve's budget, a solve that spends its budget
// (the one-line reason shown, the previous embedding kept in view), the
// embedding's diagnostics in the warning line above the view, localised
// coordinates left off the axes on request; and the parameters behind them
// (local scaling auto / off / a neighbour, the budget) through the panel and
// a session.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include "manifold/session.h"
#include "manifold/ui/gui_words.h"
#include "manifold/ui/main_window.h"
#include "ui_test_support.h"

using namespace manifold;
using namespace manifold::ui;
namespace t = manifold::ui::test;

namespace {

/// The coordinates the view's axes are titled with ("ψ3" -> 3).
std::vector<int> drawn_axes(const EmbeddingView& view) {
  std::vector<int> axes;
  for (const QString& title : view.axisTitles()) axes.push_back(title.mid(1).toInt());
  return axes;
}

/// Whether the view draws, point by point, the coordinates of `r` its axes
/// are titled with (z = 0 in 2-D).
bool view_draws(const EmbeddingView& view, const DiffusionResult& r) {
  const std::vector<int> axes = drawn_axes(view);
  const std::vector<float> xyz = view.points();
  if (axes.size() != 3 || xyz.size() != static_cast<size_t>(3 * r.n) || r.n == 0) return false;
  for (int a : axes)
    if (a < 1 || a > r.m) return false;
  for (int64_t e = 0; e < r.n; ++e) {
    const double* c = r.coordinates.data() + e * r.m;
    const float z = view.planar() ? 0.f : static_cast<float>(c[axes[2] - 1]);
    if (xyz[3 * e] != static_cast<float>(c[axes[0] - 1]) || xyz[3 * e + 1] != static_cast<float>(c[axes[1] - 1]) ||
        xyz[3 * e + 2] != z)
      return false;
  }
  return true;
}

/// The warning line a result calls for: its diagnostics' lines for the
/// view, in order, in the panel's words (guiWords).
bool warning_line_shows(const MainWindow& w, const DiffusionResult& r) {
  const QString text = w.warningText();
  const auto warnings = diagnostic_warnings(r, r.diagnostics, EmbeddedPointsShown::DrawnInView);
  if (warnings.empty()) return text.isEmpty();
  const QStringList lines = text.split('\n');
  if (lines.size() != static_cast<int>(warnings.size())) return false;
  for (size_t i = 0; i < warnings.size(); ++i)
    if (!lines[static_cast<int>(i)].endsWith(guiWords(QString::fromStdString(warnings[i])))) return false;
  return true;
}

/// Coordinates 1..m less `hidden`.
std::vector<int> without(int m, const std::vector<int>& hidden) {
  std::vector<int> kept;
  for (int c = 1; c <= m; ++c)
    if (std::find(hidden.begin(), hidden.end(), c) == hidden.end()) kept.push_back(c);
  return kept;
}

constexpr const char* kNoFashion =
    "Fashion-MNIST is not installed (dataset-fashion-mnist, or set MANIFOLD_FASHION_MNIST_DIR)";

void choose(QComboBox* box, const char* data) { box->setCurrentIndex(box->findData(QString::fromLatin1(data))); }

}  // namespace

class TestRunFeedback : public QObject {
  Q_OBJECT

  QString fashion_;
  QTemporaryDir dir_;

  /// Opens Fashion-MNIST t10k in `w` (CPU k-NN: the same on every machine).
  bool open_fashion(MainWindow& w) {
    t::use_cpu(w);
    return t::open_file(w, fashion_, 30000) && w.dataset() && w.dataset()->rows() == 10000;
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    fashion_ = t::fashion_mnist_images();
  }

  // Against a budget the bar is busy and the line gives the count, the
  // budget and the most time left -- never a percentage of the budget.
  void progressAgainstABudget() {
    ProgressInfo info;
    info.stage = "eigensolve";
    info.unit = "mat-vecs";
    info.done = 1234;
    info.total = 20000;
    info.rate = 1500;
    info.eta_s = 11.2;
    info.total_is_limit = true;
    QCOMPARE(info.percent(), -1);
    QCOMPARE(info.text(), QString("eigensolve: 1,234 mat-vecs (budget 20,000, at most 12 s left)"));
    ProgressInfo work = info;
    work.total_is_limit = false;
    QCOMPARE(work.percent(), 6);
    QVERIFY(work.text().startsWith("eigensolve: 6%"));

    MainWindow w;
    Q_EMIT w.runner()->progressed(work);
    QCOMPARE(w.progressBar()->maximum(), 100);
    QCOMPARE(w.progressBar()->value(), 6);
    Q_EMIT w.runner()->progressed(info);
    QCOMPARE(w.progressBar()->maximum(), 0);  // busy
    QCOMPARE(w.progressText(), info.text());
  }

  // Cosine on Fashion-MNIST: an embedding in view, no error; the
  // eigensolve reported its progress against the default budget.
  void cosineRunShowsEmbedding() {
    if (fashion_.isEmpty()) QSKIP(kNoFashion);
    MainWindow w;
    QVERIFY(t::show_window(w, QSize(1440, 900)));
    QVERIFY(open_fashion(w));
    choose(w.parameterPanel()->metricEditor(), "cosine");
    QSignalSpy shown(&w, &MainWindow::embeddingShown), errors(&w, &MainWindow::errorShown),
        progressed(w.runner(), &JobRunner::progressed);
    w.runNow();
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    QVERIFY2(errors.isEmpty(), qPrintable(w.lastError()));
    QVERIFY(!w.messageBarVisible());

    const DiffusionResult& r = *w.outcome()->result;
    QCOMPARE(r.metric, Metric::Cosine);
    QCOMPARE(r.local_scaling, kLocalScalingAutoNeighbour);  // the default, auto, at k = 10
    QVERIFY(r.n > 9000);
    QCOMPARE(w.view()->pointCount(), r.n);
    QVERIFY(view_draws(*w.view(), r));
    QCOMPARE(drawn_axes(*w.view()), (std::vector<int>{1, 2, 3}));
    QVERIFY(w.progressText().startsWith("done"));
    QVERIFY(warning_line_shows(w, r));
    QCOMPARE(w.hideLocalisedEditor()->isEnabled(), !r.diagnostics.localised.empty());

    int budget_events = 0;
    for (const auto& args : progressed) {
      const auto info = args.at(0).value<ProgressInfo>();
      if (info.stage != "eigensolve") continue;
      ++budget_events;
      QVERIFY(info.total_is_limit);
      QCOMPARE(info.total, static_cast<quint64>(kDefaultMaxMatvecs));
      QVERIFY2(info.text().contains("budget 20,000") && !info.text().contains('%'), qPrintable(info.text()));
    }
    QVERIFY2(budget_events > 0, "the eigensolve reported no progress");

    QCoreApplication::processEvents();
    const QString png = t::output_dir() + "/ui_cosine.png";
    QVERIFY(w.grab().toImage().save(png));
    qInfo("saved %s; warning line: %s", qPrintable(png),
          w.warningText().isEmpty() ? "(hidden)" : qPrintable(w.warningText()));
  }

  // A solve that cannot finish within its budget: the one-line reason is
  // shown and the previous embedding stays in view, point for point; with
  // the budget back the same run succeeds.
  void budgetFailureKeepsPreviousEmbedding() {
    if (fashion_.isEmpty()) QSKIP(kNoFashion);
    MainWindow w;
    w.show();
    QVERIFY(open_fashion(w));
    ParameterPanel* params = w.parameterPanel();
    params->setAutoReembed(false);
    QSignalSpy shown(&w, &MainWindow::embeddingShown), errors(&w, &MainWindow::errorShown);
    w.runNow();
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    const auto before = w.outcome();
    const std::vector<float> drawn = w.view()->points();
    const QString warnings = w.warningText();
    QVERIFY(view_draws(*w.view(), *before->result));

    // Another metric needs another graph, so the run ends in the full solve,
    // which the budget bounds (a re-embedding on a cached graph would first
    // try core's warm start, and a run that changes only the budget or t
    // needs no solve at all).
    choose(params->metricEditor(), "cosine");
    params->maxMatvecsEditor()->setValue(5);
    QCOMPARE(params->parameters().diffusion.max_matvecs, int64_t(5));
    shown.clear();
    w.runNow();
    QVERIFY(errors.wait(60000));
    QVERIFY(shown.isEmpty());
    QVERIFY2(w.lastError().contains("no convergence within the budget"), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
    QVERIFY(w.messageBarVisible());
    QCOMPARE(w.statusText(), w.lastError());
    QVERIFY2(w.progressText().startsWith("failed"), qPrintable(w.progressText()));
    QVERIFY(w.outcome() == before);
    QCOMPARE(w.view()->pointCount(), before->result->n);
    QVERIFY(w.view()->points() == drawn);
    QCOMPARE(w.warningText(), warnings);

    params->maxMatvecsEditor()->setValue(static_cast<int>(kDefaultMaxMatvecs));
    errors.clear();
    w.runNow();
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    QVERIFY(errors.isEmpty());
    QCOMPARE(w.outcome()->result->metric, Metric::Cosine);
    QVERIFY(view_draws(*w.view(), *w.outcome()->result));
  }

  // Without local scaling, cosine Fashion-MNIST has coordinates carried
  // by single images: the warning line says so, and the checkbox leaves them
  // off the axes so that the view draws the others.
  void localisedCoordinatesWarnAndHide() {
    if (fashion_.isEmpty()) QSKIP(kNoFashion);
    MainWindow w;
    w.resize(1440, 900);
    w.show();
    QVERIFY(open_fashion(w));
    ParameterPanel* params = w.parameterPanel();
    choose(params->metricEditor(), "cosine");
    choose(params->localScalingModeEditor(), "off");
    QCOMPARE(params->parameters().diffusion.local_scaling, 0);
    QSignalSpy shown(&w, &MainWindow::embeddingShown);
    w.runNow();
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    const auto outcome = w.outcome();
    const DiffusionResult& r = *outcome->result;
    QCOMPARE(r.local_scaling, 0);
    const std::vector<int> localised = r.diagnostics.localised;
    QVERIFY2(!localised.empty(), "expected localised coordinates without local scaling");
    qInfo("%zu of %d coordinates localised", localised.size(), r.m);
    QVERIFY(warning_line_shows(w, r));
    QVERIFY(w.warningText().contains("localised"));

    std::vector<int> all = without(r.m, {});
    QCOMPARE(w.axisChoices(), all);
    QVERIFY(w.hideLocalisedEditor()->isVisible() && w.hideLocalisedEditor()->isEnabled());
    w.hideLocalisedEditor()->setChecked(true);
    const std::vector<int> kept = without(r.m, localised);
    QVERIFY(!kept.empty());
    QCOMPARE(w.axisChoices(), kept);
    QVERIFY(w.outcome() == outcome);  // only the view changed
    for (int a : drawn_axes(*w.view()))
      QVERIFY2(std::find(kept.begin(), kept.end(), a) != kept.end(), qPrintable(w.view()->axisTitles().join(", ")));
    QVERIFY(view_draws(*w.view(), r));
    QCoreApplication::processEvents();
    QVERIFY(w.grab().toImage().save(t::output_dir() + "/ui_localised.png"));
    w.hideLocalisedEditor()->setChecked(false);
    QCOMPARE(w.axisChoices(), all);
    QVERIFY(view_draws(*w.view(), r));

    // Auto local scaling re-embeds at once from the cached graph; the line
    // and the axes follow the new diagnostics, the choice to hide stays.
    w.hideLocalisedEditor()->setChecked(true);
    shown.clear();
    choose(params->localScalingModeEditor(), "auto");
    QVERIFY2(shown.wait(60000), qPrintable(w.lastError()));
    const DiffusionResult& scaled = *w.outcome()->result;
    QCOMPARE(scaled.local_scaling, kLocalScalingAutoNeighbour);
    qInfo("with local scaling: %zu localised", scaled.diagnostics.localised.size());
    QVERIFY(scaled.diagnostics.localised.size() < localised.size());
    QVERIFY(warning_line_shows(w, scaled));
    QCOMPARE(w.hideLocalisedEditor()->isEnabled(), !scaled.diagnostics.localised.empty());
    QCOMPARE(w.axisChoices(), without(scaled.m, scaled.diagnostics.localised));
    QVERIFY(view_draws(*w.view(), scaled));
  }

  // Local scaling (auto / off / a neighbour) and the budget: the panel's
  // defaults are core's, each setting reaches the parameters, and a saved
  // session reopens with them.
  void parametersRoundTrip() {
    MainWindow w;
    ParameterPanel* params = w.parameterPanel();
    const RunParameters defaults = params->parameters();
    QCOMPARE(defaults.diffusion.local_scaling, DiffusionParams{}.local_scaling);
    QCOMPARE(defaults.diffusion.local_scaling, kLocalScalingAuto);
    QCOMPARE(defaults.diffusion.max_matvecs, kDefaultMaxMatvecs);
    QCOMPARE(defaults.diffusion.time_limit_s, 0.0);
    QCOMPARE(params->localScalingModeEditor()->currentText(), QString("auto (7th)"));
    QVERIFY(!params->localScalingNeighbourEditor()->isEnabled());
    params->kEditor()->setValue(3);
    QCOMPARE(params->localScalingModeEditor()->currentText(), QString("auto (3rd)"));

    params->kEditor()->setValue(12);
    choose(params->localScalingModeEditor(), "neighbour");
    QVERIFY(params->localScalingNeighbourEditor()->isEnabled());
    QCOMPARE(params->localScalingNeighbourEditor()->maximum(), 12);
    params->localScalingNeighbourEditor()->setValue(5);
    params->maxMatvecsEditor()->setValue(777);
    params->timeLimitEditor()->setValue(2.5);
    RunParameters p = params->parameters();
    QCOMPARE(p.diffusion.local_scaling, 5);
    QCOMPARE(p.diffusion.max_matvecs, int64_t(777));
    QCOMPARE(p.diffusion.time_limit_s, 2.5);

    // setParameters shows each kind of value.
    for (int scaling : {kLocalScalingAuto, 0, 9}) {
      RunParameters q = p;
      q.diffusion.local_scaling = scaling;
      params->setParameters(q);
      QCOMPARE(params->parameters().diffusion.local_scaling, scaling);
    }

    // Through a session file and back into a fresh window.
    const QString data = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 300, 16, 16);
    w.show();
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    w.openFile(data);
    QVERIFY(opened.wait(20000));
    params->setParameters(p);
    const QString session = dir_.filePath("session.json");
    QVERIFY(w.saveSession(session));
    const Session s = read_session(session.toStdString());
    QCOMPARE(s.diffusion.local_scaling, 5);
    QCOMPARE(s.diffusion.max_matvecs, int64_t(777));
    QCOMPARE(s.diffusion.time_limit_s, 2.5);

    MainWindow w2;
    w2.show();
    QSignalSpy shown(&w2, &MainWindow::embeddingShown);
    w2.openSession(session);
    QVERIFY2(shown.wait(60000), qPrintable(w2.lastError()));
    const RunParameters reopened = w2.parameterPanel()->parameters();
    QCOMPARE(reopened.diffusion.local_scaling, 5);
    QCOMPARE(reopened.diffusion.max_matvecs, int64_t(777));
    QCOMPARE(reopened.diffusion.time_limit_s, 2.5);
    QCOMPARE(w2.outcome()->result->local_scaling, 5);

    // "auto" is written as such (the CLI's spelling) and read back.
    RunParameters automatic = p;
    automatic.diffusion.local_scaling = kLocalScalingAuto;
    params->setParameters(automatic);
    QVERIFY(w.saveSession(session));
    QFile file(session);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY(file.readAll().contains("\"local_scaling\": \"auto\""));
    QCOMPARE(read_session(session.toStdString()).diffusion.local_scaling, kLocalScalingAuto);
  }

  // One dataset opens at a time: a session asked for while another dataset
  // is being read is refused in one line and leaves that dataset as it
  // opens (the session's parameters and run used to go to it).
  void sessionWhileOpeningIsRefused() {
    const QString big = t::write_rotating_spot_npy(dir_.filePath("opening.npy"), 4000, 64, 64);
    Session s;
    s.data = t::write_rotating_spot_npy(dir_.filePath("other.npy"), 100, 8, 8).toStdString();
    s.backend = "cpu";
    s.knn.k = 7;
    const QString session = dir_.filePath("other.json");
    write_session(session.toStdString(), s);
    MainWindow w;
    w.show();
    QSignalSpy opened(&w, &MainWindow::datasetOpened);
    QSignalSpy started(w.runner(), &JobRunner::started);
    w.openFile(big);
    w.openSession(session);
    QVERIFY2(w.lastError().contains("Still opening the previous dataset"), qPrintable(w.lastError()));
    QVERIFY(opened.wait(60000));
    QCOMPARE(w.dataset()->rows(), int64_t(4000));
    QVERIFY(w.parameterPanel()->parameters().knn.k != 7);
    QTest::qWait(300);
    QVERIFY(started.isEmpty());  // nothing runs: a dataset opened alone waits for Run
  }
};

QTEST_MAIN(TestRunFeedback)
#include "test_run_feedback.moc"
