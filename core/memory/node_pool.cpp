#include "core/memory/node_pool.hpp"

#include <algorithm>

namespace baton::core {

namespace {
constexpr size_t nodes_per_block = 4096;
}

node_pool::node_pool(size_t size, size_t align)
    : stride_((std::max(size, sizeof(free_node)) + align - 1) / align * align), align_(align) {}

void node_pool::grow() {
  // Over-allocate by one alignment so the first node can be aligned.
  auto block = std::make_unique<std::byte[]>(stride_ * nodes_per_block + align_);
  auto base = reinterpret_cast<uintptr_t>(block.get());
  auto* first = reinterpret_cast<std::byte*>((base + align_ - 1) / align_ * align_);
  for (size_t i = nodes_per_block; i-- > 0;) {
    auto* n = reinterpret_cast<free_node*>(first + i * stride_);
    n->next = free_;
    free_ = n;
  }
  blocks_.push_back(std::move(block));
}

void* node_pool::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_) grow();
  free_node* n = free_;
  free_ = n->next;
  return n;
}

void node_pool::give(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* n = static_cast<free_node*>(p);
  n->next = free_;
  free_ = n;
}

}  // namespace baton::core
