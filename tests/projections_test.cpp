// Projections fed by a real log writer on a real RocksDB log in a temp dir: catch-up,
// rebuild from sequence 1 after a restart, events racing the catch-up, read consistency
// after an acknowledged append, gap refusal and offsets, and an event a projection cannot
// apply as recorded counted while everything goes on. The dashboard's per-minute counts
// (minute_stats): a known log's minutes, per user, windowed, and the same after a rebuild.
#include <caf/all.hpp>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>

#include <map>
#include <thread>

#include "actors/log_writer.hpp"
#include "core/jobs/job.hpp"
#include "core/jobs/job_events.hpp"
#include "core/util/time.hpp"
#include "events/json_text.hpp"
#include "events/payload.hpp"
#include "projections/background_priority.hpp"
#include "projections/job_history.hpp"
#include "projections/minute_stats.hpp"
#include "projections/offsets.hpp"
#include "projections/runner.hpp"
#include "projections/sql_batch.hpp"
#include "projections/sql_rows.hpp"
#include "support/commands.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using nlohmann::json;
using std::chrono::seconds;

namespace {

using results = std::vector<events::append_result>;

caf::actor_system_config two_threads() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  return cfg;
}

results append(caf::actor_system& sys, const actors::log_writer_actor& log, std::vector<events::append_command> cmds) {
  caf::scoped_actor self{sys};
  results out;
  self->request(log, caf::infinite, actors::append_atom::value, std::move(cmds))
      .receive([&](results& r) { out = std::move(r); }, [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  return out;
}

events::append_command job_event(const std::string& id, const std::string& type, json payload, int64_t at_s,
                                 const std::string& actor = "operator:test") {
  auto c = test::command(core::job_stream(id), type, std::move(payload));
  c.recorded_at_us = 1'700'000'000'000'000 + at_s * 1'000'000;
  c.actor = actor;
  return c;
}

// A job's whole life: created, run on w1, lost, run again on w2, completed; and a second job
// that is cancelled while queued. Interleaved with events of other streams.
std::vector<events::append_command> scenario(const std::string& a, const std::string& b) {
  return {
      job_event(a, "job.created", {{"title", "A"}, {"input_bundle_path", "/b/a"}, {"worker_image_key", "default"}}, 0),
      test::command("worker/w1", "worker.registered", {{"platform", "hpc"}}),
      job_event(b, "job.created", {{"title", "B"}, {"input_bundle_path", "/b/b"}, {"worker_image_key", "default"}}, 1),
      job_event(a, "job.assigned", {{"worker_id", "w1"}, {"attempt", 1}}, 2, "worker:w1"),
      job_event(a, "job.started", {{"worker_id", "w1"}}, 3, "worker:w1"),
      job_event(a, "job.checkpointed", {{"worker_id", "w1"}, {"progress", 0.5}}, 10, "worker:w1"),
      job_event(a, "job.requeued_after_reap", {{"worker_id", "w1"}, {"from_status", "running"}}, 20, "loop:reaper"),
      job_event(b, "job.cancelled", {{"from_status", "queued"}}, 21),
      job_event(a, "job.assigned", {{"worker_id", "w2"}, {"attempt", 2}}, 30, "worker:w2"),
      job_event(a, "job.started", {{"worker_id", "w2"}}, 31, "worker:w2"),
      job_event(a, "job.completed", {{"worker_id", "w2"}}, 45, "worker:w2"),
      test::command("daemon", "daemon.stopped"),
  };
}

// What GET /jobs/{id}/history answered when it read the job's stream from the store
// (http/job_history.cpp before projections): the projection must render the same bytes.
std::optional<json> reference_history(const events::event_store& store, const std::string& job_id) {
  auto evs = store.read_stream(core::job_stream(job_id), 1, SIZE_MAX);
  if (evs.empty()) return std::nullopt;
  core::job j;
  j.id = job_id;
  json items = json::array();
  core::time_us last_at = 0;
  for (const auto& e : evs) {
    json payload = events::from_payload(e.payload);
    auto before = j.status;
    bool existed = j.created_at != 0;
    core::evolve(j, e.type, payload, e.recorded_at_us);
    last_at = e.recorded_at_us;
    items.push_back({{"occurred_at", util::format_time_us(e.recorded_at_us)},
                     {"event_seq", e.stream_version},
                     {"log_seq", e.seq},
                     {"event_type", e.type},
                     {"actor", e.actor},
                     {"worker_id", payload.value("worker_id", "").empty() ? json(nullptr) : payload["worker_id"]},
                     {"status_from", existed && before != j.status ? json(core::to_string(before)) : json(nullptr)},
                     {"status_to", !existed || before != j.status ? json(core::to_string(j.status)) : json(nullptr)},
                     {"payload", payload},
                     {"derived", false}});
  }
  json segments = json::array();
  std::map<std::string, std::pair<double, int>> totals;
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

// Records the sequence of every event it is given.
class recording_projection : public projections::projection {
 public:
  recording_projection() : projection("recorder") {}
  std::vector<uint64_t> seen;  // read only after wait_applied() returned (it synchronises)

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override {
    for (const auto& e : batch) seen.push_back(e.seq);
  }
};

// Applies what it can read, as the SQL views and the live feed do: an event whose actor is not
// UTF-8 (a log from before batond checked the headers it records) is skipped and counted.
class fussy_projection : public projections::projection {
 public:
  fussy_projection() : projection("fussy") {}
  std::vector<uint64_t> seen;  // read only after wait_applied() returned

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override {
    for (const auto& e : batch) {
      if (!events::is_utf8(e.actor))
        skip(e.seq, "its actor is not UTF-8");
      else
        seen.push_back(e.seq);
      if (!events::is_utf8(e.actor)) skip(e.seq, "counted once");
    }
  }
};

const auto soon = [] { return std::chrono::steady_clock::now() + seconds(30); };

// Stops the given actors when the test leaves its scope, failed assertions included:
// ~actor_system would otherwise wait for them forever.
// A real log writer on the store in its own actor system, and the projections started on it;
// all of them are told to stop when it goes out of scope (projections first, then the writer).
struct live_log {
  caf::actor_system_config cfg = two_threads();
  caf::actor_system sys{cfg};
  actors::log_writer_actor log;
  std::vector<caf::actor> started;

  explicit live_log(std::shared_ptr<events::event_store> store, actors::log_writer_options o = {})
      : log(actors::spawn_log_writer(sys, std::move(store), o)) {}
  projections::running_projection start(std::shared_ptr<projections::projection> p, projections::projection_options o = {}) {
    auto run = projections::run_projection(sys, log, std::move(p), o);
    started.push_back(run.actor);
    return run;
  }
  ~live_log() {
    for (auto& a : started) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
  }
};

}  // namespace

TEST(Projections, JobHistoryRendersTheJobsStreamAsTheStreamReadItReplacesDid) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  auto events = scenario("a", "b");
  store->append(events);
  projections::job_history history(store);
  auto r = history.read("a");
  ASSERT_TRUE(r.available) << r.why;
  ASSERT_TRUE(r.history);
  EXPECT_EQ(r.history->dump(), reference_history(*store, "a")->dump());
  EXPECT_EQ(history.history("b")->dump(), reference_history(*store, "b")->dump());
  EXPECT_FALSE(history.history("nobody"));

  // Spot checks of the shape, so a shared mistake in both renderings would still show.
  const auto& h = *r.history;
  ASSERT_EQ(h["events"].size(), 8u);
  EXPECT_EQ(h["events"][0]["status_from"], nullptr);
  EXPECT_EQ(h["events"][0]["status_to"], "queued");
  EXPECT_EQ(h["events"][1]["worker_id"], "w1");
  EXPECT_EQ(h["events"][3]["status_to"], nullptr) << "a checkpoint changes no status";
  EXPECT_EQ(h["events"][4]["status_from"], "running");
  EXPECT_EQ(h["events"][4]["status_to"], "queued");
  ASSERT_EQ(h["worker_segments"].size(), 2u);
  EXPECT_EQ(h["worker_segments"][0]["duration_seconds"], 17.0);  // started at 3, lost at 20
  EXPECT_EQ(h["worker_segments"][1]["duration_seconds"], 14.0);  // started at 31, completed at 45
  EXPECT_EQ(h["worker_totals"][1]["worker_id"], "w2");
}

TEST(Projections, RebuiltFromSequenceOneAfterARestartSeesTheSameEventsAndRecordsItsOffset) {
  test::temp_dir dir;
  std::vector<uint64_t> first;
  uint64_t last = 0;
  for (int run_no = 0; run_no < 2; ++run_no) {
    std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
    auto rec = std::make_shared<recording_projection>();
    {
      live_log live(store);
      auto run = live.start(rec);
      ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
      if (run_no == 0) {
        append(live.sys, live.log, scenario("a", "b"));
        append(live.sys, live.log, scenario("c", "d"));
        last = store->last_seq();
        ASSERT_TRUE(rec->wait_applied(last, soon()));
        first = rec->seen;
      } else {
        EXPECT_EQ(rec->applied_seq(), last) << "rebuilt from sequence 1 to the log's end";
        EXPECT_EQ(rec->seen, first);
      }
    }
    projections::record_offset(*store, *rec);  // as batond does at a clean stop
    EXPECT_EQ(store->projection_offset("recorder"), last);
  }
}

TEST(Projections, EventsAppendedDuringCatchUpAreAppliedExactlyOnceInOrder) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  for (int i = 0; i < 2500; ++i) store->append({test::command("old/" + std::to_string(i % 7), "t")});
  live_log live(store, {4096, 100});  // small chunks: a long catch-up
  auto rec = std::make_shared<recording_projection>();
  std::vector<std::thread> producers;
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) append(live.sys, live.log, {test::command("new", "t")});
    });
  auto run = live.start(rec);  // races the producers
  for (auto& t : producers) t.join();
  ASSERT_EQ(store->last_seq(), 2900u);
  ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
  ASSERT_TRUE(rec->wait_applied(2900, soon())) << rec->failure().value_or("");
  ASSERT_EQ(rec->seen.size(), 2900u);
  for (size_t i = 0; i < rec->seen.size(); ++i) ASSERT_EQ(rec->seen[i], i + 1) << "at index " << i;
  EXPECT_FALSE(rec->failure());
}

