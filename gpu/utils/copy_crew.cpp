#include "utils/copy_crew.h"

#include <algorithm>

namespace manifold::gpu {

CopyCrew::CopyCrew(int threads) {
  for (int id = 1; id < std::max(1, threads); ++id) helpers_.emplace_back([this, id] { serve(id); });
}

CopyCrew::~CopyCrew() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void CopyCrew::run(const std::function<void(int)>& body) {
  {
    std::lock_guard lock(m_);
    body_ = &body;
    pending_ = static_cast<int>(helpers_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr mine;
  try {
    body(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock lock(m_);
  finished_.wait(lock, [&] { return pending_ == 0; });
  body_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

void CopyCrew::serve(int id) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* body = nullptr;
    {
      std::unique_lock lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      body = body_;
    }
    std::exception_ptr failed;
    try {
      (*body)(id);
    } catch (...) {
      failed = std::current_exception();
    }
    std::lock_guard lock(m_);
    if (failed && !error_) error_ = failed;
    if (--pending_ == 0) finished_.notify_all();
  }
}

}  // namespace manifold::gpu
