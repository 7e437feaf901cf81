#pragma once
// The world as bytes, and back: what a state snapshot holds (every job, worker, association's
// usage, the priority state, the last plan, operators, provisioning state, and the count of
// events applied). Indexes are not stored; decode rebuilds them (core::rebuild_indexes), so a
// decoded world decides exactly as the one that was encoded. Doubles travel as binary (CBOR):
// a usage figure comes back bit for bit, and with it every fair share.
#include <string>

#include "core/world/world.hpp"

namespace baton::core {

// The format's version: a snapshot of another version is ignored (the log is replayed).
inline constexpr int world_snapshot_version =
    7;  // 2: rotating credentials (previous hash + deadline); 3: the pilot token's; 4: pruned jobs as stubs; 5: placeholders' one-time credentials; 6: the storage book, whether a run segment started; 7: job arrays

std::string encode_world(const world& w);
// Throws std::runtime_error on bytes that are not a snapshot of this version.
world decode_world(const std::string& bytes);

// What the log's snapshot column holds under world_snapshot_name: the hash of the event the
// world was taken after (32 raw bytes, tying it to the chain), then the world.
inline constexpr const char* world_snapshot_name = "world";
std::string encode_world_snapshot(const world& w, const std::string& event_hash);
struct world_snapshot {
  std::string event_hash;
  world w;
};
world_snapshot decode_world_snapshot(const std::string& bytes);

}  // namespace baton::core
