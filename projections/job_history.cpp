#include "projections/job_history.hpp"

#include <map>

#include "core/util/time.hpp"
#include "core/events/event_types.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"

namespace baton::projections {

using nlohmann::json;

job_history::job_history(std::shared_ptr<const events::event_store> store) : store_(std::move(store)) {}

job_history::read_result job_history::read(const std::string& job_id) const {
  read_result r;
  try {
    r.history = history(job_id);
  } catch (const events::store_error& e) {
    r.available = false;
    r.why = e.what();
  }
  return r;
}

std::optional<json> job_history::history(const std::string& job_id) const {
  auto evs = store_->read_stream(core::job_stream(job_id), 1, SIZE_MAX);
  if (evs.empty()) return std::nullopt;
  return render(job_id, evs);
}

std::optional<core::job> job_from_log(const events::event_store& store, const std::string& job_id) {
  auto evs = store.read_stream(core::job_stream(job_id), 1, SIZE_MAX);
  if (evs.empty()) return std::nullopt;
  core::job j;
  j.id = job_id;
  for (const auto& e : evs) core::evolve(j, core::ev::decode(e.type, e.schema_version, e.payload), e.recorded_at_us);
  return j;
}

std::optional<core::job> job_history::record(const std::string& job_id) const { return job_from_log(*store_, job_id); }

json job_history::render(const std::string& job_id, const std::vector<events::event_envelope>& events) {
  auto status = [](core::job_status s) { return json(core::to_string(s)); };
  // core::evolve on a job holding only what the history shows, so the status changes and
  // segments are exactly the ones the scheduler's world went through.
  core::job j;
  j.id = job_id;
  json items = json::array();
  for (const auto& e : events) {
    json payload = events::from_payload(e.payload);  // (shown whole, fields this build does not know too)
    auto before = j.status;
    bool existed = j.created_at != 0;
    std::string worker;
    try {
      const auto typed = core::ev::decode(e.type, e.schema_version, e.payload);
      worker = core::ev::worker_named(typed);
      core::evolve(j, typed, e.recorded_at_us);
    } catch (const std::exception& ex) {
      throw std::runtime_error("event " + std::to_string(e.seq) + " (" + e.type + ") of job " + job_id + ": " + ex.what());
    }
    items.push_back({{"occurred_at", util::format_time_us(e.recorded_at_us)},
                     {"event_seq", e.stream_version},
                     {"log_seq", e.seq},
                     {"event_type", e.type},
                     {"actor", e.actor},
                     {"worker_id", worker.empty() ? json(nullptr) : json(worker)},
                     {"status_from", existed && before != j.status ? status(before) : json(nullptr)},
                     {"status_to", !existed || before != j.status ? status(j.status) : json(nullptr)},
                     {"payload", payload},
                     {"derived", false}});
  }
  core::time_us last_at = events.empty() ? 0 : events.back().recorded_at_us;
  json segments = json::array();
  std::map<std::string, std::pair<double, int>> totals;  // ordered: stable output
  for (const auto& s : j.segments) {
    double d = static_cast<double>(s.ended_at.value_or(last_at) - s.started_at) / 1e6;
    segments.push_back({{"worker_id", s.worker_id},
                        {"started_at", util::format_time_us(s.started_at)},
                        {"ended_at", s.ended_at ? json(util::format_time_us(*s.ended_at)) : json(nullptr)},
                        {"duration_seconds", d},
                        {"open", !s.ended_at}});
    totals[s.worker_id].first += d;
    totals[s.worker_id].second += 1;
  }
  json worker_totals = json::array();
  for (const auto& [w, t] : totals)
    worker_totals.push_back({{"worker_id", w}, {"total_runtime_seconds", t.first}, {"segment_count", t.second}});
  return json{
      {"job_id", job_id}, {"events", items}, {"worker_segments", segments}, {"worker_totals", worker_totals}, {"derived", false}};
}

}  // namespace baton::projections
