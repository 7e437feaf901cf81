// A world decoded from a snapshot decides exactly as the one it was taken from. A seeded
// random campaign (jobs of several users, accounts, QOS with a running limit, a preempting
// partition, dependencies, holds, workers with and without allocation ends, polls, starts,
// checkpoints, handoffs, completions, failures, cancellations, deregistrations, priority
// recalculations, planning cycles, preemption checks, reaps) runs on a world; at several
// points the world is encoded and decoded, and from then on every command and loop is decided
// on both: the events and the answers must be identical, and the snapshot must round-trip.
#include <gtest/gtest.h>

#include <random>

#include "core/app/decide.hpp"
#include "core/events/event_payload.hpp"
#include "core/world/world_snapshot.hpp"
#include "http/reply_shapes.hpp"

using namespace baton;
namespace C = core::commands;
using nlohmann::json;

namespace {

std::string uuid_of(char kind, size_t n) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08zx-0000-4000-8000-%012zx", n, static_cast<size_t>(kind));
  return buf;
}

json events_json(const std::vector<core::domain_event>& evs) {
  json out = json::array();
  for (const auto& e : evs) out.push_back({e.stream, std::string(e.type()), core::payload_json(e)});
  return out;
}

core::scheduler_settings campaign_settings() {
  core::scheduler_settings s;
  auto& p = s.priority;
  p.max_jobs_per_user = 1000;
  p.accounts = {
      {"chem", "root", 3, {{"ann", 1}, {"bob", 2}}}, {"phys", "root", 1, {{"cy", 1}}}, {"bio", "chem", 1, {{"dee", 1}}}};
  p.partitions = {{"normal", 1, 1, {}}, {"urgent", 2, 1, {"normal"}}};
  p.qos = {{"normal", 0, 0, {}}, {"limited", 0.5, 2, {}}};
  s.liveness.stale_after_us = 120'000'000;
  return s;
}

// Two worlds fed the same commands; the first decides, both must agree.
struct twin_run {
  core::world a;
  std::optional<core::world> b;  // from a snapshot of a
  core::lease_book leases;
  core::scheduler_settings s = campaign_settings();
  core::time_us now = 1'700'000'000'000'000;
  size_t compared = 0;

  std::map<std::string, int> types;
  void record(const std::vector<core::domain_event>& evs) {
    if (evs.empty()) return;
    for (const auto& e : evs) ++types[std::string(e.type())];
    core::decision d;
    d.events = evs;
    core::apply(a, d, now);
    if (b) core::apply(*b, d, now);
  }
  core::outcome run(core::principal who, core::command cmd) {
    core::envelope e{who, who.actor(), "test", std::move(cmd), std::nullopt};
    auto o = core::decide(a, leases, s, e, now);
    if (b) {
      auto o2 = core::decide(*b, leases, s, e, now);
      EXPECT_EQ(events_json(o.events), events_json(o2.events)) << "after " << compared << " comparisons";
      EXPECT_EQ(o.answer.error.has_value(), o2.answer.error.has_value());
      if (!o.answer.error && !o2.answer.error) {
        EXPECT_EQ(http::body_of(o.answer.value, now), http::body_of(o2.answer.value, now));
      }
      ++compared;
    }
    record(o.events);
    return o;
  }
  template <class Loop>
  void loop(Loop decide_loop) {
    auto d = decide_loop(a);
    if (b) {
      auto d2 = decide_loop(*b);
      EXPECT_EQ(events_json(d.events), events_json(d2.events)) << "loop, after " << compared << " comparisons";
      ++compared;
    }
    record(d.events);
  }
  void snapshot() {
    auto bytes = core::encode_world(a);
    b.emplace(core::decode_world(bytes));
    EXPECT_EQ(core::encode_world(*b), bytes) << "the snapshot round-trips";
  }
};

