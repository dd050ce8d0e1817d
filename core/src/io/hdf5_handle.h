#pragma once
// What every reader of HDF5 files holds: handles closed by their own close
// function (H5Fclose, H5Dclose, ...) when they go, so every path out of a
// reader or writer, errors included, releases what it opened; and, while it
// reads a file, the guard that keeps libhdf5 quiet and names the file should
// libhdf5 crash on it.
#include <hdf5.h>

#include <string>

#include "manifold/fatal_signal.h"

namespace manifold::io {

class Hdf5Handle {
 public:
  Hdf5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hdf5Handle() {
    if (id_ >= 0) close_(id_);
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

/// While alive: libhdf5 prints nothing (its errors reach users as the
/// readers' one-line messages), and a crash inside it ends the process with
/// one line naming `path` (FatalSignalNote, hdf5_crash_note).
class Hdf5Reading {
 public:
  explicit Hdf5Reading(const std::string& path) : note_(hdf5_crash_note(path)) {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~Hdf5Reading() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  Hdf5Reading(const Hdf5Reading&) = delete;
  Hdf5Reading& operator=(const Hdf5Reading&) = delete;

 private:
  FatalSignalNote note_;
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

}  // namespace manifold::io
