#include "replay/tool/job_story.hpp"

#include <sstream>

#include "core/jobs/dependency.hpp"
#include "core/events/event_types.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/world/priority.hpp"
#include "core/util/time.hpp"
#include "core/world/world.hpp"
#include "events/envelope.hpp"
#include "events/payload.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

// One line on what a job event means, from its payload (and the decision record it carries).
std::string explain(const core::ev::payload& payload) {
  namespace ev = core::ev;
  return std::visit(
      [](const auto& p) -> std::string {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, ev::job_created>) {
          std::string s = "submitted";
          if (!p.user.empty()) s += " by " + p.user + " to account " + p.account;
          if (!p.partition.empty()) s += ", partition " + p.partition;
          if (!p.qos.empty()) s += ", QOS " + p.qos;
          s += ", " + std::to_string(p.gpu_count) + " GPU(s)";
          if (p.time_limit_seconds) s += ", time limit " + std::to_string(*p.time_limit_seconds) + " s";
          if (p.hold) s += ", held";
          return s;
        } else if constexpr (std::is_same_v<T, ev::job_assigned>) {
          const auto& d = p.decision;
          std::string s = "assigned to worker " + p.worker_id;
          if (d.policy == "plan") return s + ": the planning cycle of " + d.planned_at.value_or("") + " chose it for that worker";
          s += " by the poll's own choice (" + d.policy + ", worker score " + std::to_string(d.worker_score) + ")";
          if (d.taken_by_better_workers > 0)
            s += "; " + std::to_string(d.taken_by_better_workers) + " job(s) ahead went to better-ranked workers";
          if (d.deadline) s += "; deadline rule " + d.deadline->rule.value_or("");
          return s;
        } else if constexpr (std::is_same_v<T, ev::job_preempted>) {
          return "preempted by " + p.by + " (" + p.mode + ")";
        } else if constexpr (std::is_same_v<T, ev::job_held>) {
          return "held";
        } else if constexpr (std::is_same_v<T, ev::job_released>) {
          return "released";
        } else if constexpr (std::is_same_v<T, ev::job_requeued_after_deregister> ||
                             std::is_same_v<T, ev::job_requeued_after_reap> || std::is_same_v<T, ev::job_requeued_after_orphan> ||
                             std::is_same_v<T, ev::job_requeued_after_preempt>) {
          return "back in the queue: " + std::string(T::type.substr(19));  // ("job.requeued_after_" and the cause)
        } else if constexpr (std::is_same_v<T, ev::job_failed>) {
          // The detail's first line when short (a worker's "exit code 3"), not a log tail.
          std::string detail = p.detail.value_or("");
          detail = detail.substr(0, detail.find('\n'));
          return "failed: " + p.reason + (!detail.empty() && detail.size() <= 120 ? " (" + detail + ")" : "");
        } else if constexpr (std::is_same_v<T, ev::job_completed>) {
          return "completed";
        } else if constexpr (std::is_same_v<T, ev::job_cancelled>) {
          return "cancelled" + (p.reason.value_or("").empty() ? std::string() : ": " + *p.reason);
        } else {
          return "";
        }
      },
      payload);
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
  if (const auto* r = core::reservation_of(w, j.id))
    v["reservation"] = {{"worker_id", r->worker_id}, {"start", util::format_time_us(r->start)}};
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
    const auto typed = core::ev::decode(e.type, e.schema_version, e.payload);
    if (e.stream_id == stream) {  // the world keeps only a stub of it once pruned
      if (std::holds_alternative<core::ev::job_pruned>(typed) && !last_seen)
        last_seen = core::as_pruned(w, job_id, typed, e.recorded_at_us);
      else if (last_seen)
        core::evolve(*last_seen, typed, e.recorded_at_us);
    }
    core::apply(w, std::string(e.stream_id), typed, e.recorded_at_us);
    const bool ends = std::holds_alternative<core::ev::job_failed>(typed) ||
                      std::holds_alternative<core::ev::job_cancelled>(typed) ||
                      std::holds_alternative<core::ev::job_completed>(typed);
    if (ends && e.stream_id.rfind("job/", 0) == 0 && e.stream_id != stream)
      if (auto parent = parent_end.find(std::string(e.stream_id.substr(4))); parent != parent_end.end())
        parent->second = explain(typed);
    if (e.stream_id == stream) {
      if (const auto* c = std::get_if<core::ev::job_created>(&typed)) {
        created = e.recorded_at_us;
        for (const auto& d : c->depends_on) parent_end[d.job_id];
      }
      std::string explained = explain(typed);
      if (const auto* x = std::get_if<core::ev::job_cancelled>(&typed); x && x->reason == "dependency_never_satisfied") {
        const std::string parent = x->dependency.value_or("");
        auto how = parent_end.find(parent);
        explained = "cancelled: its dependency on job " + parent + " can never hold" +
                    (how != parent_end.end() && !how->second.empty() ? " (that job " + how->second + ")" : "");
      }
      if (std::holds_alternative<core::ev::job_assigned>(typed) && !first_assigned) first_assigned = e.recorded_at_us;
      entries.push_back({{"seq", e.seq},
                         {"time", util::format_time_us(e.recorded_at_us)},
                         {"type", type},
                         {"actor", std::string(e.actor)},
                         {"explained", explained},
                         {"payload", events::from_payload(e.payload)}});  // (shown whole, fields this build does not know too)
      last_view = nullptr;
      return true;
    }
    // The scheduler's view changes at recalculations and plans; one line when it did.
    if (!std::holds_alternative<core::ev::priorities_recalculated>(typed) &&
        !std::holds_alternative<core::ev::priorities_applied>(typed) && !std::holds_alternative<core::ev::plan_made>(typed))
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
      if (v.contains("reservation"))
        out << ", reserved on " << v["reservation"].value("worker_id", "") << " at " << v["reservation"].value("start", "");
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