TEST(Projections, AJobHistoryReadRightAfterAnAcknowledgedAppendSeesIt) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  projections::job_history history(store);
  for (int i = 0; i < 200; ++i) {
    std::string id = "job-" + std::to_string(i);
    auto r = append(live.sys, live.log, {job_event(id, "job.created", {{"title", id}}, i)});
    ASSERT_TRUE(!r.empty() && r[0].ok());
    auto h = history.read(id);
    ASSERT_TRUE(h.available) << h.why;
    ASSERT_TRUE(h.history) << "read " << i << " missed the job it follows";
    EXPECT_EQ((*h.history)["events"][0]["event_type"], "job.created");
  }
}

TEST(Projections, AGapOrARepeatStopsTheProjection) {
  auto batch = [](std::vector<uint64_t> seqs) {
    std::vector<events::event_envelope> out;
    for (auto s : seqs) {
      events::event_envelope e;
      e.seq = s;
      e.stream_id = "x";
      out.push_back(e);
    }
    return out;
  };
  recording_projection gap;
  EXPECT_TRUE(gap.apply_batch(batch({1, 2})));
  EXPECT_FALSE(gap.apply_batch(batch({4})));
  EXPECT_EQ(gap.applied_seq(), 2u);
  ASSERT_TRUE(gap.failure());
  EXPECT_NE(gap.failure()->find("expected event 3, got 4"), std::string::npos) << *gap.failure();
  EXPECT_FALSE(gap.wait_applied(3, soon())) << "a failed projection does not make readers wait";
  EXPECT_FALSE(gap.apply_batch(batch({3}))) << "nothing more is applied once failed";

  recording_projection repeat;
  EXPECT_TRUE(repeat.apply_batch(batch({1, 2, 3})));
  EXPECT_FALSE(repeat.apply_batch(batch({3, 4})));
  EXPECT_EQ(repeat.seen, (std::vector<uint64_t>{1, 2, 3}));
}

