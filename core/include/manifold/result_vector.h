#pragma once
// Vectors that a producer sizes and then writes whole: a graph's indices and
// distances, the arrays read from .npy files into them, and prepared rows.
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace manifold {

/// std::allocator, except that growing a vector leaves the new elements
/// default-initialised (unset, for numbers) instead of writing zeros: a
/// graph's result is sized and then written whole by its backend, and at
/// large k (4.9 GB at n = 1e5, k = 4096) a zero fill on one thread would
/// come before the first row could be copied home.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

/// The type of a graph's indices and distances.
template <class T>
using ResultVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace manifold
