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
      replace_largest(n);
    }
  }
  /// Ascending by (distance, index); the list is left empty. (No two entries
  /// compare equal, so any sort gives the one order.)
  std::vector<Neighbour> take_sorted() {
    std::sort(heap_.begin(), heap_.end());
    std::vector<Neighbour> out;
    out.swap(heap_);
    return out;
  }

 private:
  /// The root replaced by n, sifted down: one pass, where pop_heap then
  /// push_heap take two.
  void replace_largest(const Neighbour& n) {
    const size_t size = heap_.size();
    size_t i = 0;
    for (size_t child = 1; child < size; child = 2 * i + 1) {
      if (child + 1 < size && heap_[child] < heap_[child + 1]) ++child;
      if (!(n < heap_[child])) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = n;
  }

  int k_;
  std::vector<Neighbour> heap_;
};

}  // namespace manifold