TEST(Projections, AProjectionWhoseLogWriterStopsFailsAndStopsWaiters) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  auto rec = std::make_shared<recording_projection>();
  auto run = live.start(rec);
  ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
  caf::anon_send_exit(live.log, caf::exit_reason::user_shutdown);
  EXPECT_FALSE(rec->wait_applied(1, soon()));
  ASSERT_TRUE(rec->failure());
  EXPECT_NE(rec->failure()->find("log writer stopped"), std::string::npos) << *rec->failure();
}

// The PostgreSQL view holds several batches' changes until a flush: what each batch changed
// merged, so that the rows written then cover every batch (tests/postgres_view_test.cpp
// compares the rows themselves with a view rebuilt from the log).
TEST(SqlBatch, ChangesMergedOverBatchesKeepTheFirstSegmentCountAndTheLastPrunedForm) {
  projections::sql_batch first, second;
  first.typed.emplace_back();
  first.jobs = {{"a", 1}, {"b", 0}};
  first.workers = {"w1"};
  first.pruned["b"].priority = 1;
  second.jobs = {{"a", 2}, {"c", 3}};  // "a" had a segment more by the second batch
  second.workers = {"w1", "w2"};
  second.fair_share = true;
  second.pruned["b"].priority = 2;
  projections::merge_changes(first, std::move(second));
  EXPECT_TRUE(first.typed.empty()) << "payloads belong to one batch's events";
  EXPECT_EQ(first.jobs, (std::map<std::string, size_t>{{"a", 1}, {"b", 0}, {"c", 3}}));
  EXPECT_EQ(first.workers, (std::set<std::string>{"w1", "w2"}));
  EXPECT_TRUE(first.fair_share);
  EXPECT_FALSE(first.clusters);
  ASSERT_EQ(first.pruned.count("b"), 1u);
  EXPECT_EQ(first.pruned.at("b").priority, 2) << "the later pruned form";
}

