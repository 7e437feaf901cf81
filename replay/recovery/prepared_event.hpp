#pragma once
// A replay's two threads (events/scan_ahead.hpp): the reading thread reads each payload as its
// typed struct, so the applying thread looks up no payload field and builds no JSON. For a
// re-derivation (replay/audit/rederive.cpp) a job event also gets its job id's hash and its
// decision's inputs, read there too.
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/planning/deadline.hpp"
#include "core/events/event_types.hpp"
#include "core/world/world.hpp"
#include "events/scan_ahead.hpp"

namespace baton::replay {

// What a recorded assignment decision was decided on: the stale workers it left out and the
// deadline rule in force (read from its "decision" record).
struct assignment_inputs {
  std::set<std::string> stale;
  core::deadline_rule rule;
};
assignment_inputs assignment_inputs_of(const core::assignment_record& recorded);

// (The job's id is its stream's, after "job/": prepared_job_id.)
struct prepared_job_event {
  uint64_t job_id_hash = 0;  // core::job_table::hash_of(the job's id)
  core::ev::payload typed;   // its struct (core/events/event_types.hpp), applied as it is
  // job.assigned: where its recorded decision record starts in the stored bytes
  // (decoded_event::cbor), so a record made again is compared with the bytes there (a CBOR item
  // ends where its own bytes say: equal bytes from there are the same record; unequal ones may
  // still be the same values, written otherwise); and what it was decided on.
  std::optional<size_t> decision_at;
  std::optional<assignment_inputs> decision_inputs;
};

// The job id of an event on a job stream (a view into its stream id).
inline std::string_view prepared_job_id(const events::decoded_event& e) { return std::string_view(e.stream_id).substr(4); }

// An event read as its struct (its bytes stay in decoded_event::cbor, for a re-derivation
// to compare with).
struct prepared_typed_event {
  core::ev::payload typed;
};

// For scan_decoded's prepare in a re-derivation: a job stream's event gets its
// prepared_job_event, read from its bytes as its type's struct (core/events/event_types.hpp),
// with an assignment's decision inputs, and its payload is left undecoded (true); a plan or a
// recalculation gets prepare_typed_event's. Any other event, or one whose payload does not
// read, gets nothing (false): its payload is decoded and the applying thread reads it the
// ordinary way (meeting any error there, in order).
bool prepare_rederived_event(events::decoded_event& e, std::string_view cbor);

// For recovery's scan: every event read as its struct on the reading thread (a
// core::ev::payload in `prepared`, true), instead of as a JSON tree the applying thread then
// reads again; false (the payload decoded as JSON, any error met in order) where it does not read.
bool prepare_typed_event(events::decoded_event& e, std::string_view cbor);

// The prepared change, or nullptr.
prepared_job_event* prepared_job(events::decoded_event& e);
const prepared_job_event* prepared_job(const events::decoded_event& e);
const prepared_typed_event* prepared_typed(const events::decoded_event& e);

// Applies the event to the world: its prepared change if it has one (consumed), or its
// prepared struct (either kind), else core::apply on the payload. The same world either way.
void apply_decoded(core::world& w, events::decoded_event& e);

}  // namespace baton::replay
