#pragma once
// Threads started once that run one body at a time, on all of them at
// once, beside the caller: the host side of the final step's copies home
// while the tile loop runs. Starting a thread maps its stack, which waits
// for the address space's lock that the result's page faulting holds
// (KnnGraph::allocate_result), so threads started per copy stalled the
// copies (bench/gpu/RESULTS.md, "The worker's pieces"). Unlike core's
// LoopPool (manifold/parallel.h), it waits for every thread, each copying
// its fixed share: a LoopPool of the context's own with its threads started
// up front, the shares handed out as they wake, copied 5-12% slower at
// 100k x 256, k = 1024 (bench/gpu/RESULTS.md, "The copies home on core's
// LoopPool").
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace manifold::gpu {

class CopyCrew {
 public:
  /// `threads` in all: the caller and threads - 1 started now.
  explicit CopyCrew(int threads);
  ~CopyCrew();
  CopyCrew(const CopyCrew&) = delete;
  CopyCrew& operator=(const CopyCrew&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }
  /// Runs body(id) for every id in [0, size()), id 0 on the calling thread,
  /// and returns when all have; rethrows the first exception.
  void run(const std::function<void(int)>& body);

 private:
  void serve(int id);

  std::mutex m_;
  std::condition_variable wake_, finished_;
  const std::function<void(int)>* body_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> helpers_;
};

}  // namespace manifold::gpu
