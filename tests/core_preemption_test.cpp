// Preemption (core/world/preemption.hpp) through the application layer with a fake clock: who is
// preempted (the fewest, lowest-priority jobs the rules allow, on a worker that can run the
// preemptor), how (hand off and requeue, or cancel), what the worker hears, what happens when
// the grace ends, and every decision re-deriving from the events before it.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <functional>

#include "core/world/preemption.hpp"
#include "core/world/priority.hpp"
#include "core/util/time.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
using nlohmann::json;
namespace C = core::commands;
namespace R = core::results;

namespace {

constexpr core::time_us second = 1'000'000, minute = 60 * second;

core::checkpoint_report report(const std::string& manifest) {
  core::checkpoint_report r;
  r.manifest_path = manifest;
  return r;
}

C::handoff_start handoff(const std::string& job_id) {
  C::handoff_start h;
  h.id = job_id;
  h.reason = "preempted";
  return h;
}

struct preemption_fixture : test::core_under_test, ::testing::Test {
  principal admin = principal::operator_named("admin");

  preemption_fixture() {
    // Palmetto's condo model: the owner partition preempts the general one; a QOS that
    // preempts the scavenger QOS; GWDG-style tiers otherwise.
    s.priority.partitions = {{"normal", 1, 1}, {"owner", 10, 1, {"normal"}}, {"test", 100, 10}};
    s.priority.qos = {{"normal", 0, 0}, {"urgent", 0, 0, {"scavenger"}}, {"scavenger", 0, 0}};
    s.priority.preempt_grace_seconds = 120;
    run(principal::loop(), C::recalculate_priorities{});  // records the policy
  }

  using tweak = std::function<void(C::create_job&)>;
  static tweak in(const std::string& partition) {
    return [partition](C::create_job& c) { c.partition = partition; };
  }
  static tweak qos(const std::string& q) {
    return [q](C::create_job& c) { c.qos = q; };
  }
  static tweak nice(int64_t n) {
    return [n](C::create_job& c) { c.nice = n; };
  }

  std::string job(const std::string& name, tweak t = nullptr) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b";
    if (t) t(c);
    auto out = run(admin, c);
    EXPECT_FALSE(out.answer.error) << out.answer.error->message;
    now += second;
    return c.id;
  }
  std::string worker(const std::string& name, int gpus = 1, std::optional<core::time_us> ends = std::nullopt) {
    C::register_worker r;
    r.new_id = test::uid(name);
    r.gpu_model = "A100";
    r.gpu_count = gpus;
    r.credential_sha256 = "00";
    r.allocation_ends_at = ends;
    auto o = run(principal::operator_named("admin"), r);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    return r.new_id;
  }
  // The worker polls and starts what it gets.
  std::optional<std::string> take(const std::string& worker_id) {
    auto got = poll(worker_id);
    if (got) {
      EXPECT_FALSE(run(principal::of_worker(worker_id), C::start_job{*got}).answer.error);
    }
    now += second;
    return got;
  }
  // A worker that registers and at once takes and starts a new job (the only one waiting, on
  // the only idle worker, so nothing else decides who gets what): {worker, job}.
  std::pair<std::string, std::string> running(const std::string& name, tweak t = nullptr, int gpus = 1,
                                              std::optional<core::time_us> ends = std::nullopt) {
    auto wk = worker("w-" + name, gpus, ends);
    auto id = job(name, std::move(t));
    EXPECT_EQ(take(wk), id);
    return {wk, id};
  }
  void heartbeat_all() {
    for (const auto& [id, wk] : w.workers)
      if (!wk.gone) leases.touch(id, now);
  }
  // One preemption check, applied and logged as the scheduler does; its record (or null).
  // The decision re-derives from the events before it, job events included.
  json check(bool heartbeats = true) {
    if (heartbeats) heartbeat_all();
    auto d = core::preemption_check(w, leases, s, now);
    if (d.events.empty()) return nullptr;
    core::world replayed;
    for (const auto& [dd, at] : log) core::apply(replayed, dd, at);
    auto in = core::preemption_inputs_of(std::get<core::ev::preemptions_decided>(d.events[0].payload));
    auto again = core::decide_preemptions(replayed, in.stale, in.rule, now);
    EXPECT_EQ(again.events.size(), d.events.size());
    for (size_t i = 0; i < std::min(again.events.size(), d.events.size()); ++i) {
      EXPECT_EQ(again.events[i].stream, d.events[i].stream);
      EXPECT_EQ(again.events[i].type(), d.events[i].type());
      EXPECT_EQ(baton::core::payload_json(again.events[i]), baton::core::payload_json(d.events[i]));
    }
    core::apply(w, d, now);
    log.emplace_back(d, now);
    return baton::core::payload_json(d.events[0]);
  }
  const core::job& j(const std::string& id) { return *w.find_job(id); }
  std::vector<std::string> types_of(const json& record_events) {
    std::vector<std::string> out;
    for (const auto& e : record_events) out.push_back(e);
    return out;
  }
  R::control control(const std::string& worker_id, const std::string& job_id) {
    auto o = run(principal::of_worker(worker_id), C::job_control{job_id});
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    return std::get<R::control>(o.answer.value);
  }
};

