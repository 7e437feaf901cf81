#include "replay/audit/log_verify.hpp"

#include <fstream>
#include <map>
#include <stdexcept>

#include "core/util/hex.hpp"
#include "events/payload.hpp"

namespace baton::replay {

using nlohmann::json;

std::vector<chain_anchor_line> read_anchors(const std::string& path) {
  std::vector<chain_anchor_line> out;
  std::ifstream in(path);
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("seq") || !j.contains("hash"))
      throw std::runtime_error(path + " line " + std::to_string(n) + " is not an anchor");
    out.push_back({j["seq"].get<uint64_t>(), j["hash"].get<std::string>(), j.value("at", "")});
  }
  return out;
}

log_verify_report verify_log(const events::event_store& store, const std::vector<chain_anchor_line>& anchors,
                             const progress_fn& progress) {
  log_verify_report r;
  std::multimap<uint64_t, const chain_anchor_line*> due;
  for (const auto& a : anchors) due.emplace(a.seq, &a);
  auto fail = [&](uint64_t seq, std::string why) {
    r.ok = false;
    r.bad_seq = seq;
    r.reason = std::move(why);
  };
  try {
    store.scan(1, 0, true, [&](const events::event_view& e) {
      if (progress) progress(e.seq);
      ++r.events;
      try {
        (void)events::from_payload(e.payload);
      } catch (const std::exception& ex) {
        fail(e.seq, std::string("payload does not decode: ") + ex.what());
        return false;
      }
      for (auto [it, end] = due.equal_range(e.seq); it != end; ++it) {
        ++r.anchors_checked;
        if (util::to_hex(e.hash) != it->second->hash_hex) {
          fail(e.seq, "hash differs from the chain anchor written at " + it->second->at + " (" + it->second->hash_hex +
                          "): the log was rewritten after it");
          return false;
        }
      }
      return true;
    });
  } catch (const events::store_error& e) {
    fail(e.seq(), e.what());
    return r;
  }
  if (r.ok && !due.empty() && due.rbegin()->first > r.events)
    fail(due.rbegin()->first, "the log ends at event " + std::to_string(r.events) + " but an anchor names event " +
                                  std::to_string(due.rbegin()->first) + ": its tail was cut or rewritten");
  return r;
}

json to_json(const log_verify_report& r) {
  json out = {{"ok", r.ok}, {"events", r.events}, {"anchors_checked", r.anchors_checked}};
  if (!r.ok) out["first_bad_seq"] = r.bad_seq, out["reason"] = r.reason;
  return out;
}

}  // namespace baton::replay
