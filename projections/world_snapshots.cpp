#include "projections/world_snapshots.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/world_snapshot.hpp"
#include "events/payload.hpp"

namespace baton::projections {

world_snapshots::world_snapshots(std::shared_ptr<events::event_store> store, core::world start, uint64_t start_seq,
                                 std::string start_hash, uint64_t every, size_t keep)
    : projection(projection_name),
      store_(std::move(store)),
      world_(std::move(start)),
      seq_(start_seq),
      last_snapshot_(start_seq),
      hash_(std::move(start_hash)),
      every_(every),
      keep_(std::max<size_t>(keep, 1)) {
  restore_applied(start_seq);  // the daemon wrote (or found) a snapshot of the world at start_seq
}

world_snapshots::world_snapshots(std::shared_ptr<events::event_store> store, world_source source, uint64_t start_seq,
                                 uint64_t every, size_t keep)
    : projection(projection_name),
      store_(std::move(store)),
      source_(std::move(source)),
      seq_(start_seq),
      last_snapshot_(start_seq),
      last_attempt_(start_seq),
      every_(every),
      keep_(std::max<size_t>(keep, 1)) {
  restore_applied(start_seq);
}

void world_snapshots::apply(const std::vector<events::event_envelope>& batch) {
  std::lock_guard<std::mutex> lock(m_);
  if (source_) {  // the source's world follows these events on its own thread
    seq_ = batch.back().seq;
    if (every_ > 0 && seq_ - last_attempt_ >= every_) write_from_source();
    return;
  }
  for (const auto& e : batch) {
    core::apply(world_, e.stream_id, e.type, events::from_payload(e.payload), e.recorded_at_us);
    seq_ = e.seq;
    hash_ = e.hash;
  }
  if (every_ > 0 && seq_ - last_snapshot_ >= every_) write();
}

void world_snapshots::write_now() {
  std::lock_guard<std::mutex> lock(m_);
  if (source_) return write_from_source();
  if (seq_ > last_snapshot_) write();
}

void world_snapshots::write_from_source() {
  last_attempt_ = seq_;
  // The source may trail the log (it runs on its own thread): its world is written at the
  // sequence it is at, if that is past the last snapshot.
  source_([&](const core::world& w, uint64_t seq, const std::string& hash) {
    if (seq > last_snapshot_) write(w, seq, hash);
  });
}

uint64_t world_snapshots::last_snapshot_seq() const {
  std::lock_guard<std::mutex> lock(m_);
  return last_snapshot_;
}

void world_snapshots::keep_newest(events::event_store& store, size_t keep) {
  auto seqs = store.snapshot_seqs(core::world_snapshot_name);
  for (size_t i = 0; i + std::max<size_t>(keep, 1) < seqs.size(); ++i) store.delete_snapshot(core::world_snapshot_name, seqs[i]);
}

void world_snapshots::write() { write(world_, seq_, hash_); }

void world_snapshots::write(const core::world& w, uint64_t seq, const std::string& hash) {
  auto started = std::chrono::steady_clock::now();
  try {
    auto bytes = core::encode_world_snapshot(w, hash);
    store_->put_snapshot(core::world_snapshot_name, {seq, bytes});
    last_snapshot_ = seq;
    keep_newest(*store_, keep_);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("state snapshot at event {} ({} jobs, {} workers, {} bytes) in {} ms", seq, w.jobs.size(),
                 w.workers.size(), bytes.size(), ms);
  } catch (const std::exception& e) {
    // A snapshot only saves start-up time: without it the log is replayed. Say so, go on.
    spdlog::error("state snapshot at event {} not written: {}", seq, e.what());
    last_snapshot_ = seq;  // not again at once
  }
}

}  // namespace baton::projections
