#include "replay/tool/job_story.hpp"

#include <sstream>

#include "core/world/plan_cycle.hpp"
#include "core/world/priority.hpp"
#include "core/util/time.hpp"
#include "core/world/world.hpp"
#include "events/envelope.hpp"
#include "events/payload.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

std::string str(const json& p, const char* key) {
  auto it = p.find(key);
  return it != p.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// One line on what a job event means, from its payload (and the decision record it carries).
std::string explain(const std::string& type, const json& p) {
  if (type == "job.created") {
    std::string s = "submitted";
    if (!str(p, "user").empty()) s += " by " + str(p, "user") + " to account " + str(p, "account");
    if (!str(p, "partition").empty()) s += ", partition " + str(p, "partition");
    if (!str(p, "qos").empty()) s += ", QOS " + str(p, "qos");
    s += ", " + std::to_string(p.value("gpu_count", 1)) + " GPU(s)";
    if (p.contains("time_limit_seconds") && p["time_limit_seconds"].is_number())
      s += ", time limit " + std::to_string(p["time_limit_seconds"].get<int64_t>()) + " s";
    if (p.value("hold", false)) s += ", held";
    return s;
  }
  if (type == "job.assigned") {
    const json d = p.value("decision", json::object());
    std::string s = "assigned to worker " + str(p, "worker_id");
    if (str(d, "policy") == "plan") return s + ": the planning cycle of " + str(d, "planned_at") + " chose it for that worker";
    s += " by the poll's own choice (" + str(d, "policy") + ", worker score " + std::to_string(d.value("worker_score", int64_t{0})) + ")";
    if (d.value("taken_by_better_workers", 0) > 0)
      s += "; " + std::to_string(d.value("taken_by_better_workers", 0)) + " job(s) ahead went to better-ranked workers";
    if (d.contains("deadline") && d["deadline"].is_object()) s += "; deadline rule " + str(d["deadline"], "rule");
    return s;
  }
  if (type == "job.preempted") return "preempted by " + str(p, "by") + " (" + str(p, "mode") + ")";
  if (type == "job.held") return "held";
  if (type == "job.released") return "released";
  if (type.rfind("job.requeued_after_", 0) == 0) return "back in the queue: " + type.substr(19);
  if (type == "job.failed") {
    // The detail's first line when short (a worker's "exit code 3"), not a log tail.
    std::string detail = str(p, "detail");
    detail = detail.substr(0, detail.find('\n'));
    return "failed: " + str(p, "reason") + (!detail.empty() && detail.size() <= 120 ? " (" + detail + ")" : "");
  }
  if (type == "job.completed") return "completed";
  if (type == "job.cancelled") return "cancelled" + (str(p, "reason").empty() ? "" : ": " + str(p, "reason"));
  return "";
}

// What the scheduler thought of a queued job: its priority, the eligible jobs of its image
// ahead of it, why it waits, and its reservation in the last plan.
json queue_view(const core::world& w, const core::job& j) {
  json v = {{"priority", j.priority}, {"pending_reason", core::pending_reason(w, j)}};
  if (auto never = core::cannot_run_reason(w, j); !never.empty()) v["pending_detail"] = never;
  if (core::eligible(j)) {
    auto q = w.queued_by_image.find(j.worker_image_key);
    if (q != w.queued_by_image.end()) {
      v["jobs_ahead"] = q->second.order_of_key(core::queue_key_of(j));
      v["queue_length"] = q->second.size();
    }
  }
  if (const auto* r = core::reservation_of(w, j.id)) v["reservation"] = {{"worker_id", r->worker_id}, {"start", util::format_time_us(r->start)}};
  if (const auto* st = [&]() -> const std::string* {
        for (const auto& [worker_id, job_id] : w.plan.start_for_worker)
          if (job_id == j.id) return &worker_id;
        return nullptr;
      }())
    v["planned_start_on"] = *st;
  return v;
}

}  // namespace

