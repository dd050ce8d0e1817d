#pragma once
// HDF5 files read in a child process first. Debian's libhdf5 crashes (a null
// dereference no caller can catch, manifold/fatal_signal.h) on some corrupt
// files: the CLI then ends with one line, but the explorer would close and
// take the user's open work with it. So before the explorer hands a file to
// libhdf5 in its own process, a child -- the explorer itself, started with
// kFileCheckOption -- does the same read; where libhdf5 crashes there, the
// file is refused with one line and the window stays. The price is a second
// read of HDF5 files (no other format goes through a library we cannot mend).
#include <QString>
#include <QStringList>

#include <cstdint>

#include "manifold/ui/loaded_dataset.h"

namespace manifold::ui {

/// The explorer's command-line option that makes it a checking child.
inline constexpr char kFileCheckOption[] = "--check-file";

/// The program that runs the checks (the explorer's main sets its own path);
/// empty, as in tests that do not set it: no check.
void setFileCheckProgram(const QString& program);
QString fileCheckProgram();

/// Where loadDataset(path, options) would have libhdf5 read the data or its
/// mask: the same load in a child first. Throws manifold::Error (one line
/// naming the file) where libhdf5 crashed there; a child that could not
/// start, or that refused the file with an error, leaves the load to the
/// caller (which then gets that error itself).
void checkDatasetInChild(const QString& path, const OpenOptions& options);

/// The same for a metadata file of HDF5: listing its datasets of `rows`
/// rows (`column` empty), or reading `column`.
void checkMetadataInChild(const QString& file, const QString& column, int64_t rows);

/// The child's side: the arguments after kFileCheckOption. Returns its exit
/// status: 0 read, 2 refused with an error (written to stderr).
int runFileCheck(const QStringList& args);

}  // namespace manifold::ui
