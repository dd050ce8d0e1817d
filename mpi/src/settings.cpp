#include "settings.h"

#include <cstdlib>
#include <string_view>

#include "manifold/cluster.h"
#include "manifold/error.h"
#include "manifold/settings_store.h"

namespace manifold::mpi {

namespace {

const char* getenv_lookup(const char* name) { return std::getenv(name); }

bool is_set(const char* v) { return v && *v; }

int rank_of(const char* v) {
  char* end = nullptr;
  const long r = std::strtol(v, &end, 10);
  if (*end != '\0' || r < 0 || r > 1'000'000'000)
    throw UsageError(std::string("MANIFOLD_MPI_FAIL_RANK: '") + v + "' is not a rank (0, 1, ...)");
  return static_cast<int>(r);
}

std::string stage_of(const char* v) {
  for (std::string_view stage : kFaultStages)
    if (stage == v) return v;
  throw UsageError(std::string("MANIFOLD_MPI_FAIL_STAGE: '") + v + "' is not prepare, knn or merge");
}

bool crash_of(const char* v) {
  if (std::string_view(v) == "crash") return true;
  if (std::string_view(v) == "fail") return false;
  throw UsageError(std::string("MANIFOLD_MPI_FAIL_MODE: '") + v + "' is not fail or crash");
}

}  // namespace

Settings settings_from_environment(const char* (*lookup)(const char*)) {
  Settings s;
  if (const char* v = lookup(cluster::kProgressFileEnv); is_set(v)) s.progress_file = v;
  if (const char* v = lookup("MANIFOLD_MPI_LOCAL"); is_set(v)) s.local = v;
  if (const char* v = lookup("MANIFOLD_MPI_FAIL_RANK"); is_set(v)) s.fail_rank = rank_of(v);
  if (const char* v = lookup("MANIFOLD_MPI_FAIL_STAGE"); is_set(v)) s.fail_stage = stage_of(v);
  if (const char* v = lookup("MANIFOLD_MPI_FAIL_MODE"); is_set(v)) s.fail_crash = crash_of(v);
  return s;
}

const Settings& settings() {
  static SettingsStore<Settings> store([] { return settings_from_environment(getenv_lookup); });
  return store.get();
}

}  // namespace manifold::mpi
