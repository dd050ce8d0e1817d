#include "manifold/terminal_progress.h"

#include <csignal>
#include <cstdlib>
#include <unistd.h>

namespace manifold {

namespace {
std::atomic<bool> g_cancel{false};
std::atomic<int> g_signals{0};

void on_signal(int sig) {
  if (g_signals.fetch_add(1) >= 1) std::_Exit(128 + sig);  // second Ctrl-C: leave now
  g_cancel.store(true);
}

std::string human_rate(double r) {
  char buf[32];
  if (r >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", r / 1e9);
  else if (r >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", r / 1e6);
  else if (r >= 1e4)
    std::snprintf(buf, sizeof buf, "%.1fk", r / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f", r);
  return buf;
}
}  // namespace

std::atomic<bool>& cancel_flag() { return g_cancel; }

void install_cancel_on_signal() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string format_duration(double s) {
  if (s < 0) return "?";
  long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

TerminalProgress::TerminalProgress(std::FILE* out, bool quiet)
    : out_(out), tty_(isatty(fileno(out)) != 0), quiet_(quiet) {}

void TerminalProgress::report(const ProgressEvent& e) {
  if (quiet_) return;
  char line[256];
  if (e.total > 0 && e.total_is_limit) {
    // A budget: the count, and the most time left before it runs out.
    std::snprintf(line, sizeof line, "%-12s %llu %s (budget %llu)  %s %s/s  %s %s", e.stage.c_str(),
                  static_cast<unsigned long long>(e.done), e.unit.c_str(), static_cast<unsigned long long>(e.total),
                  human_rate(e.rate).c_str(), e.unit.c_str(), e.finished ? "took" : "at most",
                  format_duration(e.finished ? e.elapsed_s : e.eta_s).c_str());
  } else if (e.total > 0) {
    double pct = 100.0 * static_cast<double>(e.done) / static_cast<double>(e.total);
    std::snprintf(line, sizeof line, "%-12s %5.1f%%  %llu/%llu %s  %s %s/s  %s %s", e.stage.c_str(), pct,
                  static_cast<unsigned long long>(e.done), static_cast<unsigned long long>(e.total), e.unit.c_str(),
                  human_rate(e.rate).c_str(), e.unit.c_str(), e.finished ? "took" : "ETA",
                  format_duration(e.finished ? e.elapsed_s : e.eta_s).c_str());
  } else {
    std::snprintf(line, sizeof line, "%-12s %llu %s  %s", e.stage.c_str(), static_cast<unsigned long long>(e.done),
                  e.unit.c_str(), format_duration(e.elapsed_s).c_str());
  }
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s%s", line, e.finished ? "\n" : "");
  } else {
    // Files and pipes get a line at stage end and at most every 5 s, and
    // only for work long enough to matter.
    if (e.finished ? e.elapsed_s >= 1.0 : e.elapsed_s - last_plain_ >= 5.0) {
      std::fprintf(out_, "%s\n", line);
      last_plain_ = e.elapsed_s;
    }
    if (e.stage != last_stage_ || e.finished) last_plain_ = 0, last_stage_ = e.stage;
  }
  std::fflush(out_);
}

}  // namespace manifold
