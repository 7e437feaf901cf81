#pragma once
// Shared vocabulary of the pure core: time, the events decide() emits, and its errors.
// Nothing in core/ reads a clock, touches I/O or iterates a hash map to make a decision.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace baton::core {

using time_us = int64_t;  // µs since the Unix epoch, always passed in

// An event decide() wants appended; the shell adds the envelope (actor, ids, time).
struct domain_event {
  std::string stream;  // "job/<id>", "worker/<id>"
  std::string type;    // e.g. "job.assigned"
  nlohmann::json payload;
};

// A refused command: the HTTP status it maps to, a machine code and the JSON body to send.
struct domain_error {
  int status = 409;
  std::string code;
  std::string message;
  nlohmann::json body;  // complete response body
};

struct decision {
  std::vector<domain_event> events;
  std::optional<domain_error> error;
  nlohmann::json reply;  // what the caller is told on success (may be null)

  static decision refuse(domain_error e) {
    decision d;
    d.error = std::move(e);
    return d;
  }
  bool ok() const { return !error; }
};

inline domain_error not_found(const std::string& what, const std::string& id) {
  return {404, "not_found", what + " not found", {{"detail", what + " not found"}, {"error", "not_found"}, {"id", id}}};
}

}  // namespace baton::core
