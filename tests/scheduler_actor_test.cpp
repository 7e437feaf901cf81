// The scheduler actor under CAF's deterministic test coordinator (caf/test/dsl.hpp): every
// message is delivered by the test, one at a time, in the order it names (expect), and timers
// fire only when the test advances CAF's test clock. No threads of the test's own, no sleeps.
//
// Runner: CAF's own unit-test engine, not gtest. The dsl's expect/allow and the fixture report
// through CAF_CHECK/CAF_REQUIRE, which need that engine's current test; unit_test_impl.hpp
// below supplies main(), so this test is declared without gtest_main (tests/CMakeLists.txt).
//
// The log writer is a stand-in, not actors/log_writer.cpp: the real one is spawned detached
// (its own thread) and spawns a detached syncer, which would run outside the coordinator and
// race the test. The stand-in answers as the real writer does (the scheduler's contract is the
// log_writer_actor messages): it appends to a real event_store over RocksDB in a temp dir, in
// the handler, so the scheduler's roll back rebuilds its world from a real log exactly as
// batond's does (replay::recover_world); on demand it refuses appends for want of space and
// fences itself until unfence, or answers an append with an error and quits, as the real
// writer does when a write or a sync fails.
//
// The planner's thread goes through the scheduler's planner_launcher seam (actors/scheduler.hpp):
// the test keeps a cycle's work and runs it when the scenario wants the plan to arrive.
// (stage_slice frees a replaced queue index with std::async: memory only, no message, so it
// does not touch the order of anything here.)
#define CAF_SUITE scheduler_actor
#include <caf/test/dsl.hpp>
#include <caf/test/unit_test_impl.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/log_writer.hpp"
#include "actors/scheduler.hpp"
#include "core/planning/backfill.hpp"
#include "core/world/plan_cycle.hpp"
#include "events/event_store.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "support/ids.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using actors::append_atom;
using actors::flush_atom;
using actors::log_writer_actor;
using actors::plan_atom;
using actors::planned_atom;
using actors::planned_cycle;
using actors::priority_atom;
using actors::reply_slot;
using actors::scheduler_actor;
using actors::stage_atom;
using actors::submit_atom;
using actors::unfence_atom;
namespace C = core::commands;
using commands = std::vector<events::append_command>;
using results = std::vector<events::append_result>;