TEST_F(preemption_fixture, NothingIsPreemptedWhileAnIdleWorkerCanRunTheJob) {
  auto a = worker("a"), b = worker("b");
  auto low = job("low");
  ASSERT_EQ(take(a), low);
  auto owner = job("owner", in("owner"));
  EXPECT_TRUE(check().is_null()) << "worker b is idle: the owner job goes there, nobody is preempted";
  EXPECT_EQ(poll(b), owner);
  EXPECT_EQ(j(low).status, core::job_status::running);
}

TEST_F(preemption_fixture, TheLowestPriorityJobHandsOffAndResumesFromItsCheckpointWithNoAttemptCharged) {
  auto [a, j0] = running("nice0");
  auto [b, j100] = running("nice100", nice(100));
  auto [c, j50] = running("nice50", nice(50));
  ASSERT_FALSE(run(principal::of_worker(b), C::checkpoint_job{j100, report("/ck/m1.json")}).answer.error);
  auto owner = job("owner", in("owner"));
  EXPECT_TRUE(j(owner).preemptor);

  auto record = check();
  ASSERT_TRUE(record.is_object());
  ASSERT_EQ(record["preemptions"].size(), 1u) << record.dump();
  auto p = record["preemptions"][0];
  EXPECT_EQ(p["job_id"], j100) << "the lowest priority (nice 100) is the victim";
  EXPECT_EQ(p["worker_id"], b);
  EXPECT_EQ(p["by"], owner);
  EXPECT_EQ(p["mode"], "requeue");
  EXPECT_EQ(p["grace_until"], util::format_time_us(now + 120 * second));
  EXPECT_EQ(record["waiting"], 0);
  EXPECT_EQ(j(j100).preempted_by, owner);
  EXPECT_EQ(j(j100).status, core::job_status::running) << "it keeps running until it hands off";

  // The victim's worker hears it on its next heartbeat and on its control check.
  auto hb = run(principal::of_worker(b), C::heartbeat{b, j100, std::nullopt, std::nullopt});
  auto* ack = std::get_if<R::heartbeat_ack>(&hb.answer.value);
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->preempt.by, owner);
  EXPECT_EQ(ack->preempt.mode, "requeue");
  auto ctl = control(b, j100);
  ASSERT_TRUE(ctl.preempt);
  EXPECT_FALSE(ctl.cancellation_requested) << "hand off, not stop dead";
  auto other = run(principal::of_worker(a), C::heartbeat{a, j0, std::nullopt, std::nullopt});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(other.answer.value)) << "other workers hear nothing";
  EXPECT_TRUE(check().is_null()) << "one victim per preemptor: no second preemption while the first leaves";

  // It checkpoints and hands off: back in the queue with that checkpoint, no attempt lost.
  ASSERT_FALSE(run(principal::of_worker(b), handoff(j100)).answer.error);
  ASSERT_FALSE(run(principal::of_worker(b), C::handoff_complete{j100, report("/ck/m2.json")}).answer.error);
  EXPECT_EQ(j(j100).status, core::job_status::queued);
  EXPECT_EQ(j(j100).latest_checkpoint_manifest_path, "/ck/m2.json");
  EXPECT_EQ(j(j100).lost_workers, 0u);
  EXPECT_TRUE(j(j100).preempted_by.empty());
  EXPECT_EQ(j(j100).preemptions, 1u);
  EXPECT_EQ(w.preemptions_in_flight, 0u);

  // The freed worker takes the preemptor; later the victim resumes from its checkpoint.
  EXPECT_EQ(take(b), owner);
  ASSERT_FALSE(run(principal::of_worker(c), C::complete_job{j50}).answer.error);
  auto o = run(principal::of_worker(c), C::request_job{c});
  auto* answer = std::get_if<R::poll_answer>(&o.answer.value);
  ASSERT_TRUE(answer && answer->assigned);
  EXPECT_EQ(answer->assigned->job_id, j100);
  EXPECT_EQ(answer->assigned->latest_checkpoint_manifest_path, "/ck/m2.json");
  EXPECT_EQ(answer->assigned->attempt, 2u);
}

