#include "replay/rederive.hpp"

#include <set>

#include "core/plan_cycle.hpp"
#include "core/priority.hpp"
#include "core/scheduling.hpp"
#include "events/payload.hpp"

namespace baton::replay {

rederive_report rederive_decisions(const events::event_store& store) {
  rederive_report r;
  core::world w;
  store.scan(1, 0, true, [&](const events::event_view& e) {
    ++r.events;
    auto payload = events::from_payload(e.payload);
    std::string stream(e.stream_id), type(e.type);
    if (type == "job.assigned") {
      ++r.decisions;
      const auto& recorded = payload.at("decision");
      std::set<std::string> stale;
      for (const auto& id : recorded.value("stale_excluded", nlohmann::json::array())) stale.insert(id.get<std::string>());
      // The decision's time is the event's; the deadline rule in force is the one it recorded.
      auto choice = core::choose_job_for(w, payload.at("worker_id").get<std::string>(), stale,
                                         core::deadline_rule_of(recorded), e.recorded_at_us);
      std::string job_id = stream.substr(4);
      if (choice.job_id != job_id || choice.record != recorded) {
        ++r.mismatches;
        if (r.problems.size() < 10)
          r.problems.push_back("event " + std::to_string(e.seq) + ": logged " + job_id + " for worker " +
                               payload.at("worker_id").get<std::string>() + ", re-derived " +
                               choice.job_id.value_or("nothing") +
                               (choice.record != recorded ? " (decision record differs)" : ""));
      }
    }
    if (type == "scheduler.priorities_recalculated") {
      ++r.decisions;
      ++r.recalculations;
      auto policy = core::policy_from_json(payload.value("policy", nlohmann::json::object()));
      auto again = core::decide_recalculation(w, policy, e.recorded_at_us);
      if (again.events.size() != 1 || again.events[0].payload != payload) {
        ++r.mismatches;
        if (r.problems.size() < 10)
          r.problems.push_back("event " + std::to_string(e.seq) + ": priority recalculation re-derived differently: " +
                               (again.events.empty() ? std::string("nothing") : again.events[0].payload.dump()));
      }
    }
    if (type == "scheduler.plan_made") {
      ++r.decisions;
      ++r.plans;
      std::set<std::string> stale;
      for (const auto& id : payload.value("stale_excluded", nlohmann::json::array())) stale.insert(id.get<std::string>());
      const auto& dl = payload.value("deadline", nlohmann::json::object());
      core::deadline_rule rule;
      rule.default_time_limit_seconds = dl.value("default_time_limit_seconds", rule.default_time_limit_seconds);
      rule.min_useful_seconds = dl.value("min_useful_seconds", rule.min_useful_seconds);
      auto settings = core::backfill_settings_of(payload.value("settings", nlohmann::json::object()));
      auto again = core::decide_plan(w, stale, rule, settings, e.recorded_at_us);
      if (again.events.size() != 1 || again.events[0].payload != payload) {
        ++r.mismatches;
        if (r.problems.size() < 10)
          r.problems.push_back("event " + std::to_string(e.seq) + ": plan re-derived differently: " +
                               (again.events.empty() ? std::string("nothing") : again.events[0].payload.dump()));
      }
    }
    core::apply(w, stream, type, payload, e.recorded_at_us);
    return true;
  });
  return r;
}

}  // namespace baton::replay
