#pragma once
// Every setting of the MPI library that is not a command-line option, in one
// place, read from the environment once per process (docs/ARCHITECTURE.md
// lists every MANIFOLD_* variable): where rank 0 writes progress, each rank's
// local engine, and the fault hook the tests use to fail one rank.
#include <string>

namespace manifold::mpi {

/// The stages where the fault hook can fail a rank.
inline constexpr const char* kFaultStages[] = {"prepare", "knn", "merge"};

struct Settings {
  std::string progress_file;   ///< MANIFOLD_PROGRESS_FILE: rank 0 appends the run's progress there (manifold/cluster.h)
  std::string local = "auto";  ///< MANIFOLD_MPI_LOCAL: auto | tiles | a backend run on sub-problems
  int fail_rank = -1;          ///< MANIFOLD_MPI_FAIL_RANK: this rank fails (-1: none)
  std::string fail_stage = "knn";  ///< MANIFOLD_MPI_FAIL_STAGE: prepare | knn | merge
  bool fail_crash = false;         ///< MANIFOLD_MPI_FAIL_MODE=crash: the rank aborts (=fail: it throws)
};

/// The settings of this process, read from the environment on first use.
/// UsageError naming the variable for a value it does not take (and again at
/// every later call).
const Settings& settings();

/// The environment's settings (`lookup` is std::getenv, or a test's table).
Settings settings_from_environment(const char* (*lookup)(const char*));

}  // namespace manifold::mpi
