#pragma once
// The read-once store behind each library's settings (core, gpu, mpi): the
// environment is read on first use and kept for the process; a read that
// throws (a variable with a value it does not take) keeps nothing, so every
// later call reads and fails again with the same line. Tests replace the
// value for one scope with a ScopedOverride.
//
// Plain C++17: the GPU library's settings are read by its CUDA launchers too.
#include <mutex>
#include <optional>

namespace manifold {

template <class S>
class SettingsStore {
 public:
  /// `read` builds the settings from the environment.
  explicit SettingsStore(S (*read)()) : read_(read) {}

  /// The settings in force: read on first use, or the override's.
  const S& get() {
    std::lock_guard lock(m_);
    if (!value_) value_ = read_();
    return *value_;
  }

  /// Puts `s` in force (ScopedOverride; not thread-safe against builds in
  /// flight: set it before any work starts).
  void set(const S& s) {
    std::lock_guard lock(m_);
    value_ = s;
  }

 private:
  S (*read_)();
  std::mutex m_;
  std::optional<S> value_;  // empty until read (or after a read that threw)
};

/// Replaces the settings of `Store()` for one scope and restores them after.
template <class S, SettingsStore<S>& (*Store)()>
class ScopedOverride {
 public:
  explicit ScopedOverride(const S& s) : saved_(Store().get()) { Store().set(s); }
  ~ScopedOverride() { Store().set(saved_); }
  ScopedOverride(const ScopedOverride&) = delete;
  ScopedOverride& operator=(const ScopedOverride&) = delete;

 private:
  S saved_;
};

}  // namespace manifold