TEST_F(preemption_fixture, AmongEqualPrioritiesTheJobThatStartedLastIsPreempted) {
  auto first = running("first").second;
  auto second_job = running("second").second;
  ASSERT_EQ(j(first).priority, j(second_job).priority);
  job("owner", in("owner"));
  auto record = check();
  ASSERT_EQ(record["preemptions"].size(), 1u);
  EXPECT_EQ(record["preemptions"][0]["job_id"], second_job) << "the least work is lost";
}

TEST_F(preemption_fixture, InteractiveAndNoRequeueVictimsAreCancelledAndTheWorkerMovesOn) {
  auto [a, session] = running("session", [](C::create_job& c) { c.interactive = true; });
  auto [b, once] = running("once", [](C::create_job& c) { c.requeue = false; });
  auto o1 = job("owner1", in("owner")), o2 = job("owner2", in("owner"));
  auto record = check();
  ASSERT_EQ(record["preemptions"].size(), 2u) << record.dump();
  for (const auto& p : record["preemptions"]) EXPECT_EQ(p["mode"], "cancel");
  EXPECT_EQ(j(session).status, core::job_status::cancelling);
  EXPECT_EQ(j(once).status, core::job_status::cancelling);
  EXPECT_TRUE(control(a, session).cancellation_requested) << "the cancel path: the payload stops";
  // Each worker stops and polls: its job is cancelled and it gets a preemptor.
  auto got_a = poll(a);
  EXPECT_EQ(j(session).status, core::job_status::cancelled);
  auto got_b = poll(b);
  EXPECT_EQ(j(once).status, core::job_status::cancelled);
  EXPECT_EQ((std::set<std::optional<std::string>>{got_a, got_b}), (std::set<std::optional<std::string>>{o1, o2}));
}

TEST_F(preemption_fixture, AVictimsWorkerTakenByAnotherPreemptorStillCountsAsBeingLeft) {
  auto [a, batch] = running("batch", nice(100));
  auto [b, session] = running("session", [](C::create_job& c) {
    c.nice = 50;
    c.interactive = true;
  });
  auto [c, high] = running("high");
  auto o1 = job("owner1", in("owner")), o2 = job("owner2", in("owner"));
  auto record = check();
  ASSERT_EQ(record["preemptions"].size(), 2u) << record.dump();
  EXPECT_EQ(record["preemptions"][0]["job_id"], batch);
  EXPECT_EQ(record["preemptions"][0]["by"], o1);
  EXPECT_EQ(record["preemptions"][1]["job_id"], session);
  EXPECT_EQ(record["preemptions"][1]["by"], o2);
  // The cancelled session leaves first, and its worker goes to the first preemptor in the
  // order, owner1, whose victim is still handing off. That worker is now owner2's.
  EXPECT_EQ(take(b), o1);
  EXPECT_EQ(j(session).status, core::job_status::cancelled);
  auto again = check();
  EXPECT_TRUE(again.is_null()) << "no third victim while batch's worker is being left: " << again.dump();
  EXPECT_TRUE(j(high).preempted_by.empty());
  ASSERT_FALSE(run(principal::of_worker(a), handoff(batch)).answer.error);
  ASSERT_FALSE(run(principal::of_worker(a), C::handoff_complete{batch, report("/ck/m1.json")}).answer.error);
  EXPECT_EQ(take(a), o2);
  EXPECT_TRUE(check().is_null());
  EXPECT_EQ(j(high).status, core::job_status::running);
  (void)c;
}

