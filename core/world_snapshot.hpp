#pragma once
// The world as bytes, and back: what a state snapshot holds (every job, worker, association's
// usage, the priority state, the last plan, operators, provisioning state, and the count of
// events applied). Indexes are not stored; decode rebuilds them (core::rebuild_indexes), so a
// decoded world decides exactly as the one that was encoded. Doubles travel as binary (CBOR):
// a usage figure comes back bit for bit, and with it every fair share.
#include <string>

#include "core/world.hpp"

namespace baton::core {

// The format's version: a snapshot of another version is ignored (the log is replayed).
inline constexpr int world_snapshot_version = 1;

std::string encode_world(const world& w);
// Throws std::runtime_error on bytes that are not a snapshot of this version.
world decode_world(const std::string& bytes);

}  // namespace baton::core
