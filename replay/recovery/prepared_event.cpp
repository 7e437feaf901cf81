#include "replay/recovery/prepared_event.hpp"

#include <iterator>
#include <utility>

#include "core/world/scheduling.hpp"
#include "core/events/streams.hpp"
#include "core/events/event_types.hpp"
#include "events/cbor_cursor.hpp"

namespace baton::replay {

assignment_inputs assignment_inputs_of(const core::assignment_record& recorded) {
  assignment_inputs in;
  in.stale.insert(recorded.stale_excluded.begin(), recorded.stale_excluded.end());
  if (recorded.deadline) in.rule = core::rule_of(*recorded.deadline);
  return in;
}

namespace {

// (Not rfind(prefix, 0): a library call per event on the reading thread, ten times this.)
bool is_job_stream(std::string_view stream) { return stream.size() >= 4 && stream.compare(0, 4, "job/") == 0; }

// Where the "decision" value starts in the payload (nothing if the payload is not a map of the
// common encodings: the comparison then goes by JSON). Only the keys before it are stepped over.
std::optional<size_t> decision_at(std::string_view cbor) {
  events::cbor_cursor c(cbor);
  uint64_t n = 0;
  if (!c.map_header(n)) return std::nullopt;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!c.text(key)) return std::nullopt;
    if (key == "decision") return cbor.size() - c.remaining();
    if (!c.skip()) return std::nullopt;
  }
  return std::nullopt;
}

// A job stream's event as prepare_rederived_event prepares it (prepared_event.hpp).
bool prepare_job_event(events::decoded_event& e, std::string_view cbor) {
  try {
    auto typed = core::ev::decode(e.type, e.schema_version, cbor);
    auto& p = e.prepared.emplace<prepared_job_event>();  // (made in place: it is large)
    if (auto* a = std::get_if<core::ev::job_assigned>(&typed)) {
      p.decision_inputs = assignment_inputs_of(a->decision);
      p.decision_at = decision_at(cbor);
    }
    p.typed = std::move(typed);
    p.job_id_hash = core::job_table::hash_of(prepared_job_id(e));  // (here, not on the applying thread)
    events::prepared_memory(e, p);
    return true;
  } catch (const std::exception&) {
    e.prepared.reset();  // the applying thread reads it again and meets the error in order
    return false;
  }
}

}  // namespace

bool prepare_rederived_event(events::decoded_event& e, std::string_view cbor) {
  if (is_job_stream(e.stream_id)) return prepare_job_event(e, cbor);
  if (e.stream_id != core::scheduler_stream) return false;
  const size_t kind = core::ev::index_of(e.type);
  if (kind == core::ev::index_of_v<core::ev::plan_made> || kind == core::ev::index_of_v<core::ev::priorities_recalculated>)
    return prepare_typed_event(e, cbor);
  return false;
}

bool prepare_typed_event(events::decoded_event& e, std::string_view cbor) {
  try {
    auto& p = e.prepared.emplace<prepared_typed_event>();
    p.typed = core::ev::decode(e.type, e.schema_version, cbor);
    events::prepared_memory(e, p);
    return true;
  } catch (const std::exception&) {
    e.prepared.reset();  // (as prepare_job_event)
    return false;
  }
}

prepared_job_event* prepared_job(events::decoded_event& e) { return std::any_cast<prepared_job_event>(&e.prepared); }
const prepared_job_event* prepared_job(const events::decoded_event& e) { return std::any_cast<prepared_job_event>(&e.prepared); }

const prepared_typed_event* prepared_typed(const events::decoded_event& e) {
  return std::any_cast<prepared_typed_event>(&e.prepared);
}

void apply_decoded(core::world& w, events::decoded_event& e) {
  if (auto* p = prepared_job(e))
    core::apply_job_event(w, prepared_job_id(e), p->job_id_hash, std::move(p->typed), e.recorded_at_us);
  else if (auto* d = prepared_typed(e))
    core::apply(w, e.stream_id, d->typed, e.recorded_at_us);
  else
    core::apply(w, e.stream_id, e.type, e.payload, e.recorded_at_us);
}

}  // namespace baton::replay
