#pragma once
// A replay's two threads (events/scan_ahead.hpp): the reading thread reads each job event's
// payload into a typed change (core/job_change.hpp), so the applying thread looks up no
// payload field. Worth it only where the applying thread bounds the replay: re-derivation
// (replay/rederive.cpp). Recovery's reading thread is its bound, so it does not use this.
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/deadline.hpp"
#include "core/job_change.hpp"
#include "core/world.hpp"
#include "events/scan_ahead.hpp"
#include "replay/job_payload_cbor.hpp"

namespace baton::replay {

// What a recorded assignment decision was decided on: the stale workers it left out and the
// deadline rule in force (read from its "decision" record).
struct assignment_inputs {
  std::set<std::string> stale;
  core::deadline_rule rule;
};
assignment_inputs assignment_inputs_of(const nlohmann::json& recorded);

// (The job's id is its stream's, after "job/": prepared_job_id.)
struct prepared_job_event {
  uint64_t job_id_hash = 0;  // core::job_table::hash_of(the job's id)
  // The change, and job.assigned's "decision" record: either left as bytes (where they are
  // in the event's payload: recorded_decision_bytes) or decoded (read.decision).
  job_payload read;
  std::optional<assignment_inputs> decision_inputs;  // job.assigned, for a re-derivation
};

// The job id of an event on a job stream (a view into its stream id).
inline std::string_view prepared_job_id(const events::decoded_event& e) { return std::string_view(e.stream_id).substr(4); }

// The recorded decision's bytes when the reading thread left them so (else empty).
std::string_view recorded_decision_bytes(const events::decoded_event& e, const prepared_job_event& p);

// For scan_decoded's prepare: a job stream's event whose payload replay/job_payload_cbor.hpp
// reads from its bytes gets its prepared_job_event (with the decision's inputs when asked
// for), and its payload is left undecoded (true). Any other event, a job event of a rarer
// type, or one whose payload does not read that way gets nothing (false): its payload is
// decoded and the applying thread reads it the ordinary way (meeting any error there).
bool prepare_job_event(events::decoded_event& e, std::string_view cbor, bool decision_inputs);

// The prepared change, or nullptr.
prepared_job_event* prepared_job(events::decoded_event& e);
const prepared_job_event* prepared_job(const events::decoded_event& e);

// Applies the event to the world: its prepared change if it has one (consumed), else
// core::apply on the payload. The same world either way.
void apply_decoded(core::world& w, events::decoded_event& e);

}  // namespace baton::replay
