#pragma once
// A minimal parallel loop over an index range on std::threads (core has no
// OpenMP requirement). Exceptions from the body are rethrown on the caller.
//
// The threads are a process-wide pool started on first use and kept: an
// eigensolve runs thousands of loops of a millisecond or less (one per
// mat-vec), and starting threads for each cost more than the loop itself
// on many cores, where more threads then made a solve slower
// (bench/diffusion/RESULTS.md).
// A loop started while the pool runs another (a nested loop, or a second
// caller thread) gets threads of its own. A caller that runs loops at the
// same time as others, all the time (each GPU's host thread), keeps a
// LoopPool of its own and passes it to parallel_for.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace manifold {

/// Helper threads that run one loop's worker at a time beside its caller,
/// started on a loop's first use and kept.
class LoopPool {
 public:
  LoopPool() = default;
  LoopPool(const LoopPool&) = delete;
  LoopPool& operator=(const LoopPool&) = delete;

  /// The process-wide pool: parallel_for's without a pool of the caller's.
  static LoopPool& instance() {
    static LoopPool pool;
    return pool;
  }

  /// Runs `worker` on the calling thread and on up to `helpers` pool
  /// threads, and returns when every copy that started has returned (the
  /// worker hands out the work itself, so helpers that wake late find none
  /// and are not waited for). false, having run nothing, when the pool is
  /// busy with another loop or this is one of its threads.
  template <class Worker>
  bool run(int helpers, Worker& worker) {
    std::unique_lock lock(mutex_);
    if (busy_ || in_pool_thread()) return false;
    busy_ = true;
    while (static_cast<int>(threads_.size()) < helpers) threads_.emplace_back([this] { serve(); });
    worker_ = &worker;
    call_ = [](void* w) { (*static_cast<Worker*>(w))(); };
    wanted_ = helpers;
    claimed_ = done_ = 0;
    closed_ = false;
    generation_.fetch_add(1, std::memory_order_release);
    const bool sleepers = sleeping_ > 0;
    lock.unlock();
    if (sleepers) wake_.notify_all();
    worker();
    lock.lock();
    closed_ = true;  // helpers not started by now stay out
    finished_.wait(lock, [&] { return done_ == claimed_; });
    worker_ = nullptr;
    busy_ = false;
    return true;
  }

  ~LoopPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  static bool& in_pool_thread() {
    thread_local bool flag = false;
    return flag;
  }

  void serve() {
    in_pool_thread() = true;
    uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!stop_ && generation_.load(std::memory_order_relaxed) == seen) {
        // Loops come in quick succession (a solver's mat-vecs): look for the
        // next one for a few tens of microseconds before sleeping, which
        // saves the caller a wake-up per helper.
        lock.unlock();
        for (int spin = 0; spin < kSpin && generation_.load(std::memory_order_acquire) == seen; ++spin) pause();
        lock.lock();
        ++sleeping_;
        wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
        --sleeping_;
      }
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      if (closed_ || claimed_ >= wanted_) continue;
      ++claimed_;
      void* worker = worker_;
      void (*call)(void*) = call_;
      lock.unlock();
      call(worker);
      lock.lock();
      if (++done_ == claimed_) finished_.notify_one();
    }
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }
  static constexpr int kSpin = 2000;  // pause instructions: ~20-80 us

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> threads_;
  void* worker_ = nullptr;  // the running loop's worker, called through call_
  void (*call_)(void*) = nullptr;
  std::atomic<uint64_t> generation_{0};  // written under mutex_, read spinning without it
  int sleeping_ = 0;                     // helpers waiting on wake_
  int wanted_ = 0, claimed_ = 0, done_ = 0;
  bool busy_ = false, closed_ = false, stop_ = false;
};

inline int hardware_threads(int requested = 0) {
  if (requested > 0) return requested;
  unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

/// Calls body(i) for i in [begin, end) on `threads` threads (0 = all cores),
/// the caller and helpers of `pool`, handing out indices dynamically in
/// chunks.
template <class Body>
void parallel_for(LoopPool& pool, int64_t begin, int64_t end, int threads, Body&& body, int64_t chunk = 0) {
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
  if (!pool.run(t - 1, worker)) {
    std::vector<std::thread> own;
    for (int i = 0; i < t - 1; ++i) own.emplace_back(worker);
    worker();
    for (auto& th : own) th.join();
  }
  if (error) std::rethrow_exception(error);
}

/// parallel_for on the process-wide pool.
template <class Body>
void parallel_for(int64_t begin, int64_t end, int threads, Body&& body, int64_t chunk = 0) {
  parallel_for(LoopPool::instance(), begin, end, threads, std::forward<Body>(body), chunk);
}

}  // namespace manifold
