#pragma once
// Every job not pruned, by id (world::jobs).
//
// A hash table, not an ordered map: at 250,000 jobs, adding a job to a std::map of UUID
// strings descended ~18 nodes, each a cache miss plus one more for its key's bytes, and a
// second hash table beside it answered the finds. Here a find or an add costs one hash and a
// bucket or two. Jobs never move while they are in the table (its nodes are allocated one by
// one and only relinked on a rehash), so indexes may point at a job and at its id.
//
// Hashing must decide no order: the table is walked either in id order (by_id(): listings,
// snapshots, decisions over every job) or, for folds whose result does not depend on the
// order (counts, filling other indexes), with for_each_unordered.
#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/job.hpp"

namespace baton::core {

class job_table {
 public:
  using entry = std::pair<const std::string, job>;

  job* find(const std::string& id) {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  const job* find(const std::string& id) const {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }
  job& at(const std::string& id) { return jobs_.at(id); }  // std::out_of_range for an unknown id
  const job& at(const std::string& id) const { return jobs_.at(id); }
  size_t count(const std::string& id) const { return jobs_.count(id); }
  size_t size() const { return jobs_.size(); }
  bool empty() const { return jobs_.empty(); }

  // The job under this id, added blank (its id set) if there is none.
  job& find_or_add(const std::string& id) {
    auto [it, added] = jobs_.try_emplace(id);
    if (added) it->second.id = id;
    return it->second;
  }
  // Adds j under id unless a job is there already; the job in the table either way.
  job& emplace(std::string id, job j) { return jobs_.try_emplace(std::move(id), std::move(j)).first->second; }
  void erase(const std::string& id) { jobs_.erase(id); }

  // Every job in id order: a list of the entries sorted when asked (n log n), for walks over
  // all jobs, not for a per-event path.
  class ordered {
   public:
    class iterator {
     public:
      explicit iterator(std::vector<const entry*>::const_iterator at) : at_(at) {}
      const entry& operator*() const { return **at_; }
      const entry* operator->() const { return *at_; }
      iterator& operator++() {
        ++at_;
        return *this;
      }
      bool operator!=(const iterator& o) const { return at_ != o.at_; }
      bool operator==(const iterator& o) const { return at_ == o.at_; }

     private:
      std::vector<const entry*>::const_iterator at_;
    };
    explicit ordered(std::vector<const entry*> sorted) : sorted_(std::move(sorted)) {}
    iterator begin() const { return iterator(sorted_.begin()); }
    iterator end() const { return iterator(sorted_.end()); }
    size_t size() const { return sorted_.size(); }

   private:
    std::vector<const entry*> sorted_;
  };
  ordered by_id() const {
    std::vector<const entry*> sorted;
    sorted.reserve(jobs_.size());
    for (const auto& e : jobs_) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](const entry* a, const entry* b) { return a->first < b->first; });
    return ordered(std::move(sorted));
  }

  // The same walk with the jobs to change (rebuilding indexes over them).
  template <class F>
  void for_each_by_id(F&& f) {
    for (const entry& e : by_id()) f(const_cast<job&>(e.second));  // (the table's own entries)
  }

  // Every job, in no particular order: only for folds whose result the order cannot change.
  template <class F>
  void for_each_unordered(F&& f) {
    for (auto& e : jobs_) f(e.second);
  }
  template <class F>
  void for_each_unordered(F&& f) const {
    for (const auto& e : jobs_) f(e.second);
  }

 private:
  std::unordered_map<std::string, job> jobs_;
};

}  // namespace baton::core
