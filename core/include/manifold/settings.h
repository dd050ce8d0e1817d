#pragma once
// Every setting of the core library that is not a command-line option, in
// one place, read from the environment once per process
// (docs/ARCHITECTURE.md lists every MANIFOLD_* variable).
#include <optional>
#include <string>
#include <vector>

#include "manifold/settings_store.h"

namespace manifold {

struct Settings {
  /// MANIFOLD_PDB_PATH (folders separated by ':'): searched for a bare PDB id
  /// before the bundled folder, replacing the system ones; unset: none.
  std::optional<std::vector<std::string>> pdb_path;
  /// MANIFOLD_WARM_TRACE (set, not "0"): the warm eigensolver's steps on stderr.
  bool warm_trace = false;
};

/// The settings of this process: the environment's, read on first use, or
/// what a ScopedSettings put in place.
const Settings& settings();

/// The environment's settings (`lookup` is std::getenv, or a test's table).
Settings settings_from_environment(const char* (*lookup)(const char*));

/// The store settings() reads (the environment's once, or an override's).
SettingsStore<Settings>& settings_store();

/// Replaces the process's settings for one scope (tests; not thread-safe:
/// set them before any work starts).
class ScopedSettings : public ScopedOverride<Settings, settings_store> {
 public:
  using ScopedOverride::ScopedOverride;
};

}  // namespace manifold
