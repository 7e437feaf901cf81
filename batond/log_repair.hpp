#pragma once
// `batond --truncate-after SEQ`: the documented repair of a log whose tail is damaged (a start
// refused with "event N ... is malformed / fails its hash check"). With batond stopped, it
// checks events 1..SEQ, copies the whole log aside first, removes every event after SEQ, moves
// the chain anchors beyond SEQ out of anchors.jsonl and the SQLite view out of the data dir
// (into the copy, as evidence; the view is rebuilt), and records the repair itself as the
// event `daemon.log_truncated`. docs/operator-guide.md, "A damaged log".
#include <cstdint>
#include <string>

namespace baton::daemon {

struct truncate_options {
  std::string data_dir;
  uint64_t keep_through = 0;
  std::string backup_dir;     // "" = <data_dir>/eventlog.backup-<UTC time>
  std::string reason;         // recorded with the event
  std::string operator_name;  // the actor recorded: operator:<name>
};

// Prints what it did; returns 0 when done, 1 when there was nothing after SEQ, 2 when it could
// not (batond running, SEQ itself not intact, the backup not writable), having changed nothing.
int truncate_log(const truncate_options& o, int64_t now_us);

}  // namespace baton::daemon
