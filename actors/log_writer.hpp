#pragma once
// The single writer of the event log. Appends are group-committed: a request parks its
// response promise and the actor self-sends one commit message; when that message comes
// up, every append queued meanwhile goes into one WriteBatch. A companion syncer thread
// fdatasyncs the WAL while the writer already builds the next batch; callers are answered
// only once a sync that started after their batch was written has returned. No timer, so
// an idle log adds no latency.
//
// Two kinds of failed write (events/append.hpp). no_space (the disk is short of its reserve,
// nothing written): the writer answers at once and fences itself: every later append is
// refused the same way until unfence, which the scheduler sends once it has dropped what it
// decided on the refused events (appends decided before that must not land after a gap).
// Any other failure of a write or of the WAL's sync: nothing more can be promised; everyone
// waiting is answered with the error and the writer quits with it (batond then exits).
//
// Subscribers (projections) get (events_atom, event_batch) messages in global-sequence
// order (actors/messages.hpp: one read-only batch shared by every subscriber it goes to):
// first a catch-up read from the store from the sequence they asked for, then what became
// durable since the last message, at most every `deliver_every` (one timer while something
// waits for it: an idle log still has none). Each message wakes
// the subscriber's thread: at one per commit, the SQL views' threads cost the worker API's
// polls while they held every batch unapplied.
#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/latency_histogram.hpp"
#include "actors/messages.hpp"

namespace baton::events {
class event_store;  // only its writer holds it (log_writer.cpp); the handle's users need not see it
}  // namespace baton::events

namespace baton::actors {

struct log_status {
  uint64_t last_seq = 0;
  uint64_t commits = 0;         // WriteBatches written since start
  uint64_t syncs = 0;           // WAL fdatasyncs since start (each may cover several batches)
  uint64_t events_written = 0;  // events appended since start
  uint64_t subscribers = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_status& x) {
  return f(caf::meta::type_name("log_status"), x.last_seq, x.commits, x.syncs, x.events_written, x.subscribers);
}

using log_writer_actor = caf::typed_actor<
    caf::replies_to<append_atom, std::vector<events::append_command>>::with<std::vector<events::append_result>>,
    caf::replies_to<status_atom>::with<log_status>,
    caf::replies_to<read_atom, uint64_t, uint64_t>::with<std::vector<events::event_envelope>>,  // from, max
    caf::replies_to<subscribe_atom, caf::actor, uint64_t>::with<uint64_t>,  // subscriber, from seq -> last seq now
    caf::reacts_to<unsubscribe_atom, caf::actor>, caf::reacts_to<commit_atom>,
    caf::reacts_to<synced_atom, uint64_t>,  // from the syncer: batches up to this id are durable
    caf::reacts_to<catchup_atom, caf::actor>, caf::reacts_to<unfence_atom>,
    caf::reacts_to<deliver_atom>>;  // (its own timer: what waits goes to live subscribers)

struct log_writer_options {
  size_t max_batch_events = 4096;  // cap per WriteBatch
  size_t catchup_chunk = 1024;     // events per catch-up message to a subscriber
  // Live subscribers get what became durable at most this often, all since the last in one
  // message, or at once when max_batch_events wait (zero: every durable batch as it comes).
  std::chrono::microseconds deliver_every{20'000};
  std::shared_ptr<log_metrics> metrics;  // fsync and append latencies (none: not measured)
};

// What a failed append or a stopped writer says: the store's own words (the error's text)
// rather than CAF's rendering of the error.
std::string log_error_text(const caf::error& e);

// Spawned detached: its fsync then never stalls a scheduler thread (a blocking fsync in a scheduled actor would stall a whole scheduler thread).
log_writer_actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<events::event_store> store,
                                  log_writer_options opts = {});

}  // namespace baton::actors
