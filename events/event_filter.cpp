#include "events/event_filter.hpp"

#include "core/util/time.hpp"

namespace baton::events {

using nlohmann::json;

bool event_filter::matches(const event_view& e) const {
  if (from_us && e.recorded_at_us < *from_us) return false;
  if (to_us && e.recorded_at_us > *to_us) return false;
  if (!stream.empty() && e.stream_id != stream) return false;
  if (!type.empty() && e.type != type) return false;
  if (!actor.empty() && e.actor != actor) return false;
  return true;
}

json to_json(const event_filter& f) {
  json out = json::object();
  if (f.from_us) out["from"] = util::format_time_us(*f.from_us);
  if (f.to_us) out["to"] = util::format_time_us(*f.to_us);
  if (!f.stream.empty()) out["stream"] = f.stream;
  if (!f.type.empty()) out["type"] = f.type;
  if (!f.actor.empty()) out["actor"] = f.actor;
  return out;
}

event_filter event_filter_from_json(const json& j) {
  event_filter f;
  if (j.contains("from")) f.from_us = util::parse_time_us(j["from"].get<std::string>());
  if (j.contains("to")) f.to_us = util::parse_time_us(j["to"].get<std::string>());
  f.stream = j.value("stream", "");
  f.type = j.value("type", "");
  f.actor = j.value("actor", "");
  return f;
}

}  // namespace baton::events
