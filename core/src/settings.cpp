#include "manifold/settings.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace manifold {

namespace {

const char* getenv_lookup(const char* name) { return std::getenv(name); }

/// The non-empty folders of a ':'-separated list.
std::vector<std::string> folders_of(const std::string& list) {
  std::vector<std::string> dirs;
  for (size_t b = 0; b <= list.size();) {
    const size_t e = std::min(list.find(':', b), list.size());
    if (e > b) dirs.push_back(list.substr(b, e - b));
    b = e + 1;
  }
  return dirs;
}

}  // namespace

Settings settings_from_environment(const char* (*lookup)(const char*)) {
  Settings s;
  // Set but empty still replaces the system folders (with none).
  if (const char* v = lookup("MANIFOLD_PDB_PATH")) s.pdb_path = folders_of(v);
  if (const char* v = lookup("MANIFOLD_WARM_TRACE")) s.warm_trace = *v && std::strcmp(v, "0") != 0;
  return s;
}

SettingsStore<Settings>& settings_store() {
  static SettingsStore<Settings> store([] { return settings_from_environment(getenv_lookup); });
  return store;
}

const Settings& settings() { return settings_store().get(); }

}  // namespace manifold
