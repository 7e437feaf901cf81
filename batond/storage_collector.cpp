#include "batond/storage_collector.hpp"

#include <spdlog/spdlog.h>

#include "actors/thread_name.hpp"

namespace baton::batond {
namespace {

std::optional<core::reply> ask(const actors::scheduler_actor& s, core::command cmd) {
  core::envelope e{core::principal::loop(), "loop:storage-collector", {}, std::move(cmd), {}};
  return actors::submit(s, std::move(e), std::chrono::seconds(30));
}

}  // namespace

storage_collector::storage_collector(actors::scheduler_actor scheduler, std::shared_ptr<storage::backend> backend,
                                     std::chrono::seconds interval)
    : scheduler_(std::move(scheduler)), backend_(std::move(backend)), interval_(interval) {
  thread_ = std::thread([this] { loop(); });
}

storage_collector::~storage_collector() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t storage_collector::pass() {
  auto r = ask(scheduler_, core::commands::storage_collect{});
  if (!r || r->error) {
    if (r) spdlog::warn("storage collector: {}: {}", r->error->code, r->error->message);
    return 0;
  }
  const auto* list = std::get_if<core::results::blobs_to_remove>(&r->value);
  if (!list || list->items.empty()) return 0;
  core::commands::storage_removed gone;
  for (const auto& b : list->items) {
    if (backend_->remove(b.sha256))
      gone.sha256s.push_back(b.sha256);
    else
      spdlog::warn("storage collector: could not remove blob {} ({} bytes); trying again next pass", b.sha256, b.size);
  }
  if (gone.sha256s.empty()) return 0;
  size_t n = gone.sha256s.size();
  auto done = ask(scheduler_, std::move(gone));
  if (!done || done->error) return 0;
  spdlog::info("storage collector: removed {} blobs nothing referred to", n);
  return n;
}

void storage_collector::loop() {
  actors::name_this_thread("storage_gc");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (wake_.wait_for(lock, interval_, [this] { return stop_; })) break;
    lock.unlock();
    try {
      pass();
    } catch (const std::exception& e) {
      spdlog::error("storage collector: {}", e.what());
    }
    lock.lock();
  }
}

}  // namespace baton::batond
