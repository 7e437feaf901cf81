// Preemption end to end: a real batond, real baton-workers, real payloads. An owner
// partition's jobs preempt the general partition's: the lowest-priority batch job checkpoints,
// hands off, is requeued and later resumes from that checkpoint; an interactive job is
// cancelled; the preemptors run on the freed workers; every decision re-derives.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>

#include "core/util/time.hpp"
#include "support/worker_e2e.hpp"

using namespace baton;
using namespace baton::test;

namespace {

struct preemption_e2e : worker_e2e {
  std::string config() const override {
    // fast_config's, plus an owner partition that preempts the general one.
    return "workers: {heartbeat_interval_seconds: 1, heartbeat_timeout_multiplier: 2, reaper_interval_seconds: 1}\n"
           "scheduling:\n"
           "  min_useful_seconds: 1\n"
           "  backfill: {bf_interval_seconds: 1}\n"
           "  partitions: {normal: {priority_tier: 1}, owner: {priority_tier: 10, preempt: [normal]}}\n"
           "  preempt_grace_seconds: 60\n";
  }

  // The recorded time of the job's first event of this type (from its history), or nullopt.
  std::optional<int64_t> event_time(const std::string& id, const std::string& type) {
    auto history = get(*op, "/jobs/" + id + "/history");
    for (auto& e : history["events"])
      if (e["event_type"] == type) return util::parse_time_us(e["occurred_at"].get<std::string>());
    return std::nullopt;
  }
};

}  // namespace

TEST_F(preemption_e2e, AnOwnerJobPreemptsTheLowestBatchJobWhichResumesLaterWhileAnInteractiveVictimIsCancelled) {
  auto log = dir / "payload.log";
  // Three long jobs on three workers: the batch job of lowest priority, the interactive
  // session next, and a batch job nobody should touch.
  create_job("low", make_bundle("low", counting_script(40, 0.1, log)), {{"nice", 100}});
  create_job("session", make_bundle("session", counting_script(6000, 0.1, log)), {{"nice", 50}, {"interactive", true}});
  create_job("high", make_bundle("high", counting_script(60, 0.1, log)));
  std::vector<std::unique_ptr<child_process>> workers;
  for (int i = 0; i < 3; ++i) workers.push_back(start_worker());
  for (auto name : {"low", "session", "high"}) ASSERT_TRUE(wait_status(name, "running", 15s)) << name;
  ASSERT_TRUE(wait_until([&] { return checkpointed_steps("low") >= 3; }, 15s));
  auto low_worker = job("low")["assigned_worker_id"], session_worker = job("session")["assigned_worker_id"];

  // Each preemptor waits at a gate the test opens only once both run, so the two cannot take
  // turns on the first worker freed (the cancelled session's frees long before the hand-off).
  auto gate = dir / "owners-may-finish";
  auto owner_script = [&](const std::string& name) {
    return "while [ ! -e " + gate + " ]; do sleep 0.05; done\necho \"ran " + name + "\" >> " + log + "\n";
  };
  create_job("owner1", make_bundle("owner1", owner_script("owner1")), {{"partition", "owner"}});
  create_job("owner2", make_bundle("owner2", owner_script("owner2")), {{"partition", "owner"}});

  // The batch victim is told within a heartbeat, checkpoints, hands off and goes back to the queue.
  ASSERT_TRUE(wait_until([&] { return job("low")["preemptions"] == 1 && status("low") != "running"; }, 15s)) << job("low");
  ASSERT_TRUE(wait_status("session", "cancelled", 15s)) << job("session");
  EXPECT_EQ(job("session")["failure_reason"], "preempted");
  ASSERT_TRUE(wait_status("owner1", "running", 15s)) << job("owner1");
  ASSERT_TRUE(wait_status("owner2", "running", 15s)) << job("owner2");
  std::ofstream{gate};
  ASSERT_TRUE(wait_status("owner1", "completed", 15s)) << job("owner1");
  ASSERT_TRUE(wait_status("owner2", "completed", 15s)) << job("owner2");
  std::set<json> owner_workers{job("owner1")["assigned_worker_id"], job("owner2")["assigned_worker_id"]};
  EXPECT_EQ(owner_workers, (std::set<json>{low_worker, session_worker})) << "the preemptors run where the victims ran";
  auto low_types = event_types("low");
  for (auto t : {"job.preempted", "job.handoff_started", "job.handoff_completed"})
    EXPECT_NE(std::find(low_types.begin(), low_types.end(), t), low_types.end())
        << t << " in " << testing::PrintToString(low_types);
  auto history = get(*op, "/jobs/low/history");
  for (auto& e : history["events"])
    if (e["event_type"] == "job.handoff_started") {
      EXPECT_EQ(e["payload"]["reason"], "preempted") << e;
    }

  // The untouched job finishes; the victim resumes from the checkpoint it handed off with.
  ASSERT_TRUE(wait_status("high", "completed", 30s)) << job("high");
  ASSERT_TRUE(wait_status("low", "completed", 30s)) << job("low");
  auto low = job("low");
  EXPECT_EQ(low["lost_workers"], 0) << "a preemption charges no attempt";
  EXPECT_EQ(low["attempts"], 2);
  auto text = test::slurp(log);
  auto starts = starts_in(text);
  int resumed_at = -1;
  for (const auto& [step, attempt] : starts)
    if (attempt == 2) resumed_at = step;  // "low" is the only job with a second attempt
  EXPECT_GT(resumed_at, 0) << "it resumed from its checkpoint, not from zero:\n" << text;
  EXPECT_NE(text.find("done 40 attempt 2"), std::string::npos) << text;
  EXPECT_EQ(job("high")["attempts"], 1) << "the job of normal priority was never preempted: "
                                        << get(*op, "/jobs/high/history").dump(1);

  auto submitted = event_time("owner1", "job.created"), told = event_time("low", "job.preempted"),
       handed = event_time("low", "job.handoff_started");
  if (submitted && told && handed)
    std::cout << "[ info ] preemptor submitted -> victim told " << (*told - *submitted) / 1000.0
              << " ms -> victim's hand-off started " << (*handed - *told) / 1000.0 << " ms\n";

  for (auto& w : workers) w->signal(SIGTERM);
  for (auto& w : workers) EXPECT_EQ(test::exit_code(w->wait(15s)), 0) << w->err();
  ASSERT_EQ(b->stop(), 0) << b->err();
  test::child_process tool({BATOND_PATH, "--data-dir", dir / "data", "--rederive"}, dir / "rederive", {"BATON_CONFIG=/dev/null"});
  EXPECT_EQ(test::exit_code(tool.wait()), 0) << tool.err();
  EXPECT_EQ(tool.out().find(" 0 preemption decisions"), std::string::npos) << tool.out();
  b->start();  // for TearDown
}
