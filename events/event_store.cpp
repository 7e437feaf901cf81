#include "events/event_store.hpp"
#include "events/rocksdb_logger.hpp"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/options.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/slice.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/write_batch.h>

#include <filesystem>
#include <unordered_map>

#include "core/util/sha256.hpp"
#include "events/bytes.hpp"

namespace baton::events {
namespace {

enum cf_index : size_t { cf_default, cf_events, cf_stream_index, cf_commands, cf_snapshots, cf_offsets };
const std::vector<std::string> cf_names = {
    rocksdb::kDefaultColumnFamilyName, "events", "stream_index", "commands", "snapshots", "projection_offsets"};
const char* format_key = "format";
const char* format_value = "baton-eventlog-1";

rocksdb::Slice slice(const std::string& s) { return {s.data(), s.size()}; }

std::string name_key(const std::string& name, uint64_t n) {
  std::string k = name;
  k.push_back('\0');
  put_u64be(k, n);
  return k;
}

void check(const rocksdb::Status& s, const std::string& what, uint64_t seq = 0) {
  if (!s.ok()) throw store_error(what + ": " + s.ToString(), seq);
}

std::string command_value(const append_result& r) {
  std::string v;
  put_u64be(v, r.first_seq);
  put_u64be(v, r.last_seq);
  put_u64be(v, r.stream_version);
  return v;
}

append_result command_result(const std::string& v) {
  append_result r;
  r.status = append_status::duplicate;
  r.first_seq = get_u64be(std::string_view(v).substr(0, 8));
  r.last_seq = get_u64be(std::string_view(v).substr(8, 8));
  r.stream_version = get_u64be(std::string_view(v).substr(16, 8));
  return r;
}

// A stream index key's stream and its separator: name_key without its version.
class stream_of_index_key final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "baton.stream_of_index_key"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override { return {key.data(), key.size() - 8}; }
  bool InDomain(const rocksdb::Slice& key) const override { return key.size() > 8; }
};
// (Each memtable's bucket array is this many pointers, 512 KiB: a few streams per bucket
// with the hundred thousand streams of a large campaign in one memtable.)
constexpr size_t stream_index_buckets = 1 << 16;
// A bucket's skip list grows as tall as the default skip list (RocksDB's default for buckets,
// 4, suits a few hundred entries: a stream with thousands in one memtable, such as the
// scheduler's or a busy worker's, then walked long lists at every insert).
constexpr int32_t stream_bucket_height = 12;

// Reading the stream index across streams (their prefixes): without total_order_seek, a
// hashed memtable only iterates the bucket of the key sought.
rocksdb::ReadOptions across_streams() {
  rocksdb::ReadOptions ro;
  ro.total_order_seek = true;
  return ro;
}

rocksdb::WriteOptions write_options(bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return wo;
}

// Every family reads through one bounded block cache (left alone, RocksDB gives each family an
// 8 MiB cache of its own, and a daemon's memory creeps towards 48 MiB as its reads touch them).
constexpr size_t block_cache_bytes = 8 << 20;

// Every append looks up its command id, which is almost always absent: whole-key bloom
// filters (in SSTs and in the memtable) answer "absent" without searching.
rocksdb::ColumnFamilyOptions family_options(cf_index cf, const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions o;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  if (cf == cf_commands) {
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    t.whole_key_filtering = true;
    o.memtable_whole_key_filtering = true;
    o.memtable_prefix_bloom_size_ratio = 0.1;
  }
  // The log is read mostly in long scans (start-up, replay, projections): LZ4 decompresses a
  // block in half of Snappy's time (the default) at the same size on disk, and 16 KiB blocks
  // mean a quarter of the blocks fetched and compress a sixth smaller than 4 KiB ones. A point
  // read (a job's history) decompresses 16 KiB instead of 4: microseconds. Old blocks keep
  // their own compression, so a log written before reads as it did.
  if (cf == cf_events) {
    o.compression = rocksdb::kLZ4Compression;
    t.block_size = 16 << 10;
  }
  // Nearly every append adds an index entry for a stream that has none in the memtable yet
  // (a job's or worker's next event, seconds after its last): in the default skip list that
  // was a search from the top over every key since the last flush, about 40 key comparisons
  // and 40 % of the log writer's instructions per poll. Hashed by stream, an insert searches
  // only its bucket. Reads within a stream (its head, its events) seek in its bucket; a read
  // across streams says total_order_seek (across_streams()).
  if (cf == cf_stream_index) {
    o.prefix_extractor = std::make_shared<stream_of_index_key>();
    o.memtable_factory.reset(rocksdb::NewHashSkipListRepFactory(stream_index_buckets, stream_bucket_height));
  }
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

// Files RocksDB writes while it creates a database, before CURRENT exists: a process killed
// then leaves only these, and nothing was ever committed. (The WAL and OPTIONS files come
// after CURRENT, so a directory with them but without CURRENT is a damaged log: refused.)
bool left_by_interrupted_creation(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
    auto numbered = [&](const std::string& suffix) {  // 000001.dbtmp: CURRENT before its rename
      auto stem = name.size() > suffix.size() ? name.substr(0, name.size() - suffix.size()) : "";
      return !stem.empty() && name.compare(stem.size(), suffix.size(), suffix) == 0 &&
             stem.find_first_not_of("0123456789") == std::string::npos;
    };
    bool rocksdb_own =
        name == "LOCK" || name == "IDENTITY" || name == "LOG" || starts("LOG.old.") || starts("MANIFEST-") || numbered(".dbtmp");
    if (!rocksdb_own || !entry.is_regular_file()) return false;
  }
  return !ec;
}

// Refuses paths that would make RocksDB create a database inside something that is not one.
void check_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw store_error("cannot access " + dir + ": " + ec.message());
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) throw store_error("cannot create " + dir + ": " + ec.message());
    return;
  }
  if (!fs::is_directory(st)) throw store_error(dir + " is not a directory");
  bool empty = fs::is_empty(dir, ec);
  if (ec) throw store_error("cannot read " + dir + ": " + ec.message());
  if (!empty && !fs::exists(fs::path(dir) / "CURRENT") && !left_by_interrupted_creation(dir))
    throw store_error(dir + " is not empty and holds no event log (no CURRENT file)");
}

}  // namespace

