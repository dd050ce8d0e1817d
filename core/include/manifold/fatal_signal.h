#pragma once
// The last words of a process that a library we cannot mend crashes: Debian's
// libhdf5 1.10.8 dereferences a null pointer on some corrupt files (a fault
// no caller can catch). Where the faulting thread was handing a file to such
// a library, the process writes one line naming the file and exits with
// status 1, as for any bad input, instead of dying on a bare "Segmentation
// fault". The programs install the handler; readers name the file for as
// long as the library has it (FatalSignalNote).
#include <string>

namespace manifold {

/// Installs the handler of SIGSEGV and SIGBUS for the process: where the
/// faulting thread holds a FatalSignalNote it writes "PROGRAM: NOTE" to
/// stderr and exits with status 1; otherwise the signal takes its default
/// action (a core dump where they are enabled).
void install_fatal_signal_notes(const char* program);

/// While alive, the calling thread's note (notes nest: the innermost holds).
/// The text is formatted here, because the handler may only copy bytes.
class FatalSignalNote {
 public:
  explicit FatalSignalNote(const std::string& note);
  ~FatalSignalNote();
  FatalSignalNote(const FatalSignalNote&) = delete;
  FatalSignalNote& operator=(const FatalSignalNote&) = delete;

  const char* text() const { return text_; }
  int size() const { return size_; }

 private:
  static constexpr int kMaxText = 1024;
  char text_[kMaxText];
  int size_ = 0;
  FatalSignalNote* outer_;
};

/// The note readers hold while libhdf5 reads `path`.
std::string hdf5_crash_note(const std::string& path);

}  // namespace manifold