TEST_F(preemption_fixture, AJobNotYetStartedGoesStraightBackToTheQueue) {
  auto a = worker("a");
  auto low = job("low");
  ASSERT_EQ(poll(a), low);  // assigned, not started
  auto owner = job("owner", in("owner"));
  auto record = check();
  ASSERT_EQ(record["preemptions"].size(), 1u);
  EXPECT_EQ(record["preemptions"][0]["from_status"], "assigned");
  EXPECT_EQ(j(low).status, core::job_status::queued);
  EXPECT_EQ(j(low).lost_workers, 0u);
  EXPECT_TRUE(run(principal::of_worker(a), C::start_job{low}).answer.error) << "its start is refused: it moved on";
  EXPECT_EQ(poll(a), owner);
}

TEST_F(preemption_fixture, WhenTheGraceEndsBatondTakesTheWorkerBack) {
  auto [a, batch] = running("batch");
  auto [b, session] = running("session", [](C::create_job& c) { c.interactive = true; });
  ASSERT_FALSE(run(principal::of_worker(a), C::checkpoint_job{batch, report("/ck/m1.json")}).answer.error);
  job("owner1", in("owner"));
  job("owner2", in("owner"));
  ASSERT_EQ(check()["preemptions"].size(), 2u);
  ASSERT_EQ(core::next_grace_end(w), now + 120 * second);
  now += 119 * second;
  EXPECT_TRUE(check().is_null()) << "not yet";
  now += 2 * second;
  auto record = check();
  ASSERT_TRUE(record.is_object());
  ASSERT_EQ(record["expired"].size(), 2u) << record.dump();
  EXPECT_EQ(j(batch).status, core::job_status::queued);
  EXPECT_EQ(j(batch).latest_checkpoint_manifest_path, "/ck/m1.json") << "it resumes from its last checkpoint";
  EXPECT_EQ(j(batch).lost_workers, 0u);
  EXPECT_EQ(j(session).status, core::job_status::cancelled);
  EXPECT_EQ(j(session).failure_reason, "preempted");
  EXPECT_FALSE(core::next_grace_end(w));
  // The workers still running them are told to stop at their next control check.
  EXPECT_TRUE(control(a, batch).cancellation_requested) << "the job moved on without this worker";
  EXPECT_FALSE(w.held_job(a));
  EXPECT_FALSE(w.held_job(b));
}

TEST_F(preemption_fixture, OnlyWhatTheRulesAllowIsPreempted) {
  running("owned", in("owner"));
  auto [b, test_job] = running("test", in("test"));
  auto owner = job("owner", in("owner"));
  EXPECT_TRUE(check().is_null()) << "owner preempts normal only: neither an owner nor a test job";
  job("urgent", qos("urgent"));
  EXPECT_TRUE(check().is_null()) << "urgent preempts scavenger jobs, and none run";
  ASSERT_FALSE(run(principal::of_worker(b), C::complete_job{test_job}).answer.error);
  EXPECT_TRUE(check().is_null()) << "b is idle: the owner job, first in order, goes there without preempting";
  EXPECT_EQ(take(b), owner);
}

