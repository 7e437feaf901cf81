#pragma once
// The data plane's decisions (docs/storage.md): who may store and read which blob, what a
// file set must send, the quota, which checkpoints a job keeps, what the collector removes.
// Pure: the shell moves the bytes and checks them; these functions only decide on what it
// reports, and each store, release, removal and refusal is an event of the `storage` stream.
#include "core/app/commands.hpp"
#include "core/app/decide.hpp"
#include "core/app/outcome.hpp"
#include "core/world/world.hpp"

namespace baton::core {

// Any of the data plane's commands (blob_upload … blob_corrupt).
// A worker's file set is judged as its reports are: first whether it holds the job, then the
// body (e.invalid, what the HTTP layer could not read).
outcome decide_storage(const world& w, const scheduler_settings& s, const envelope& e, time_us now);

// A new job's stored bundle: that the caller may use it (an admin any stored blob, a user
// one they hold), and the event binding it to the job. Empty error and event when the job
// names no stored bundle.
struct bundle_binding {
  std::optional<domain_error> error;
  std::optional<domain_event> bound;
};
bundle_binding bind_bundle(const world& w, const principal& caller, const std::string& job_id, const std::string& job_user,
                           const std::optional<blob_ref>& bundle);
// What a requeue clone refers to: the original's bundle and latest checkpoint.
std::optional<domain_event> bind_clone(const world& w, const job& original, const std::string& clone_id);
// A pruned job's references go with it.
std::optional<domain_event> release_pruned(const world& w, const std::string& job_id);

// Replay (baton-replay rederive): a storage decision checked against the book as it was
// before it. storage.files_stored released the oldest checkpoints beyond its recorded keep;
// storage.blob_removing and storage.blob_removed named only blobs nothing held. Empty when it
// agrees, else what differs.
// (kind: the event's place in the catalogue's variant, core::ev::index_of)
bool is_storage_decision(size_t kind);
std::optional<std::string> rederive_storage(const world& w, const ev::payload& recorded);

}  // namespace baton::core