namespace {

constexpr core::time_us second = 1'000'000;

// What the stand-in log writer does, set by the test between messages.
struct log_script {
  std::shared_ptr<events::event_store> store;
  std::optional<std::string> refuse_for_space;  // appends refused (no_space), nothing written
  std::optional<std::string> fail_with;         // the next append fails: answered with this error
  std::optional<std::string> short_of_space;    // what scheduler_storage::short_of_space says
  bool fenced = false;                          // refused one for want of space: refuses all until unfence (as the real writer)
  size_t unfences = 0;
  std::vector<commands> appends;  // every append asked for, in order (refused ones too)
};

log_writer_actor::behavior_type stand_in_log(log_writer_actor::pointer self, std::shared_ptr<log_script> script) {
  return {
      [self, script](append_atom, commands& cmds) -> caf::result<results> {
        script->appends.push_back(cmds);
        if (cmds.empty()) return results{};  // (an empty append waits for what came before: nothing to wait for here)
        if (script->fail_with) {             // the real writer answers everyone waiting, then quits with the error
          auto err = caf::make_error(caf::sec::runtime_error, *script->fail_with);
          self->quit(err);
          return err;
        }
        if (script->refuse_for_space) script->fenced = true;  // (nothing written: the disk is short)
        if (script->fenced) {
          results out(cmds.size());
          for (auto& r : out) {
            r.status = events::append_status::no_space;
            r.message = script->refuse_for_space.value_or("refused earlier");
          }
          return out;
        }
        return script->store->append(cmds);
      },
      [script](actors::status_atom) {
        actors::log_status s;
        s.last_seq = script->store->last_seq();
        return s;
      },
      [](actors::read_atom, uint64_t, uint64_t) { return std::vector<events::event_envelope>{}; },
      [script](actors::subscribe_atom, caf::actor, uint64_t) { return script->store->last_seq(); },
      [](actors::unsubscribe_atom, caf::actor) {},
      [](actors::commit_atom) {},
      [](actors::synced_atom, uint64_t) {},
      [](actors::catchup_atom, caf::actor) {},
      [script](unfence_atom) {
        script->fenced = false;
        ++script->unfences;
      },
      [](actors::deliver_atom) {},
  };
}

// Every event type the appends from `from` on asked for, in order.
std::vector<std::string> event_types(const log_script& s, size_t from = 0) {
  std::vector<std::string> out;
  for (size_t i = from; i < s.appends.size(); ++i)
    for (const auto& c : s.appends[i])
      for (const auto& e : c.events) out.push_back(e.type);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::string assigned_job(const core::reply& r) {
  auto* a = std::get_if<core::results::poll_answer>(&r.value);
  return a && a->assigned ? a->assigned->job_id : "";
}

std::string error_code(const core::reply& r) { return r.error ? r.error->code : ""; }

bool unavailable(const core::reply& r) { return r.error && r.error->kind == core::error_kind::unavailable; }

// Settings where no loop timer fires unless a test arms it shorter; no worker goes stale
// while the test's clock jumps.
core::scheduler_settings quiet_settings() {
  core::scheduler_settings s;
  s.liveness.stale_after_us = 30LL * 24 * 3600 * second;
  s.reap_interval_us = 3600 * second;
  s.priority.calc_period = 3600 * second;
  s.backfill.interval = 3600 * second;
  s.priority.accounts = {{"chem", "root", 1, {{"ann", 1}, {"bo", 1}}}};
  return s;
}

// The log's directory outlives the actor system (a base destroyed after the CAF fixture).
struct log_dir {
  test::temp_dir dir;
};

struct fixture : log_dir, test_coordinator_fixture<> {
  std::shared_ptr<log_script> script = std::make_shared<log_script>();
  log_writer_actor log;
  scheduler_actor scheduler;
  core::time_us now = 1'700'000'000 * second;   // the scheduler's clock (clock_fn), moved by the tests
  std::vector<std::function<void()>> planners;  // cycles handed to the planner, not yet run

  void start(core::scheduler_settings s = quiet_settings()) {
    script->store = events::event_store::open(dir.path());
    log = sys.spawn(stand_in_log, script);
    actors::scheduler_storage storage;
    storage.recover = [store = script->store] { return replay::recover_world(*store).world; };
    storage.short_of_space = [script = script] { return script->short_of_space; };
    scheduler = actors::spawn_scheduler(
        sys, log, core::world{}, {}, s, [this] { return now; }, {}, std::move(storage),
        [this](std::function<void()> plan) { planners.push_back(std::move(plan)); });
    sched.run();
    // As batond does before it serves: the configured policy recorded (in force at once).
    auto r = run_command(admin(C::recalculate_priorities{}));
    CAF_REQUIRE(!r.error);
  }

  ~fixture() override {
    planners.clear();  // (each holds a handle to the scheduler)
    caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
    sched.run();
  }

  static core::envelope admin(core::command cmd) {
    return {core::principal::operator_named("admin"), "operator:admin", "req", std::move(cmd), std::nullopt};
  }
  static core::envelope as_worker(const std::string& id, core::command cmd) {
    return {core::principal::of_worker(id), "worker:" + id, "req", std::move(cmd), std::nullopt};
  }
  static core::envelope poll_by(const std::string& worker) { return as_worker(worker, C::request_job{worker}); }

  // Sends a command the way the HTTP layer does (submit_atom with a reply sink); the reply
  // lands in the returned slot whenever the scheduler delivers it. Nothing runs yet.
  std::shared_ptr<std::optional<core::reply>> submit(core::envelope e) {
    auto out = std::make_shared<std::optional<core::reply>>();
    reply_slot slot{std::make_shared<actors::reply_sink>([out](core::reply r) { *out = std::move(r); })};
    self->send(scheduler, submit_atom::value, std::move(e), std::move(slot));
    return out;
  }
  // The next message in the scheduler's mailbox is a submitted command: it is handled.
  void expect_command() { expect((submit_atom, core::envelope, reply_slot), from(self).to(scheduler)); }
  // The scheduler's burst goes to the log and the log's answer back to it.
  void expect_append_round_trip() {
    expect((flush_atom), from(scheduler).to(scheduler));
    expect((append_atom, commands), from(scheduler).to(log));
    expect((results), from(log).to(scheduler));
  }

  // Sends a command and delivers every message until nothing is left (timers not fired).
  core::reply run_command(core::envelope e) {
    auto out = submit(std::move(e));
    sched.run();
    CAF_REQUIRE(out->has_value());
    return **out;
  }

  std::string create_job(const std::string& name, const std::string& user = "ann", int64_t nice = 0, uint32_t gpus = 1) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/bundles/" + name;
    c.user = user;
    c.nice = nice;
    c.gpu_count = gpus;
    auto r = run_command(admin(c));
    CAF_REQUIRE(!r.error);
    return c.id;
  }
  std::string register_worker(const std::string& name, int gpus = 1) {
    C::register_worker r;
    r.new_id = test::uid(name);
    r.gpu_model = "A100";
    r.gpu_count = gpus;
    r.credential_sha256 = "00";
    auto reply = run_command(admin(r));
    CAF_REQUIRE(!reply.error);
    return r.new_id;
  }
  core::results::job_row job(const std::string& id) {
    auto r = run_command(admin(C::get_job{id}));
    CAF_REQUIRE(!r.error);
    return std::get<core::results::job_row>(r.value);
  }
  // Queued jobs in evaluation order (the order in force), as the scheduler answers now.
  std::vector<core::job> queue() {
    auto r = run_command(admin(C::list_priorities{}));
    CAF_REQUIRE(!r.error);
    std::vector<core::job> out;
    for (auto& row : std::get<core::results::priorities>(r.value).items) out.push_back(row.j);
    return out;
  }
};

// The first job in evaluation order a one-GPU worker can take.
const core::job& first_fitting_one_gpu(const std::vector<core::job>& order) {
  for (const auto& j : order)
    if (j.gpu_count <= 1) return j;
  CAF_FAIL("no queued job fits a one-GPU worker");
}

}  // namespace

