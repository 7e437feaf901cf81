#pragma once
// `baton-replay verify`: the whole log (no gaps, every record decodes, every payload decodes,
// the hash chain holds) and the chain anchors batond wrote (projections/chain_anchor.hpp):
// each anchored sequence must still carry the anchored hash, else the log was rewritten
// after that anchor, however carefully its hashes were recomputed.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "events/event_store.hpp"
#include "replay/recovery/progress.hpp"

namespace baton::replay {

struct chain_anchor_line {
  uint64_t seq = 0;
  std::string hash_hex, at;
};
// The anchors of <data_dir>/anchors.jsonl (none when the file is absent). Throws
// std::runtime_error naming the line that does not parse.
std::vector<chain_anchor_line> read_anchors(const std::string& path);

struct log_verify_report {
  bool ok = true;
  uint64_t events = 0, anchors_checked = 0;
  uint64_t bad_seq = 0;  // the first event at fault
  std::string reason;
};
log_verify_report verify_log(const events::event_store& store, const std::vector<chain_anchor_line>& anchors,
                             const progress_fn& progress = {});

nlohmann::json to_json(const log_verify_report& r);

}  // namespace baton::replay
