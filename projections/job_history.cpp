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
  item it;
  it.seq = e.seq;
  it.stream_version = e.stream_version;
  it.recorded_at_us = e.recorded_at_us;
  it.type = &*types_.insert(e.type).first;
  it.actor = e.actor;
  it.payload = e.payload;
  jobs_[job_id].items.push_back(std::move(it));
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
  return render(job_id, found->second);
}

json job_history::render(const std::string& job_id, const job_entry& entry) const {
  auto status = [](core::job_status s) { return json(core::to_string(s)); };
  // core::evolve on a job holding only what the history shows, so the status changes and
  // segments are exactly the ones the scheduler's world went through.
  core::job j;
  j.id = job_id;
  json items = json::array();
  for (const auto& e : entry.items) {
    json payload = events::from_payload(e.payload);
    auto before = j.status;
    bool existed = j.created_at != 0;
    try {
      core::evolve(j, *e.type, payload, e.recorded_at_us);
    } catch (const std::exception& ex) {
      throw std::runtime_error("event " + std::to_string(e.seq) + " (" + *e.type + ") of job " + job_id + ": " + ex.what());
    }
    items.push_back({{"occurred_at", events::format_time_us(e.recorded_at_us)},
                     {"event_seq", e.stream_version},
                     {"log_seq", e.seq},
                     {"event_type", *e.type},
                     {"actor", e.actor},
                     {"worker_id", payload.value("worker_id", "").empty() ? json(nullptr) : payload["worker_id"]},
                     {"status_from", existed && before != j.status ? status(before) : json(nullptr)},
                     {"status_to", !existed || before != j.status ? status(j.status) : json(nullptr)},
                     {"payload", payload},
                     {"derived", false}});
  }
  core::time_us last_at = entry.items.empty() ? 0 : entry.items.back().recorded_at_us;
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

}  // namespace baton::projections
