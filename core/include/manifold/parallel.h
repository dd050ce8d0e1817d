#pragma once
// A minimal parallel loop over an index range on std::threads (core has no
// OpenMP requirement). Exceptions from the body are rethrown on the caller.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace manifold {

inline int hardware_threads(int requested = 0) {
  if (requested > 0) return requested;
  unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

/// Calls body(i) for i in [begin, end) on `threads` threads (0 = all cores),
/// handing out indices dynamically in chunks.
template <class Body>
void parallel_for(int64_t begin, int64_t end, int threads, Body&& body, int64_t chunk = 0) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  int t = static_cast<int>(std::min<int64_t>(hardware_threads(threads), n));
  if (chunk <= 0) chunk = std::max<int64_t>(1, n / (static_cast<int64_t>(t) * 16));
  if (t == 1) {
    for (int64_t i = begin; i < end; ++i) body(i);
    return;
  }
  std::atomic<int64_t> next{begin};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    try {
      for (;;) {
        int64_t s = next.fetch_add(chunk);
        if (s >= end) break;
        int64_t e = std::min(end, s + chunk);
        for (int64_t i = s; i < e; ++i) body(i);
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(end);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < t - 1; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace manifold
