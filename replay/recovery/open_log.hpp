#pragma once
// A data dir's event log, opened read-only for the tools (batond --verify/--dump/--rederive
// and baton-replay): beside a running batond, which holds the write lock, or on a copy.
#include <memory>
#include <string>

#include "events/event_store.hpp"

namespace baton::replay {

// Throws events::store_error when <data_dir>/eventlog does not exist or cannot be opened.
std::unique_ptr<events::event_store> open_log_read_only(const std::string& data_dir);

}  // namespace baton::replay