json job_story(const events::event_store& store, const std::string& job_id, const progress_fn& progress) {
  core::world w;
  const std::string stream = "job/" + job_id;
  json entries = json::array();
  json last_view;
  core::time_us created = 0, first_assigned = 0;
  std::optional<core::job> last_seen;  // once pruned
  // Its parents (depends_on) and how each ended: what a dependency cancel is explained by.
  std::map<std::string, std::string> parent_end;
  store.scan(1, 0, true, [&](const events::event_view& e) {
    if (progress) progress(e.seq);
    std::string type(e.type);
    auto payload = events::from_payload(e.payload);
    if (e.stream_id == stream) {  // the world keeps only a stub of it once pruned
      if (type == "job.pruned" && !last_seen) last_seen = core::as_pruned(w, job_id, payload, e.recorded_at_us);
      else if (last_seen) core::evolve(*last_seen, type, payload, e.recorded_at_us);
    }
    core::apply(w, std::string(e.stream_id), type, payload, e.recorded_at_us);
    if (e.stream_id.rfind("job/", 0) == 0 && e.stream_id != stream &&
        (type == "job.failed" || type == "job.cancelled" || type == "job.completed"))
      if (auto parent = parent_end.find(std::string(e.stream_id.substr(4))); parent != parent_end.end())
        parent->second = explain(type, payload);
    if (e.stream_id == stream) {
      if (type == "job.created") {
        created = e.recorded_at_us;
        if (auto deps = payload.find("depends_on"); deps != payload.end() && deps->is_array())
          for (const auto& d : *deps)
            if (d.is_object() && d.contains("job_id") && d["job_id"].is_string()) parent_end[d["job_id"].get<std::string>()];
      }
      std::string explained = explain(type, payload);
      if (type == "job.cancelled" && str(payload, "reason") == "dependency_never_satisfied") {
        const std::string parent = str(payload, "dependency");
        auto how = parent_end.find(parent);
        explained = "cancelled: its dependency on job " + parent + " can never hold" +
                    (how != parent_end.end() && !how->second.empty() ? " (that job " + how->second + ")" : "");
      }
      if (type == "job.assigned" && !first_assigned) first_assigned = e.recorded_at_us;
      entries.push_back({{"seq", e.seq},
                         {"time", util::format_time_us(e.recorded_at_us)},
                         {"type", type},
                         {"actor", std::string(e.actor)},
                         {"explained", explained},
                         {"payload", payload}});
      last_view = nullptr;
      return true;
    }
    // The scheduler's view changes at recalculations and plans; one line when it did.
    if (type != "scheduler.priorities_recalculated" && type != "scheduler.priorities_applied" && type != "scheduler.plan_made")
      return true;
    const core::job* j = w.find_job(job_id);
    if (!j || j->status != core::job_status::queued) return true;
    auto view = queue_view(w, *j);
    if (view == last_view) return true;
    last_view = view;
    entries.push_back({{"seq", e.seq}, {"time", util::format_time_us(e.recorded_at_us)}, {"type", type}, {"queue", view}});
    return true;
  });
  const core::job* j = last_seen ? &*last_seen : w.find_job(job_id);
  json summary = nullptr;
  if (j) {
    summary = {{"status", core::to_string(j->status)},
               {"attempts", j->attempts},
               {"preemptions", j->preemptions},
               {"waited_seconds", first_assigned ? json((first_assigned - created) / 1e6) : json(nullptr)}};
    if (j->status == core::job_status::queued) summary["now"] = queue_view(w, *j);
  }
  return {{"job_id", job_id}, {"found", j != nullptr}, {"entries", entries}, {"summary", summary}};
}

std::string format_story(const json& story) {
  std::ostringstream out;
  if (!story.value("found", false)) {
    out << "no job " << story.value("job_id", "") << " in this log\n";
    return out.str();
  }
  for (const auto& e : story["entries"]) {
    out << e.value("time", "") << "  #" << e.value("seq", uint64_t{0}) << "  ";
    if (e.contains("queue")) {
      const auto& v = e["queue"];
      out << "waiting (" << e.value("type", "") << "): priority " << v.value("priority", int64_t{0});
      if (v.contains("jobs_ahead")) out << ", " << v["jobs_ahead"] << " of " << v["queue_length"] << " eligible jobs ahead";
      if (!v.value("pending_reason", "").empty()) out << ", reason " << v.value("pending_reason", "");
      if (v.contains("pending_detail")) out << " (" << v.value("pending_detail", "") << ")";
      if (v.contains("reservation")) out << ", reserved on " << v["reservation"].value("worker_id", "") << " at " << v["reservation"].value("start", "");
      if (v.contains("planned_start_on")) out << ", planned to start on " << v.value("planned_start_on", "");
    } else {
      out << e.value("type", "");
      if (!e.value("explained", "").empty()) out << ": " << e.value("explained", "");
    }
    out << "\n";
  }
  const auto& s = story["summary"];
  out << "now " << s.value("status", "") << ", " << s.value("attempts", 0) << " attempt(s)";
  if (s["waited_seconds"].is_number()) out << ", waited " << s["waited_seconds"].get<double>() << " s for its first worker";
  out << "\n";
  return out.str();
}

}  // namespace baton::replay
