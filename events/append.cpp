#include "events/append.hpp"

namespace baton::events {

const char* to_string(append_status s) {
  switch (s) {
    case append_status::appended:
      return "appended";
    case append_status::duplicate:
      return "duplicate";
    case append_status::version_conflict:
      return "version_conflict";
    case append_status::invalid:
      return "invalid";
    case append_status::io_error:
      return "io_error";
    case append_status::no_space:
      return "no_space";
  }
  return "unknown";
}

std::string validate(const append_command& c) {
  // '\0' separates stream id from version in index keys, so it may not appear in an id.
  if (c.stream_id.empty()) return "stream_id is empty";
  if (c.stream_id.find('\0') != std::string::npos) return "stream_id contains a NUL byte";
  if (c.events.empty()) return "command has no events";
  for (const auto& e : c.events)
    if (e.type.empty()) return "event type is empty";
  return "";
}

}  // namespace baton::events