std::unique_ptr<event_store> event_store::open(const std::string& dir, store_options opts) {
  if (opts.read_only && !std::filesystem::exists(std::filesystem::path(dir) / "CURRENT"))
    throw store_error("no event log in " + dir);
  check_directory(dir);
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.paranoid_checks = true;
  db_opts.max_background_jobs = 2;
  // One writer (the log writer actor), and the stream index's hashed memtable does not take
  // concurrent inserts (RocksDB refuses to open with both).
  db_opts.allow_concurrent_memtable_write = false;
  db_opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  // Overwrite old WAL files instead of growing new ones: an fdatasync then need not
  // journal a size change, which roughly halves its cost on ext4.
  db_opts.recycle_log_file_num = 4;
  db_opts.info_log = make_rocksdb_logger();
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  auto cache = rocksdb::NewLRUCache(block_cache_bytes);
  for (size_t i = 0; i < cf_names.size(); ++i) descs.emplace_back(cf_names[i], family_options(static_cast<cf_index>(i), cache));

  std::unique_ptr<event_store> s(new event_store());
  s->opts_ = opts;
  s->block_cache_ = cache;
  s->space_ = std::make_unique<free_space_guard>(dir, opts.min_free_bytes);
  rocksdb::DB* raw = nullptr;
  auto status = opts.read_only ? rocksdb::DB::OpenForReadOnly(db_opts, dir, descs, &s->cf_, &raw)
                               : rocksdb::DB::Open(db_opts, dir, descs, &s->cf_, &raw);
  if (!status.ok()) throw store_error("cannot open event log in " + dir + ": " + status.ToString());
  s->db_.reset(raw);

  std::string marker;
  auto ms = s->db_->Get(rocksdb::ReadOptions(), s->cf_[cf_default], format_key, &marker);
  std::unique_ptr<rocksdb::Iterator> last(s->db_->NewIterator(rocksdb::ReadOptions(), s->cf_[cf_events]));
  last->SeekToLast();
  check(last->status(), "cannot read the end of the event log in " + dir);
  if (ms.IsNotFound()) {
    if (last->Valid()) throw store_error(dir + " holds events but no format marker: not a baton event log");
    if (opts.read_only) throw store_error(dir + " holds no format marker: not a baton event log");
    check(s->db_->Put(write_options(true), s->cf_[cf_default], format_key, format_value), "cannot initialise " + dir);
  } else {
    check(ms, "cannot read the format marker in " + dir);
    if (marker != format_value)
      throw store_error(dir + " holds an event log of format '" + marker + "', expected '" + format_value + "'");
  }
  if (last->Valid()) {
    uint64_t seq = get_u64be(std::string_view(last->key().data(), last->key().size()));
    auto view = decode(std::string_view(last->value().data(), last->value().size()));
    s->last_seq_ = seq;
    // The tail is checked at every open: decodes, and its hash follows from the event before.
    std::string damage;
    if (last->key().size() != 8 || !view || view->seq != seq) {
      damage = "is malformed";
    } else {
      s->last_hash_ = std::string(view->hash);
      try {
        if (chain_hash(s->hash_before(seq), view->body) != view->hash) damage = "fails its hash check (altered)";
      } catch (const store_error&) {  // the event before it is missing or malformed: named by the error
        if (!opts.allow_damaged_tail) throw;
      }
    }
    if (!damage.empty() && !opts.allow_damaged_tail)
      throw store_error("event " + std::to_string(seq) + " in " + dir + " " + damage +
                            ": the log's tail is damaged (see \"A damaged log\" in docs/operator-guide.md)",
                        seq);
  }
  return s;
}

