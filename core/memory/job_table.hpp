#pragma once
// Every job not pruned, by id (world::jobs).
//
// A flat hash index over jobs. At 250,000 jobs a std::unordered_map find walked bucket ->
// the node before -> the node -> the key's bytes, each a cache miss, and a replay spent a
// third of its applying thread there. Here a find probes a slot array
// that holds each id's hash beside its entry (open addressing, linear probing, at most half
// full), so it touches one slot line, then the entry it found. A caller that knows the hash
// already passes it (a replay's reading thread hashes each id ahead:
// replay/recovery/prepared_event.hpp).
//
// The jobs live in the table's own blocks (core/memory/job_pool.hpp) and never move while in the
// table (only the slots move, on a growth or an erase), so indexes may point at a job and at
// its id. The key is the job's own id (job::id, never changed while the job is in the
// table): a second copy beside it cost an allocation per job and took the record past a
// kilobyte, into the allocator's next size.
//
// Hashing must decide no order: the table is walked either in id order (by_id(): listings,
// snapshots, decisions over every job) or, for folds whose result does not depend on the
// order (counts, filling other indexes), with for_each_unordered.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/jobs/job.hpp"
#include "core/memory/job_pool.hpp"

namespace baton::core {

class job_table {
 public:
  // What a walk in id order yields: the job's id and the job.
  using entry = std::pair<const std::string&, const job&>;
  // An id with its hash (hash_of), to hash it once.
  struct key {
    std::string_view id;
    uint64_t hash;
  };
  static uint64_t hash_of(std::string_view id) { return std::hash<std::string_view>{}(id); }
  static key key_of(std::string_view id) { return {id, hash_of(id)}; }

  job_table() = default;
  job_table(const job_table&) = delete;  // (the world is not copied: indexes point at jobs)
  job_table& operator=(const job_table&) = delete;
  job_table(job_table&& o) noexcept : slots_(std::move(o.slots_)), size_(o.size_), pool_(std::move(o.pool_)) {
    o.slots_.clear();
    o.size_ = 0;
  }
  job_table& operator=(job_table&& o) noexcept {
    if (this != &o) {
      clear();
      slots_.swap(o.slots_);
      std::swap(size_, o.size_);
      pool_ = std::move(o.pool_);
    }
    return *this;
  }
  ~job_table() { clear(); }

