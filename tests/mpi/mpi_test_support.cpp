#include "mpi_test_support.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "manifold/npy.h"
#include "test_support.h"

namespace mpi_testing {

int test_ranks() {
  const char* v = std::getenv("MANIFOLD_TEST_NP");
  return v && *v ? std::atoi(v) : 3;
}

std::map<std::string, std::string> job_environment() {
  std::map<std::string, std::string> env;
  if (geteuid() == 0) {
    // CI runs as root; OpenMPI refuses that unless told it is deliberate.
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  }
  return env;
}

std::string mpirun_command(int np) {
  const char* m = std::getenv("MANIFOLD_MPIRUN");
  std::string cmd = std::string("'") + (m && *m ? m : "mpirun") + "' -q --oversubscribe";
  if (geteuid() == 0) cmd += " --allow-run-as-root";
  return cmd + " -np " + std::to_string(np);
}

namespace {
std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
RunResult run_shell(const std::string& command) {
  testing_support::TempDir t;
  const std::string cmd = command + " >" + t.path + "/out 2>" + t.path + "/err";
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(t.path + "/out");
  r.err = slurp(t.path + "/err");
  return r;
}
std::string cli() {
  const char* c = std::getenv("MANIFOLD_CLI");
  return c ? c : "manifold";
}
}  // namespace

RunResult run_mpi(int np, const std::string& args, const std::string& env_prefix) {
  return run_shell(env_prefix + " " + mpirun_command(np) + " '" + cli() + "' " + args);
}

RunResult run_manifold(const std::string& args, const std::string& env_prefix) {
  return run_shell(env_prefix + " '" + cli() + "' " + args);
}

GraphArrays read_arrays(const std::string& dir) {
  GraphArrays g;
  g.indices = manifold::npy::read<int64_t, manifold::DefaultInitAllocator<int64_t>>(dir + "/indices.npy",
                                                                                    &g.index_shape);
  g.distances = manifold::npy::read<float, manifold::DefaultInitAllocator<float>>(dir + "/distances.npy",
                                                                                  &g.distance_shape);
  return g;
}

void write_npy(const std::string& path, const manifold::Dataset& data, bool float64) {
  if (!float64) {
    manifold::npy::write(path, data.data(), {data.rows(), data.cols()});
    return;
  }
  std::vector<double> v(data.data(), data.data() + data.rows() * data.cols());
  manifold::npy::write(path, v.data(), {data.rows(), data.cols()});
}

std::vector<std::string> nonempty_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(line);
  return out;
}

}  // namespace mpi_testing