event_store::~event_store() {
  if (!db_) return;
  for (auto* h : cf_) db_->DestroyColumnFamilyHandle(h);
  db_->Close();
}

std::vector<append_result> event_store::append(const std::vector<append_command>& cmds, std::vector<event_envelope>* committed) {
  return append(cmds, committed, opts_.sync);
}

std::optional<std::string> event_store::short_of_space() const { return space_->short_of_space(); }

void event_store::sync_wal() { check(db_->SyncWAL(), "cannot sync the event log"); }

std::vector<append_result> event_store::append(const std::vector<append_command>& cmds, std::vector<event_envelope>* committed,
                                               bool sync_now) {
  std::vector<append_result> results(cmds.size());
  rocksdb::WriteBatch batch;
  std::unordered_map<std::string, uint64_t> batch_heads;   // stream -> version within this batch
  std::unordered_map<std::string, size_t> batch_commands;  // command id -> index into results
  uint64_t seq = last_seq();
  std::string prev_hash = last_hash_;
  size_t committed_before = committed ? committed->size() : 0;

  for (size_t i = 0; i < cmds.size(); ++i) {
    const auto& c = cmds[i];
    auto& r = results[i];
    if (auto problem = validate(c); !problem.empty()) {
      r.status = append_status::invalid;
      r.message = problem;
      continue;
    }
    if (!c.command_id.empty()) {
      if (auto it = batch_commands.find(c.command_id); it != batch_commands.end()) {
        r = results[it->second];
        r.status = append_status::duplicate;
        continue;
      }
      if (auto earlier = find_command(c.command_id)) {
        r = *earlier;
        continue;
      }
    }
    uint64_t version = 0;
    if (auto it = batch_heads.find(c.stream_id); it != batch_heads.end())
      version = it->second;
    else if (auto h = heads_.find(c.stream_id); h != heads_.end())
      version = h->second;
    else
      version = heads_[c.stream_id] = stream_version(c.stream_id).value_or(0);
    if (c.expected_version != any_version && c.expected_version != version) {
      r.status = append_status::version_conflict;
      r.stream_version = version;
      r.message = "stream " + c.stream_id + " is at version " + std::to_string(version) + ", expected " +
                  std::to_string(c.expected_version);
      continue;
    }
    r.status = append_status::appended;
    r.first_seq = seq + 1;
    for (const auto& d : c.events) {
      event_envelope e;
      e.seq = ++seq;
      e.stream_id = c.stream_id;
      e.stream_version = ++version;
      e.type = d.type;
      e.schema_version = d.schema_version;
      e.recorded_at_us = c.recorded_at_us;
      e.correlation_id = c.correlation_id;
      e.causation_id = c.causation_id;
      e.actor = c.actor;
      e.command_id = c.command_id;
      e.payload = d.payload;
      std::string body = encode_body(e);
      e.hash = chain_hash(prev_hash, body);
      prev_hash = e.hash;
      body += e.hash;
      batch.Put(cf_[cf_events], slice(u64be(e.seq)), slice(body));
      batch.Put(cf_[cf_stream_index], slice(name_key(c.stream_id, e.stream_version)), slice(u64be(e.seq)));
      if (committed) committed->push_back(std::move(e));
    }
    r.last_seq = seq;
    r.stream_version = version;
    batch_heads[c.stream_id] = version;
    if (!c.command_id.empty()) {
      batch_commands.emplace(c.command_id, i);
      batch.Put(cf_[cf_commands], slice(c.command_id), slice(command_value(r)));
    }
  }

  if (batch.Count() == 0) return results;
  auto refuse = [&](append_status why, const std::string& message) {
    for (auto& r : results)
      if (r.status == append_status::appended || r.status == append_status::duplicate) {
        r = append_result{};
        r.status = why;
        r.message = message;
      }
    if (committed) committed->resize(committed_before);
    return results;
  };
  if (auto short_of = space_->short_of_space()) return refuse(append_status::no_space, "event log write refused: " + *short_of);
  auto s = db_->Write(write_options(sync_now), &batch);
  if (!s.ok()) return refuse(append_status::io_error, "event log write failed: " + s.ToString());
  if (heads_.size() + batch_heads.size() > opts_.stream_head_cache_max) heads_.clear();
  for (auto& [stream, version] : batch_heads) heads_[stream] = version;
  for (size_t i = 0; i < cmds.size(); ++i)
    if (cmds[i].stream_done && results[i].status == append_status::appended) heads_.erase(cmds[i].stream_id);
  last_hash_ = prev_hash;
  last_seq_.store(seq, std::memory_order_release);
  return results;
}

