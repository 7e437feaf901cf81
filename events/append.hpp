#pragma once
// What a caller asks the log to append, and what it gets back.
#include <cstdint>
#include <string>
#include <vector>

#include "events/envelope.hpp"

namespace baton::events {

// Expected-version values for optimistic concurrency.
constexpr uint64_t any_version = UINT64_MAX;  // no check
constexpr uint64_t no_stream = 0;             // the stream must not exist yet

struct event_draft {
  std::string type;
  uint32_t schema_version = 1;
  std::string payload;  // CBOR, see payload.hpp
};

// One command's events: all land on one stream, atomically, or none do.
struct append_command {
  std::string stream_id;
  uint64_t expected_version = any_version;
  std::string command_id;  // idempotency key; "" = not idempotent
  int64_t recorded_at_us = 0;
  std::string correlation_id;
  std::string causation_id;
  std::string actor;
  std::vector<event_draft> events;
  // The stream's last event for the foreseeable future (a pruned job's): the writer need not
  // keep its head cached. Nothing else changes: a later append reads the head back.
  bool stream_done = false;
};

enum class append_status : uint8_t {
  appended,          // new events written
  duplicate,         // command_id seen before; nothing written, original positions returned
  version_conflict,  // expected_version did not match; nothing written
  invalid,           // malformed command (empty stream id, no events, ...); nothing written
  io_error,          // the write failed; nothing written
  no_space,          // refused before writing: the disk is short of the reserve (free_space.hpp)
};

const char* to_string(append_status s);

struct append_result {
  append_status status = append_status::invalid;
  uint64_t first_seq = 0;  // appended/duplicate: global positions of the command's events
  uint64_t last_seq = 0;
  uint64_t stream_version = 0;  // appended/duplicate: version after the command; conflict: current version
  std::string message;          // reason for conflict/invalid/io_error/no_space

  bool ok() const { return status == append_status::appended || status == append_status::duplicate; }
};

// Checks what can be checked without the store. Returns "" when the command is well formed.
std::string validate(const append_command& c);

}  // namespace baton::events