CAF_TEST_FIXTURE_SCOPE(scheduler_actor_tests, fixture)

// 1. A poll is decided at once but answered only once its events are durable: the reply is
// not out while the append is on its way to the log, nor while the log's answer is.
CAF_TEST(a poll is answered with its assignment only after the log acknowledged it) {
  start();
  auto job_id = create_job("job-1");
  auto worker = register_worker("worker-1");
  size_t appends_before = script->appends.size();

  auto poll = submit(poll_by(worker));
  expect_command();
  CAF_CHECK(!poll->has_value());  // decided and applied; its events wait for this burst's flush
  expect((flush_atom), from(scheduler).to(scheduler));
  CAF_CHECK(!poll->has_value());
  expect((append_atom, commands), from(scheduler).to(log));
  CAF_CHECK(!poll->has_value());  // written by the log, but its answer is still in the mail
  CAF_CHECK(contains(event_types(*script, appends_before), "job.assigned"));
  expect((results), from(log).to(scheduler));
  CAF_REQUIRE(poll->has_value());
  CAF_CHECK(!(*poll)->error);
  CAF_CHECK_EQUAL(assigned_job(**poll), job_id);
  CAF_CHECK(!sched.has_job());  // nothing else was set off

  auto row = job(job_id);
  CAF_CHECK(row.j.status == core::job_status::assigned);
  CAF_CHECK_EQUAL(row.j.assigned_worker_id, worker);
}