std::optional<append_result> event_store::find_command(const std::string& command_id) const {
  std::string v;
  auto s = db_->Get(rocksdb::ReadOptions(), cf_[cf_commands], command_id, &v);
  if (s.IsNotFound()) return std::nullopt;
  check(s, "cannot read command index");
  return command_result(v);
}

event_store::memory_use event_store::memory() const {
  memory_use m;
  db_->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables", &m.memtables);
  db_->GetAggregatedIntProperty("rocksdb.estimate-table-readers-mem", &m.table_readers);
  if (block_cache_) m.block_cache = block_cache_->GetUsage();
  return m;
}

std::optional<uint64_t> event_store::stream_version(const std::string& stream_id) const {
  // A stream's index entries are its versions 1..head, always (appends number from 1, a
  // truncation removes a suffix), so a point read of version 1 tells a stream that does not
  // exist: what most lookups are (a new job's or worker's first event). The head is then
  // found by point reads too, doubling the version until one is absent and halving the gap
  // (about 2 log2(head) reads): the index's hashed memtable cannot seek backwards (its
  // SeekForPrev does nothing), and a total-order iterator over it would copy the memtable.
  std::string value;
  auto present = [&](uint64_t version) {
    auto found = db_->Get(rocksdb::ReadOptions(), cf_[cf_stream_index], slice(name_key(stream_id, version)), &value);
    if (found.IsNotFound()) return false;
    check(found, "cannot read the head of stream " + stream_id);
    return true;
  };
  if (!present(1)) return std::nullopt;
  uint64_t head = 1, absent = 2;  // head is present; absent, once probed, is not
  while (present(absent)) {
    head = absent;
    if (absent > UINT64_MAX / 2) return head;  // (no stream gets near this)
    absent *= 2;
  }
  while (absent - head > 1) {
    const uint64_t mid = head + (absent - head) / 2;
    (present(mid) ? head : absent) = mid;
  }
  return head;
}

std::string event_store::hash_before(uint64_t seq) const {
  if (seq <= 1) return "";
  auto raw = read_raw(seq - 1);
  if (!raw) throw store_error("event " + std::to_string(seq - 1) + " is missing", seq - 1);
  auto v = decode(*raw);
  if (!v) throw store_error("event " + std::to_string(seq - 1) + " is malformed", seq - 1);
  return std::string(v->hash);
}

