#include "settings.h"

#include <cstdlib>
#include <cstring>

#include "manifold/error.h"
#include "manifold/gpu/gpu_knn_backend.h"

namespace manifold::gpu {

namespace {

const char* getenv_lookup(const char* name) { return std::getenv(name); }

bool is_set(const char* v) { return v && *v; }

/// A variable that is on when set to anything but "0" (or empty).
bool flag(const char* v) { return is_set(v) && std::strcmp(v, "0") != 0; }

}  // namespace

Settings settings_from_environment(const char* (*lookup)(const char*)) {
  Settings s;
  if (const char* v = lookup("MANIFOLD_GPU_TIMELINE"); is_set(v)) {
    if (std::strcmp(v, "0") != 0 && std::strcmp(v, "1") != 0)
      throw UsageError(std::string("MANIFOLD_GPU_TIMELINE: '") + v + "' is not 0 or 1");
    s.timeline = *v == '1';
  }
  s.chebyshev_trace = flag(lookup("MANIFOLD_CHEB_TRACE"));
  if (const char* v = lookup("MANIFOLD_SELECT_TABLE"); is_set(v)) s.select_table = v;
  return s;
}

SettingsStore<Settings>& settings_store() {
  static SettingsStore<Settings> store([] { return settings_from_environment(getenv_lookup); });
  return store;
}

const Settings& settings() { return settings_store().get(); }

std::string select_table_file() { return settings().select_table; }

}  // namespace manifold::gpu
