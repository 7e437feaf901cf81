#pragma once
// A decided event's typed payload as the log stores it, or as JSON for the few readers that
// want JSON (tests, explanations).
#include <nlohmann/json.hpp>
#include <string>

#include "core/events/domain.hpp"

namespace baton::core {

// The payload as the log stores it (CBOR).
std::string payload_bytes(const domain_event& e);

// The payload as JSON.
nlohmann::json payload_json(const domain_event& e);

}  // namespace baton::core
