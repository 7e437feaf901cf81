#pragma once
// The read-only log HTTP is handed (events/log_reader.hpp), over the store batond opened.
#include <memory>

#include "events/event_store.hpp"
#include "events/log_reader.hpp"

namespace baton::replay {

std::shared_ptr<const events::log_reader> store_log_reader(std::shared_ptr<const events::event_store> store);

}  // namespace baton::replay
