#pragma once
// The collector (docs/storage.md#retention): every storage.collect_interval_seconds it asks
// the scheduler which blobs nothing holds (the decision marks them, storage.blob_removing),
// removes them from the backend, and reports what is gone (storage.blob_removed). A blob whose
// removal failed stays marked and is tried again on the next pass, also after a restart.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "actors/scheduler.hpp"
#include "http/storage/backend.hpp"

namespace baton::batond {

class storage_collector {
 public:
  storage_collector(actors::scheduler_actor scheduler, std::shared_ptr<storage::backend> backend, std::chrono::seconds interval);
  ~storage_collector();  // stops and joins
  // One pass now (tests and the loop): the number of blobs removed.
  size_t pass();

 private:
  void loop();
  actors::scheduler_actor scheduler_;
  std::shared_ptr<storage::backend> backend_;
  std::chrono::seconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace baton::batond