TEST(BackgroundPriority, IdleWhileKeepingUpNiceOnceFarBehindAndBackWithHysteresis) {
  using projections::background_mode;
  projections::background_policy p;  // escalate past 5 s behind, relax within 1 s
  EXPECT_EQ(projections::next_background_mode(background_mode::idle, 0, p), background_mode::idle);
  EXPECT_EQ(projections::next_background_mode(background_mode::idle, 5'000'000, p), background_mode::idle);
  EXPECT_EQ(projections::next_background_mode(background_mode::idle, 5'000'001, p), background_mode::nice);
  EXPECT_EQ(projections::next_background_mode(background_mode::nice, 3'000'000, p), background_mode::nice)
      << "between the bounds a mode stays";
  EXPECT_EQ(projections::next_background_mode(background_mode::nice, 1'000'000, p), background_mode::idle);
  EXPECT_EQ(projections::next_background_mode(background_mode::nice, -2'000'000, p), background_mode::idle)
      << "an event from a clock ahead of ours is not behind";
}

namespace {
// Records the scheduling policy and nice value of the thread each batch is applied on.
class policy_recorder : public projections::projection {
 public:
  policy_recorder() : projection("policy_recorder") {}
  std::vector<std::pair<int, int>> seen;  // (policy, nice) per batch; read after wait_applied()

