// The explorer's command line, as a user runs it: --help and --version
// answer without a display, the window without one is refused in one line,
// --screenshot on a dataset runs it and saves the window (it waited
// forever for an embedding nobody started), --session FILE opens and runs
// the session (Qt took the option for its own), and so does a folder
// `manifold run` wrote.
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include "ui_test_support.h"

namespace t = manifold::ui::test;

class TestExplorerCommandLine : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString explorer_;

  struct Ran {
    bool finished = false;
    int status = -1;
    QString out, err;
  };

  Ran run(const QStringList& args, const QProcessEnvironment& env, int timeout_ms = 120000) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(explorer_, args);
    Ran r;
    r.finished = p.waitForFinished(timeout_ms);
    if (!r.finished) p.kill(), p.waitForFinished();
    r.status = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
    r.err = QString::fromLocal8Bit(p.readAllStandardError());
    return r;
  }

  static QProcessEnvironment without_display() {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("DISPLAY"));
    env.remove(QStringLiteral("WAYLAND_DISPLAY"));
    env.remove(QStringLiteral("QT_QPA_PLATFORM"));
    return env;
  }

 private Q_SLOTS:
  void initTestCase() {
    t::start_gui_tests();
    QVERIFY(dir_.isValid());
    explorer_ = qEnvironmentVariable("MANIFOLD_EXPLORER");
    if (explorer_.isEmpty()) QSKIP("MANIFOLD_EXPLORER is not set (ctest sets it)");
  }

  void helpAndVersionWithoutADisplay() {
    const Ran help = run({"--help"}, without_display());
    QVERIFY2(help.finished && help.status == 0, qPrintable(help.err));
    QVERIFY2(help.out.contains("--screenshot") && help.out.contains("DATA"), qPrintable(help.out));
    const Ran version = run({"--version"}, without_display());
    QVERIFY2(version.finished && version.status == 0, qPrintable(version.err));
    QVERIFY2(version.out.contains("0."), qPrintable(version.out));
    // The window itself needs a display: one line saying so.
    const Ran window = run({"--demo"}, without_display());
    QVERIFY(window.finished);
    QCOMPARE(window.status, 1);
    // (Qt may add its own notes, such as a missing XDG_RUNTIME_DIR.)
    const QStringList ours = window.err.split('\n').filter(QStringLiteral("manifold-explorer:"));
    QVERIFY2(ours.size() == 1 && ours[0].contains("no X display"), qPrintable(window.err));
  }

  void screenshotRunsTheDataset() {
    const QString data = t::write_rotating_spot_npy(dir_.filePath("spots.npy"), 200, 12, 12);
    const QString png = dir_.filePath("window.png");
    const Ran shot = run({data, "--screenshot", png}, QProcessEnvironment::systemEnvironment());
    QVERIFY2(shot.finished, "--screenshot without --run did not finish");
    QVERIFY2(shot.status == 0, qPrintable(shot.err));
    const QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY(image.width() > 400 && image.height() > 300);
  }

  // "--session FILE" opens the session and runs it: Qt took "-session ID"
  // (X11 session management, "--" read as "-") off the command line, so
  // nothing opened and --screenshot waited forever.
  void sessionOpensAndRuns() {
    const QString data = t::write_rotating_spot_npy(dir_.filePath("session_spots.npy"), 200, 12, 12);
    const QString session = dir_.filePath("spots.session.json");
    QFile file(session);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QStringLiteral(R"({"format": "manifold-session", "version": 1, "data": "%1",
                                 "knn": {"k": 10, "backend": "cpu"}, "diffusion": {"components": 3}})")
                   .arg(data)
                   .toUtf8());
    file.close();
    // --session FILE, -session FILE, and the file as DATA.
    for (const QString& option : {QStringLiteral("--session"), QStringLiteral("-session"), QString()}) {
      const QString png = dir_.filePath(QStringLiteral("session%1.png").arg(option.size()));
      QStringList args = {session, "--screenshot", png};
      if (!option.isEmpty()) args.prepend(option);
      const Ran shot = run(args, QProcessEnvironment::systemEnvironment(), 60000);
      QVERIFY2(shot.finished, qPrintable(option + " FILE --screenshot did not finish"));
      QVERIFY2(shot.status == 0, qPrintable(shot.err));
      QVERIFY(!QImage(png).isNull());
    }
  }

  // A folder `manifold run` wrote, given as DATA: its session opens and
  // runs by itself (--screenshot must not start a run of its own first).
  void resultsFolderOpensAndRuns() {
    const QString cli = qEnvironmentVariable("MANIFOLD_CLI");
    if (cli.isEmpty()) QSKIP("MANIFOLD_CLI is not set (ctest sets it)");
    const QString data = t::write_rotating_spot_npy(dir_.filePath("results_spots.npy"), 200, 12, 12);
    const QString results = dir_.filePath("results");
    QProcess manifold;
    manifold.start(cli, {"run", data, "-k", "10", "--backend", "cpu", "--components", "3", "-o", results, "--quiet"});
    QVERIFY(manifold.waitForFinished(120000));
    QVERIFY2(manifold.exitCode() == 0, manifold.readAllStandardError().constData());
    // The folder, or one of its own files (a drag of graph.json, a
    // double-click on session.json), opens the folder.
    for (const QString& what : {results, results + "/session.json", results + "/graph.json"}) {
      const QString png = dir_.filePath(QStringLiteral("results%1.png").arg(what.size()));
      const Ran shot = run({what, "--screenshot", png}, QProcessEnvironment::systemEnvironment(), 60000);
      QVERIFY2(shot.finished, qPrintable(what + " with --screenshot did not finish"));
      QVERIFY2(shot.status == 0, qPrintable(shot.err));
      QVERIFY(!QImage(png).isNull());
    }
  }

  // What cannot be opened ends --screenshot with its one line and status 1:
  // a results folder or session that fails at once (before the event loop
  // ran, the exit on the error did nothing and the explorer waited forever).
  void unreadableResultsEndTheScreenshotWithTheirLine() {
    const QString broken = dir_.filePath("broken-results");
    QVERIFY(QDir().mkpath(broken));
    for (const char* f : {"graph.json", "indices.npy"}) {
      QFile file(broken + "/" + f);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write("{ not json");
    }
    const QString session = dir_.filePath("broken.session.json");
    QFile file(session);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"format": "manifold-session", "version": 1, "data": 5})");
    file.close();
    const QStringList cases[] = {{broken, "--screenshot", dir_.filePath("broken.png")},
                                 {"--session", session, "--screenshot", dir_.filePath("broken-session.png")}};
    for (const QStringList& args : cases) {
      const Ran shot = run(args, QProcessEnvironment::systemEnvironment(), 30000);
      QVERIFY2(shot.finished, qPrintable(args.join(' ') + " did not finish"));
      QCOMPARE(shot.status, 1);
      QVERIFY2(shot.err.contains(args.first() == broken ? "graph.json" : "\"data\" must be the dataset path"),
               qPrintable(shot.err));
    }
  }
};

QTEST_MAIN(TestExplorerCommandLine)
#include "test_explorer_command_line.moc"
