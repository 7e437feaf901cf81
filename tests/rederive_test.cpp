#include "support/forged_events.hpp"
#include "replay/audit/rederive.hpp"

#include <gtest/gtest.h>

#include "core/events/event_payload.hpp"
#include "core/world/priority.hpp"
#include "core/world/scheduling.hpp"
#include "events/payload.hpp"
#include "support/temp_dir.hpp"

using namespace baton;

namespace {

void put(events::event_store& s, const core::decision& d, core::time_us at) {
  std::vector<events::append_command> cmds;
  for (const auto& e : d.events) {
    events::append_command c;
    c.stream_id = e.stream;
    c.recorded_at_us = at;
    c.events.push_back({std::string(e.type()), core::ev::schema_of(e.payload), core::payload_bytes(e)});
    cmds.push_back(c);
  }
  for (const auto& r : s.append(cmds)) ASSERT_TRUE(r.ok());
}

// A log in a temp dir and the world it describes, written one decision at a time.
struct logged_world {
  test::temp_dir dir;
  std::unique_ptr<events::event_store> store = events::event_store::open(dir.path());
  core::world w;
  core::time_us t = 1'000'000;
  void step(const core::decision& d) {
    put(*store, d, ++t);
    core::apply(w, d, t);
  }
};

}  // namespace

TEST(Rederive, DetectsAnAssignmentThePolicyWouldNotMake) {
  logged_world log;
  auto& store = log.store;
  auto& w = log.w;
  auto& t = log.t;
  auto step = [&](const core::decision& d) { log.step(d); };
  step(core::decide_register(nullptr, {"small", core::platform::hpc, "A10", 1, 0, "img", "", ""}, t));
  step(core::decide_register(nullptr, {"big", core::platform::hpc, "H100", 4, 0, "img", "", ""}, t));
  step(core::decide_create(nullptr, {"j1", "t", "/b", "img", "", {}, 5}, t));
  step(core::decide_create(nullptr, {"j2", "t", "/b", "img", "", {}, 5}, t));
  // A legitimate decision: the big worker polls and takes j1.
  auto fair = core::choose_job_for(w, "big", std::set<std::string>{}, {}, t);
  ASSERT_EQ(fair.job_id, "j1");
  step(baton::test::forged_assignment(w.jobs.at("j1"), "big", fair.record, t));
  auto ok = replay::rederive_decisions(*store);
  EXPECT_EQ(ok.decisions, 1u);
  EXPECT_EQ(ok.mismatches, 0u);
  // A decision the policy would not make: j2 given to a worker with a made-up record.
  step(baton::test::forged_assignment(w.jobs.at("j2"), "small", {{"policy", "greedy-rank-v1"}, {"worker_id", "small"}}, t));
  auto bad = replay::rederive_decisions(*store);
  EXPECT_EQ(bad.decisions, 2u);
  EXPECT_EQ(bad.mismatches, 1u);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("decision record differs"), std::string::npos) << bad.problems[0];
}

// The re-derived record is first compared by its bytes; a record of the same values in
// another encoding (a number written as a float) must still be found the same.
TEST(Rederive, FindsARecordOfTheSameValuesInAnotherEncodingTheSame) {
  logged_world log;
  log.step(core::decide_register(nullptr, {"w1", core::platform::hpc, "A10", 1, 0, "img", "", ""}, log.t));
  log.step(core::decide_create(nullptr, {"j1", "t", "/b", "img", "", {}, 5}, log.t));
  auto pick = core::choose_job_for(log.w, "w1", std::set<std::string>{}, {}, log.t);
  ASSERT_EQ(pick.job_id, "j1");
  nlohmann::json as_float = pick.record;
  as_float["worker_score"] = as_float.at("worker_score").get<double>();
  ASSERT_EQ(as_float, pick.record) << "the same values";
  ASSERT_NE(events::to_payload(as_float), events::to_payload(pick.record)) << "in other bytes";
  log.step(baton::test::forged_assignment(log.w.jobs.at("j1"), "w1", as_float, log.t));
  auto r = replay::rederive_decisions(*log.store);
  EXPECT_EQ(r.assignments, 1u);
  EXPECT_EQ(r.mismatches, 0u) << (r.problems.empty() ? "" : r.problems[0]);
}

