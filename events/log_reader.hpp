#pragma once
// What batond's HTTP layer may read of the log, and nothing more: its head, what RocksDB holds
// in memory (GET /metrics) and the audit export (GET /audit/export). The daemon hands in an
// implementation over the store (replay/audit/store_log_reader.hpp); HTTP never holds the
// store itself, so it can neither write it nor read it another way.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "events/event_filter.hpp"

namespace baton::events {

// What RocksDB holds in memory now: memtables of every family, the shared block cache, and the
// open table files' index and filter blocks.
struct log_memory {
  uint64_t memtables = 0, block_cache = 0, table_readers = 0;
};

// The audit export's two formats and what it counted (replay/audit/audit_export.hpp).
enum class export_format { jsonl, csv };
struct export_summary {
  uint64_t count = 0, first_seq = 0, last_seq = 0;
};

class log_reader {
 public:
  virtual ~log_reader() = default;
  virtual uint64_t last_seq() const = 0;
  virtual log_memory memory() const = 0;

  struct export_result {
    export_summary summary;
    std::optional<std::string> damaged;  // the store's error on a damaged log (out is then incomplete)
  };
  // Writes every event `f` takes, then the trailer, to out. Any thread.
  virtual export_result export_events(const event_filter& f, export_format format, std::ostream& out) const = 0;
};

}  // namespace baton::events