void event_store::scan(uint64_t from_seq, uint64_t to_seq, bool verify_chain,
                       const std::function<bool(const event_view&)>& visit) const {
  if (from_seq == 0) from_seq = 1;
  std::string prev = verify_chain ? hash_before(from_seq) : "";
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.readahead_size = 2 << 20;
  ro.verify_checksums = true;
  std::string upper;
  rocksdb::Slice upper_slice;
  if (to_seq != 0) {
    upper = u64be(to_seq + 1);
    upper_slice = slice(upper);
    ro.iterate_upper_bound = &upper_slice;
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, cf_[cf_events]));
  uint64_t expected = from_seq;
  for (it->Seek(slice(u64be(from_seq))); it->Valid(); it->Next(), ++expected) {
    auto key = it->key();
    uint64_t seq = key.size() == 8 ? get_u64be(std::string_view(key.data(), 8)) : 0;
    if (seq != expected)
      throw store_error("sequence gap: expected event " + std::to_string(expected) + ", found key " + std::to_string(seq),
                        expected);
    auto view = decode(std::string_view(it->value().data(), it->value().size()));
    if (!view || view->seq != seq) throw store_error("event " + std::to_string(seq) + " is malformed", seq);
    if (verify_chain) {
      if (!chain_hash_matches(prev, view->body, view->hash))
        throw store_error("event " + std::to_string(seq) + " fails its hash check (altered or reordered)", seq);
      copy_into(prev, view->hash);
    }
    if (!visit(*view)) return;
  }
  check(it->status(), "cannot read event " + std::to_string(expected), expected);
}

std::vector<event_envelope> event_store::read(uint64_t from_seq, size_t max) const {
  std::vector<event_envelope> out;
  if (max == 0) return out;
  scan(from_seq, 0, false, [&](const event_view& v) {
    out.push_back(v.to_envelope());
    return out.size() < max;
  });
  return out;
}

std::vector<event_envelope> event_store::read_stream(const std::string& stream_id, uint64_t from_version, size_t max) const {
  std::vector<event_envelope> out;
  std::string lower = name_key(stream_id, from_version), upper = name_key(stream_id, UINT64_MAX);
  rocksdb::Slice upper_slice = slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, cf_[cf_stream_index]));
  for (it->Seek(slice(lower)); it->Valid() && out.size() < max; it->Next()) {
    uint64_t seq = get_u64be(std::string_view(it->value().data(), it->value().size()));
    auto raw = read_raw(seq);
    auto v = raw ? decode(*raw) : std::nullopt;
    if (!v) throw store_error("event " + std::to_string(seq) + " of stream " + stream_id + " is missing or malformed", seq);
    out.push_back(v->to_envelope());
  }
  check(it->status(), "cannot read stream " + stream_id);
  return out;
}

std::vector<uint64_t> event_store::first_events_of_streams(const std::string& prefix) const {
  std::vector<uint64_t> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(across_streams(), cf_[cf_stream_index]));
  it->Seek(slice(prefix));
  while (it->Valid() && it->key().starts_with(slice(prefix))) {
    const std::string_view key(it->key().data(), it->key().size());
    const size_t end = key.find('\0', prefix.size());  // stream_id \0 u64be version
    if (end == std::string_view::npos || key.size() != end + 9 || it->value().size() != 8)
      throw store_error("malformed stream index entry under " + prefix);
    out.push_back(get_u64be(std::string_view(it->value().data(), 8)));
    std::string next(key.substr(0, end));  // past every entry of this stream
    next.push_back('\1');
    it->Seek(slice(next));
  }
  check(it->status(), "cannot read the stream index under " + prefix);
  return out;
}

verify_report event_store::verify() const {
  verify_report r;
  try {
    scan(1, 0, true, [&](const event_view&) {
      ++r.events_checked;
      return true;
    });
  } catch (const store_error& e) {
    r.ok = false;
    r.bad_seq = e.seq();
    r.reason = e.what();
  }
  return r;
}

void event_store::put_snapshot(const std::string& name, const snapshot& s) {
  if (auto short_of = space_->short_of_space()) throw store_error("snapshot " + name + " not written: " + *short_of);
  check(db_->Put(write_options(opts_.sync), cf_[cf_snapshots], slice(name_key(name, s.seq)), slice(s.data)),
        "cannot write snapshot " + name);
}

std::optional<snapshot> event_store::latest_snapshot(const std::string& name) const {
  return snapshot_at_or_before(name, UINT64_MAX);
}

// Snapshots are read once at a start (or by a tool): read around the block cache, which they
// would otherwise fill with megabytes nothing reads again.
static rocksdb::ReadOptions one_off_read() {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  return ro;
}

std::optional<snapshot> event_store::snapshot_at_or_before(const std::string& name, uint64_t seq) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(one_off_read(), cf_[cf_snapshots]));
  std::string prefix = name + std::string(1, '\0');
  it->SeekForPrev(slice(name_key(name, seq)));
  check(it->status(), "cannot read snapshots of " + name);
  if (!it->Valid() || !it->key().starts_with(slice(prefix)) || it->key().size() != prefix.size() + 8) return std::nullopt;
  return snapshot{get_u64be(std::string_view(it->key().data() + prefix.size(), 8)), it->value().ToString()};
}

