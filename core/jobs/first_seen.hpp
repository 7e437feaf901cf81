#pragma once
// A list without its repeats, each kept where it first appears: preferred_clusters and
// depends_on as a client sent them. The repeats are found through an ordered set of the
// items seen, so n items take O(n log n) comparisons: a search of the kept items for each one
// was quadratic, and 80,000 pins held an HTTP thread for 6.5 s.
#include <functional>
#include <set>
#include <utility>
#include <vector>

namespace baton::core {

template <class T, class Less = std::less<T>>
std::vector<T> first_seen(std::vector<T> items, Less less = Less{}) {
  auto by_value = [&less](const T* a, const T* b) { return less(*a, *b); };
  std::set<const T*, decltype(by_value)> seen(by_value);
  std::vector<bool> keep(items.size());
  for (size_t i = 0; i < items.size(); ++i) keep[i] = seen.insert(&items[i]).second;
  std::vector<T> out;
  out.reserve(seen.size());
  for (size_t i = 0; i < items.size(); ++i)
    if (keep[i]) out.push_back(std::move(items[i]));
  return out;
}

}  // namespace baton::core
