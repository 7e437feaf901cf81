#pragma once
// A job event's payload read straight from its CBOR bytes into the typed change
// (core/job_change.hpp), without building its JSON tree: on a replay's reading thread,
// decoding each payload into a tree of JSON nodes, looking its fields up by name and freeing
// the tree were most of the work (replay/prepared_event.hpp).
//
// It gives what core::read_job_change gives on the decoded payload, for the events a campaign
// is made of (created, assigned, started, checkpoints and progress, completed, and the other
// types whose payload the change does not read) in the shape batond writes them: a map with
// sorted, distinct keys, each field of the type it is written with. Anything else (another
// event type, a field of another type, a key out of order, bytes the common CBOR reader does
// not read) it declines, and the caller reads the event the ordinary way, which then gives
// the exact result or error. A property test holds the two readings equal
// (tests/job_payload_cbor_test.cpp).
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/job_change.hpp"

namespace baton::replay {

struct job_payload {
  core::job_change change;
  nlohmann::json decision;  // job.assigned: its "decision" record as recorded (else null)
};

// nullopt: declined (see above). job.assigned is declined without a "decision" field.
std::optional<job_payload> read_job_payload(std::string_view type, std::string_view cbor);

}  // namespace baton::replay
