#pragma once
// Which job each worker holds (world::job_of_worker): listed in worker id order, found by hash.
//
// A worker's entry stays once made and holds "" while the worker is free: a busy worker takes
// a job, finishes it and takes the next one all day, and erasing its entry at each finish cost
// a map node, a hash node and three copies of ids, made again at its next assignment. Only
// held entries are ever seen from outside.
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

namespace baton::core {

class held_jobs {
 public:
  held_jobs() = default;
  held_jobs(const held_jobs& o) : by_worker_(o.by_worker_) { reindex(); }
  held_jobs& operator=(const held_jobs& o) {
    by_worker_ = o.by_worker_;
    reindex();
    return *this;
  }
  held_jobs(held_jobs&&) = default;  // map nodes move with their map: the index's views stay valid
  held_jobs& operator=(held_jobs&&) = default;

  // The job the worker holds, or nullptr.
  const std::string* find(std::string_view worker_id) const {
    auto it = index_.find(worker_id);
    return it == index_.end() || it->second->empty() ? nullptr : it->second;
  }
  // The worker now holds job_id (an empty job_id: it holds nothing).
  void set(const std::string& worker_id, const std::string& job_id) {
    if (job_id.empty()) return clear(worker_id);
    std::string* slot;
    if (auto it = index_.find(worker_id); it != index_.end()) {
      slot = it->second;
    } else {
      auto node = by_worker_.emplace(worker_id, std::string()).first;
      index_.emplace(node->first, &node->second);
      slot = &node->second;
    }
    *slot = job_id;  // (into the capacity its last job left)
  }
  void clear(std::string_view worker_id) {
    if (auto it = index_.find(worker_id); it != index_.end()) it->second->clear();
  }
  // f(worker id, job id) for every worker holding a job, in worker id order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [worker_id, job_id] : by_worker_)
      if (!job_id.empty()) f(worker_id, job_id);
  }

 private:
  void reindex() {
    index_.clear();
    for (auto& [worker_id, job_id] : by_worker_) index_.emplace(worker_id, &job_id);
  }

  std::map<std::string, std::string> by_worker_;  // every worker that ever held a job -> its job, or ""
  // By hash, for the per-poll finds; keys view by_worker_'s keys. Never iterated, so hashing
  // never decides an order.
  std::unordered_map<std::string_view, std::string*> index_;
};

}  // namespace baton::core