// 2. A periodic recalculation under the recorded policy is put in force in slices (stage
// messages to itself, staging_slice_jobs queued jobs each); polls are handled between the
// slices. Until the swap every poll gets the best job that fits under the order in force (the
// old one), after it under the new one; a job assigned or created between slices is where it
// belongs after the swap (an assigned one, staged before, is out of the new order: the next
// poll does not get it again; a new one is ranked by the new order).
// One idle worker at each poll: a poller gets the k-th job that fits, k the idle workers ranked
// above it (core/world/scheduling.hpp), so with none above it, the best one.
CAF_TEST(a recalculation in slices keeps answering polls by the order in force) {
  auto s = quiet_settings();
  s.priority.calc_period = 10 * second;
  s.priority.partitions = {{"normal", 1, 1}, {"urgent", 2, 1}};  // tier 2 goes first under any figures
  start(s);
  // ann uses the cluster for ten minutes (the worker then leaves): the next recalculation
  // ranks bo above her.
  auto runner = register_worker("runner", 2);
  auto used = create_job("ann-used");
  CAF_REQUIRE_EQUAL(assigned_job(run_command(poll_by(runner))), used);
  CAF_REQUIRE(!run_command(as_worker(runner, C::start_job{used})).error);
  now += 600 * second;
  CAF_REQUIRE(!run_command(as_worker(runner, C::complete_job{used})).error);
  CAF_REQUIRE(!run_command(as_worker(runner, C::deregister{runner})).error);
  now += second;
  auto job_of = [](const std::string& name, const std::string& user, int64_t nice, uint32_t gpus) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b";
    c.user = user;
    c.nice = nice;
    c.gpu_count = gpus;
    return c;
  };
  // First in both orders, and first to be staged (the oldest queued job).
  auto urgent = job_of("ann-urgent", "ann", 0, 1);
  urgent.partition = "urgent";
  CAF_REQUIRE(!run_command(admin(urgent)).error);
  now += second;
  // Under the recorded figures (no usage yet) ann's jobs (nice 10) come before bo's (nice 100),
  // and ann's two-GPU job (nice 0) before those, though no poller can run it. Enough jobs for
  // three slices.
  C::create_jobs batch;
  batch.jobs.push_back(job_of("ann-big", "ann", 0, 2));
  for (int i = 0; i < 1250; ++i) {
    batch.jobs.push_back(job_of("ann-" + std::to_string(i), "ann", 10, 1));
    batch.jobs.push_back(job_of("bo-" + std::to_string(i), "bo", 100, 1));
  }
  CAF_REQUIRE(!run_command(admin(batch)).error);
  auto old_order = queue();
  CAF_REQUIRE_EQUAL(old_order.size(), 2502u);
  CAF_CHECK_EQUAL(old_order[0].id, urgent.id);
  CAF_CHECK_EQUAL(old_order[1].id, test::uid("ann-big"));
  std::vector<core::job> old_fitting;  // the two best jobs a one-GPU worker can run
  for (const auto& j : old_order)
    if (j.gpu_count <= 1 && old_fitting.size() < 2) old_fitting.push_back(j);
  CAF_REQUIRE_EQUAL(old_fitting.size(), 2u);
  CAF_CHECK_EQUAL(old_fitting[0].id, urgent.id);
  CAF_CHECK_EQUAL(old_fitting[1].user, "ann");  // under the new figures bo's would come first
  auto poller_a = register_worker("poller-a");
  size_t appends_before = script->appends.size();

  // The loop's timer: the recalculation's first event is decided (its flush queued) and the
  // first slice behind it; a poll arrives meanwhile. Comments give the scheduler's mailbox.
  now += 10 * second;
  CAF_REQUIRE_EQUAL(advance_time(std::chrono::seconds(10)), 1u);
  expect((priority_atom), from(scheduler).to(scheduler));    // [flush, stage]
  auto poll_a = submit(poll_by(poller_a));                   // [flush, stage, A]
  expect((flush_atom), from(scheduler).to(scheduler));       // [stage, A]
  expect((append_atom, commands), from(scheduler).to(log));  // [stage, A, ack]
  CAF_CHECK(contains(event_types(*script, appends_before), "scheduler.priorities_recalculated"));
  CAF_CHECK(!contains(event_types(*script, appends_before), "scheduler.priorities_applied"));
  expect((stage_atom), from(scheduler).to(scheduler));  // slice 1: [A, ack, stage]
  expect_command();                                     // poll A between slices 1 and 2: [ack, stage, flush]
  expect((results), from(log).to(scheduler));           // [stage, flush]
  C::register_worker second_poller;
  second_poller.new_id = test::uid("poller-b");
  second_poller.gpu_model = "A100";
  second_poller.credential_sha256 = "00";
  auto registered = submit(admin(second_poller));
  auto poll_b = submit(poll_by(second_poller.new_id));
  auto late = job_of("bo-late", "bo", 0, 1);
  auto created = submit(admin(late));                        // [stage, flush, register, B, create]
  expect((stage_atom), from(scheduler).to(scheduler));       // slice 2: [flush, register, B, create, stage]
  expect((flush_atom), from(scheduler).to(scheduler));       // poll A's assignment to the log
  expect((append_atom, commands), from(scheduler).to(log));  // [register, B, create, stage, ack]
  expect_command();                                          // between slices 2 and 3: the second poller,
  expect_command();                                          // its poll (the only idle worker: A holds a job)
  expect_command();                                          // and bo's new job
  CAF_CHECK(!poll_a->has_value());                           // [stage, ack, flush]: its ack is behind slice 3
  size_t appends_staged = script->appends.size();
  expect((stage_atom), from(scheduler).to(scheduler));  // slice 3, the last: the new order goes in force
  expect((results), from(log).to(scheduler));           // [flush]; poll A answered now
  CAF_CHECK(poll_a->has_value());
  expect((flush_atom), from(scheduler).to(scheduler));  // B, the new job and the swap's event
  expect((append_atom, commands), from(scheduler).to(log));
  CAF_CHECK(contains(event_types(*script, appends_staged), "scheduler.priorities_applied"));
  sched.run();
  CAF_REQUIRE(poll_a->has_value() && poll_b->has_value() && created->has_value() && registered->has_value());
  CAF_REQUIRE(!(*created)->error && !(*registered)->error);

  // Between the slices: the best fitting jobs under the old order (the second one ann's).
  CAF_CHECK_EQUAL(assigned_job(**poll_a), old_fitting[0].id);
  CAF_CHECK_EQUAL(assigned_job(**poll_b), old_fitting[1].id);

  // After the swap: bo first; neither assigned job is queued still; the job created between
  // slices is ranked by the new order (first: bo, nice 0), and the next poll gets it (not the
  // urgent job again, which the new order would put first had it stayed queued).
  auto new_order = queue();
  CAF_CHECK_EQUAL(new_order.size(), 2501u);  // 2502 - 2 assigned + 1 created
  CAF_CHECK(std::none_of(new_order.begin(), new_order.end(),
                         [&](const core::job& j) { return j.id == assigned_job(**poll_a) || j.id == assigned_job(**poll_b); }));
  CAF_CHECK_EQUAL(first_fitting_one_gpu(new_order).id, late.id);
  auto poller_c = register_worker("poller-c");
  CAF_CHECK_EQUAL(assigned_job(run_command(poll_by(poller_c))), late.id);
  std::string next_best;  // after bo's new job
  for (const auto& j : new_order)
    if (j.gpu_count <= 1 && j.id != late.id) {
      next_best = j.id;
      CAF_CHECK_EQUAL(j.user, "bo");
      break;
    }
  auto poller_d = register_worker("poller-d");
  CAF_CHECK_EQUAL(assigned_job(run_command(poll_by(poller_d))), next_best);
}