  job* find(const key& k) {
    size_t i = locate(k);
    return i == npos ? nullptr : slots_[i].e;
  }
  const job* find(const key& k) const { return const_cast<job_table*>(this)->find(k); }
  job* find(std::string_view id) { return find(key_of(id)); }
  const job* find(std::string_view id) const { return find(key_of(id)); }
  job& at(std::string_view id) {  // std::out_of_range for an unknown id
    if (job* j = find(id)) return *j;
    throw std::out_of_range("job_table::at: no job " + std::string(id));
  }
  const job& at(std::string_view id) const { return const_cast<job_table*>(this)->at(id); }
  size_t count(std::string_view id) const { return find(id) ? 1 : 0; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The job under this id, added blank (its id set) if there is none: one probe either way.
  job& find_or_add(const key& k) {
    if (job* j = find(k)) return *j;
    // (Made in place: a job is a kilobyte of members, too large to build and then move. Made
    // with `new (at) job`, not `new (at) job()`, which zeroes the kilobyte before the
    // constructor sets every member again: each has its own initializer, core/jobs/job.hpp.)
    job& j = insert_new(k.hash, [](void* at) { return new (at) job; });
    j.id = k.id;
    return j;
  }
  job& find_or_add(std::string_view id) { return find_or_add(key_of(id)); }
  // Adds j under id (its id set to it) unless a job is there already; the job in the table
  // either way.
  job& emplace(std::string id, job j) {
    const key k = key_of(id);
    if (job* there = find(k)) return *there;
    j.id = std::move(id);
    return insert_new(k.hash, [&j](void* at) { return new (at) job(std::move(j)); });
  }
  void erase(std::string_view id) {
    size_t i = locate(key_of(id));
    if (i == npos) return;
    destroy(slots_[i].e);
    --size_;
    // Backward shift (no tombstones): each following entry of the probe run moves into the
    // hole when the hole lies between its home slot and where it sits.
    const size_t mask = slots_.size() - 1;
    for (size_t j = (i + 1) & mask; slots_[j].e; j = (j + 1) & mask) {
      const size_t home = slots_[j].hash & mask;
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = slot{};
  }

  // Prefetch hints for a caller that knows which ids come next (a replay: replay/audit/rederive.cpp).
  // Each reads the table only as it is at the call, changes nothing, and may be given any
  // hash; called some events apart, in this order, each finds the previous one's memory in
  // the cache: the id's home slot, then the entry found there (the job), then its id's bytes.
  void prefetch_slot(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }
  void prefetch_entry(uint64_t hash) const {
    if (const job* j = candidate(hash))
      for (size_t at = 0; at < sizeof(job); at += 64) __builtin_prefetch(reinterpret_cast<const char*>(j) + at);
  }
  void prefetch_id(uint64_t hash) const {
    if (const job* j = candidate(hash)) __builtin_prefetch(j->id.data());
  }

  // Every job in id order: a list of the entries sorted when asked (n log n), for walks over
  // all jobs, not for a per-event path.
  class ordered {
   public:
    class iterator {
     public:
      explicit iterator(std::vector<const job*>::const_iterator at) : at_(at) {}
      entry operator*() const { return {(*at_)->id, **at_}; }
      iterator& operator++() {
        ++at_;
        return *this;
      }
      bool operator!=(const iterator& o) const { return at_ != o.at_; }
      bool operator==(const iterator& o) const { return at_ == o.at_; }

     private:
      std::vector<const job*>::const_iterator at_;
    };
    explicit ordered(std::vector<const job*> sorted) : sorted_(std::move(sorted)) {}
    iterator begin() const { return iterator(sorted_.begin()); }
    iterator end() const { return iterator(sorted_.end()); }
    size_t size() const { return sorted_.size(); }

   private:
    std::vector<const job*> sorted_;
  };
  ordered by_id() const {
    std::vector<const job*> sorted;
    sorted.reserve(size_);
    for (const slot& s : slots_)
      if (s.e) sorted.push_back(s.e);
    std::sort(sorted.begin(), sorted.end(), [](const job* a, const job* b) { return a->id < b->id; });
    return ordered(std::move(sorted));
  }

  // The same walk with the jobs to change (rebuilding indexes over them).
  template <class F>
  void for_each_by_id(F&& f) {
    for (const auto& [id, j] : by_id()) f(const_cast<job&>(j));  // (the table's own jobs)
  }

  // Every job, in no particular order: only for folds whose result the order cannot change.
  template <class F>
  void for_each_unordered(F&& f) const {
    for (const slot& s : slots_)
      if (s.e) f(static_cast<const job&>(*s.e));
  }

 private:
  struct slot {
    uint64_t hash = 0;
    job* e = nullptr;  // owned (built in pool_); null: an empty slot
  };
  static constexpr size_t npos = SIZE_MAX;

  // The slot of the hash's probe run whose entry has that hash and `match`es, or npos.
  template <class Match>
  size_t probe(uint64_t hash, Match&& match) const {
    if (slots_.empty()) return npos;
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask; slots_[i].e; i = (i + 1) & mask)
      if (slots_[i].hash == hash && match(*slots_[i].e)) return i;
    return npos;
  }
  size_t locate(const key& k) const {
    return probe(k.hash, [&](const job& j) { return j.id == k.id; });
  }
  // The first job of the hash's probe run with that hash (its id not compared), or null.
  const job* candidate(uint64_t hash) const {
    size_t i = probe(hash, [](const job&) { return true; });
    return i == npos ? nullptr : slots_[i].e;
  }
  // Puts s in the first empty slot from its home on (there is one: the table is at most half full).
  slot& place(const slot& s) {
    const size_t mask = slots_.size() - 1;
    size_t i = s.hash & mask;
    while (slots_[i].e) i = (i + 1) & mask;
    return slots_[i] = s;
  }
  // Adds the job build(memory) makes (from the pool) under the hash; the table grows first,
  // so nothing throws once the job is built.
  template <class Build>
  job& insert_new(uint64_t hash, Build&& build) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    void* at = pool_.take();
    job* j;
    try {
      j = build(at);
    } catch (...) {
      pool_.give_back(at);
      throw;
    }
    ++size_;
    return *place({hash, j}).e;
  }
  void destroy(job* j) {
    j->~job();
    pool_.give_back(j);
  }
  void grow() {
    std::vector<slot> old(std::max<size_t>(16, slots_.size() * 2));
    old.swap(slots_);
    for (const slot& s : old)
      if (s.e) place(s);
  }
  void clear() {
    for (slot& s : slots_)
      if (s.e) s.e->~job();  // (their memory goes with the pool's blocks)
    slots_.clear();
    size_ = 0;
    pool_.release();
  }

  std::vector<slot> slots_;  // a power of two in size, or empty
  size_t size_ = 0;
  job_pool pool_;
};

}  // namespace baton::core
