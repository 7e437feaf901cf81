#pragma once
// What the HTTP layer asks the scheduler, already validated, and what it gets back.
// Local messages only, so they travel as unsafe (non-serialisable) CAF types.
#include <caf/allowed_unsafe_message_type.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/access.hpp"
#include "core/command_kind.hpp"

namespace baton::actors {

using op = core::command_kind;

struct api_command {
  op kind = op::get_job;
  std::string target;         // job id or worker id from the path / query
  nlohmann::json body;        // validated request body (shape depends on kind)
  core::principal caller;      // who sends it, credential already checked (authorize() decides what they may do)
  std::string actor;           // for the log: "worker:<id>", "operator:<name>", "pilot", "loop:<name>"
  std::string request_id;      // correlation id (X-Request-Id or generated)
  std::string new_id;          // fresh id chosen by the shell (new worker, requeue clone)
  std::string credential_sha256;  // register: hash of the credential handed out
  // A worker's report whose body did not validate: answered (422) only after the scheduler
  // has checked that this caller may act on the job, so a stranger learns nothing from it.
  std::optional<nlohmann::json> invalid_body;
};

struct api_reply {
  int status = 200;
  nlohmann::json body;  // null -> empty body (204)
};

}  // namespace baton::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::api_command)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(baton::actors::api_reply)