TEST_F(preemption_fixture, QosPreemptionAndTwoPreemptorsTakeTwoVictims) {
  auto s1 = running("s1", qos("scavenger")).second;
  auto s2 = running("s2", qos("scavenger")).second;
  running("n");
  auto u1 = job("u1", qos("urgent")), u2 = job("u2", qos("urgent"));
  auto record = check();
  ASSERT_EQ(record["preemptions"].size(), 2u) << record.dump();
  EXPECT_EQ(record["preemptions"][0]["by"], u1) << "preemptors in evaluation order";
  EXPECT_EQ(record["preemptions"][0]["job_id"], s2) << "the scavenger job that started last";
  EXPECT_EQ(record["preemptions"][1]["by"], u2);
  EXPECT_EQ(record["preemptions"][1]["job_id"], s1) << "the normal-QOS job is not urgent's to preempt";
}

TEST_F(preemption_fixture, AVictimsWorkerMustBeAbleToRunThePreemptor) {
  running("on-small", nice(100), 1);  // the lowest priority, but its worker is too small
  auto on_big = running("on-big", nullptr, 4).second;
  running("on-short", nice(50), 4, now + 20 * minute);  // a checkpointing job fits its 20 minutes
  job("owner4", [](C::create_job& c) {
    c.partition = "owner";
    c.gpu_count = 4;
    c.time_limit_seconds = 3600;
    c.checkpoints = false;
  });
  auto record = check();
  ASSERT_EQ(record["preemptions"].size(), 1u) << record.dump();
  EXPECT_EQ(record["preemptions"][0]["job_id"], on_big)
      << "1 GPU cannot run it, and 20 minutes left cannot hold an hour that does not checkpoint";
  EXPECT_EQ(record["deadline"]["min_useful_seconds"], s.deadlines.min_useful_seconds);
}

TEST_F(preemption_fixture, AJobOnAStaleWorkerIsNotAVictim) {
  auto [a, ja] = running("ja", nice(100));
  auto [b, jb] = running("jb");
  now += 10 * minute;
  leases.touch(b, now);  // a's lease ran out: it would not hear
  job("owner", in("owner"));
  auto record = check(false);
  ASSERT_EQ(record["preemptions"].size(), 1u);
  EXPECT_EQ(record["preemptions"][0]["job_id"], jb);
  EXPECT_EQ(record["stale_excluded"], json::array({a}));
  (void)ja;
}

TEST_F(preemption_fixture, PreemptorsComeFirstInTheEvaluationOrder) {
  auto in_test = job("in-test", in("test"));   // tier 100
  auto urgent = job("urgent", qos("urgent"));  // tier 1, but it may preempt
  job("plain");
  auto a = worker("a");
  EXPECT_EQ(poll(a), urgent);
  EXPECT_TRUE(j(urgent).preemptor);
  EXPECT_FALSE(j(in_test).preemptor);
}

TEST_F(preemption_fixture, APreemptorNeverPreemptsAJobConsideredBeforeIt) {
  s.priority.partitions[1].preempt = {"normal", "owner"};  // owner jobs may preempt owner jobs considered after them
  run(principal::loop(), C::recalculate_priorities{});
  running("first", in("owner"));
  job("lower", [](C::create_job& c) {
    c.partition = "owner";
    c.nice = 10;
  });
  EXPECT_TRUE(check().is_null()) << "the running owner job has the higher priority";
  job("same", in("owner"));
  EXPECT_TRUE(check().is_null()) << "same priority, submitted later: still after the running job";
}

TEST_F(preemption_fixture, WithoutRulesNothingIsEverPreempted) {
  s.priority.partitions = {{"normal", 1, 1}, {"test", 100, 10}};
  s.priority.qos = {{"normal", 0, 0}};
  run(principal::loop(), C::recalculate_priorities{});
  EXPECT_FALSE(core::preemption_in_play(w));
  running("low");
  job("top", in("test"));
  EXPECT_TRUE(check().is_null());
  EXPECT_FALSE(baton::events::from_cbor<core::ev::policy_record>(w.priority.policy_cbor).preempt_grace_seconds)
      << "older policy records stay equal";
}

}  // namespace
