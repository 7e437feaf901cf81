#pragma once
// Shared vocabulary of the pure core: time, the events decide() emits, and its errors.
// Nothing in core/ reads a clock, touches I/O or iterates a hash map to make a decision.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/events/event_types.hpp"

namespace baton::core {

using time_us = int64_t;  // µs since the Unix epoch, always passed in

// An event decide() wants appended: its stream and its typed payload (core/events/event_types.hpp,
// which names its type); the shell adds the envelope (actor, ids, time).
struct domain_event {
  std::string stream;  // "job/<id>", "worker/<id>"
  ev::payload payload;
  std::string_view type() const { return ev::type_of(payload); }
};

// Why a command was refused, in the domain's terms; http/ maps each kind to a status.
enum class error_kind : uint8_t {
  invalid,          // a value the domain does not accept (an unknown image, pin, cluster set)
  unauthenticated,  // no credential, or one that proves nothing
  forbidden,        // a known caller that may not do this
  not_found,
  conflict,     // the state does not allow it (a transition, a duplicate)
  mismatch,     // a request that must name exactly what is configured, and does not
  unavailable,  // nothing can be promised now (the log failed, the scheduler is gone)
  over_limit,   // a configured limit (jobs per user, request rate) says not now
  too_large,    // a request body past its size limit (http/field_limits.hpp)
  no_space,     // a storage quota (or the disk) has no room for it (507)
  internal,
};

// A refused command: its kind, a machine code, a sentence for people, the facts a client
// needs to react (ids, current status; merged into the reply) and the field at fault.
struct domain_error {
  error_kind kind = error_kind::conflict;
  std::string code;
  std::string message;
  nlohmann::json details = nlohmann::json::object();
  std::string field;
};

struct decision {
  std::vector<domain_event> events;
  std::optional<domain_error> error;

  static decision refuse(domain_error e) {
    decision d;
    d.error = std::move(e);
    return d;
  }
  static decision of(std::string stream, ev::payload payload) {
    decision d;
    d.events.push_back({std::move(stream), std::move(payload)});
    return d;
  }
  void append(decision more) {
    for (auto& e : more.events) events.push_back(std::move(e));
  }
  bool ok() const { return !error; }
};

// The element of `v` with this name, or nullptr.
template <class T>
const T* find_named(const std::vector<T>& v, const std::string& name) {
  for (const auto& x : v)
    if (x.name == name) return &x;
  return nullptr;
}

inline domain_error not_found(const std::string& what, const std::string& id) {
  return {error_kind::not_found, "not_found", what + " not found", {{"id", id}}, ""};
}

}  // namespace baton::core
