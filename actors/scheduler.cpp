#include "actors/scheduler.hpp"

#include <caf/all.hpp>

#include <future>
#include <thread>
#include <iterator>
#include <spdlog/spdlog.h>

#include "actors/thread_name.hpp"
#include "core/world/dag.hpp"
#include "core/events/event_payload.hpp"
#include "core/world/preemption.hpp"
#include "core/world/priority.hpp"
#include "core/world/staged_rekey.hpp"
#include "actors/caches/idle_poll_view.hpp"
#include "actors/caches/operator_credentials.hpp"
#include "actors/caches/pilot_credential.hpp"
#include "actors/caches/worker_credentials.hpp"
#include "events/payload.hpp"

namespace baton::actors {
namespace {

using deliver_fn = std::function<void(core::reply)>;

// A decided command whose reply waits for its events to be durable.
struct awaiting_write {
  size_t commands = 0;      // its share of the flushed append commands
  uint64_t generation = 0;  // of the world it was decided on (see roll_back)
  deliver_fn deliver;       // empty for the loops' own decisions
  core::reply reply;
};

// A recalculation whose new order is being built between polls (core/world/staged_rekey.hpp),
// and whoever asked for it: answered once the order is in force and its event durable.
struct staging_run {
  core::staged_rekey rekey;
  std::string actor, correlation;
  deliver_fn deliver;
  core::reply reply;
  core::decision applied;  // the recalculation's scheduler.priorities_applied, as decided with it
};

// Queued jobs staged per slice: ~1-2 ms of work, so a poll waits at most about that long.
constexpr size_t staging_slice_jobs = 1000;

// Who asked for a planning cycle (POST /plan), answered when it is durable.
struct plan_asker {
  std::string actor, correlation;
  deliver_fn deliver;
};

struct scheduler_state {
  scheduler_state() = default;  // user-declared: CAF builds a state constructible from its actor pointer from `this`
  core::world world;
  core::lease_book leases;
  core::scheduler_settings settings;
  clock_fn clock;
  log_writer_actor log;
  bool failed = false;  // the log failed a write: nothing more can be promised
  scheduler_storage storage;
  // The log refused a write for want of space: the world was rebuilt from the log and every
  // decision that would write is refused (503 disk_full) until there is room again.
  std::optional<std::string> log_full;
  uint64_t generation = 0;  // bumped by each rebuild; replies to older flushes carry no weight
  // Decisions of the current mailbox burst, appended together by one flush: one message to
  // the log writer per burst instead of one per command.
  std::vector<events::append_command> unflushed;
  std::vector<awaiting_write> awaiting;
  bool flush_scheduled = false;
  scheduler_views views;  // kept in step with the world, for the HTTP threads
  std::optional<staging_run> staging;
  std::future<void> retiring;       // frees the index the last swap replaced, off the scheduler's thread
  std::thread planner;              // the planning cycle's planner, off the scheduler's thread
  planner_launcher launch_planner;  // set (tests): runs the planner instead of `planner`
  bool planning = false;            // a cycle's snapshot is with the planner
  // POST /plan's askers: those waiting for the next cycle (they asked after the snapshot now
  // with the planner was taken), and those the cycle with the planner answers.
  std::vector<plan_asker> plan_asked, plan_serving;
  ~scheduler_state() {
    if (planner.joinable()) planner.join();
  }
  // Recalculations asked for while one was being staged: decided one after another.
  std::vector<std::pair<core::envelope, deliver_fn>> recalculations_waiting;
  bool preempt_queued = false;                  // a preemption check is in the mailbox
  std::optional<core::time_us> grace_timer_at;  // a check is due then (a victim's grace ends)
  static inline const char* name = "scheduler";
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// Consecutive events of one stream become one append command: they land together.
std::vector<events::append_command> to_commands(const core::decision& d, core::time_us now, const std::string& actor,
                                                const std::string& correlation) {
  std::vector<events::append_command> out;
  for (const auto& e : d.events) {
    if (out.empty() || out.back().stream_id != e.stream) {
      events::append_command c;
      c.stream_id = e.stream;
      c.recorded_at_us = now;
      c.actor = actor;
      c.correlation_id = correlation;
      out.push_back(std::move(c));
    }
    out.back().events.push_back({std::string(e.type()), core::ev::schema_of(e.payload), core::payload_bytes(e)});
    if (std::holds_alternative<core::ev::job_pruned>(e.payload)) out.back().stream_done = true;  // its head need not stay cached
  }
  return out;
}

// Workers whose idle-poll answer a decision may change: its worker streams, and the workers
// its job events give a job to or take one from (call before and after applying it).
void note_touched(const core::world& w, const core::decision& d, std::vector<std::string>& out) {
  for (const auto& e : d.events) {
    if (e.stream.rfind("worker/", 0) == 0) {
      out.push_back(e.stream.substr(7));
    } else if (e.stream.rfind("job/", 0) == 0) {
      const core::job* j = w.find_job(e.stream.substr(4));
      if (j && !j->assigned_worker_id.empty()) out.push_back(j->assigned_worker_id);
    }
  }
}

// Applies a decision to the world and brings the idle-poll view along.
void apply_decision(self_ptr self, const core::decision& d, core::time_us now, std::vector<std::string>& touched) {
  note_touched(self->state.world, d, touched);
  core::apply(self->state.world, d, now);
  note_touched(self->state.world, d, touched);
}

// Brings the caches the HTTP threads use into step with the world, before any reply of
// this step goes out: the workers a step touched (credentials, idle view), the operators its
// events name, and the images with queued jobs when anything was decided.
void refresh_views(self_ptr self, const core::decision& d, const std::vector<std::string>& touched, bool decided) {
  auto& st = self->state;
  st.views.credentials->update(st.world, touched);
  st.views.idle->update(st.world, st.leases, touched, decided);
  std::vector<std::string> operators;
  bool pilot = false;
  for (const auto& ev : d.events) {
    if (ev.stream.rfind("operator/", 0) == 0) operators.push_back(ev.stream.substr(9));
    pilot = pilot || ev.stream == core::pilot_stream;
  }
  if (!operators.empty()) st.views.operators->update(st.world, operators);
  if (pilot && st.views.pilot) st.views.pilot->rebuild(st.world);
}

// Jobs that can no longer run once `d`'s jobs ended (d already applied): decided by the
// core, applied now, returned so their events join d's in the same burst (durable before
// d's reply goes out). Empty unless d ended a job with dependents.
core::decision settle_dependencies(self_ptr self, const core::decision& d, core::time_us now, std::vector<std::string>& touched) {
  auto ended = core::ended_jobs(d);
  if (ended.empty()) return {};
  auto fallout = core::dependency_fallout(self->state.world, ended, self->state.settings.priority, now);
  if (!fallout.events.empty()) apply_decision(self, fallout, now, touched);
  return fallout;
}

// The fallout's own events, recorded as the dependency loop's (the correlation id ties them
// to the request that ended the parent).
constexpr const char* dependency_actor = "loop:dependencies";

// Heartbeat leases are soft state: registering and heartbeats renew them, deregistering
// ends them. Returns the worker whose lease changed, if any.
std::optional<std::string> track_leases(self_ptr self, const core::command& c, const core::reply& reply, core::time_us now) {
  auto& leases = self->state.leases;
  if (reply.error) return std::nullopt;
  if (auto* r = std::get_if<core::results::registered>(&reply.value)) {
    leases.touch(r->worker_id, now);
    return r->worker_id;
  }
  if (auto* h = std::get_if<core::commands::heartbeat>(&c)) {
    leases.touch(h->worker_id, now);
    return h->worker_id;
  }
  if (auto* d = std::get_if<core::commands::deregister>(&c)) leases.erase(d->worker_id);
  return std::nullopt;
}

core::reply log_unavailable(const std::string& why) { return unavailable("log_unavailable", why); }

// Queues a decision's events for the burst's append; the reply goes out once they are durable.
void persist(self_ptr self, const core::decision& d, core::time_us now, const std::string& actor, const std::string& correlation,
             deliver_fn deliver, core::reply reply) {
  auto& st = self->state;
  auto cmds = to_commands(d, now, actor, correlation);
  st.awaiting.push_back(awaiting_write{cmds.size(), st.generation, std::move(deliver), std::move(reply)});
  std::move(cmds.begin(), cmds.end(), std::back_inserter(st.unflushed));
  if (!st.flush_scheduled) {
    st.flush_scheduled = true;
    self->send(self, flush_atom::value);  // runs after the commands already in the mailbox
  }
}

void fail_all(self_ptr self, std::vector<awaiting_write>& batch, const std::string& why) {
  spdlog::error("the event log failed a decided write: {}; the scheduler stops deciding", why);
  self->state.failed = true;
  for (auto& w : batch)
    if (w.deliver) w.deliver(log_unavailable(why));
}

core::reply disk_full(const std::string& why) {
  return unavailable("disk_full", "nothing was recorded: " + why + "; reads go on, writes resume when there is room");
}

void begin_staging(self_ptr self, std::string actor, std::string correlation, deliver_fn deliver, core::reply reply,
                   core::decision applied);

// Every cache the HTTP threads read, rebuilt from the world.
void rebuild_views(self_ptr self) {
  auto& st = self->state;
  st.views.credentials->rebuild(st.world);
  st.views.operators->rebuild(st.world);
  if (st.views.pilot) st.views.pilot->rebuild(st.world);
  st.views.idle->rebuild(st.world, st.leases);
}

// Drops every decision whose events the log has not taken: the world is rebuilt from the log
// (what it holds, synced or about to be), the views with it, and decisions in progress end
// with 503. Then the log writer may take appends again (it fenced itself at the refusal).
void roll_back(self_ptr self, const std::string& why) {
  auto& st = self->state;
  ++st.generation;
  for (auto& w : st.awaiting)
    if (w.deliver) w.deliver(disk_full(why));
  st.awaiting.clear();
  st.unflushed.clear();
  if (st.staging) {
    if (st.staging->deliver) st.staging->deliver(disk_full(why));
    st.staging.reset();
  }
  for (auto& [e, deliver] : st.recalculations_waiting) deliver(disk_full(why));
  st.recalculations_waiting.clear();
  st.world = st.storage.recover();
  for (const auto& [id, at] : st.leases.all())
    if (!st.world.workers.count(id)) st.leases.erase(id);
  rebuild_views(self);
  st.log_full = why;
  self->send(st.log, unfence_atom::value);
}

// The log refused a burst for want of space (nothing of it written).
void refused_for_space(self_ptr self, std::vector<awaiting_write>& batch, const std::string& why) {
  auto& st = self->state;
  for (auto& w : batch)
    if (w.deliver) w.deliver(disk_full(why));
  // Bursts decided on an older world were refused by the fenced writer: already rolled back.
  if (batch.empty() || batch.front().generation != st.generation) return;
  if (!st.storage.recover) {  // (its callers have their answer already)
    std::vector<awaiting_write> answered;
    return fail_all(self, answered, why);
  }
  spdlog::error(
      "the event log refused a write: {}. Decisions not recorded are dropped (the world is rebuilt from "
      "the log); writes are refused until there is room",
      why);
  roll_back(self, why);
}

// While the log is full: whether writes are still refused (false once there is room again,
// which ends the episode).
bool writes_refused(self_ptr self) {
  auto& st = self->state;
  if (!st.log_full) return false;
  if (st.storage.short_of_space) {
    auto still = st.storage.short_of_space();
    if (still) {
      st.log_full = still;
      return true;
    }
  }
  spdlog::info("there is room under the event log again: writes resume");
  st.log_full.reset();
  if (st.world.priority_pending && !st.staging) begin_staging(self, "loop:priority", "", nullptr, {}, {});
  return false;
}

// Appends the burst; on success delivers each reply, on failure stops deciding (the world
// would no longer match the log).
void flush(self_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  // A burst with replies but no events (a repeated decision) still goes to the log: an empty
  // append is answered only once everything written before it is durable.
  if (st.unflushed.empty() && st.awaiting.empty()) return;
  // The next burst is likely the size of this one: room for it at once, not by doubling.
  auto batch = std::make_shared<std::vector<awaiting_write>>(std::move(st.awaiting));
  st.awaiting = {};
  st.awaiting.reserve(batch->size());
  auto cmds = std::move(st.unflushed);
  st.unflushed = {};
  st.unflushed.reserve(cmds.size());
  self->request(st.log, caf::infinite, append_atom::value, std::move(cmds))
      .then(
          [self, batch](std::vector<events::append_result>& results) {
            for (const auto& r : results) {
              if (r.status == events::append_status::no_space) return refused_for_space(self, *batch, r.message);
              if (!r.ok()) return fail_all(self, *batch, std::string(events::to_string(r.status)) + ": " + r.message);
            }
            for (auto& w : *batch)
              if (w.deliver) w.deliver(std::move(w.reply));
          },
          [self, batch](caf::error& e) { fail_all(self, *batch, log_error_text(e)); });
}

// `applied` is the event that puts the new order in force, decided with the recalculation (or
// empty after a restart: then it is decided from the pending recalculation, the same event).
void begin_staging(self_ptr self, std::string actor, std::string correlation, deliver_fn deliver, core::reply reply,
                   core::decision applied) {
  auto& st = self->state;
  st.staging = staging_run{core::begin_staging(st.world),
                           std::move(actor),
                           std::move(correlation),
                           std::move(deliver),
                           std::move(reply),
                           std::move(applied)};
  self->send(self, stage_atom::value);
}

// A deferred recalculation (two events: decided, applied): the first is applied and logged
// now, the second once the new order is built (stage_slice), which answers the caller.
void recalculate_deferred(self_ptr self, core::envelope& e, deliver_fn deliver, core::outcome& o, core::time_us now) {
  core::decision decided, applied;
  decided.events.push_back(std::move(o.events.front()));
  applied.events.push_back(std::move(o.events.back()));
  std::vector<std::string> touched;
  apply_decision(self, decided, now, touched);
  refresh_views(self, decided, touched, false);
  persist(self, decided, now, e.actor, e.request_id, nullptr, {});
  begin_staging(self, e.actor, e.request_id, std::move(deliver), std::move(o.answer), std::move(applied));
}

void execute(self_ptr self, core::envelope& e, deliver_fn deliver);

// Takes the world's snapshot for a planning cycle and hands it to the planner thread, which
// answers with `planned`; the askers so far are this cycle's.
void start_planning(self_ptr self) {
  auto& st = self->state;
  auto now = st.clock();
  auto snapshot = std::make_shared<core::plan_snapshot>(core::snapshot_for_plan(
      st.world, st.leases.stale(st.settings.liveness, now), st.settings.deadlines, st.settings.backfill, now));
  st.planning = true;
  st.plan_serving = std::move(st.plan_asked);
  st.plan_asked.clear();
  std::function<void()> plan = [snapshot, generation = st.generation, me = caf::actor_cast<scheduler_actor>(self)] {
    auto result = std::make_shared<core::plan>(core::run_planner(*snapshot));
    caf::anon_send(me, planned_atom::value, planned_cycle{snapshot, result, generation});
  };
  if (st.launch_planner) return st.launch_planner(std::move(plan));
  if (st.planner.joinable()) st.planner.join();  // the last one has answered: it is done
  st.planner = std::thread([plan = std::move(plan)] {
    name_this_thread("planner");
    plan();
  });
}

// A preemption check runs after whatever is in the mailbox now (one at a time).
void queue_preemption_check(self_ptr self) {
  auto& st = self->state;
  if (st.preempt_queued || !core::preemption_in_play(st.world)) return;
  st.preempt_queued = true;
  self->send(self, preempt_atom::value);
}

// Whether a decision (applied) brought a job that may preempt: a new or released preemptor,
// or a new policy.
bool may_bring_preemptor(const core::world& w, const core::decision& d) {
  for (const auto& e : d.events) {
    if (std::holds_alternative<core::ev::priorities_recalculated>(e.payload)) return true;
    if (!std::holds_alternative<core::ev::job_created>(e.payload) && !std::holds_alternative<core::ev::job_released>(e.payload))
      continue;
    const core::job* j = w.find_job(e.stream.substr(4));
    if (j && j->preemptor) return true;
  }
  return false;
}

// Preemptions (core/world/preemption.hpp): decided on the world as it is, recorded as the loop's.
// Then a timer for the earliest grace end still to come.
void check_preemptions(self_ptr self) {
  auto& st = self->state;
  st.preempt_queued = false;
  if (st.failed || writes_refused(self)) return;
  auto now = st.clock();
  if (st.grace_timer_at && *st.grace_timer_at <= now) st.grace_timer_at.reset();
  auto d = core::preemption_check(st.world, st.leases, st.settings, now);
  if (!d.events.empty()) {
    std::vector<std::string> touched;
    apply_decision(self, d, now, touched);
    auto fallout = settle_dependencies(self, d, now, touched);
    refresh_views(self, d, touched, true);
    const auto& record = std::get<core::ev::preemptions_decided>(d.events.front().payload);
    spdlog::info("preemption: {} jobs preempted, {} grace periods ended", record.preemptions.size(), record.expired.size());
    persist(self, d, now, "loop:preemption", "", nullptr, {});
    if (!fallout.events.empty()) persist(self, fallout, now, dependency_actor, "", nullptr, {});
  }
  auto next = core::next_grace_end(st.world);
  if (next && (!st.grace_timer_at || *next < *st.grace_timer_at)) {
    st.grace_timer_at = *next;
    self->delayed_send(self, std::chrono::microseconds(std::max<core::time_us>(*next - now, 0) + 1000), preempt_atom::value);
  }
}

// One slice of the staged re-key; at the end the new order goes in force.
void stage_slice(self_ptr self) {
  auto& st = self->state;
  if (!st.staging) return;
  if (st.failed) {  // (while the log is full no staging runs: roll_back ended it)
    core::abandon_staging(st.world);
    if (st.staging->deliver) st.staging->deliver(log_unavailable("the event log failed earlier"));
    st.staging.reset();
    return;
  }
  if (!core::stage_some(st.world, st.staging->rekey, staging_slice_jobs)) {
    self->send(self, stage_atom::value);  // behind the polls that arrived meanwhile
    return;
  }
  auto now = st.clock();
  auto run = std::move(*st.staging);
  st.staging.reset();
  auto applied = run.applied.events.empty() ? core::decide_priorities_applied(st.world) : std::move(run.applied);
  auto retired = core::swap_in(st.world, std::move(run.rekey), applied, now);
  if (st.retiring.valid()) st.retiring.wait();  // long done: the last swap was a period ago
  st.retiring = std::async(std::launch::async, [old = std::move(retired)]() mutable { old.clear(); });
  refresh_views(self, applied, {}, true);
  persist(self, applied, now, run.actor, run.correlation, std::move(run.deliver), std::move(run.reply));
  if (!st.recalculations_waiting.empty()) {
    auto [next, deliver] = std::move(st.recalculations_waiting.front());
    st.recalculations_waiting.erase(st.recalculations_waiting.begin());
    execute(self, next, std::move(deliver));
  }
}

// Decides one command; the reply is delivered now (nothing to write) or once durable.
void execute(self_ptr self, core::envelope& e, deliver_fn deliver) {
  auto& st = self->state;
  if (st.failed) return deliver(log_unavailable("the event log failed earlier"));
  bool recalculation = std::holds_alternative<core::commands::recalculate_priorities>(e.cmd);
  if (recalculation && st.staging) {
    st.recalculations_waiting.emplace_back(e, std::move(deliver));
    return;
  }
  auto now = st.clock();
  core::decision all;
  core::outcome o;
  std::vector<std::string> touched;
  for (int round = 0; round < 2; ++round) {
    o = core::decide(st.world, st.leases, st.settings, e, now);
    if (o.answer.error) break;
    if (round == 0 && !o.events.empty() && writes_refused(self)) {
      // A heartbeat whose report cannot be recorded still shows the worker alive: no reap
      // once the disk has room again because the disk was full.
      if (auto* h = std::get_if<core::commands::heartbeat>(&e.cmd)) st.leases.touch(h->worker_id, now);
      return deliver(disk_full(*st.log_full));
    }
    if (recalculation && o.events.size() == 2) return recalculate_deferred(self, e, std::move(deliver), o, now);
    if (o.plan_requested) {
      if (writes_refused(self)) return deliver(disk_full(*st.log_full));
      st.plan_asked.push_back({e.actor, e.request_id, std::move(deliver)});
      if (!st.planning) start_planning(self);
      return;
    }
    core::decision d;
    d.events = std::move(o.events);
    apply_decision(self, d, now, touched);
    all.events.insert(all.events.end(), std::make_move_iterator(d.events.begin()), std::make_move_iterator(d.events.end()));
    if (!o.again) break;
  }
  if (o.answer.error && all.events.empty()) return deliver(std::move(o.answer));
  auto fallout = settle_dependencies(self, all, now, touched);
  bool wait_for_log = !all.events.empty() || o.after_durable;
  if (auto renewed = track_leases(self, e.cmd, o.answer, now)) touched.push_back(*renewed);
  refresh_views(self, all, touched, !all.events.empty());
  if (may_bring_preemptor(st.world, all)) queue_preemption_check(self);
  if (!wait_for_log) return deliver(std::move(o.answer));
  persist(self, all, now, e.actor, e.request_id, std::move(deliver), std::move(o.answer));
  if (!fallout.events.empty()) persist(self, fallout, now, dependency_actor, e.request_id, nullptr, {});
}

scheduler_actor::behavior_type scheduler(self_ptr self, log_writer_actor log, core::world world, core::lease_table leases,
                                         core::scheduler_settings settings, clock_fn clock, scheduler_views views,
                                         scheduler_storage storage, planner_launcher launch_planner) {
  auto& st = self->state;
  st.storage = std::move(storage);
  st.launch_planner = std::move(launch_planner);
  st.log = std::move(log);
  st.world = std::move(world);
  st.settings = settings;
  st.clock = std::move(clock);
  auto now = st.clock();
  for (const auto& [id, w] : st.world.workers)
    if (!w.gone && !w.placeholder) st.leases.touch(id, leases.count(id) ? leases.at(id) : now);
  st.views = std::move(views);
  if (!st.views.idle) st.views.idle = std::make_shared<caches::idle_poll_view>(settings);
  if (!st.views.credentials) st.views.credentials = std::make_shared<caches::worker_credentials>();
  // kill_invalid_dependencies may have been switched on while jobs waited on parents that
  // ended badly: cancel them now, as the fallout would have.
  auto swept = core::dependency_sweep(st.world, settings.priority, now);
  if (!swept.events.empty()) {
    core::apply(st.world, swept, now);
    spdlog::info("dependencies: {} waiting jobs can never run and are cancelled", swept.events.size());
    persist(self, swept, now, dependency_actor, "", nullptr, {});
  }
  if (!st.views.operators) st.views.operators = std::make_shared<caches::operator_credentials>();
  rebuild_views(self);
  // A recalculation decided before a stop but never put in force: build its order now.
  if (st.world.priority_pending) begin_staging(self, "loop:priority", "", nullptr, {}, {});
  self->delayed_send(self, std::chrono::microseconds(settings.reap_interval_us), reap_atom::value);
  // (batond records a changed policy before it serves; from here the periodic loop carries on.)
  self->delayed_send(self, std::chrono::microseconds(settings.priority.calc_period), priority_atom::value);
  self->delayed_send(self, std::chrono::microseconds(settings.backfill.interval), plan_atom::value);
  queue_preemption_check(self);  // preemptions in progress before a restart keep their grace ends
  return {
      [self](command_atom, core::envelope& e) -> caf::result<core::reply> {
        auto rp = self->make_response_promise<core::reply>();
        execute(self, e, [rp](core::reply r) mutable { rp.deliver(std::move(r)); });
        return rp;
      },
      [self](submit_atom, core::envelope& e, reply_slot& slot) {
        execute(self, e, [sink = std::move(slot.sink)](core::reply r) { sink->deliver(std::move(r)); });
      },
      [self](flush_atom) { flush(self); },
      [self](stage_atom) { stage_slice(self); },
      [self](preempt_atom) { check_preemptions(self); },
      [self](plan_atom) {
        // Periodic (scheduling.backfill.bf_interval_seconds). The snapshot is taken here; the
        // planner runs on its own thread and answers with `planned`, so polls go on meanwhile.
        auto& st = self->state;
        self->delayed_send(self, std::chrono::microseconds(st.settings.backfill.interval), plan_atom::value);
        queue_preemption_check(self);  // preemptors that became eligible since (a dependency, a limit)
        if (st.failed || st.planning || (st.world.queued_by_image.empty() && st.world.plan.digest.empty())) return;
        if (writes_refused(self)) return;
        start_planning(self);
      },
      [self](planned_atom, planned_cycle& done) {
        // The plan goes in as decided on its snapshot (the event names it); what changed since
        // is caught where the plan is used: a poll takes its planned job only if it still fits.
        auto& st = self->state;
        st.planning = false;
        std::vector<plan_asker> serving = std::move(st.plan_serving);
        st.plan_serving.clear();
        auto answer = [serving](core::reply r) {
          for (const auto& a : serving) a.deliver(r);
        };
        if (st.failed) {
          answer(log_unavailable("the event log failed earlier"));
        } else if (done.generation != st.generation) {  // planned on a dropped world: its askers get the next cycle
          st.plan_asked.insert(st.plan_asked.begin(), std::make_move_iterator(serving.begin()),
                               std::make_move_iterator(serving.end()));
        } else if (writes_refused(self)) {
          answer(disk_full(*st.log_full));
        } else {
          auto now = st.clock();
          auto d = core::decide_plan(st.world, *done.snapshot, *done.result);
          core::reply r;
          r.value = core::results::counted{d.events.empty() ? st.world.plan.start_for_worker.size()
                                                            : std::get<core::ev::plan_made>(d.events[0].payload).starts.size()};
          r.at = now;
          if (d.events.empty()) {
            answer(std::move(r));
          } else {
            std::vector<std::string> touched;
            apply_decision(self, d, now, touched);
            refresh_views(self, d, touched, false);
            const bool asked = !serving.empty();
            persist(self, d, now, asked ? serving.front().actor : "loop:backfill", asked ? serving.front().correlation : "",
                    asked ? deliver_fn(answer) : nullptr, std::move(r));
          }
        }
        if (!st.plan_asked.empty() && !st.failed && !st.planning) {  // asked while this cycle planned
          if (writes_refused(self)) {
            for (const auto& a : std::exchange(st.plan_asked, {})) a.deliver(disk_full(*st.log_full));
          } else {
            start_planning(self);
          }
        }
      },
      [self](leases_atom) -> core::lease_table { return self->state.leases.all(); },
      [self](reap_atom) {
        auto& st = self->state;
        self->delayed_send(self, std::chrono::microseconds(st.settings.reap_interval_us), reap_atom::value);
        if (st.failed || writes_refused(self)) return;
        auto now = st.clock();
        auto d = core::reap(st.world, st.leases, st.settings, now);
        if (d.events.empty()) return;
        std::vector<std::string> touched;
        apply_decision(self, d, now, touched);
        auto fallout = settle_dependencies(self, d, now, touched);
        for (const auto& e : d.events)
          if (std::holds_alternative<core::ev::worker_reaped>(e.payload)) st.leases.erase(e.stream.substr(7));
        refresh_views(self, d, touched, true);
        spdlog::info("reaper: {} events (stale workers and their jobs)", d.events.size());
        persist(self, d, now, "loop:reaper", "", nullptr, {});
        if (!fallout.events.empty()) persist(self, fallout, now, dependency_actor, "", nullptr, {});
      },
      [self](priority_atom) {
        // Periodic (priority_calc_period); its events are the loop's, nobody waits for a reply.
        auto& st = self->state;
        self->delayed_send(self, std::chrono::microseconds(st.settings.priority.calc_period), priority_atom::value);
        if (st.staging || writes_refused(self)) return;  // the last one is still being put in force
        if (st.world.queued.empty() && core::policy_recorded(st.world, st.settings.priority)) return;  // nothing to order
        core::envelope e{core::principal::loop(), "loop:priority", {}, core::commands::recalculate_priorities{}, {}};
        execute(self, e, [](core::reply) {});
      },
  };
}

}  // namespace

core::reply unavailable(const std::string& code, const std::string& why) {
  core::reply r;
  r.error = core::domain_error{core::error_kind::unavailable, code, why, nlohmann::json::object(), ""};
  return r;
}

reply_sink::~reply_sink() {
  if (!done_ && deliver_) deliver_(unavailable("scheduler_unavailable", "the scheduler is not running"));
}

void reply_sink::deliver(core::reply r) {
  if (done_) return;
  done_ = true;
  deliver_(std::move(r));
}

std::optional<core::reply> submit(const scheduler_actor& scheduler, core::envelope command, std::chrono::milliseconds deadline) {
  auto promise = std::make_shared<std::promise<core::reply>>();
  auto reply = promise->get_future();
  submit_async(scheduler, std::move(command), [promise](core::reply r) { promise->set_value(std::move(r)); });
  if (reply.wait_for(deadline) != std::future_status::ready) return std::nullopt;
  return reply.get();
}

void submit_async(const scheduler_actor& scheduler, core::envelope command, std::function<void(core::reply)> on_reply) {
  reply_slot slot{std::make_shared<reply_sink>(std::move(on_reply))};
  if (!scheduler) return;  // the sink answers 503 as it goes
  caf::anon_send(scheduler, submit_atom::value, std::move(command), std::move(slot));
}

scheduler_actor spawn_scheduler(caf::actor_system& sys, log_writer_actor log, core::world world, core::lease_table leases,
                                core::scheduler_settings settings, clock_fn clock, scheduler_views views,
                                scheduler_storage storage, planner_launcher launch_planner) {
  return sys.spawn(scheduler, std::move(log), std::move(world), std::move(leases), settings, std::move(clock), std::move(views),
                   std::move(storage), std::move(launch_planner));
}

}  // namespace baton::actors
