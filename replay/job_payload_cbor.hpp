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
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job_change.hpp"

namespace baton::replay {

struct job_payload {
  core::job_change change;
  // job.assigned: its "decision" record. A record that is a map whose fields a
  // re-derivation decides on ("stale_excluded", "deadline") have the types it reads is
  // left as bytes: `decision_at` says where they are in the payload and holds those fields.
  // Any other record is decoded into `decision` (null otherwise, and for other types).
  nlohmann::json decision;
  struct decision_bytes {
    size_t offset = 0, size = 0;  // of the record's CBOR item in the payload
    std::vector<std::string> stale_excluded;  // as recorded ("stale_excluded", or none)
    std::optional<nlohmann::json> deadline;   // its "deadline" entry, when it has one
  };
  std::optional<decision_bytes> decision_at;
};

// nullopt: declined (see above). job.assigned is declined without a "decision" field.
std::optional<job_payload> read_job_payload(std::string_view type, std::string_view cbor);
// The same into `out`, a job_payload as default-constructed (a caller that keeps it in a
// larger record reads it in place instead of moving a change of a kilobyte there). False:
// declined, and `out` then holds whatever was read before the bytes were declined.
bool read_job_payload(std::string_view type, std::string_view cbor, job_payload& out);

}  // namespace baton::replay
