#include "projections/job_history.hpp"

#include <map>
#include <mutex>

#include "events/payload.hpp"

namespace baton::projections {

using nlohmann::json;

namespace {
const std::string job_prefix = "job/";  // core::job_stream(id)
}

job_history::job_history(std::function<uint64_t()> log_end)
    : projection(projection_name), log_end_(std::move(log_end)) {}

void job_history::apply(const std::vector<events::event_envelope>& batch) {
  std::unique_lock<std::shared_mutex> lock(m_);
  for (const auto& e : batch)
    if (e.stream_id.compare(0, job_prefix.size(), job_prefix) == 0)
      apply_job_event(e.stream_id.substr(job_prefix.size()), e);
}

void job_history::apply_job_event(const std::string& job_id, const events::event_envelope& e) {
  auto& entry = jobs_[job_id];
  item it;
  it.seq = e.seq;
  it.stream_version = e.stream_version;
  it.recorded_at_us = e.recorded_at_us;
  it.type = &*types_.insert(e.type).first;
  it.actor = e.actor;
  it.payload = e.payload;
  entry.last_at = e.recorded_at_us;
  if (entry.error.empty()) {
    // core::evolve on a job holding only the fields the history needs, so the status
    // changes and segments are exactly the ones the scheduler's world goes through.
    core::job j;
    j.id = job_id;
    j.status = entry.status;
    j.created_at = entry.created_at;
    j.assigned_worker_id = std::move(entry.assigned_worker_id);
    j.segments = std::move(entry.segments);
    auto before = j.status;
    bool existed = j.created_at != 0;
    try {
      core::evolve(j, e.type, events::from_payload(e.payload), e.recorded_at_us);
      if (existed && before != j.status) it.status_from = static_cast<uint8_t>(before);
      if (!existed || before != j.status) it.status_to = static_cast<uint8_t>(j.status);
    } catch (const std::exception& ex) {
      entry.error = "event " + std::to_string(e.seq) + " (" + e.type + ") of job " + job_id + ": " + ex.what();
    }
    entry.status = j.status;
    entry.created_at = j.created_at;
    entry.assigned_worker_id = std::move(j.assigned_worker_id);
    entry.segments = std::move(j.segments);
  }
  entry.items.push_back(std::move(it));
}

job_history::read_result job_history::read(const std::string& job_id,
                                           std::chrono::steady_clock::duration max_wait) const {
  read_result r;
  if (log_end_ && !wait_applied(log_end_(), std::chrono::steady_clock::now() + max_wait)) {
    r.available = false;
    r.why = failure().value_or("the job history is behind the log (applied through " + std::to_string(applied_seq()) +
                               ")");
    return r;
  }
  r.history = history(job_id);
  return r;
}

std::optional<json> job_history::history(const std::string& job_id) const {
  std::shared_lock<std::shared_mutex> lock(m_);
  auto found = jobs_.find(job_id);
  if (found == jobs_.end()) return std::nullopt;
  if (!found->second.error.empty()) throw std::runtime_error(found->second.error);
  return render(job_id, found->second);
}

json job_history::render(const std::string& job_id, const job_entry& j) const {
  auto status = [](uint8_t s) {
    return s == no_status ? json(nullptr) : json(core::to_string(static_cast<core::job_status>(s)));
  };
  json items = json::array();
  for (const auto& e : j.items) {
    json payload = events::from_payload(e.payload);
    items.push_back({{"occurred_at", events::format_time_us(e.recorded_at_us)},
                     {"event_seq", e.stream_version},
                     {"log_seq", e.seq},
                     {"event_type", *e.type},
                     {"actor", e.actor},
                     {"worker_id", payload.value("worker_id", "").empty() ? json(nullptr) : payload["worker_id"]},
                     {"status_from", status(e.status_from)},
                     {"status_to", status(e.status_to)},
                     {"payload", payload},
                     {"derived", false}});
  }
  json segments = json::array();
  std::map<std::string, std::pair<double, int>> totals;  // ordered: stable output
  for (const auto& s : j.segments) {
    double d = static_cast<double>(s.ended_at.value_or(j.last_at) - s.started_at) / 1e6;
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

}  // namespace baton::projections
