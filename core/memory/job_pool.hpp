#pragma once
// Where the job table's jobs live (core/memory/job_table.hpp): blocks of jobs side by side, each job
// an odd number of cache lines after the one before it.
//
// Allocated one by one, a job (1,008 bytes) took jemalloc's 1,024-byte size class, so jobs
// sat 1,024 bytes apart and the same field of consecutive jobs fell into a sixteenth of the
// cache's sets; with an odd number of lines between them it spreads over all of them. In
// some stretches on the benchmark VM, jobs 1,024 bytes apart made a replay's applying thread
// several times slower, and this layout was not (measured once). A
// block also spares an allocation and a free per job (a replay builds and then frees a
// quarter of a million). A job's memory never moves while it lives, and a freed one is
// reused by the next job.
//
// Blocks double from a few dozen places up to 2 MiB, and then stay at the most places that
// fit in 2 MiB: a small world (a test's, a what-if's) takes little, and a large one's blocks
// fill a size class of the allocator exactly. Blocks of 512 places (557,056 bytes) had
// taken jemalloc's 640 KiB class, and with transparent huge pages the unused sixth of each
// was faulted in and zeroed all the same: 48 MB of a 1,000,000-event replay's 460.
//
// Under AddressSanitizer, memory that holds no job is poisoned, so a pointer kept to a job
// after it was erased still fails there as it would with jobs allocated one by one.
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

#include "core/jobs/job.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define BATON_JOB_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define BATON_JOB_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define BATON_JOB_POOL_POISON(p, n) ((void)(p), (void)(n))
#define BATON_JOB_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace baton::core {

class job_pool {
 public:
  static constexpr size_t line = 64;
  static constexpr size_t stride = (((sizeof(job) + line - 1) / line) | 1) * line;  // an odd number of lines
  static constexpr size_t first_block = 32;                                         // places in the first block
  static constexpr size_t max_block = (size_t{2} << 20) / stride;                   // places in a block at most
  static_assert(first_block <= max_block);
  // Places in the block after one of `places` places.
  static constexpr size_t next_block(size_t places) { return places * 2 < max_block ? places * 2 : max_block; }

  job_pool() = default;
  job_pool(const job_pool&) = delete;
  job_pool& operator=(const job_pool&) = delete;
  job_pool(job_pool&& o) noexcept { swap(o); }
  job_pool& operator=(job_pool&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }
  ~job_pool() { release(); }

  // Memory for one job, `stride` bytes aligned to a cache line; the caller builds the job in it.
  void* take() {
    char* at;
    if (!free_.empty()) {
      at = free_.back();
      free_.pop_back();
    } else {
      if (used_ == places_) {
        size_t places = blocks_.empty() ? first_block : next_block(places_);
        blocks_.push_back(static_cast<char*>(::operator new(places* stride, std::align_val_t(line))));
        BATON_JOB_POOL_POISON(blocks_.back(), places * stride);
        places_ = places;
        used_ = 0;
      }
      at = blocks_.back() + used_++ * stride;
    }
    BATON_JOB_POOL_UNPOISON(at, stride);
    return at;
  }
  // Memory from take() back, its job (if one was built there) destroyed already.
  void give_back(void* at) {
    BATON_JOB_POOL_POISON(at, stride);
    free_.push_back(static_cast<char*>(at));
  }
  // Frees every block: the jobs built in them must all be destroyed already.
  void release() {
    size_t places = first_block;
    for (char* b : blocks_) {
      BATON_JOB_POOL_UNPOISON(b, places * stride);
      ::operator delete(b, std::align_val_t(line));
      places = next_block(places);
    }
    blocks_.clear();
    free_.clear();
    places_ = used_ = 0;
  }

 private:
  void swap(job_pool& o) noexcept {
    blocks_.swap(o.blocks_);
    free_.swap(o.free_);
    std::swap(places_, o.places_);
    std::swap(used_, o.used_);
  }

  std::vector<char*> blocks_;
  std::vector<char*> free_;  // taken and given back: reused first
  size_t places_ = 0;        // the last block's places
  size_t used_ = 0;          // of those, how many were ever taken
};

}  // namespace baton::core
