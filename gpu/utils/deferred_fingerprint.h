#pragma once
// The input's hash (graph.json's fingerprint) on a thread of its own,
// started before the result's host pages are faulted in and held until the
// build says go.
//
// Starting a thread maps its stack, which waits for the address space's lock
// that each MADV_POPULATE_WRITE call of KnnGraph::allocate_result holds for
// its whole range: a hash thread started mid-loop (once the uploads are
// done) held the loop's thread for as long (bench/gpu/RESULTS.md, "The
// worker's pieces").
#include <atomic>
#include <future>
#include <string>

#include "manifold/dataset.h"

namespace manifold::gpu {

class DeferredFingerprint {
 public:
  explicit DeferredFingerprint(const Dataset& data) {
    hash_ = std::async(std::launch::async, [&data, go = gate_.get_future()]() mutable {
      return go.get() ? data.fingerprint() : std::string();
    });
  }
  /// Never started (an error, a cancellation): the thread ends unhashed.
  ~DeferredFingerprint() { open(false); }
  DeferredFingerprint(const DeferredFingerprint&) = delete;
  DeferredFingerprint& operator=(const DeferredFingerprint&) = delete;

  /// The hash may start (once the uploads no longer compete with it).
  void start() { open(true); }
  /// Starts the hash if it has not started, and waits for it.
  std::string get() {
    start();
    return hash_.get();
  }

 private:
  void open(bool go) {
    if (!opened_.exchange(true)) gate_.set_value(go);
  }

  std::promise<bool> gate_;
  std::atomic<bool> opened_{false};
  std::future<std::string> hash_;  ///< last: destroyed (joined) first, after the destructor opened the gate
};

}  // namespace manifold::gpu