// 3. A plan made on a world that was rolled back meanwhile (its generation is older) is
// dropped: nothing is recorded from it and no poll follows it. The next cycle, planned on the
// current world, is recorded.
CAF_TEST(a plan made on a rolled back world is discarded) {
  auto s = quiet_settings();
  s.backfill.interval = 10 * second;
  start(s);
  auto high = create_job("high", "ann", 0);
  auto low = create_job("low", "ann", 100);
  auto w1 = register_worker("w1");

  // A better worker (two GPUs) registers; the planning cycle's timer fires before that is
  // flushed, so the snapshot has it idle and the plan gives it `high`, and `low` to w1.
  C::register_worker better;
  better.new_id = test::uid("w2");
  better.gpu_model = "A100";
  better.gpu_count = 2;
  better.credential_sha256 = "00";
  auto registered = submit(admin(better));
  now += 10 * second;
  CAF_REQUIRE_EQUAL(advance_time(std::chrono::seconds(10)), 1u);  // [register, plan]
  expect_command();                                               // [plan, flush]
  expect((plan_atom), from(scheduler).to(scheduler));             // the snapshot goes to the planner: [flush]
  CAF_REQUIRE_EQUAL(planners.size(), 1u);
  // The log refuses the registration for want of space: the scheduler rolls back to the log's
  // world, where w2 never registered.
  script->refuse_for_space = "1 MiB free, 2 MiB reserve";
  script->short_of_space = script->refuse_for_space;
  expect_append_round_trip();
  expect((unfence_atom), from(scheduler).to(log));
  CAF_REQUIRE(registered->has_value());
  CAF_CHECK_EQUAL(error_code(**registered), "disk_full");
  script->refuse_for_space.reset();
  script->short_of_space.reset();  // room again

  // The planner answers now, for the world before the roll back.
  planners[0]();
  planners.clear();
  auto stale = std::get<1>(extract<planned_atom, planned_cycle>(scheduler));
  CAF_REQUIRE(stale.result && stale.snapshot);
  CAF_CHECK_EQUAL(stale.generation, 0u);
  std::map<std::string, std::string> starts;  // worker -> job
  for (const auto& st : stale.result->starts) starts[stale.snapshot->view.worker_of_node.at(st.node)] = st.job_id;
  CAF_REQUIRE_EQUAL(starts[better.new_id], high);  // (following it, w1 would take `low`: `high`
  CAF_REQUIRE_EQUAL(starts[w1], low);              // is planned for a worker, as far as it says)
  size_t appends_before = script->appends.size();
  expect((planned_atom, planned_cycle), from(_).to(scheduler));
  CAF_CHECK(!sched.has_job());  // nothing decided from it: no flush, no append
  CAF_CHECK_EQUAL(script->appends.size(), appends_before);

  // w1 gets the better job that fits, not the stale plan's.
  auto poll_w1 = run_command(poll_by(w1));
  CAF_CHECK(!poll_w1.error);
  CAF_CHECK_EQUAL(assigned_job(poll_w1), high);
  CAF_CHECK(!contains(event_types(*script), "scheduler.plan_made"));

  // The next cycle, on the current world (`low` for a new idle worker), is recorded.
  register_worker("w3");
  appends_before = script->appends.size();
  now += 10 * second;
  CAF_REQUIRE_EQUAL(advance_time(std::chrono::seconds(10)), 1u);
  expect((plan_atom), from(scheduler).to(scheduler));
  CAF_REQUIRE_EQUAL(planners.size(), 1u);
  planners[0]();
  planners.clear();
  expect((planned_atom, planned_cycle), from(_).to(scheduler));
  expect_append_round_trip();
  CAF_CHECK(contains(event_types(*script, appends_before), "scheduler.plan_made"));
}