 protected:
  void apply(const std::vector<events::event_envelope>&) override {
    seen.emplace_back(sched_getscheduler(0), getpriority(PRIO_PROCESS, 0));  // 0: this thread (Linux)
  }
};

int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

TEST(BackgroundPriority, ABackgroundProjectionsThreadIsIdleWhileFreshEventsComeAndNiceWhileOldOnesDo) {
  if (!projections::may_leave_idle())
    GTEST_SKIP() << "this process may not leave SCHED_IDLE: background projections stay at nice 10";
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  auto rec = std::make_shared<policy_recorder>();
  auto run = live.start(rec, {true, true});
  ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
  auto at = [&](int64_t recorded_at_us, const char* stream) {
    auto c = test::command(stream, "t");
    c.recorded_at_us = recorded_at_us;
    auto r = append(live.sys, live.log, {c});
    ASSERT_EQ(r.size(), 1u);
    ASSERT_TRUE(rec->wait_applied(r[0].last_seq, soon()));
  };
  at(wall_now_us(), "a");
  ASSERT_EQ(rec->seen.size(), 1u);
  EXPECT_EQ(rec->seen[0].first, SCHED_IDLE) << "keeping up: idle";
  at(wall_now_us() - 3'600'000'000, "b");  // an hour behind (a catch-up)
  EXPECT_EQ(rec->seen[1].first, SCHED_OTHER) << "far behind: a normal thread";
  EXPECT_EQ(rec->seen[1].second, 10) << "at nice 10";
  at(wall_now_us(), "c");
  EXPECT_EQ(rec->seen[2].first, SCHED_IDLE) << "caught up: idle again";
}

TEST(HoldWhileBusy, HeldEventsGoWhenTheLogIsQuietOrNotBusyOrTheyAreOldOrMany) {
  using projections::held_events;
  projections::hold_policy p;  // quiet 200 ms, judged after 100 ms at 1,000 events/s, at most 5 s and 32,768 events
  const int64_t wall = 1'800'000'000'000'000, steady = 1'000'000'000;
  auto held = [&](size_t events, int64_t first_ago_us, int64_t last_ago_us, int64_t oldest_recorded_ago_us) {
    return held_events{events, steady - first_ago_us, steady - last_ago_us, wall - oldest_recorded_ago_us};
  };
  EXPECT_FALSE(projections::release_held({}, steady, wall, p)) << "nothing held";
  EXPECT_FALSE(projections::release_held(held(400, 90'000, 1'000, 90'000), steady, wall, p))
      << "batches still coming, not yet judged";
  EXPECT_FALSE(projections::release_held(held(500, 400'000, 1'000, 400'000), steady, wall, p))
      << "1,250 events/s over 0.4 s: busy";
  EXPECT_TRUE(projections::release_held(held(399, 400'000, 1'000, 400'000), steady, wall, p))
      << "fewer than 1,000 events/s over 0.4 s: not busy";
  EXPECT_FALSE(projections::release_held(held(99, 99'999, 1'000, 99'999), steady, wall, p)) << "not judged before 100 ms";
  EXPECT_TRUE(projections::release_held(held(99, 100'000, 1'000, 100'000), steady, wall, p)) << "judged at 100 ms";
  EXPECT_FALSE(projections::release_held(held(5'000, 2'000'000, 199'999, 2'000'000), steady, wall, p)) << "not quiet yet";
  EXPECT_TRUE(projections::release_held(held(5'000, 2'000'000, 200'000, 2'000'000), steady, wall, p)) << "quiet for 200 ms";
  EXPECT_FALSE(projections::release_held(held(20'000, 4'000'000, 1'000, 4'999'999), steady, wall, p)) << "busy, 5 s not reached";
  EXPECT_TRUE(projections::release_held(held(20'000, 4'000'000, 1'000, 5'000'000), steady, wall, p))
      << "the oldest held event recorded 5 s ago";
  EXPECT_TRUE(projections::release_held(held(1, 0, 0, 3'600'000'000), steady, wall, p)) << "a catch-up's old events go at once";
  EXPECT_FALSE(projections::release_held(held(32'767, 1'000'000, 0, 1'000'000), steady, wall, p));
  EXPECT_TRUE(projections::release_held(held(32'768, 1'000'000, 0, 1'000'000), steady, wall, p)) << "the memory bound";
  EXPECT_FALSE(projections::release_held(held(20'000, 4'000'000, 1'000, -3'600'000'000), steady, wall, p))
      << "events from a clock an hour ahead are not old: busy still holds them";
  EXPECT_TRUE(projections::release_held(held(20'000, 4'000'000, 200'000, -3'600'000'000), steady, wall, p))
      << "and quiet still releases them";
}

namespace {
// Records, for each event applied, the log's last sequence at that moment.
class log_head_recorder : public projections::projection {
 public:
  explicit log_head_recorder(std::shared_ptr<events::event_store> store) : projection("log_head"), store_(std::move(store)) {}
  std::vector<std::pair<uint64_t, uint64_t>> seen;  // (seq, the log's last seq then); read after wait_applied()

 protected:
  void apply(const std::vector<events::event_envelope>& batch) override {
    for (const auto& e : batch) seen.emplace_back(e.seq, store_->last_seq());
  }

 private:
  std::shared_ptr<events::event_store> store_;
};

constexpr int64_t an_hour_us = 3'600'000'000;

// An event recorded now (test::command's are recorded in 2023: old, so never held).
events::append_command fresh(const char* stream) {
  auto c = test::command(stream, "t");
  c.recorded_at_us = wall_now_us();
  return c;
}
}  // namespace

TEST(HoldWhileBusy, ABackgroundProjectionHoldsFreshBatchesUntilItsPolicyReleasesThemInOrder) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  actors::log_writer_options each_batch;  // one message per durable batch: the count is reached at the third
  each_batch.deliver_every = std::chrono::microseconds(0);
  live_log live(store, each_batch);
  projections::projection_options o{true, true};
  o.hold = {an_hour_us, an_hour_us, 0, an_hour_us, 3};  // only the count releases: at 3 events
  auto rec = std::make_shared<log_head_recorder>(store);
  auto run = live.start(rec, o);
  ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
  for (const char* stream : {"a", "b", "c", "d"}) ASSERT_EQ(append(live.sys, live.log, {fresh(stream)}).size(), 1u);
  ASSERT_TRUE(rec->wait_applied(3, soon()));
  ASSERT_EQ(rec->seen.size(), 3u) << "the fourth is held until two more come";
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(rec->seen[i].first, i + 1);
    EXPECT_GE(rec->seen[i].second, 3u) << "event " << i + 1 << " was applied before the third was in the log: not held";
  }
}

TEST(HoldWhileBusy, AQuietLogReleasesWhatIsHeld) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  projections::projection_options o{true, true};
  o.hold = {20'000, an_hour_us, 0, an_hour_us, 1'000'000};  // only quiet releases (20 ms without a batch)
  auto rec = std::make_shared<log_head_recorder>(store);
  auto run = live.start(rec, o);
  ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
  auto r = append(live.sys, live.log, {fresh("a"), fresh("b")});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(rec->wait_applied(r.back().last_seq, soon()));
  ASSERT_EQ(rec->seen.size(), 2u);
  EXPECT_EQ(rec->seen[0].first, 1u);
  EXPECT_EQ(rec->seen[1].first, 2u);
}

TEST(HoldWhileBusy, AForegroundProjectionAppliesEachBatchAsItComes) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  projections::projection_options o;  // on CAF's threads, not background: the policy is not used
  o.hold = {an_hour_us, an_hour_us, 0, an_hour_us, 1'000'000};
  auto rec = std::make_shared<log_head_recorder>(store);
  auto run = live.start(rec, o);
  ASSERT_EQ(projections::wait_caught_up(run, *rec, seconds(30)), std::nullopt);
  auto r = append(live.sys, live.log, {fresh("a")});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(rec->wait_applied(r.back().last_seq, soon()));
}

// An event a projection cannot apply as recorded stops nothing: it is counted once with its
// sequence and why, and that projection, the others and the later events go on. The SQL
// views' row for it holds U+FFFD where its text was not UTF-8 (PostgreSQL refuses such text).
TEST(Projections, AnEventAProjectionCannotApplyIsCountedAndEveryProjectionGoesOn) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  auto rec = std::make_shared<recording_projection>();
  auto fussy = std::make_shared<fussy_projection>();
  live.start(rec);
  live.start(fussy);
  auto r = append(
      live.sys, live.log,
      {job_event("a", "job.created", {{"title", "A"}}, 0), job_event("b", "job.created", {{"title", "B"}}, 1, "operator:\xff"),
       job_event("c", "job.created", {{"title", "C"}}, 2)});
  ASSERT_EQ(r.size(), 3u);
  ASSERT_TRUE(fussy->wait_applied(3, soon())) << fussy->failure().value_or("");
  ASSERT_TRUE(rec->wait_applied(3, soon())) << rec->failure().value_or("");
  EXPECT_EQ(fussy->seen, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(rec->seen, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_FALSE(fussy->failure());
  auto skipped = fussy->skipped();
  EXPECT_EQ(skipped.count, 1u);
  EXPECT_EQ(skipped.last_seq, 2u);
  EXPECT_EQ(skipped.last_why, "its actor is not UTF-8");
  EXPECT_EQ(rec->skipped().count, 0u);
  ASSERT_FALSE(append(live.sys, live.log, {job_event("d", "job.created", {{"title", "D"}}, 3)}).empty());
  EXPECT_TRUE(fussy->wait_applied(4, soon())) << "later events go on";

  auto bad = store->read(2, 1).front();
  std::string damaged;
  auto row = projections::event_row(bad, json{{"user", "\xff"}}, &damaged);
  EXPECT_FALSE(damaged.empty());
  for (const auto& v : row) {
    if (auto* text = std::get_if<std::string>(&v)) {
      EXPECT_TRUE(events::is_utf8(*text)) << *text;
    }
  }
  EXPECT_EQ(std::get<std::string>(row[5]), "operator:\xef\xbf\xbd") << "U+FFFD for the byte";
  std::string none;
  projections::event_row(store->read(1, 1).front(), json{{"title", "A"}}, &none);
  EXPECT_TRUE(none.empty()) << none;
  // From the stored bytes: text that is not UTF-8 in the payload is replaced and named too.
  auto stored = store->read(1, 1).front();
  stored.payload = events::to_payload(json{{"title", "caf\xff"}});
  std::string said;
  auto from_bytes = projections::event_row(stored, &said);
  EXPECT_EQ(said, "its payload holds text that is not UTF-8");
  EXPECT_EQ(std::get<std::string>(from_bytes[6]), "{\"title\":\"caf\xef\xbf\xbd\"}");
}

// --- minute_stats: the dashboard's per-minute counts ---

namespace {

// Minute m of the test's log, second s into it (minutes start on a whole UTC minute).
int64_t at_us(int m, int s = 0) { return (28'333'334LL + m) * 60'000'000 + s * 1'000'000LL; }

events::append_command at(int m, int s, events::append_command c) {
  c.recorded_at_us = at_us(m, s);
  return c;
}
events::append_command ev(const std::string& job, const std::string& type, json payload, int m, int s) {
  return at(m, s, test::command(core::job_stream(job), type, std::move(payload)));
}
events::append_command made(const std::string& job, const std::string& user, int m, int s) {
  return ev(job, "job.created", {{"title", job}, {"input_bundle_path", "/b"}, {"user", user}}, m, s);
}

// Ann's A1..A3, bo's B1, carol's C1 over six minutes; an assignment lost and assigned again, a
// preemption that cancels, a hold (no count changes), a job whose payload is not CBOR, and a
// worker's event that moves the log's time on.
std::vector<events::append_command> minute_scenario() {
  auto bad = made("X1", "", 4, 5);
  bad.events[0].payload = "\xff\xfe not cbor";
  return {
      made("A1", "ann", 0, 1),
      made("A2", "ann", 0, 2),
      made("A3", "ann", 0, 3),
      made("B1", "bo", 0, 4),
      ev("A1", "job.assigned", {{"worker_id", "w1"}}, 0, 10),
      ev("A1", "job.started", {{"worker_id", "w1"}}, 0, 11),
      made("C1", "carol", 1, 0),
      ev("B1", "job.assigned", {{"worker_id", "w2"}}, 2, 0),
      ev("A2", "job.assigned", {{"worker_id", "w3"}}, 2, 1),
      ev("A2", "job.started", {{"worker_id", "w3"}}, 2, 2),
      ev("A1", "job.requeued_after_reap", {{"worker_id", "w1"}}, 2, 30),
      ev("A1", "job.assigned", {{"worker_id", "w4"}}, 3, 0),
      ev("A1", "job.started", {{"worker_id", "w4"}}, 3, 1),
      ev("A3", "job.held", {{"admin", false}}, 3, 2),
      ev("A2", "job.preempted", {{"by", "A1"}, {"mode", "cancel"}}, 3, 3),
      ev("A2", "job.cancelled", json::object(), 3, 4),
      bad,
      ev("A1", "job.completed", {{"worker_id", "w4"}}, 4, 30),
      at(5, 0, test::command("worker/w9", "worker.registered", {{"platform", "hpc"}})),
  };
}

using row = projections::minute_row;
// {minute, assignments, queued at its end, most queued in it, running at its end}
std::vector<row> rows(std::vector<std::array<int64_t, 5>> r) {
  std::vector<row> out;
  for (const auto& x : r) out.push_back({at_us(static_cast<int>(x[0])), static_cast<uint64_t>(x[1]), x[2], x[3], x[4]});
  return out;
}
const std::vector<row> every_job =
    rows({{0, 1, 3, 4, 1}, {1, 0, 4, 4, 1}, {2, 2, 3, 4, 1}, {3, 1, 2, 3, 1}, {4, 0, 3, 3, 0}, {5, 0, 3, 3, 0}});
const std::vector<row> anns =
    rows({{0, 1, 2, 3, 1}, {1, 0, 2, 2, 1}, {2, 1, 2, 2, 1}, {3, 1, 1, 2, 1}, {4, 0, 1, 1, 0}, {5, 0, 1, 1, 0}});
const std::vector<row> bos =
    rows({{0, 0, 1, 1, 0}, {1, 0, 1, 1, 0}, {2, 1, 0, 1, 0}, {3, 0, 0, 0, 0}, {4, 0, 0, 0, 0}, {5, 0, 0, 0, 0}});
const std::vector<row> carols =
    rows({{0, 0, 0, 0, 0}, {1, 0, 1, 1, 0}, {2, 0, 1, 1, 0}, {3, 0, 1, 1, 0}, {4, 0, 1, 1, 0}, {5, 0, 1, 1, 0}});
std::vector<row> last(const std::vector<row>& r, size_t n) { return {r.end() - static_cast<long>(n), r.end()}; }

std::string dump(const std::vector<row>& r) {
  std::string out;
  for (const auto& x : r)
    out += "{" + std::to_string((x.minute_us - at_us(0)) / 60'000'000) + ", " + std::to_string(x.assignments) + ", " +
           std::to_string(x.queued) + ", " + std::to_string(x.queued_max) + ", " + std::to_string(x.running) + "} ";
  return out;
}

}  // namespace

TEST(MinuteStats, CountsEachMinuteOfAKnownLogPerUserAndTheSameWhenRebuiltFromSequenceOne) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  std::vector<std::vector<row>> first;
  for (int run_no = 0; run_no < 2; ++run_no) {
    live_log live(store);
    auto stats = std::make_shared<projections::minute_stats>();
    auto run = live.start(stats);
    ASSERT_EQ(projections::wait_caught_up(run, *stats, seconds(30)), std::nullopt);
    if (run_no == 0) {
      ASSERT_EQ(stats->read(std::nullopt, 0).minutes.size(), 0u) << "no event, no minute";
      for (auto& c : minute_scenario()) ASSERT_FALSE(append(live.sys, live.log, {c}).empty());
    }
    ASSERT_TRUE(stats->wait_applied(store->last_seq(), soon())) << stats->failure().value_or("");
    auto all = stats->read(std::nullopt, 0);
    EXPECT_EQ(all.seq, store->last_seq());
    EXPECT_EQ(all.as_of_us.value_or(0), at_us(5));
    EXPECT_EQ(all.minutes, every_job) << dump(all.minutes);
    EXPECT_EQ(stats->read("ann", 0).minutes, anns) << dump(stats->read("ann", 0).minutes);
    EXPECT_EQ(stats->read("bo", 0).minutes, bos) << dump(stats->read("bo", 0).minutes);
    EXPECT_EQ(stats->read("carol", 0).minutes, carols) << dump(stats->read("carol", 0).minutes);
    EXPECT_EQ(stats->read(std::nullopt, at_us(3, 30)).minutes, last(every_job, 3)) << "from the minute holding since";
    EXPECT_TRUE(stats->read(std::nullopt, at_us(6)).minutes.empty()) << "since after the latest minute";
    // The job whose payload is not CBOR is counted (queued, its user unknown: admins only) and said.
    EXPECT_EQ(stats->skipped().count, 1u);
    EXPECT_EQ(stats->skipped().last_seq, 17u) << stats->skipped().last_why;
    EXPECT_FALSE(stats->failure());
    std::vector<std::vector<row>> now{all.minutes, stats->read("ann", 0).minutes, stats->read("bo", 0).minutes};
    if (run_no == 0)
      first = now;
    else
      EXPECT_EQ(now, first) << "rebuilt from sequence 1 after a restart: the same minutes";
  }
}

TEST(MinuteStats, KeepsItsWindowOfMinutesAndCarriesLevelsFromThoseItDropped) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  live_log live(store);
  auto stats = std::make_shared<projections::minute_stats>(3);
  live.start(stats);
  for (auto& c : minute_scenario()) ASSERT_FALSE(append(live.sys, live.log, {c}).empty());
  ASSERT_TRUE(stats->wait_applied(store->last_seq(), soon()));
  EXPECT_EQ(stats->read(std::nullopt, 0).minutes, last(every_job, 3)) << dump(stats->read(std::nullopt, 0).minutes);
  EXPECT_EQ(stats->read(std::nullopt, at_us(0)).minutes, last(every_job, 3)) << "since before the window: the window";
  EXPECT_EQ(stats->read("ann", 0).minutes, last(anns, 3));
  EXPECT_EQ(stats->read("carol", 0).minutes, last(carols, 3)) << "carol's job queued in a dropped minute is still queued";
  EXPECT_EQ(stats->read("bo", 0).minutes, last(bos, 3));

  // Much later: the whole window is quiet minutes at the levels the last change left; an
  // event recorded before the latest minute (a clock stepped back) counts in the latest.
  ASSERT_FALSE(append(live.sys, live.log, {at(100, 0, test::command("worker/w9", "worker.heartbeat_missed"))}).empty());
  ASSERT_FALSE(append(live.sys, live.log, {made("L1", "ann", 90, 0)}).empty());
  ASSERT_TRUE(stats->wait_applied(store->last_seq(), soon()));
  EXPECT_EQ(stats->read(std::nullopt, 0).minutes, rows({{98, 0, 3, 3, 0}, {99, 0, 3, 3, 0}, {100, 0, 4, 4, 0}}))
      << dump(stats->read(std::nullopt, 0).minutes);
  EXPECT_EQ(stats->read("carol", 0).minutes, rows({{98, 0, 1, 1, 0}, {99, 0, 1, 1, 0}, {100, 0, 1, 1, 0}}));
}

// status_set_by() is what evolve() does to a job's status, event kind by event kind.
TEST(MinuteStats, TheStatusEachJobEventSetsIsEvolvesOwn) {
  const std::vector<std::pair<std::string, json>> kinds = {{"job.assigned", {{"worker_id", "w"}}},
                                                           {"job.started", {{"worker_id", "w"}}},
                                                           {"job.checkpointed", {{"worker_id", "w"}}},
                                                           {"job.progress_reported", {{"worker_id", "w"}}},
                                                           {"job.handoff_started", {{"reason", "walltime"}}},
                                                           {"job.handoff_completed", json::object()},
                                                           {"job.requeued_after_deregister", json::object()},
                                                           {"job.requeued_after_reap", json::object()},
                                                           {"job.requeued_after_orphan", json::object()},
                                                           {"job.requeued_after_preempt", json::object()},
                                                           {"job.completed", json::object()},
                                                           {"job.failed", {{"reason", "x"}}},
                                                           {"job.cancel_requested", json::object()},
                                                           {"job.cancelled", json::object()},
                                                           {"job.requeued_as", {{"new_job_id", "n"}}},
                                                           {"job.held", {{"admin", false}}},
                                                           {"job.released", json::object()},
                                                           {"job.pruned", json::object()},
                                                           {"job.preempted", {{"by", "p"}, {"mode", "cancel"}}},
                                                           {"job.preempted", {{"by", "p"}, {"mode", "requeue"}}},
                                                           {"job.something_new", json::object()}};
  for (auto from : {core::job_status::queued, core::job_status::running}) {
    for (const auto& [type, payload] : kinds) {
      SCOPED_TRACE(type + " " + payload.dump() + " from " + core::to_string(from));
      core::job j;
      core::evolve(j, "job.created", {{"title", "t"}, {"input_bundle_path", "/b"}}, 1);
      EXPECT_EQ(core::status_set_by(core::job_event_of("job.created"), ""), j.status);
      if (from == core::job_status::running) {
        core::evolve(j, "job.assigned", {{"worker_id", "w"}}, 2);
        core::evolve(j, "job.started", {{"worker_id", "w"}}, 3);
      }
      core::evolve(j, type, payload, 4);
      EXPECT_EQ(core::status_set_by(core::job_event_of(type), payload.value("mode", "requeue")).value_or(from), j.status);
    }
  }
}
