#include "manifold/progress.h"

namespace manifold {

Progress::Progress(ProgressSink* sink, const std::atomic<bool>* cancel, double min_interval_s)
    : sink_(sink), cancel_(cancel), min_interval_s_(min_interval_s) {
  start_ = last_report_ = std::chrono::steady_clock::now();
}

void Progress::stage(const std::string& name, uint64_t total, const std::string& unit, bool total_is_limit) {
  check_cancel();
  std::lock_guard lock(mutex_);
  stage_ = name;
  unit_ = unit;
  total_ = total;
  total_is_limit_ = total_is_limit;
  done_.store(0);
  start_ = last_report_ = std::chrono::steady_clock::now();
  publish(false);
}

void Progress::advance(uint64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (sink_) {
    auto now = std::chrono::steady_clock::now();
    // Cheap unlocked pre-check; the locked re-check keeps events serialised.
    if (std::chrono::duration<double>(now - last_report_).count() >= min_interval_s_) {
      std::unique_lock lock(mutex_, std::try_to_lock);
      if (lock.owns_lock() && std::chrono::duration<double>(now - last_report_).count() >= min_interval_s_) {
        last_report_ = now;
        publish(false);
      }
    }
  }
  check_cancel();
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (total_ > 0 && !total_is_limit_) done_.store(total_);
  publish(true);
}

void Progress::publish(bool finished) {
  if (!sink_) return;
  ProgressEvent e;
  e.stage = stage_;
  e.unit = unit_;
  e.total = total_;
  e.total_is_limit = total_is_limit_;
  e.done = done_.load(std::memory_order_relaxed);
  if (e.total > 0 && e.done > e.total) e.done = e.total;
  e.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  e.rate = e.elapsed_s > 0 ? static_cast<double>(e.done) / e.elapsed_s : 0.0;
  if (e.total > 0 && e.rate > 0) e.eta_s = static_cast<double>(e.total - e.done) / e.rate;
  e.finished = finished;
  sink_->report(e);
}

}  // namespace manifold
