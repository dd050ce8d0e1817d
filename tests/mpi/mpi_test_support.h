#pragma once
// Shared by the MPI and cluster tests: running the CLI under mpirun, reading
// graph arrays back, and fixtures written to .npy files.
#include <map>
#include <string>
#include <vector>

#include "manifold/dataset.h"
#include "manifold/result_vector.h"

namespace mpi_testing {

/// Ranks for this CTest entry (MANIFOLD_TEST_NP, default 3).
int test_ranks();
/// mpirun (MANIFOLD_MPIRUN) with the options every test needs: quiet,
/// oversubscribe, and permission to run as root when we are root.
std::string mpirun_command(int np);
/// Environment settings (NAME=value) a job needs to run here, for profiles.
std::map<std::string, std::string> job_environment();

struct RunResult {
  int status = -1;
  std::string out, err;
};
/// Runs `env_prefix mpirun -np np manifold args`.
RunResult run_mpi(int np, const std::string& args, const std::string& env_prefix = "");
/// Runs `manifold args` without mpirun.
RunResult run_manifold(const std::string& args, const std::string& env_prefix = "");

/// indices.npy and distances.npy of a graph directory, as written (the
/// vector types of KnnGraph's, so the two compare directly).
struct GraphArrays {
  manifold::ResultVector<int64_t> indices;
  std::vector<int64_t> index_shape;
  manifold::ResultVector<float> distances;
  std::vector<int64_t> distance_shape;
};
GraphArrays read_arrays(const std::string& dir);

/// Writes `data` as a float32 or float64 .npy file.
void write_npy(const std::string& path, const manifold::Dataset& data, bool float64 = false);

/// Lines of `text` that are not empty.
std::vector<std::string> nonempty_lines(const std::string& text);

}  // namespace mpi_testing
