#pragma once
// Progress on a terminal: one self-overwriting line on a TTY
// ("knn  42% 1,234 tiles/s  ETA 0:12"), or plain lines every few seconds
// when stderr is a file. Also the SIGINT handler that turns Ctrl-C into a
// cancellation request (a second Ctrl-C exits at once).
#include <atomic>
#include <cstdio>
#include <string>

#include "manifold/progress.h"

namespace manifold {

class TerminalProgress : public ProgressSink {
 public:
  explicit TerminalProgress(std::FILE* out = stderr, bool quiet = false);
  void report(const ProgressEvent& e) override;

 private:
  std::FILE* out_;
  bool tty_;
  bool quiet_;
  double last_plain_ = 0;
  std::string last_stage_;
};

/// A process-wide cancel flag set by SIGINT/SIGTERM once install_cancel_on_signal() ran.
std::atomic<bool>& cancel_flag();
void install_cancel_on_signal();

/// "1:02:03", "4:05", "12s"
std::string format_duration(double seconds);

}  // namespace manifold
