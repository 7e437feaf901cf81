#pragma once
// The event log on RocksDB. One process-wide writer appends (the log writer actor);
// reads are safe from any thread.
//
// Column families:
//   default             "format" marker
//   events              u64be seq                     -> encoded envelope (envelope.hpp)
//   stream_index        stream_id \0 u64be version    -> u64be seq (its last entry is the stream's head)
//   commands            command_id                    -> u64be first_seq, last_seq, stream_version
//   snapshots           name \0 u64be seq             -> snapshot bytes
//   projection_offsets  name                          -> u64be last applied seq
// Everything one append() call writes goes into one synced WriteBatch.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "events/append.hpp"
#include "events/envelope.hpp"
#include "events/free_space.hpp"
#include "events/log_reader.hpp"
#include "events/store_error.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Cache;
}  // namespace rocksdb

namespace baton::events {

struct verify_report {
  bool ok = true;
  uint64_t events_checked = 0;
  uint64_t bad_seq = 0;  // first event that failed
  std::string reason;
};

struct snapshot {
  uint64_t seq = 0;  // state after applying every event up to and including seq
  std::string data;
};

struct store_options {
  bool sync = true;  // fdatasync every WriteBatch; only benchmarks of the raw store turn it off
  // Open without the write lock, as it stands on disk at open (WAL included): for tools that
  // read a log while batond runs on it (--verify, --dump, --rederive). Writes throw.
  bool read_only = false;
  // Open a log whose last event is damaged (malformed, or failing its hash) instead of
  // refusing: only for the repair (truncate_after). last_seq() is then the damaged event's.
  bool allow_damaged_tail = false;
  // Writes are refused (append: no_space; snapshots, offsets: store_error) while the
  // filesystem under the log has less free (free_space.hpp). 0: no check.
  uint64_t min_free_bytes = 0;
  // The writer caches the head version of each stream it has appended to, but for streams
  // an append said were done (append_command::stream_done: pruned jobs), so the cache follows
  // the live jobs and workers. Beyond this many streams it is emptied (heads are read back
  // from the index on their next use: a seek in the memtable and the levels, ~5-10 us). One
  // entry is ~130 bytes, a small part of what the world holds per live job.
  size_t stream_head_cache_max = 1'000'000;
};

// What truncate_after removed.
struct truncation {
  uint64_t previous_last_seq = 0;
  uint64_t removed_events = 0;
  std::string previous_last_value_sha256;  // hex, of the last event's stored bytes as they were
};

class event_store {
 public:
  // Opens or creates the log in dir. Throws store_error naming the problem.
  static std::unique_ptr<event_store> open(const std::string& dir, store_options opts = {});
  ~event_store();
  event_store(const event_store&) = delete;
  event_store& operator=(const event_store&) = delete;

  // --- writer side: call from one thread only ---
  // Checks and appends the commands in order, all accepted ones in one WriteBatch.
  // If committed is given, the accepted events are appended to it (for subscribers).
  // With sync_now false the batch reaches the WAL (it survives a process crash) but is
  // durable against power loss only after the next sync_wal(): the log writer overlaps
  // that fsync with building the next batch and answers callers only after it.
  std::vector<append_result> append(const std::vector<append_command>& cmds, std::vector<event_envelope>* committed = nullptr);
  std::vector<append_result> append(const std::vector<append_command>& cmds, std::vector<event_envelope>* committed,
                                    bool sync_now);
  // Why a write would be refused for want of space now (see store_options::min_free_bytes).
  std::optional<std::string> short_of_space() const;
  // fdatasyncs the WAL: every batch appended before the call is durable when it returns.
  void sync_wal();
  void put_snapshot(const std::string& name, const snapshot& s);
  void set_projection_offset(const std::string& name, uint64_t seq);
  // Flushes memtables so the next open need not replay the WAL.
  void flush();
  // Repair of a damaged tail: removes every event after keep_through and what indexes them
  // (stream index entries, command records, snapshots and projection offsets beyond it) in
  // one synced write. Events 1..keep_through must check out (gap-free, chain intact): throws
  // store_error naming the first that does not, having changed nothing. before_removing runs
  // once they have checked out and before anything is removed: where the caller takes its
  // backup (checkpoint()); if it throws, nothing is removed.
  truncation truncate_after(uint64_t keep_through, const std::function<void()>& before_removing = {});
  // A consistent copy of the whole store in dir, which must not exist (RocksDB checkpoint:
  // hard links to the table files where it can).
  void checkpoint(const std::string& dir) const;

  // --- reader side: any thread ---
  uint64_t last_seq() const { return last_seq_.load(std::memory_order_acquire); }
  // What RocksDB holds in memory now (GET /metrics): memtables of every family, the shared
  // block cache, and the open table files' index and filter blocks. Any thread.
  using memory_use = log_memory;
  memory_use memory() const;
  std::optional<uint64_t> stream_version(const std::string& stream_id) const;
  // Visits events from_seq..to_seq (inclusive, 0 = to the end) in order, checking that
  // sequences have no gaps and, if verify_chain, every hash. Throws store_error on the first
  // problem. The view is valid only during the call; return false to stop early.
  void scan(uint64_t from_seq, uint64_t to_seq, bool verify_chain, const std::function<bool(const event_view&)>& visit) const;
  std::vector<event_envelope> read(uint64_t from_seq, size_t max) const;
  std::vector<event_envelope> read_stream(const std::string& stream_id, uint64_t from_version, size_t max) const;
  // The sequence of the first event of every stream whose id starts with `prefix`, in the
  // streams' order: one seek in the stream index per stream, whatever its length.
  std::vector<uint64_t> first_events_of_streams(const std::string& prefix) const;
  // Walks the whole log and reports the first gap, malformed record or broken hash.
  verify_report verify() const;
  std::optional<snapshot> latest_snapshot(const std::string& name) const;
  // The newest snapshot taken at or before seq.
  std::optional<snapshot> snapshot_at_or_before(const std::string& name, uint64_t seq) const;
  std::vector<uint64_t> snapshot_seqs(const std::string& name) const;  // ascending
  void delete_snapshot(const std::string& name, uint64_t seq);
  std::optional<uint64_t> projection_offset(const std::string& name) const;
  // Where a command id landed, if it was ever appended.
  std::optional<append_result> find_command(const std::string& command_id) const;

 private:
  // tests/support/store_tampering.hpp: reads a record's stored bytes and the writer's cache of
  // stream heads, damages a log; in tests only.
  friend struct store_tampering;
  event_store() = default;
  std::optional<std::string> read_raw(uint64_t seq) const;
  std::string hash_before(uint64_t seq) const;

  std::unique_ptr<rocksdb::DB> db_;
  std::shared_ptr<rocksdb::Cache> block_cache_;
  std::vector<rocksdb::ColumnFamilyHandle*> cf_;  // indexed by the cf enum in the .cpp
  store_options opts_;
  std::unique_ptr<free_space_guard> space_;
  std::atomic<uint64_t> last_seq_{0};
  std::string last_hash_;                            // writer-owned
  std::unordered_map<std::string, uint64_t> heads_;  // writer-owned cache: stream -> version, filled on first use
};

}  // namespace baton::events
