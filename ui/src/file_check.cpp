// HDF5 files read in a child process first (file_check.h).
#include "manifold/ui/file_check.h"

#include <QProcess>

#include <cstdio>
#include <exception>
#include <mutex>

#include "manifold/dataset.h"
#include "manifold/error.h"
#include "manifold/fatal_signal.h"
#include "manifold/metadata.h"

namespace manifold::ui {

namespace {

std::mutex program_mutex;
QString program_path;

const QString kDataset = QStringLiteral("dataset");
const QString kMetadata = QStringLiteral("metadata");

// Runs the check in a child; throws where it crashed. The child installs
// the fatal-signal note, so a crash inside libhdf5 ends it with status 1;
// any other crash is a signal; a clean refusal is status 2.
void check_in_child(const QStringList& args, const QString& file) {
  const QString program = fileCheckProgram();
  if (program.isEmpty()) return;
  QProcess child;
  child.setStandardOutputFile(QProcess::nullDevice());
  child.setStandardErrorFile(QProcess::nullDevice());
  child.start(program, QStringList{QString::fromLatin1(kFileCheckOption)} + args);
  if (!child.waitForStarted(30000)) return;  // no check: the caller reads it as before
  child.waitForFinished(-1);
  if (child.exitStatus() == QProcess::CrashExit)  // (Qt gives no signal number for a crash)
    throw Error(file.toStdString() +
                ": reading this file killed a check process (a crash, or out of memory); "
                "it was not opened");
  if (child.exitCode() == 1) throw Error(hdf5_crash_note(file.toStdString()) + "; it was not opened");
}

}  // namespace

void setFileCheckProgram(const QString& program) {
  std::lock_guard<std::mutex> lock(program_mutex);
  program_path = program;
}

QString fileCheckProgram() {
  std::lock_guard<std::mutex> lock(program_mutex);
  return program_path;
}

void checkDatasetInChild(const QString& path, const OpenOptions& options) {
  const bool mask_file = options.mask != "none" && !options.mask.empty();
  if (read_by_libhdf5(path.toStdString())) {
    check_in_child({kDataset, path, QString::fromStdString(options.hdf5_dataset),
                    QString::fromStdString(options.transform), QString::fromStdString(options.mask)},
                   path);
  } else if (mask_file && read_by_libhdf5(options.mask)) {
    const QString mask = QString::fromStdString(options.mask);
    check_in_child({kDataset, path, QString::fromStdString(options.hdf5_dataset),
                    QString::fromStdString(options.transform), mask},
                   mask);
  }
}

void checkMetadataInChild(const QString& file, const QString& column, int64_t rows) {
  check_in_child({kMetadata, file, column, QString::number(rows)}, file);
}

int runFileCheck(const QStringList& args) {
  install_fatal_signal_notes("manifold-explorer (file check)");
  try {
    if (args.size() == 5 && args[0] == kDataset) {
      OpenOptions options;
      options.hdf5_dataset = args[2].toStdString();
      options.transform = args[3].toStdString();
      options.mask = args[4].toStdString();
      loadDataset(args[1], options);
      return 0;
    }
    if (args.size() == 4 && args[0] == kMetadata) {
      const int64_t rows = args[3].toLongLong();
      if (args[2].isEmpty()) hdf5_datasets_of_length(args[1].toStdString(), rows);
      else
        load_metadata_file({args[1].toStdString(), args[2].toStdString()});
      return 0;
    }
    std::fprintf(stderr,
                 "manifold-explorer: %s takes dataset FILE HDF5_DATASET TRANSFORM MASK or metadata FILE "
                 "COLUMN ROWS\n",
                 kFileCheckOption);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "manifold-explorer (file check): %s\n", e.what());
  }
  return 2;
}

}  // namespace manifold::ui
