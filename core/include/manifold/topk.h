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

/// A max-heap of the k best neighbours seen so far for one row.
class TopK {
 public:
  explicit TopK(int k = 0) : k_(k) { heap_.reserve(static_cast<size_t>(k)); }
  int k() const { return k_; }
  size_t size() const { return heap_.size(); }
  bool full() const { return static_cast<int>(heap_.size()) == k_; }
  /// The current k-th best distance (+inf until full): anything greater is rejected.
  float bound() const { return full() ? heap_.front().dist : std::numeric_limits<float>::infinity(); }
  void push(float dist, int64_t index) {
    Neighbour n{dist, index};
    if (!full()) {
      heap_.push_back(n);
      std::push_heap(heap_.begin(), heap_.end());
    } else if (n < heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.back() = n;
      std::push_heap(heap_.begin(), heap_.end());
    }
  }
  /// Ascending by (distance, index); the list is left empty.
  std::vector<Neighbour> take_sorted() {
    std::sort_heap(heap_.begin(), heap_.end());
    std::vector<Neighbour> out;
    out.swap(heap_);
    return out;
  }

 private:
  int k_;
  std::vector<Neighbour> heap_;
};

}  // namespace manifold
