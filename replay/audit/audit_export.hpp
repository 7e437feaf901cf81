#pragma once
// The audit export: the log's events, filtered, as JSON lines or CSV, each record carrying its
// sequence, its hash and the hash before it, and a trailer with the count, the first and last
// sequence and the chain head. verify_export() checks such a file on its own (every record's
// hash recomputed from its fields and the hash before it; an unfiltered export also chains
// record to record), and against the log and its anchors when given.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "events/event_filter.hpp"
#include "events/event_store.hpp"
#include "events/log_reader.hpp"
#include "replay/audit/log_verify.hpp"

namespace baton::replay {

using export_filter = events::event_filter;

using export_format = events::export_format;
using export_summary = events::export_summary;
// Writes every matching event, then the trailer. Throws events::store_error on a damaged log.
export_summary export_log(const events::event_store& store, const export_filter& f, export_format format, std::ostream& out,
                          const progress_fn& progress = {});

struct export_problem {
  size_t line = 0;
  uint64_t seq = 0;
  std::string what;
};
struct export_verify_report {
  bool ok = true;
  uint64_t records = 0;
  bool checked_against_log = false;
  uint64_t anchors_checked = 0;
  std::vector<export_problem> problems;  // the first few
};
// store: also compare with the log (each record's hash, and no matching event missing);
// anchors: each anchored sequence in the file must carry the anchored hash.
export_verify_report verify_export(const std::string& path, const events::event_store* store,
                                   const std::vector<chain_anchor_line>& anchors);
nlohmann::json to_json(const export_verify_report& r);

}  // namespace baton::replay
