#pragma once
// Qt-free progress and cancellation for long work. The worker calls stage()
// then advance(); a sink (terminal, GUI, progress file) receives throttled
// events with rate and time left. Cancellation is a flag the worker polls via
// advance()/check_cancel(), which throw manifold::Cancelled.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "manifold/error.h"

namespace manifold {

struct ProgressEvent {
  std::string stage;  ///< e.g. "knn", "eigensolve"
  std::string unit;   ///< what `done`/`total` count, e.g. "tiles", "rows"
  uint64_t done = 0;
  uint64_t total = 0;    ///< 0 when unknown
  double elapsed_s = 0;  ///< since the stage began
  double rate = 0;       ///< units per second
  double eta_s = -1;     ///< seconds left, -1 when unknown
  /// `total` is a budget the stage may stop well short of (an iterative
  /// solver's): eta_s is then the most time left, not an estimate.
  bool total_is_limit = false;
  bool finished = false;  ///< last event of the stage
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  /// Called from any worker thread, serialised by Progress.
  virtual void report(const ProgressEvent& event) = 0;
};

class Progress {
 public:
  /// Both pointers may be null (no reporting / never cancelled). They must
  /// outlive this object.
  explicit Progress(ProgressSink* sink = nullptr, const std::atomic<bool>* cancel = nullptr,
                    double min_interval_s = 0.1);

  /// Starts a new stage; reports it at once. `total_is_limit`: total is a
  /// budget, not the work (see ProgressEvent).
  void stage(const std::string& name, uint64_t total, const std::string& unit = "items", bool total_is_limit = false);
  /// Thread-safe. Adds n to the stage's count; reports at most every
  /// min_interval_s; throws Cancelled when cancellation was requested.
  void advance(uint64_t n = 1);
  /// Reports the stage as finished (done = total, unless total is a limit).
  void finish();
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  void check_cancel() const {
    if (cancelled()) throw Cancelled();
  }
  /// Sub-progress forwarding: shares sink and cancel flag.
  ProgressSink* sink() const { return sink_; }
  const std::atomic<bool>* cancel_flag() const { return cancel_; }

 private:
  void publish(bool finished);
  ProgressSink* sink_;
  const std::atomic<bool>* cancel_;
  double min_interval_s_;
  std::mutex mutex_;
  std::string stage_, unit_;
  uint64_t total_ = 0;
  bool total_is_limit_ = false;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_, last_report_;
};

}  // namespace manifold