void campaign(twin_run& t, uint32_t seed, int steps, const std::vector<int>& snapshot_at) {
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> users = {"ann", "bob", "cy", "dee"};
  std::vector<std::string> workers, jobs;
  std::map<std::string, std::string> held;  // worker -> job it runs
  std::set<std::string> silent;             // workers that stopped heartbeating
  auto admin = core::principal::operator_named("admin");
  t.run(core::principal::loop(), C::recalculate_priorities{});
  size_t next = 0;
  for (int step = 0; step < steps; ++step) {
    if (std::find(snapshot_at.begin(), snapshot_at.end(), step) != snapshot_at.end()) t.snapshot();
    t.now += static_cast<core::time_us>(1 + pick(20)) * 1'000'000;
    // Heartbeats: every worker that has not gone silent (now and then one does, and is reaped).
    for (const auto& w : workers)
      if (!silent.count(w)) t.leases.touch(w, t.now);
    if (!workers.empty() && pick(60) == 0) silent.insert(workers[pick(workers.size())]);
    int what = static_cast<int>(pick(100));
    if (what < 22) {  // a job
      C::create_job c;
      c.id = uuid_of('j', next++);
      c.title = "t";
      c.input_bundle_path = "/b";
      c.user = users[pick(users.size())];
      c.gpu_count = 1 + static_cast<uint32_t>(pick(3));
      if (pick(3)) c.time_limit_seconds = 600 * static_cast<int64_t>(1 + pick(6));
      c.checkpoints = pick(5) != 0;
      c.hold = pick(12) == 0;
      if (pick(6) == 0) c.partition = "urgent";
      if (pick(4) == 0) c.qos = "limited";
      c.nice = pick(4) == 0 ? 100 : 0;
      if (!jobs.empty() && pick(5) == 0) c.depends_on.push_back({jobs[pick(jobs.size())], core::dependency_condition::afterany});
      auto o = t.run(admin, c);
      if (!o.answer.error) jobs.push_back(c.id);
    } else if (what < 26) {  // a worker
      C::register_worker r;
      r.new_id = uuid_of('w', next++);
      r.gpu_model = pick(2) ? "A100" : "H100";
      r.gpu_count = 1 + static_cast<int>(pick(4));
      r.credential_sha256 = "00";
      if (pick(2)) r.allocation_ends_at = t.now + static_cast<core::time_us>(1800 + pick(7200)) * 1'000'000;
      t.run(core::principal::operator_named("admin"), r);
      workers.push_back(r.new_id);
      t.leases.touch(r.new_id, t.now);
    } else if (what < 70 && !workers.empty()) {  // a worker's turn
      const auto& w = workers[pick(workers.size())];
      const core::worker* wk = t.a.find_worker(w);
      if (!wk || wk->gone) continue;
      if (silent.count(w)) continue;
      auto me = core::principal::of_worker(w);
      auto it = held.find(w);
      if (it == held.end()) {
        auto o = t.run(me, C::request_job{w});
        auto* answer = std::get_if<core::results::poll_answer>(&o.answer.value);
        if (answer && answer->assigned) {
          held[w] = answer->assigned->job_id;
          t.run(me, C::start_job{answer->assigned->job_id});
        }
        continue;
      }
      const std::string job = it->second;
      const core::job* j = t.a.find_job(job);
      if (!j || j->assigned_worker_id != w || core::is_terminal(j->status) || j->status == core::job_status::queued) {
        held.erase(it);
        continue;
      }
      int act = static_cast<int>(pick(10));
      if (act < 3) {
        core::checkpoint_report rep;
        rep.manifest_path = "/ck/" + job + "/" + std::to_string(step);
        rep.progress = 0.1 * static_cast<double>(pick(10));
        rep.seconds = 5.0 + static_cast<double>(pick(60));
        t.run(me, C::checkpoint_job{job, rep});
      } else if (act < 6) {
        t.run(me, C::complete_job{job});
        held.erase(w);
      } else if (act < 7) {
        C::fail_job f;
        f.id = job;
        f.reason = "boom";
        t.run(me, f);
        held.erase(w);
      } else if (act < 8 && j->status == core::job_status::running) {
        C::handoff_start h;
        h.id = job;
        h.reason = "walltime";
        t.run(me, h);
        t.run(me, C::handoff_complete{job, {}});
        held.erase(w);
      } else if (act < 9) {
        t.run(me, C::job_control{job});
      } else {
        t.run(me, C::deregister{w});
        held.erase(w);
      }
    } else if (what < 76 && !jobs.empty()) {
      const auto& id = jobs[pick(jobs.size())];
      int act = static_cast<int>(pick(3));
      if (act == 0)
        t.run(admin, C::cancel_job{id, pick(2) == 0});
      else if (act == 1)
        t.run(admin, C::release_job{id});
      else
        t.run(admin, C::hold_job{id});
    } else if (what < 84) {
      t.run(core::principal::loop(), C::recalculate_priorities{});
    } else if (what < 90) {
      t.loop([&](const core::world& w) { return core::plan_cycle(w, t.leases, t.s, t.now); });
    } else if (what < 95) {
      t.loop([&](const core::world& w) { return core::preemption_check(w, t.leases, t.s, t.now); });
    } else {
      t.loop([&](const core::world& w) { return core::reap(w, t.leases, t.s, t.now); });
    }
  }
}

}  // namespace

TEST(WorldSnapshot, ADecodedWorldDecidesExactlyAsTheOriginal) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    twin_run t;
    campaign(t, seed, 3000, {400, 1500, 2600});
    EXPECT_GT(t.compared, 1000u) << "seed " << seed;
    EXPECT_EQ(core::encode_world(t.a), core::encode_world(*t.b)) << "seed " << seed;
    EXPECT_GT(t.a.jobs.size(), 100u);
    // The campaign reaches what the snapshot must carry (each mutation of rebuild_indexes
    // tried so far made this test fail).
    for (const char* type : {"job.assigned", "job.handoff_completed", "job.preempted", "job.requeued_after_reap",
                             "scheduler.plan_made", "scheduler.priorities_applied", "job.held"})
      EXPECT_GT(t.types[type], 0) << type << ", seed " << seed;
    if (HasFailure()) break;
  }
}

TEST(WorldSnapshot, BytesThatAreNotASnapshotAreRefused) {
  EXPECT_THROW(core::decode_world("not cbor at all"), std::runtime_error);
  core::world w;
  auto whole = core::encode_world(w);
  EXPECT_NO_THROW(core::decode_world(whole));
  for (size_t cut : {size_t{3}, whole.size() / 2, whole.size() - 1})
    EXPECT_THROW(core::decode_world(whole.substr(0, cut)), std::runtime_error) << "cut at " << cut;
  EXPECT_THROW(core::decode_world(whole + "x"), std::runtime_error) << "trailing bytes";
}
