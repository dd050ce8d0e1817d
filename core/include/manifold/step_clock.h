#pragma once
// Wall-clock seconds of a command's steps (loading, the graph, the
// embedding, each output file, the commit), for its JSON ("command_timings_s")
// and its summary line: where the time of a run goes besides the graph and
// the embedding.
#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "manifold/knn.h"

namespace manifold {

class StepClock {
 public:
  using Clock = std::chrono::steady_clock;

  /// Ends the step begun at the previous lap (or at construction) as `step`.
  void lap(const std::string& step) {
    const auto now = Clock::now();
    steps_.emplace_back(step, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }
  /// Records steps timed elsewhere (a writer's own) as the next ones; the
  /// next lap() counts only what came after them.
  void add(const Timings& steps) {
    for (const auto& [step, seconds] : steps) {
      steps_.emplace_back(step, seconds);
      last_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    }
  }
  const Timings& steps() const { return steps_; }
  double total() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  nlohmann::json json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [step, seconds] : steps_) j[step] = seconds;
    return j;
  }
  /// "steps: load 0.35 s, graph 3.60 s, ..., total 15.31 s"
  std::string summary() const {
    std::string line = "steps:";
    char buf[64];
    for (const auto& [step, seconds] : steps_) {
      std::snprintf(buf, sizeof buf, " %.3f s,", seconds);
      line += " " + step + buf;
    }
    std::snprintf(buf, sizeof buf, " total %.3f s", total());
    return line + buf;
  }

 private:
  Clock::time_point start_ = Clock::now(), last_ = start_;
  Timings steps_;
};

}  // namespace manifold
