#include "http/job_history.hpp"

#include <map>

#include "core/job.hpp"
#include "events/payload.hpp"

namespace baton::http {

using nlohmann::json;

std::optional<json> job_history(const events::event_store& store, const std::string& job_id) {
  auto evs = store.read_stream(core::job_stream(job_id), 1, SIZE_MAX);
  if (evs.empty()) return std::nullopt;
  core::job j;
  j.id = job_id;
  json items = json::array();
  core::time_us last_at = 0;
  for (const auto& e : evs) {
    json payload = events::from_payload(e.payload);
    auto before = j.status;
    bool existed = j.created_at != 0;
    core::evolve(j, e.type, payload, e.recorded_at_us);
    last_at = e.recorded_at_us;
    items.push_back({{"occurred_at", events::format_time_us(e.recorded_at_us)},
                     {"event_seq", e.stream_version},
                     {"log_seq", e.seq},
                     {"event_type", e.type},
                     {"actor", e.actor},
                     {"worker_id", payload.value("worker_id", "").empty() ? json(nullptr) : payload["worker_id"]},
                     {"status_from", existed && before != j.status ? json(core::to_string(before)) : json(nullptr)},
                     {"status_to", !existed || before != j.status ? json(core::to_string(j.status)) : json(nullptr)},
                     {"payload", payload},
                     {"derived", false}});
  }
  json segments = json::array();
  std::map<std::string, std::pair<double, int>> totals;  // ordered: stable output
  for (const auto& s : j.segments) {
    double d = static_cast<double>(s.ended_at.value_or(last_at) - s.started_at) / 1e6;
    segments.push_back({{"worker_id", s.worker_id},
                        {"started_at", events::format_time_us(s.started_at)},
                        {"ended_at", s.ended_at ? json(events::format_time_us(*s.ended_at)) : json(nullptr)},
                        {"duration_seconds", d},
                        {"open", !s.ended_at}});
    totals[s.worker_id].first += d;
    totals[s.worker_id].second += 1;
  }
  json worker_totals = json::array();
  for (const auto& [w, t] : totals)
    worker_totals.push_back({{"worker_id", w}, {"total_runtime_seconds", t.first}, {"segment_count", t.second}});
  return json{{"job_id", job_id}, {"events", items}, {"worker_segments", segments}, {"worker_totals", worker_totals},
              {"derived", false}};
}

}  // namespace baton::http
