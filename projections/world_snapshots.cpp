#include "projections/world_snapshots.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "core/world/world_snapshot.hpp"
#include "core/events/event_types.hpp"

namespace baton::projections {

world_snapshots::world_snapshots(std::shared_ptr<events::event_store> store, core::world start, uint64_t start_seq,
                                 std::string start_hash, uint64_t every, size_t keep)
    : world_snapshots(std::move(store), false, std::move(start), start_seq, std::move(start_hash), every, keep) {}

world_snapshots::world_snapshots(std::shared_ptr<events::event_store> store, lent_t, uint64_t start_seq, std::string start_hash,
                                 uint64_t every, size_t keep)
    : world_snapshots(std::move(store), true, core::world{}, start_seq, std::move(start_hash), every, keep) {}

world_snapshots::world_snapshots(std::shared_ptr<events::event_store> store, bool lent, core::world own, uint64_t start_seq,
                                 std::string start_hash, uint64_t every, size_t keep)
    : projection(projection_name),
      store_(std::move(store)),
      lent_(lent),
      world_(std::move(own)),
      seq_(start_seq),
      last_snapshot_(start_seq),
      hash_(std::move(start_hash)),
      every_(every),
      keep_(std::max<size_t>(keep, 1)) {
  restore_applied(start_seq);  // the daemon wrote (or found) a snapshot of the world at start_seq
}

void world_snapshots::apply(const std::vector<events::event_envelope>& batch) {
  std::lock_guard<std::mutex> lock(m_);
  const core::world* w = lent_ ? borrowed_ : &world_;
  if (!w) throw std::logic_error("lent state snapshots are fed by their owner's follow()");
  for (const auto& e : batch) {
    if (!lent_) core::apply(world_, e.stream_id, core::ev::decode(e.type, e.schema_version, e.payload), e.recorded_at_us);
    seq_ = e.seq;
    hash_ = e.hash;
  }
  if (every_ > 0 && seq_ - last_snapshot_ >= every_) write(*w);
}

bool world_snapshots::follow(const core::world& w, const std::vector<events::event_envelope>& batch) {
  if (!lent_) throw std::logic_error("state snapshots with a world of their own are fed by their runner");
  const uint64_t seen = applied_seq();
  if (batch.empty() || batch.back().seq <= seen) return !failure();
  if (batch.front().seq > seen + 1) restore_applied(batch.front().seq - 1);  // the owner's world holds those
  borrowed_ = &w;
  bool ok;
  if (batch.front().seq > seen) {
    ok = apply_batch(batch);
  } else {
    const auto first = std::find_if(batch.begin(), batch.end(), [&](const auto& e) { return e.seq > seen; });
    ok = apply_batch(std::vector<events::event_envelope>(first, batch.end()));
  }
  borrowed_ = nullptr;
  return ok;
}

void world_snapshots::write_now() {
  if (lent_) throw std::logic_error("lent state snapshots are written from their owner's world");
  write_now(world_);
}

void world_snapshots::write_now(const core::world& w) {
  std::lock_guard<std::mutex> lock(m_);
  if (seq_ > last_snapshot_) write(w);
}

uint64_t world_snapshots::last_snapshot_seq() const {
  std::lock_guard<std::mutex> lock(m_);
  return last_snapshot_;
}

void world_snapshots::keep_newest(events::event_store& store, size_t keep) {
  auto seqs = store.snapshot_seqs(core::world_snapshot_name);
  for (size_t i = 0; i + std::max<size_t>(keep, 1) < seqs.size(); ++i) store.delete_snapshot(core::world_snapshot_name, seqs[i]);
}

void world_snapshots::put_keeping(events::event_store& store, const events::snapshot& s, size_t keep) {
  if (keep > 1) keep_newest(store, keep - 1);
  store.put_snapshot(core::world_snapshot_name, s);
  keep_newest(store, keep);  // (keep 1: the old one goes only once the new one is there)
}

void world_snapshots::write(const core::world& w) {
  auto started = std::chrono::steady_clock::now();
  try {
    auto bytes = core::encode_world_snapshot(w, hash_);
    put_keeping(*store_, {seq_, bytes}, keep_);
    last_snapshot_ = seq_;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    spdlog::info("state snapshot at event {} ({} jobs, {} workers, {} bytes) in {} ms", seq_, w.jobs.size(), w.workers.size(),
                 bytes.size(), ms);
  } catch (const std::exception& e) {
    // A snapshot only saves start-up time: without it the log is replayed. Say so, go on.
    spdlog::error("state snapshot at event {} not written: {}", seq_, e.what());
    last_snapshot_ = seq_;  // not again at once
  }
}

}  // namespace baton::projections
