// parallel_for on the thread pool: every index once, exceptions reach the
// caller, nested loops and loops from several caller threads at once (which
// the pool hands threads of their own) finish and are correct; callers with
// pools of their own keep their helpers while others loop.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "manifold/parallel.h"

using manifold::LoopPool;
using manifold::parallel_for;

namespace {

/// Runs a loop over n indices on `threads` threads; each index must be
/// visited exactly once.
void expect_each_index_once(int64_t n, int threads, int64_t chunk) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  parallel_for(
      0, n, threads, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); }, chunk);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i;
}

}  // namespace

TEST(Parallel, EveryIndexOnceOverManyLoops) {
  // Many short loops back to back: the pool's threads are reused, and a
  // helper that wakes after the loop ended must not run the next one twice.
  for (int rep = 0; rep < 2000; ++rep) expect_each_index_once(1 + rep % 97, 1 + rep % 5, 1 + rep % 3);
  // More threads than cores, and more than indices.
  expect_each_index_once(100000, 13, 0);
  expect_each_index_once(3, 8, 1);
}

TEST(Parallel, TheBodysExceptionReachesTheCallerAndThePoolGoesOn) {
  for (int rep = 0; rep < 50; ++rep) {
    EXPECT_THROW(parallel_for(
                     0, 10000, 4,
                     [&](int64_t i) {
      if (i == 777) throw std::runtime_error("body failed");
                     },
                     16),
                 std::runtime_error);
    expect_each_index_once(5000, 4, 7);
  }
}

TEST(Parallel, NestedLoopsFinishAndAreCorrect) {
  // The inner loop starts while the pool runs the outer one: it gets threads
  // of its own (or runs on the pool's thread), never waits for the pool.
  const int64_t outer = 40, inner = 500;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(outer * inner));
  parallel_for(
      0, outer, 4,
      [&](int64_t o) {
    parallel_for(
        0, inner, 3, [&](int64_t i) { hits[static_cast<size_t>(o * inner + i)].fetch_add(1); }, 10);
      },
      1);
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(Parallel, LoopsFromSeveralCallerThreadsAtOnce) {
  // The GUI's worker and another caller may loop at the same time: one gets
  // the pool, the others threads of their own; all finish correctly.
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 300; ++rep) {
        const int64_t n = 200 + 37 * c + rep;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(
            0, n, 3, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); }, 5);
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Parallel, CallersWithPoolsOfTheirOwnKeepTheirHelpers) {
  // Each GPU's host thread stages its uploads on a pool of its own: two
  // callers loop at once, beside a long loop holding the process-wide pool,
  // and each one's loops run on its own pool's threads, which come back
  // loop after loop (threads started per loop would each see one loop; the
  // caller's own thread is not counted).
  std::atomic<bool> hold{true};
  std::thread holder([&] {
    parallel_for(
        0, 4, 2,
        [&](int64_t) {
      while (hold.load()) std::this_thread::yield();
        },
        1);
  });
  std::atomic<int> failures{0}, most_loops_on_a_helper{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&] {
      LoopPool pool;
      const auto caller = std::this_thread::get_id();
      for (int rep = 0; rep < 300; ++rep) {
        const int64_t n = 2000;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(
            pool, 0, n, 3,
            [&](int64_t i) {
          hits[static_cast<size_t>(i)].fetch_add(1);
          // A little work an index, so the loop lasts long enough for
          // helpers to join it (an empty body is done before they wake).
          volatile double x = 1;
          for (int w = 0; w < 100; ++w) x = x * 1.0000001 + 1e-9;
          thread_local int last_rep = -1, loops = 0;
          if (std::this_thread::get_id() != caller && last_rep != rep) {
            last_rep = rep;
            ++loops;
            int most = most_loops_on_a_helper.load();
            while (loops > most && !most_loops_on_a_helper.compare_exchange_weak(most, loops)) {
            }
          }
            },
            5);
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (auto& t : callers) t.join();
  hold = false;
  holder.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(most_loops_on_a_helper.load(), 1) << "every helper ran a single loop: threads started per loop";
}
