#include "manifold/fatal_signal.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace manifold {

namespace {

thread_local FatalSignalNote* current_note = nullptr;
char program_name[64] = "manifold";
int program_size = 8;

void write_all(const char* p, int n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, p, static_cast<size_t>(n));
    if (w <= 0) return;
    p += w, n -= static_cast<int>(w);
  }
}

// Only async-signal-safe calls: write, _exit, signal and raise. Without a
// note the signal is raised again under its default action (the handler was
// installed with SA_RESETHAND and SA_NODEFER).
void on_fatal_signal(int sig) {
  const FatalSignalNote* note = current_note;
  if (!note) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  write_all(program_name, program_size);
  write_all(": ", 2);
  write_all(note->text(), note->size());
  write_all("\n", 1);
  _exit(1);
}

}  // namespace

void install_fatal_signal_notes(const char* program) {
  program_size = static_cast<int>(std::min(std::strlen(program), sizeof program_name - 1));
  std::memcpy(program_name, program, static_cast<size_t>(program_size));
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, nullptr);
  sigaction(SIGBUS, &action, nullptr);
}

FatalSignalNote::FatalSignalNote(const std::string& note) : outer_(current_note) {
  size_ = static_cast<int>(std::min(note.size(), static_cast<size_t>(kMaxText)));
  std::memcpy(text_, note.data(), static_cast<size_t>(size_));
  current_note = this;
}

FatalSignalNote::~FatalSignalNote() { current_note = outer_; }

std::string hdf5_crash_note(const std::string& path) {
  return path + ": the HDF5 library crashed reading this file (it is corrupt in a way libhdf5 does not check)";
}

}  // namespace manifold
