#include "replay/rederive.hpp"

#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "core/plan_cycle.hpp"
#include "core/preemption.hpp"
#include "core/priority.hpp"
#include "core/scheduling.hpp"
#include "events/payload.hpp"

namespace baton::replay {

rederive_report rederive_decisions(const events::event_store& store) {
  rederive_report r;
  // A plan was made on a snapshot of the world taken some events before it was recorded
  // (core/plan_cycle.hpp: "based_on" counts the events applied then). A first pass finds
  // those points; the replay takes each snapshot there, with the inputs the plan recorded.
  std::map<uint64_t, std::vector<std::pair<uint64_t, core::recorded_plan_inputs>>> snapshot_at;  // applied -> (seq, inputs)
  store.scan(1, 0, true, [&](const events::event_view& e) {
    if (e.type == "scheduler.plan_made") {
      auto in = core::plan_inputs_of(events::from_payload(e.payload));
      snapshot_at[in.based_on].emplace_back(e.seq, std::move(in));
    }
    return true;
  });
  std::map<uint64_t, core::plan_snapshot> snapshots;  // plan event seq -> its snapshot
  core::world w;
  auto take_snapshots = [&] {
    auto due = snapshot_at.find(w.applied);
    if (due == snapshot_at.end()) return;
    for (const auto& [seq, in] : due->second) {
      auto snap = core::snapshot_for_plan(w, in.stale, in.rule, in.settings, in.planned_at);
      snapshots.emplace(seq, std::move(snap));
    }
    snapshot_at.erase(due);
  };
  auto mismatch = [&](uint64_t seq, const std::string& what) {
    ++r.mismatches;
    if (r.problems.size() < 10) r.problems.push_back("event " + std::to_string(seq) + ": " + what);
  };
  // The job events a re-derived preemption decision says must come next, in order.
  std::deque<core::domain_event> expected;
  store.scan(1, 0, true, [&](const events::event_view& e) {
    ++r.events;
    take_snapshots();  // the world as it was before this event: w.applied events in
    auto payload = events::from_payload(e.payload);
    std::string stream(e.stream_id), type(e.type);
    if (!expected.empty()) {
      auto want = std::move(expected.front());
      expected.pop_front();
      if (want.stream != stream || want.type != type || want.payload != payload)
        mismatch(e.seq, "preemption decision's event re-derived as " + want.type + " on " + want.stream + " " +
                            want.payload.dump() + ", logged " + type + " on " + stream + " " + payload.dump());
    }
    if (type == "scheduler.preemptions_decided") {
      ++r.decisions;
      ++r.preemption_decisions;
      auto in = core::preemption_inputs_of(payload);
      auto again = core::decide_preemptions(w, in.stale, in.rule, e.recorded_at_us);
      if (again.events.empty() || again.events[0].payload != payload) {
        mismatch(e.seq, "preemption decision re-derived differently: " +
                            (again.events.empty() ? std::string("nothing") : again.events[0].payload.dump()));
      } else {
        r.preemptions += payload.at("preemptions").size() + payload.at("expired").size();
        expected.assign(std::make_move_iterator(again.events.begin() + 1), std::make_move_iterator(again.events.end()));
      }
    }
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
      auto snap = snapshots.find(e.seq);
      auto again = snap == snapshots.end() ? core::decision{}
                                           : core::decide_plan(w, snap->second, core::run_planner(snap->second));
      if (snap != snapshots.end()) snapshots.erase(snap);
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
  if (!expected.empty()) mismatch(r.events, "the log ends before the preemption decision's " + expected.front().type);
  return r;
}

}  // namespace baton::replay
