#pragma once
// Atoms and CAF inspection for the types actors exchange. Local messaging only needs
// inspect() for to_string/copying; nothing here crosses a process boundary.
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <memory>
#include <vector>

#include "events/append.hpp"
#include "events/envelope.hpp"

namespace baton::actors {

using append_atom = caf::atom_constant<caf::atom("append")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using read_atom = caf::atom_constant<caf::atom("read")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using unsubscribe_atom = caf::atom_constant<caf::atom("unsub")>;
using catchup_atom = caf::atom_constant<caf::atom("catchup")>;
using events_atom = caf::atom_constant<caf::atom("events")>;
using sync_atom = caf::atom_constant<caf::atom("sync")>;
using synced_atom = caf::atom_constant<caf::atom("synced")>;
using unfence_atom = caf::atom_constant<caf::atom("unfence")>;
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;

// Durable events as the log writer hands them to its subscribers, with events_atom: one
// read-only batch shared by every subscriber it goes to. (A copy per subscriber, nine strings
// an event, was about a third of the log writer's time per poll with the SQL views and the
// live feed subscribed: docs/benchmarks.md.)
using event_batch = std::shared_ptr<const std::vector<events::event_envelope>>;

}  // namespace baton::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::event_batch)

namespace baton::events {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_draft& x) {
  return f(caf::meta::type_name("event_draft"), x.type, x.schema_version, x.payload);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_command& x) {
  return f(caf::meta::type_name("append_command"), x.stream_id, x.expected_version, x.command_id, x.recorded_at_us,
           x.correlation_id, x.causation_id, x.actor, x.events);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_result& x) {
  return f(caf::meta::type_name("append_result"), x.status, x.first_seq, x.last_seq, x.stream_version, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_envelope& x) {
  return f(caf::meta::type_name("event_envelope"), x.seq, x.stream_id, x.stream_version, x.type, x.schema_version,
           x.recorded_at_us, x.correlation_id, x.causation_id, x.actor, x.command_id, x.payload, x.hash);
}

}  // namespace baton::events
