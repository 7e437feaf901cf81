#include "replay/recovery/open_log.hpp"

#include <filesystem>

namespace baton::replay {

std::unique_ptr<events::event_store> open_log_read_only(const std::string& data_dir) {
  std::string dir = data_dir + "/eventlog";
  if (!std::filesystem::exists(dir)) throw events::store_error("no event log in " + dir);
  events::store_options o;
  o.read_only = true;
  o.allow_damaged_tail = true;  // the tools look at a damaged log too (verify names the bad event)
  return events::event_store::open(dir, o);
}

}  // namespace baton::replay
