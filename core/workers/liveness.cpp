#include "core/workers/liveness.hpp"

namespace baton::core {

void lease_book::touch(const std::string& id, time_us at) {
  erase(id);
  by_id_[id] = at;
  by_time_.insert({at, id});
}

void lease_book::erase(const std::string& id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  by_time_.erase({it->second, id});
  by_id_.erase(it);
}

std::optional<time_us> lease_book::last(const std::string& id) const {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::set<std::string> lease_book::older_than(time_us cutoff) const {
  std::set<std::string> out;
  for (auto it = by_time_.begin(); it != by_time_.end() && it->first < cutoff; ++it) out.insert(it->second);
  return out;
}

}  // namespace baton::core