std::vector<uint64_t> event_store::snapshot_seqs(const std::string& name) const {
  std::vector<uint64_t> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(one_off_read(), cf_[cf_snapshots]));
  std::string prefix = name + std::string(1, '\0');
  for (it->Seek(slice(prefix)); it->Valid() && it->key().starts_with(slice(prefix)); it->Next())
    if (it->key().size() == prefix.size() + 8) out.push_back(get_u64be(std::string_view(it->key().data() + prefix.size(), 8)));
  check(it->status(), "cannot read snapshots of " + name);
  return out;
}

void event_store::delete_snapshot(const std::string& name, uint64_t seq) {
  check(db_->Delete(write_options(opts_.sync), cf_[cf_snapshots], slice(name_key(name, seq))), "cannot delete snapshot " + name);
}

void event_store::set_projection_offset(const std::string& name, uint64_t seq) {
  if (auto short_of = space_->short_of_space()) throw store_error("offset of " + name + " not written: " + *short_of);
  check(db_->Put(write_options(opts_.sync), cf_[cf_offsets], slice(name), slice(u64be(seq))),
        "cannot write projection offset " + name);
}

std::optional<uint64_t> event_store::projection_offset(const std::string& name) const {
  std::string v;
  auto s = db_->Get(rocksdb::ReadOptions(), cf_[cf_offsets], name, &v);
  if (s.IsNotFound()) return std::nullopt;
  check(s, "cannot read projection offset " + name);
  return get_u64be(v);
}

void event_store::flush() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  check(db_->Flush(fo, cf_), "cannot flush the event log");
}

truncation event_store::truncate_after(uint64_t keep_through, const std::function<void()>& before_removing) {
  truncation t;
  t.previous_last_seq = last_seq();
  if (keep_through >= t.previous_last_seq) return t;
  if (auto raw = read_raw(t.previous_last_seq)) t.previous_last_value_sha256 = util::sha256_hex(*raw);
  if (keep_through > 0) scan(1, keep_through, true, [](const event_view&) { return true; });
  if (before_removing) before_removing();
  rocksdb::WriteBatch batch;
  batch.DeleteRange(cf_[cf_events], slice(u64be(keep_through + 1)), slice(u64be(UINT64_MAX)));
  t.removed_events = t.previous_last_seq - keep_through;
  auto drop_where = [&](cf_index cf, const std::function<bool(std::string_view key, std::string_view value)>& beyond) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(across_streams(), cf_[cf]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string_view k(it->key().data(), it->key().size()), v(it->value().data(), it->value().size());
      if (beyond(k, v)) batch.Delete(cf_[cf], it->key());
    }
    check(it->status(), "cannot read the log's indexes");
  };
  auto seq_in = [](std::string_view bytes, size_t at) { return bytes.size() >= at + 8 ? get_u64be(bytes.substr(at, 8)) : 0; };
  drop_where(cf_stream_index, [&](std::string_view, std::string_view v) { return seq_in(v, 0) > keep_through; });
  drop_where(cf_commands, [&](std::string_view, std::string_view v) { return seq_in(v, 8) > keep_through; });
  drop_where(cf_snapshots, [&](std::string_view k, std::string_view) {
    return k.size() >= 8 && get_u64be(k.substr(k.size() - 8)) > keep_through;
  });
  drop_where(cf_offsets, [&](std::string_view, std::string_view v) { return seq_in(v, 0) > keep_through; });
  check(db_->Write(write_options(true), &batch), "cannot truncate the event log");
  last_seq_.store(keep_through, std::memory_order_release);
  last_hash_ = keep_through ? read(keep_through, 1).front().hash : std::string();
  heads_.clear();
  return t;
}

void event_store::checkpoint(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  check(rocksdb::Checkpoint::Create(db_.get(), &raw), "cannot prepare a copy of the event log");
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  check(cp->CreateCheckpoint(dir), "cannot copy the event log to " + dir);
}

std::optional<std::string> event_store::read_raw(uint64_t seq) const {
  std::string v;
  auto s = db_->Get(rocksdb::ReadOptions(), cf_[cf_events], slice(u64be(seq)), &v);
  if (s.IsNotFound()) return std::nullopt;
  check(s, "cannot read event " + std::to_string(seq), seq);
  return v;
}

}  // namespace baton::events
