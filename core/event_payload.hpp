#pragma once
// A decided event's payload, whichever form it holds (JSON, or job.assigned's typed form):
// the one place that turns it into what the log stores, or into JSON for the few readers
// that want JSON (tests, explanations).
#include <nlohmann/json.hpp>
#include <string>

#include "core/domain.hpp"

namespace baton::core {

// The payload as the log stores it (CBOR), byte for byte the same for either form.
std::string payload_bytes(const domain_event& e);

// The payload as JSON.
nlohmann::json payload_json(const domain_event& e);

}  // namespace baton::core
