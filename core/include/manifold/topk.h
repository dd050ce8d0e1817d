#pragma once
// Bounded per-row candidate lists ordered by (distance, index): the selection
// and merge primitive of the CPU and MPI backends. Smaller index wins ties, so
// results are deterministic whatever the order candidates arrive in.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace manifold {

struct Neighbour {
  float dist;
  int64_t index;
  friend bool operator<(const Neighbour& a, const Neighbour& b) {
    return a.dist < b.dist || (a.dist == b.dist && a.index < b.index);
  }
  friend bool operator==(const Neighbour& a, const Neighbour& b) = default;
};

/// The k best neighbours seen so far for one row. Candidates that beat the
/// bound are appended; when k / 4 (at least 16) more than k are held, an
/// nth_element keeps the k best and their worst becomes the bound. Appending
/// writes in order where a heap's sift reads and writes all over a large
/// list (tiles offer to hundreds of lists in turn).
class TopK {
 public:
  explicit TopK(int k = 0) : k_(k) {}
  int k() const { return k_; }
  /// Anything greater is rejected: the k-th best at the last compaction
  /// (+inf before the first), never below the k-th best seen so far.
  float bound() const { return worst_.dist; }
  void push(float dist, int64_t index) {
    const Neighbour n{dist, index};
    if (!(n < worst_)) return;
    if (items_.empty()) items_.reserve(limit());
    items_.push_back(n);
    if (items_.size() == limit()) keep_best();
  }
  /// Ascending by (distance, index); the list is left empty. (No two entries
  /// compare equal, so any sort gives the one order.)
  std::vector<Neighbour> take_sorted() {
    if (items_.size() > static_cast<size_t>(k_)) keep_best();
    std::sort(items_.begin(), items_.end());
    std::vector<Neighbour> out;
    out.swap(items_);
    return out;
  }

 private:
  size_t limit() const { return static_cast<size_t>(k_) + static_cast<size_t>(std::max(16, k_ / 4)); }
  void keep_best() {
    std::nth_element(items_.begin(), items_.begin() + (k_ - 1), items_.end());
    items_.resize(static_cast<size_t>(k_));
    worst_ = items_[static_cast<size_t>(k_ - 1)];
  }

  int k_;
  std::vector<Neighbour> items_;
  Neighbour worst_{std::numeric_limits<float>::infinity(), std::numeric_limits<int64_t>::max()};
};

}  // namespace manifold
