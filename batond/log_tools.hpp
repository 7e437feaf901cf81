#pragma once
#include <cstdint>
#include <string>

namespace baton::daemon {

// `batond --verify`: walks the whole log; prints the event count, or the first bad sequence.
int verify_log(const std::string& data_dir);
// `batond --dump`: prints events from..from+limit-1 as JSON lines (limit 0 = all).
int dump_log(const std::string& data_dir, uint64_t from, uint64_t limit);
// `batond --rederive`: re-derives every assignment in the log; exit 0 only if all match.
int rederive_log(const std::string& data_dir);

}  // namespace baton::daemon
