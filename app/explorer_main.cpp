// manifold-explorer: the desktop application. Thin: parses the command line
// and opens the main window of manifold_ui.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QSaveFile>
#include <QTimer>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "backends/backends.h"
#include "manifold/fatal_signal.h"
#include "manifold/ui/file_check.h"
#include "manifold/ui/main_window.h"

namespace {

/// `argv` with "--session FILE" (or "-session FILE") joined into
/// "--session=FILE". QGuiApplication takes "-session ID" for X11 session
/// management and, reading "--" as "-", removes both words from the
/// command line: the session never opened, and --screenshot waited for an
/// embedding forever. The joined form is no option of Qt's and reaches
/// our parser. The strings live in `storage`.
std::vector<char*> keep_session_option(int argc, char** argv, std::vector<std::string>& storage) {
  storage.assign(argv, argv + argc);
  for (size_t i = 1; i + 1 < storage.size(); ++i)
    if (storage[i] == "--session" || storage[i] == "-session") {
      storage[i] = "--session=" + storage[i + 1];
      storage.erase(storage.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  std::vector<char*> args;
  for (std::string& s : storage) args.push_back(s.data());
  args.push_back(nullptr);  // argv[argc] is a null pointer, as main's
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // A child that reads an HDF5 file before the window does (file_check.h).
  if (argc >= 2 && std::strcmp(argv[1], manifold::ui::kFileCheckOption) == 0) {
    QCoreApplication app(argc, argv);
    return manifold::ui::runFileCheck(QCoreApplication::arguments().mid(2));
  }
  // Debian's VTK opens its OpenGL context through GLX on the X display; Qt
  // under native Wayland would still work, but xcb keeps both on one server.
  // Without a display, Qt's own platform would abort before --help or
  // --version could answer: those take the offscreen one, and the window's
  // need of a display is said in one line below.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
    qputenv("QT_QPA_PLATFORM", qEnvironmentVariableIsEmpty("DISPLAY") ? "offscreen" : "xcb");
  std::vector<std::string> arg_storage;
  std::vector<char*> args_for_qt = keep_session_option(argc, argv, arg_storage);
  int argc_for_qt = static_cast<int>(args_for_qt.size()) - 1;
  QApplication app(argc_for_qt, args_for_qt.data());
  QApplication::setOrganizationName(QStringLiteral("ManifoldExplorer"));
  QApplication::setApplicationName(QStringLiteral("Manifold Explorer"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("Exact k-nearest-neighbour graphs of image stacks and their diffusion maps, in 3-D."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(
      QStringLiteral("DATA"),
      QStringLiteral("dataset to open (.npy, .npz, IDX, image folder, TIFF, MRC, HDF5/CXI), "
                     "a folder `manifold run` or `manifold knn` wrote (with its graph), or a session file"),
      QStringLiteral("[DATA]"));
  QCommandLineOption demo(QStringLiteral("demo"), QStringLiteral("open and embed the built-in demo"));
  QCommandLineOption session(QStringLiteral("session"), QStringLiteral("open a saved session and run it"),
                             QStringLiteral("FILE"));
  QCommandLineOption run(QStringLiteral("run"), QStringLiteral("run at once with the default parameters"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("run, and after the first embedding save the window as a PNG and quit"),
                                QStringLiteral("FILE"));
  parser.addOptions({demo, session, run, screenshot});
  parser.process(app);

  if (qEnvironmentVariableIsEmpty("DISPLAY")) {
    std::fprintf(stderr,
                 "manifold-explorer: no X display (DISPLAY is not set); the 3-D view needs one. "
                 "Use xvfb-run on a headless machine.\n");
    return 1;
  }

  manifold::install_fatal_signal_notes("manifold-explorer");
  manifold::ui::setFileCheckProgram(QCoreApplication::applicationFilePath());
  manifold::register_all_backends();
  manifold::ui::MainWindow window;
  window.resize(1440, 900);
  window.show();

  if (parser.isSet(screenshot)) {
    const QString path = parser.value(screenshot);
    QObject::connect(&window, &manifold::ui::MainWindow::embeddingShown, &window, [&window, path] {
      // Let the view paint its first full frame before the window is grabbed.
      QTimer::singleShot(200, &window, [&window, path] {
        QSaveFile file(path);
        const bool ok = file.open(QIODevice::WriteOnly) && window.grab().save(&file, "PNG") && file.commit();
        if (!ok) std::fprintf(stderr, "manifold-explorer: %s: cannot write the screenshot\n", qPrintable(path));
        QApplication::exit(ok ? 0 : 1);
      });
    });
    QObject::connect(&window, &manifold::ui::MainWindow::errorShown, &window, [](const QString& message) {
      std::fprintf(stderr, "manifold-explorer: %s\n", qPrintable(message));
      QApplication::exit(1);
    });
  }

  // Opened from the event loop: a session or results folder that cannot be
  // read fails at once, and --screenshot's exit on the error needs the loop
  // running (QApplication::exit before exec does nothing: it waited forever).
  const QStringList args = parser.positionalArguments();
  if (parser.isSet(session)) {
    QTimer::singleShot(0, &window, [&window, file = parser.value(session)] { window.openSession(file); });
  } else if (parser.isSet(demo)) {
    QTimer::singleShot(0, &window, [&window] { window.openDemo(true); });
  } else if (!args.isEmpty()) {
    // A screenshot waits for the first embedding: it runs as --run does (a
    // results folder or a session runs by itself).
    const QString path = QDir::current().absoluteFilePath(args.first());
    if ((parser.isSet(run) || parser.isSet(screenshot)) && !manifold::ui::MainWindow::runsByItself(path))
      QObject::connect(
          &window, &manifold::ui::MainWindow::datasetOpened, &window, [&window] { window.runNow(); },
          Qt::SingleShotConnection);
    QTimer::singleShot(0, &window, [&window, path] { window.openFile(path); });
  }
  return app.exec();
}