// 4. The log refuses a burst for want of space: the decision is dropped (the world is rebuilt
// from the log, as before it), the client gets 503 disk_full, and once there is room again a
// later command is decided and answered as usual.
CAF_TEST(an append refused for want of space rolls the decision back) {
  start();
  auto job_id = create_job("job-1");
  auto worker = register_worker("worker-1");
  auto before = job(job_id);
  CAF_REQUIRE(before.j.status == core::job_status::queued);
  uint64_t log_before = script->store->last_seq();

  script->refuse_for_space = "1 MiB free, 2 MiB reserve";
  script->short_of_space = script->refuse_for_space;
  auto poll = submit(poll_by(worker));
  auto seen = submit(admin(C::get_job{job_id}));
  expect_command();  // the poll: decided and applied, its flush queued behind the read
  // Applied at once: a read decided now sees the assignment the log has not taken yet.
  expect_command();
  CAF_REQUIRE(seen->has_value());
  CAF_CHECK(std::get<core::results::job_row>((*seen)->value).j.status == core::job_status::assigned);
  expect_append_round_trip();
  expect((unfence_atom), from(scheduler).to(log));
  CAF_CHECK_EQUAL(script->unfences, 1u);

  CAF_REQUIRE(poll->has_value());
  CAF_CHECK(unavailable(**poll));  // 503
  CAF_CHECK_EQUAL(error_code(**poll), "disk_full");
  CAF_CHECK_EQUAL(script->store->last_seq(), log_before);  // nothing of it written
  auto after = job(job_id);                                // the world as before the decision
  CAF_CHECK(after.j.status == core::job_status::queued);
  CAF_CHECK_EQUAL(after.j.assigned_worker_id, "");
  CAF_CHECK_EQUAL(after.j.attempts, before.j.attempts);
  CAF_CHECK_EQUAL(after.j.updated_at, before.j.updated_at);
  // While the disk is still short, decisions that would write are refused at once.
  size_t appends_before = script->appends.size();
  CAF_CHECK_EQUAL(error_code(run_command(poll_by(worker))), "disk_full");
  CAF_CHECK_EQUAL(script->appends.size(), appends_before);

  script->refuse_for_space.reset();
  script->short_of_space.reset();  // room again
  auto later = run_command(poll_by(worker));
  CAF_CHECK(!later.error);
  CAF_CHECK_EQUAL(assigned_job(later), job_id);
  CAF_CHECK(script->store->last_seq() > log_before);
  CAF_CHECK(job(job_id).j.status == core::job_status::assigned);
}

