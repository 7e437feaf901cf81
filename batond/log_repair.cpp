#include "batond/log_repair.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "batond/daemon_state.hpp"
#include "core/events/event_types.hpp"
#include "core/util/time.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"

namespace baton::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Keeps the anchors at or before keep_through in anchors.jsonl; the file as it was is in the
// backup. Returns how many were moved out. A line that is not an anchor stays where it is.
size_t drop_anchors_beyond(const fs::path& file, uint64_t keep_through) {
  std::ifstream in(file);
  if (!in) return 0;
  std::string kept, line;
  size_t dropped = 0;
  while (std::getline(in, line)) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("seq") && j["seq"].is_number_unsigned() && j["seq"].get<uint64_t>() > keep_through) {
      ++dropped;
      continue;
    }
    kept += line + "\n";
  }
  in.close();
  if (dropped == 0) return 0;
  auto tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kept;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  fs::rename(tmp, file);
  return dropped;
}

}  // namespace

int truncate_log(const truncate_options& o, int64_t now_us) {
  const fs::path data(o.data_dir), log_dir = data / "eventlog";
  std::unique_ptr<events::event_store> store;
  try {
    if (!fs::exists(log_dir / "CURRENT")) throw events::store_error("no event log in " + log_dir.string());
    events::store_options opts;
    opts.allow_damaged_tail = true;
    store = events::event_store::open(log_dir.string(), opts);
  } catch (const std::exception& e) {
    std::cerr << "batond: " << e.what() << "\n"
              << "batond: --truncate-after needs the log to itself: stop batond first\n";
    return 2;
  }
  const uint64_t last = store->last_seq();
  if (o.keep_through >= last) {
    std::cout << "nothing to do: the log ends at event " << last << "\n";
    return 1;
  }
  // Events 1..SEQ are checked once (by truncate_after); the whole log is copied after they
  // check out and before anything is removed.
  const fs::path backup = o.backup_dir.empty()
                              ? data / ("eventlog.backup-" + util::format_time_us(now_us, util::time_form::basic))
                              : fs::path(o.backup_dir);
  enum { checking, backing_up, removing } step = checking;
  events::truncation t;
  try {
    t = store->truncate_after(o.keep_through, [&] {
      step = backing_up;
      if (fs::exists(backup)) throw std::runtime_error(backup.string() + " exists already");
      fs::create_directories(backup);
      store->checkpoint((backup / "eventlog").string());
      if (fs::exists(data / "anchors.jsonl")) fs::copy_file(data / "anchors.jsonl", backup / "anchors.jsonl");
      std::cout << "backup of the whole log (events 1.." << last << ") in " << backup.string() << "\n";
      step = removing;
    });
  } catch (const std::exception& e) {
    if (step == checking) {
      auto* bad = dynamic_cast<const events::store_error*>(&e);
      std::cerr << "batond: cannot keep events 1.." << o.keep_through << ": " << e.what()
                << (bad && bad->seq() ? "; truncate after event " + std::to_string(bad->seq() - 1) + " or earlier" : "") << "\n";
    } else if (step == backing_up) {
      std::cerr << "batond: cannot back the log up to " << backup.string() << ": " << e.what() << "\n";
    } else {
      std::cerr << "batond: cannot remove events after " << o.keep_through << ": " << e.what() << " (the backup in "
                << backup.string() << " holds the log as it was)\n";
    }
    return 2;
  }

  size_t anchors = drop_anchors_beyond(data / "anchors.jsonl", o.keep_through);
  // The SQLite view holds rows of the removed events, and the log will reuse their sequence
  // numbers: it goes with the backup, and batond rebuilds it from event 1 at its next start.
  for (const char* f : {"views.sqlite", "views.sqlite-wal", "views.sqlite-shm"})
    if (fs::exists(data / f)) fs::rename(data / f, backup / f);
  // The repair is itself a state change: the log says it was cut, where, and what it held.
  events::append_command cmd;
  cmd.stream_id = stream;
  cmd.recorded_at_us = now_us;
  cmd.actor = "operator:" + (o.operator_name.empty() ? std::string("unknown") : o.operator_name);
  cmd.correlation_id = "truncate-after-" + std::to_string(o.keep_through);
  core::ev::daemon_log_truncated cut;
  cut.kept_through_seq = o.keep_through;
  cut.removed_events = t.removed_events;
  cut.previous_last_seq = t.previous_last_seq;
  cut.previous_last_value_sha256 = t.previous_last_value_sha256;
  cut.anchors_removed = static_cast<int64_t>(anchors);
  cut.backup = backup.string();
  cut.reason = o.reason;
  cmd.events.push_back({std::string(cut.type), cut.schema, events::to_cbor(cut)});
  auto r = store->append({cmd});
  if (r.empty() || !r.front().ok()) {
    std::cerr << "batond: the log was cut after event " << o.keep_through
              << " but recording it failed: " << (r.empty() ? "no result" : r.front().message) << "\n";
    return 2;
  }
  std::cout << "removed events " << o.keep_through + 1 << ".." << t.previous_last_seq << " (" << t.removed_events << "), "
            << anchors << " chain anchors beyond them; recorded as event " << r.front().first_seq << " (daemon.log_truncated)\n"
            << "the SQLite view is rebuilt at the next start; a PostgreSQL view needs one start with "
               "--rebuild-projection postgres\n";
  return 0;
}

}  // namespace baton::daemon
