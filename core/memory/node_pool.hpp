#pragma once
// An allocator for the nodes of the world's ordered indexes (ranked_set): nodes of one size
// come from blocks that are kept and reused, never handed back to malloc. A recalculation
// builds a new 100,000-node queue index and drops the old one; through malloc, those frees
// land in its fast bins and the next large allocation consolidates them all at once, a
// several-millisecond stall of the scheduler. Through the pool, a node is taken from and
// given back to a free list. The memory stays reserved at the high-water mark (about 100
// bytes per queued job and idle worker, twice that while a new order is being staged).
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace baton::core {

class node_pool {
 public:
  node_pool(size_t size, size_t align);
  void* take();
  void give(void* p);

 private:
  struct free_node {
    free_node* next;
  };
  size_t stride_;
  size_t align_;
  std::mutex mutex_;  // one scheduler per process in practice: never contended
  free_node* free_ = nullptr;
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  void grow();
};

// The process-wide pool for nodes of this size and alignment (never destroyed: trees in
// static storage may still give nodes back during exit).
template <size_t Size, size_t Align>
node_pool& pool_for() {
  static node_pool* pool = new node_pool(Size, Align);
  return *pool;
}

// Under AddressSanitizer every node goes through malloc, so a stale index entry is caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

template <class T>
struct pooled_allocator {
  // pb_ds still asks for the pre-C++11 member types.
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using pointer = T*;
  using const_pointer = const T*;
  using reference = T&;
  using const_reference = const T&;
  template <class U>
  struct rebind {
    using other = pooled_allocator<U>;
  };
  pooled_allocator() = default;
  template <class U>
  pooled_allocator(const pooled_allocator<U>&) {}
  T* allocate(size_t n) {
    if (n != 1 || sanitized) return std::allocator<T>().allocate(n);
    return static_cast<T*>(pool_for<sizeof(T), alignof(T)>().take());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1 || sanitized) return std::allocator<T>().deallocate(p, n);
    pool_for<sizeof(T), alignof(T)>().give(p);
  }
  template <class U>
  bool operator==(const pooled_allocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const pooled_allocator<U>&) const {
    return false;
  }
};

}  // namespace baton::core