// 4b. Any other failed append (the log writer answers an error, then stops) cannot be rolled
// back onto a log that no longer writes: the client gets 503 log_unavailable, and so does
// every later command, reads too (the world holds a decision the log may not), without
// another append. (batond then exits; a restart recovers from the log.)
CAF_TEST(an append that fails otherwise stops the scheduler deciding) {
  start();
  auto job_id = create_job("job-1");
  auto worker = register_worker("worker-1");
  script->fail_with = "fdatasync: Input/output error";
  auto poll = run_command(poll_by(worker));
  CAF_CHECK(unavailable(poll));
  CAF_CHECK_EQUAL(error_code(poll), "log_unavailable");
  size_t appends_before = script->appends.size();
  CAF_CHECK_EQUAL(error_code(run_command(admin(C::get_job{job_id}))), "log_unavailable");
  CAF_CHECK_EQUAL(error_code(run_command(poll_by(worker))), "log_unavailable");
  CAF_CHECK_EQUAL(script->appends.size(), appends_before);
}

// 5. POST /plan plans on the planner's thread, as the periodic cycle does: the scheduler
// answers polls while it plans, and answers the asker once the plan is durable. One who asks
// while a cycle is with the planner is answered by the next cycle (its snapshot taken after
// the ask), which starts as soon as that one is in.
CAF_TEST(an asked for plan is made off the scheduler while polls are answered) {
  start();
  const std::set<std::string> jobs = {create_job("a"), create_job("b")};
  auto w1 = register_worker("w1");
  register_worker("w2");
  size_t appends_before = script->appends.size();
  auto asked = submit(admin(C::plan_now{}));
  expect_command();  // the snapshot goes to the planner, nothing is answered yet
  CAF_REQUIRE_EQUAL(planners.size(), 1u);
  CAF_CHECK(!asked->has_value());
  auto again = submit(admin(C::plan_now{}));
  expect_command();
  CAF_CHECK_EQUAL(planners.size(), 1u);  // (no second planner while one plans)

  auto poll = run_command(poll_by(w1));  // answered while the plan is being made
  CAF_CHECK(!poll.error);
  CAF_CHECK(jobs.count(assigned_job(poll)));
  CAF_CHECK(!asked->has_value());

  auto first = std::move(planners[0]);
  planners.clear();
  first();
  sched.run();  // the plan decided, appended, durable: the asker is answered
  CAF_REQUIRE(asked->has_value());
  CAF_REQUIRE(!(*asked)->error);
  CAF_CHECK(std::holds_alternative<core::results::counted>((*asked)->value));
  CAF_CHECK(contains(event_types(*script, appends_before), "scheduler.plan_made"));
  CAF_CHECK(!again->has_value());
  CAF_REQUIRE_EQUAL(planners.size(), 1u);  // the next cycle, for the second ask, is with the planner

  auto second = std::move(planners[0]);
  planners.clear();
  second();
  sched.run();
  CAF_REQUIRE(again->has_value());
  CAF_CHECK(!(*again)->error);
  CAF_CHECK(std::holds_alternative<core::results::counted>((*again)->value));
  CAF_CHECK(planners.empty());  // nobody else asked
}

CAF_TEST_FIXTURE_SCOPE_END()