TEST(Rederive, DetectsAPriorityRecalculationWithFiguresThePolicyWouldNotGive) {
  logged_world log;
  auto& store = log.store;
  auto& w = log.w;
  auto& t = log.t;
  auto step = [&](const core::decision& d) { log.step(d); };
  core::priority_policy policy;
  policy.accounts = {{"chem", "root", 1, {{"ann", 1}}}, {"phys", "root", 1, {{"cy", 1}}}};
  step(core::decide_recalculation(w, policy, t + 1));
  auto ok = replay::rederive_decisions(*store);
  EXPECT_EQ(ok.recalculations, 1u);
  EXPECT_EQ(ok.mismatches, 0u) << (ok.problems.empty() ? "" : ok.problems[0]);
  // The same recalculation, with ann's fair share made up: cy would have to go second.
  auto forged = core::decide_recalculation(w, policy, t + 1);
  auto& shares = std::get<core::ev::priorities_recalculated>(forged.events[0].payload).shares;
  shares["chem/ann"] = {0.0, 1.0, std::nullopt, 0.5, 0.0};  // (actual, fair_share, level_fs, target, usage)
  shares["phys/cy"] = {0.0, 0.5, std::nullopt, 0.5, 0.0};
  step(forged);
  auto bad = replay::rederive_decisions(*store);
  EXPECT_EQ(bad.recalculations, 2u);
  EXPECT_EQ(bad.mismatches, 1u);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("priority recalculation"), std::string::npos) << bad.problems[0];
}

TEST(Rederive, DeadlineShapedAssignmentsReDeriveWithTheirRecordedRule) {
  logged_world log;
  auto& w = log.w;
  auto& t = log.t;
  auto step = [&](const core::decision& d) { log.step(d); };
  const core::deadline_rule rule{1800, 300};  // not the defaults: replay must read them from the record
  auto pilot = [&](const std::string& id) {
    core::register_worker r{id, core::platform::hpc, "H100", 4, 0, "img", "", ""};
    r.allocation_ends_at = t + 600'000'000;  // ten minutes
    step(core::decide_register(nullptr, r, t));
  };
  auto job = [&](const std::string& id, std::optional<int64_t> limit) {
    core::create_job c{id, "t", "/b", "img", "", {}, 5};
    c.time_limit_seconds = limit;
    c.checkpoints = false;
    step(core::decide_create(nullptr, c, t));
  };
  pilot("pilot");
  step(core::decide_register(nullptr, {"plain", core::platform::hpc, "A10", 1, 0, "img", "", ""}, t));
  job("long", std::nullopt);  // the rule's 1800 s: does not fit the pilot's ten minutes
  job("short", 120);
  // The better-ranked pilot cannot take "long", so "plain" gets it; the pilot gets "short".
  auto plain = core::choose_job_for(w, "plain", {}, rule, t + 1);
  ASSERT_EQ(plain.job_id, "long");
  step(baton::test::forged_assignment(w.jobs.at("long"), "plain", plain.record, t));
  auto mine = core::choose_job_for(w, "pilot", {}, rule, t + 1);
  ASSERT_EQ(mine.job_id, "short");
  EXPECT_EQ(mine.record["deadline"]["rule"], "fits");
  step(baton::test::forged_assignment(w.jobs.at("short"), "pilot", mine.record, t));
  auto ok = replay::rederive_decisions(*log.store);
  EXPECT_EQ(ok.decisions, 2u);
  EXPECT_EQ(ok.mismatches, 0u) << (ok.problems.empty() ? "" : ok.problems[0]);
  // A decision the rule would not make: a long job handed to another ten-minute pilot, with
  // a record made to look like the first pilot's.
  pilot("pilot2");
  job("long2", std::nullopt);
  ASSERT_FALSE(core::choose_job_for(w, "pilot2", {}, rule, t + 1).job_id);
  auto forged = mine.record;
  forged["worker_id"] = "pilot2";
  step(baton::test::forged_assignment(w.jobs.at("long2"), "pilot2", forged, t));
  auto bad = replay::rederive_decisions(*log.store);
  EXPECT_EQ(bad.decisions, 3u);
  EXPECT_EQ(bad.mismatches, 1u);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("re-derived nothing"), std::string::npos) << bad.problems[0];
}
